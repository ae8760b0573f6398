//! One projection of the unroll: onto `{Y ≥ 0, Y1 = 1, Yᵀ1 = z}` by the configured matrix
//! projection, or, for [`super::Mode::Rows`] (the unroll without class sizes), every row onto
//! the unit simplex alone (the exact sort-based projection, [`Simplex`]).

use cardinal_proj::matrix::{AnyMatrixProjector, AnyMatrixTape, MatrixProjector};
use cardinal_proj::{ProjError, Projector, Simplex, SimplexTape};

/// What a step records for its VJP.
#[derive(Debug, Default)]
pub(super) enum StepTape {
    /// Nothing yet.
    #[default]
    Empty,
    /// The matrix projection's tape (boxed: it is far larger than the other variants).
    Matrix(Box<AnyMatrixTape<f64>>),
    /// One simplex tape per row.
    Rows(Vec<SimplexTape<f64>>),
}

/// Projects `a` (`L × M`, `M = classes`) into `out`: onto the polytope of class sizes `z` by
/// `proj`, or with `rows_only` each row onto the unit simplex (`z` unused).
pub(super) fn forward(
    proj: &AnyMatrixProjector,
    rows_only: bool,
    a: &[f64],
    classes: usize,
    z: &[f64],
    out: &mut [f64],
    tape: &mut StepTape,
) -> Result<(), ProjError> {
    if rows_only {
        let mut tapes: Vec<SimplexTape<f64>> = Vec::new();
        tapes.resize_with(a.len() / classes, Default::default);
        let rows = a.chunks_exact(classes).zip(out.chunks_exact_mut(classes));
        for ((row, o), t) in rows.zip(tapes.iter_mut()) {
            Simplex.forward(row, 1.0, o, t)?;
        }
        *tape = StepTape::Rows(tapes);
    } else {
        let mut t = Box::<AnyMatrixTape<f64>>::default();
        proj.forward(a, classes, z, out, &mut t)?;
        *tape = StepTape::Matrix(t);
    }
    Ok(())
}

/// Given `g = ∂ℓ/∂out`, overwrites `gv` with `∂ℓ/∂a` and `gz` with `∂ℓ/∂z` (zero for rows
/// alone).
pub(super) fn vjp(
    proj: &AnyMatrixProjector,
    tape: &StepTape,
    classes: usize,
    g: &[f64],
    gv: &mut [f64],
    gz: &mut [f64],
) {
    match tape {
        StepTape::Matrix(t) => proj.vjp(t, g, gv, gz),
        StepTape::Rows(tapes) => {
            let rows = g.chunks_exact(classes).zip(gv.chunks_exact_mut(classes));
            for ((gr, vr), t) in rows.zip(tapes) {
                Simplex.vjp(t, gr, vr);
            }
            gz.fill(0.0);
        }
        StepTape::Empty => {
            gv.fill(0.0);
            gz.fill(0.0);
        }
    }
}
