//! Row-batched forward and VJP over a row-major `B × L` buffer.
//!
//! With the `parallel` feature rows are distributed over rayon's pool once a batch holds enough
//! work to amortise the fork-join (a few microseconds); smaller batches run sequentially.

use crate::{ProjError, Projector, Real};

/// Below this many entries (B·L) a batch runs on the calling thread.
pub(crate) const PAR_MIN_ENTRIES: usize = 16 * 1024;

fn check_shape(what: &str, len: usize, rows: usize, l: usize) -> Result<(), ProjError> {
    if l == 0 || len != rows * l {
        return Err(ProjError::BatchShape {
            what: format!("{what} has {len} entries, expected {rows} x {l}"),
        });
    }
    Ok(())
}

/// Projects each row `v[b*l..(b+1)*l]` with cardinality `z[b]` into `out`, recording one tape per
/// row in `tapes` (grown as needed, reused across calls). Returns the first row's error, if any.
pub fn forward_batch<F: Real, P: Projector<F>>(
    proj: &P,
    v: &[F],
    z: &[F],
    l: usize,
    out: &mut [F],
    tapes: &mut Vec<P::Tape>,
) -> Result<(), ProjError> {
    let rows = z.len();
    check_shape("input", v.len(), rows, l)?;
    check_shape("output", out.len(), rows, l)?;
    if tapes.len() < rows {
        tapes.resize_with(rows, Default::default);
    }
    #[cfg(feature = "parallel")]
    if rows > 1 && rows * l >= PAR_MIN_ENTRIES {
        use rayon::prelude::*;
        return out
            .par_chunks_mut(l)
            .zip(v.par_chunks(l))
            .zip(z.par_iter())
            .zip(tapes[..rows].par_iter_mut())
            .try_for_each(|(((o, vi), &zi), t)| proj.forward(vi, zi, o, t));
    }
    for (((o, vi), &zi), t) in out
        .chunks_mut(l)
        .zip(v.chunks(l))
        .zip(z)
        .zip(tapes.iter_mut())
    {
        proj.forward(vi, zi, o, t)?;
    }
    Ok(())
}

/// VJP of [`forward_batch`]: writes `∂ℓ/∂v` rows into `gv` and `∂ℓ/∂z_b` into `gz[b]`.
pub fn vjp_batch<F: Real, P: Projector<F>>(
    proj: &P,
    tapes: &[P::Tape],
    g: &[F],
    l: usize,
    gv: &mut [F],
    gz: &mut [F],
) -> Result<(), ProjError>
where
    P::Tape: Sync,
{
    let rows = gz.len();
    check_shape("upstream gradient", g.len(), rows, l)?;
    check_shape("input gradient", gv.len(), rows, l)?;
    if tapes.len() < rows {
        return Err(ProjError::BatchShape {
            what: format!("{} tapes for {rows} rows", tapes.len()),
        });
    }
    #[cfg(feature = "parallel")]
    if rows > 1 && rows * l >= PAR_MIN_ENTRIES {
        use rayon::prelude::*;
        gv.par_chunks_mut(l)
            .zip(g.par_chunks(l))
            .zip(gz.par_iter_mut())
            .zip(tapes[..rows].par_iter())
            .for_each(|(((o, gi), zb), t)| *zb = proj.vjp(t, gi, o));
        return Ok(());
    }
    for (((o, gi), zb), t) in gv
        .chunks_mut(l)
        .zip(g.chunks(l))
        .zip(gz.iter_mut())
        .zip(tapes)
    {
        *zb = proj.vjp(t, gi, o);
    }
    Ok(())
}
