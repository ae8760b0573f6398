//! The exact Euclidean projection onto `Z̃(z)`, by a semismooth Newton method on the dual.
//!
//! With multipliers `α` (rows) and `β` (columns), the KKT conditions of
//! `min ½‖Y − V‖²` over `Z̃(z)` give `Y = max(V − α1ᵀ − 1βᵀ, 0)`. For fixed `β`, the best `α`
//! projects each row of `V − 1βᵀ` onto the unit simplex, so the dual is a function of `β` alone:
//!
//! ```text
//! g(β) = Σ_i ½‖P_Δ(v_i − β) − (v_i − β)‖² + ⟨β, Σ_i v_i⟩ − ½ L ‖β‖² − ⟨β, z⟩,
//! ∇g(β) = Yᵀ1 − z,     ∂∇g/∂β = −Λ,   Λ = diag(c) − Sᵀ diag(1/r) S,
//! ```
//!
//! concave, piecewise quadratic and `C¹`, with `S` the support indicator of `Y` and `r`, `c` its
//! row and column counts ([`super::laplacian`]). Newton's step `(Λ + μI) d = Yᵀ1 − z` (a tiny
//! ridge `μ`, see [`RIDGE`]) with an Armijo
//! backtracking on `g` converges in a few steps (a gradient step `d = ∇g/L`, always an ascent
//! step since `Λ ⪯ L·I`, replaces a step the line search cannot use). It stops when every column
//! sum is within [`ExactMatrix::tol`] of `z`: row sums are 1 and `Y ≥ 0` by construction, and
//! stationarity and complementary slackness hold by the form of `Y`, so all KKT conditions hold.
//! The solver runs in `f64` whatever the caller's float type. A class of size `z_j = 0` has an
//! all-zero column: it is left out of the row projections (its `β_j` is `+∞` in effect), so
//! the Newton system never has to push a multiplier to infinity; its `∂ℓ/∂z_j` is the
//! one-sided value that the bipartite system gives it (0 before the rescaling).
//!
//! **VJP.** On the support `Y_S = V_S − (x_i + y_j)` is the projection onto the affine set of
//! the row and column equations; for `G = ∂ℓ/∂Y`, with `a`, `b` the row and column sums of
//! `G_S`, the bipartite system `[diag(r) S; Sᵀ diag(c)] [x; y] = [a; b]` gives
//! `∂ℓ/∂V = S ⊙ (G − x1ᵀ − 1yᵀ)` and `∂ℓ/∂z̃ = y` (then [`super::counts::rescale_vjp`]).

use super::counts::{normalize, rescale_vjp, Counts};
use super::laplacian::{laplacian, solve_bipartite_sums, solve_ridge};
use super::MatrixProjector;
use crate::simplex::simplex_theta;
use crate::{ProjError, Real};

/// The exact projection onto `{Y ≥ 0, Y1 = 1, Yᵀ1 = z}`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactMatrix {
    /// Largest accepted `|Σ_i Y_ij − z_j|`, relative to `L` (absolute `tol · L`).
    pub tol: f64,
    /// Newton iterations before [`ProjError::NotConverged`].
    pub max_iters: usize,
}

impl Default for ExactMatrix {
    fn default() -> Self {
        Self {
            tol: 1e-10,
            max_iters: 500,
        }
    }
}

/// Tape of [`ExactMatrix`]: the support, the counts, and solver buffers.
#[derive(Debug, Clone, Default)]
pub struct ExactMatrixTape {
    counts: Counts,
    classes: usize,
    v: Vec<f64>,
    y: Vec<f64>,
    beta: Vec<f64>,
    trial: Vec<f64>,
    y_trial: Vec<f64>,
    support: Vec<f64>,
    res: Vec<f64>,
    res_trial: Vec<f64>,
    step: Vec<f64>,
    lap: Vec<f64>,
    rows: RowScratch,
    iters: usize,
}

/// One row's buffers of [`dual`].
#[derive(Debug, Clone, Default)]
struct RowScratch {
    row: Vec<f64>,
    sorted: Vec<f64>,
}

impl ExactMatrixTape {
    /// Newton iterations the last `forward` took.
    pub fn iters(&self) -> usize {
        self.iters
    }
}

/// `Y(β)` (rows of `V − 1βᵀ` onto the unit simplex) into `y`, the residual `Yᵀ1 − z` into
/// `res`; returns the dual value `g(β)`.
fn dual(
    v: &[f64],
    m: usize,
    z: &[f64],
    beta: &[f64],
    y: &mut [f64],
    res: &mut [f64],
    scratch: &mut RowScratch,
) -> f64 {
    let RowScratch { row, sorted } = scratch;
    let rows = v.len() / m;
    res.iter_mut().zip(z).for_each(|(r, &zj)| *r = -zj);
    let mut g = 0.0;
    for (vi, yi) in v.chunks_exact(m).zip(y.chunks_exact_mut(m)) {
        row.clear();
        // Classes of size 0 take no part (their entries are 0, their β is not used).
        row.extend(
            vi.iter()
                .zip(beta)
                .zip(z)
                .filter(|(_, &zj)| zj > 0.0)
                .map(|((a, b), _)| a - b),
        );
        let theta = simplex_theta(row, 1.0, sorted);
        let mut k = 0;
        for (j, (o, r)) in yi.iter_mut().zip(res.iter_mut()).enumerate() {
            if z[j] > 0.0 {
                let t = row[k];
                k += 1;
                let u = (t - theta).max(0.0);
                *o = u;
                *r += u;
                g += 0.5 * (u - t) * (u - t) + vi[j] * beta[j];
            } else {
                *o = 0.0;
            }
        }
    }
    let bb: f64 = beta
        .iter()
        .zip(z)
        .filter(|(_, &zj)| zj > 0.0)
        .map(|(b, _)| b * b)
        .sum();
    let bz: f64 = beta.iter().zip(z).map(|(b, z)| b * z).sum();
    g - 0.5 * rows as f64 * bb - bz
}

/// The Newton system's ridge `μ` in `(Λ + μI) d = Yᵀ1 − z`: negligible against `Λ`'s non-zero
/// eigenvalues (at least ~1/M for a connected support), it gives a class with no support, or a
/// support that falls apart in components whose residuals do not cancel, a (long) step of its
/// own, which the line search then shortens.
const RIDGE: f64 = 1e-6;

fn max_abs(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |a, b| a.max(b.abs()))
}

impl ExactMatrix {
    /// The solve in `f64` on the tape's buffers (`t.v` and `t.counts` filled).
    fn solve(&self, t: &mut ExactMatrixTape) -> Result<(), ProjError> {
        let m = t.classes;
        let rows = t.counts.rows;
        let n = t.v.len();
        let tol = self.tol * rows as f64;
        t.beta.clear();
        t.beta.resize(m, 0.0);
        t.y.resize(n, 0.0);
        t.y_trial.resize(n, 0.0);
        t.res.resize(m, 0.0);
        t.res_trial.resize(m, 0.0);
        t.trial.resize(m, 0.0);
        let z = &t.counts.z;
        let mut g = dual(&t.v, m, z, &t.beta, &mut t.y, &mut t.res, &mut t.rows);
        let mut iters = 0;
        while max_abs(&t.res) > tol {
            if iters == self.max_iters {
                return Err(ProjError::NotConverged {
                    solver: "the exact matrix projection's Newton method",
                    iters,
                    residual: max_abs(&t.res),
                });
            }
            iters += 1;
            t.support.clear();
            t.support
                .extend(t.y.iter().map(|&u| if u > 0.0 { 1.0 } else { 0.0 }));
            laplacian(&t.support, m, &mut t.lap);
            solve_ridge(&t.lap, m, RIDGE, &t.res, &mut t.step);
            let mut slope: f64 = t.res.iter().zip(&t.step).map(|(a, b)| a * b).sum();
            if slope.is_nan() || slope <= 0.0 {
                t.step.clear();
                t.step.extend(t.res.iter().map(|r| r / rows as f64));
                slope = t.res.iter().map(|r| r * r).sum::<f64>() / rows as f64;
            }
            let res_norm = max_abs(&t.res);
            let mut s = 1.0;
            let mut accepted = false;
            for _ in 0..60 {
                for ((b, &b0), &d) in t.trial.iter_mut().zip(&t.beta).zip(&t.step) {
                    *b = b0 + s * d;
                }
                let gt = dual(
                    &t.v,
                    m,
                    z,
                    &t.trial,
                    &mut t.y_trial,
                    &mut t.res_trial,
                    &mut t.rows,
                );
                // Armijo on g; near the optimum g's rounding hides the gain, so a step that does
                // not lose g beyond rounding and shrinks the residual is taken as well.
                let noise = 1e-14 * (1.0 + g.abs());
                if gt >= g + 1e-4 * s * slope
                    || (gt >= g - noise && max_abs(&t.res_trial) < res_norm)
                {
                    g = gt;
                    std::mem::swap(&mut t.beta, &mut t.trial);
                    std::mem::swap(&mut t.y, &mut t.y_trial);
                    std::mem::swap(&mut t.res, &mut t.res_trial);
                    accepted = true;
                    break;
                }
                s *= 0.5;
            }
            if !accepted {
                return Err(ProjError::NotConverged {
                    solver: "the exact matrix projection's line search",
                    iters,
                    residual: res_norm,
                });
            }
        }
        t.iters = iters;
        Ok(())
    }
}

impl<F: Real> MatrixProjector<F> for ExactMatrix {
    type Tape = ExactMatrixTape;

    fn forward(
        &self,
        v: &[F],
        classes: usize,
        z: &[F],
        out: &mut [F],
        t: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        normalize(v, classes, z, out.len(), &mut t.counts)?;
        t.classes = classes;
        t.v.clear();
        t.v.extend(v.iter().map(|x| x.to_f64().unwrap_or(0.0)));
        self.solve(t)?;
        for (o, &u) in out.iter_mut().zip(&t.y) {
            *o = F::from_f64(u).unwrap_or_else(F::zero);
        }
        t.support.clear();
        t.support
            .extend(t.y.iter().map(|&u| if u > 0.0 { 1.0 } else { 0.0 }));
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F], gz: &mut [F]) {
        let m = t.classes;
        let gd: Vec<f64> = g
            .iter()
            .zip(&t.support)
            .map(|(x, s)| s * x.to_f64().unwrap_or(0.0))
            .collect();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        solve_bipartite_sums(&t.support, m, &gd, &mut x, &mut y);
        for (i, ((gi, row), si)) in gv
            .chunks_exact_mut(m)
            .zip(gd.chunks_exact(m))
            .zip(t.support.chunks_exact(m))
            .enumerate()
        {
            for j in 0..m {
                gi[j] = F::from_f64(si[j] * (row[j] - x[i] - y[j])).unwrap_or_else(F::zero);
            }
        }
        rescale_vjp(&t.counts, &mut y);
        for (o, &d) in gz.iter_mut().zip(&y) {
            *o = F::from_f64(d).unwrap_or_else(F::zero);
        }
    }
}
