//! Beyond the paper: the entropic projection onto `Z̃(z)`,
//!
//! ```text
//! Y = argmax_{Y ∈ Z̃(z)} ⟨V, Y⟩ + ε H(Y),   H(Y) = −Σ Y_ij ln Y_ij
//!   ⇒ Y_ij = exp((V_ij − α_i − β_j)/ε),
//! ```
//!
//! the matrix analogue of the smoothed projection ([`crate::SmoothCappedSimplex`]): always
//! feasible, smooth in `V` and `z`, with a dense Jacobian. As `ε → 0` it tends to the linear
//! program's vertex (an optimal transport plan), not to the Euclidean projection. The
//! multipliers come from Sinkhorn's iterations in the log domain (in `f64`),
//! `β_j = ε(LSE_i((V_ij − α_i)/ε) − ln z_j)`, `α_i = ε LSE_j((V_ij − β_j)/ε)`, until every
//! column sum is within [`SinkhornMatrix::tol`]`· L` of `z` (rows sum to 1 after each
//! `α` update). Columns with `z_j = 0` are 0 and take no part.
//!
//! **VJP** (implicit, at the fixed point, not through the iterations): with `G = ∂ℓ/∂Y` and
//! `a`, `b` the row and column sums of `Y ⊙ G`, the bipartite system of [`super::laplacian`]
//! with weights `Y` gives `(x, y)`, and `∂ℓ/∂V = Y ⊙ (G − x1ᵀ − 1yᵀ)/ε`, `∂ℓ/∂z̃ = y`.

use super::counts::{normalize, rescale_vjp, Counts};
use super::laplacian::solve_bipartite_sums;
use super::MatrixProjector;
use crate::{ProjError, Real};

/// Default temperature of [`SinkhornMatrix`] (in units of the scores).
pub const DEFAULT_SINKHORN_EPS: f64 = 0.1;

/// The entropic projection with temperature `eps`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SinkhornMatrix {
    /// Temperature ε (finite, > 0).
    pub eps: f64,
    /// Largest accepted `|Σ_i Y_ij − z_j|`, relative to `L`.
    pub tol: f64,
    /// Sinkhorn iterations before [`ProjError::NotConverged`].
    pub max_iters: usize,
}

impl SinkhornMatrix {
    /// The projection at temperature `eps` with the default tolerance (`1e-9`) and iteration
    /// limit (100 000).
    pub fn new(eps: f64) -> Self {
        Self {
            eps,
            tol: 1e-9,
            max_iters: 100_000,
        }
    }
}

impl Default for SinkhornMatrix {
    fn default() -> Self {
        Self::new(DEFAULT_SINKHORN_EPS)
    }
}

/// Tape of [`SinkhornMatrix`]: the output in `f64` and the counts.
#[derive(Debug, Clone, Default)]
pub struct SinkhornMatrixTape {
    counts: Counts,
    classes: usize,
    y: Vec<f64>,
    alpha: Vec<f64>,
    beta: Vec<f64>,
    iters: usize,
}

impl SinkhornMatrixTape {
    /// Sinkhorn iterations the last `forward` took.
    pub fn iters(&self) -> usize {
        self.iters
    }
}

/// `ln Σ exp(x_k)` over an iterator (stable); `−∞` for an empty one.
fn log_sum_exp(xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let mx = xs.clone().fold(f64::NEG_INFINITY, f64::max);
    if mx == f64::NEG_INFINITY {
        return mx;
    }
    mx + xs.map(|x| (x - mx).exp()).sum::<f64>().ln()
}

impl<F: Real> MatrixProjector<F> for SinkhornMatrix {
    type Tape = SinkhornMatrixTape;

    fn forward(
        &self,
        v: &[F],
        classes: usize,
        z: &[F],
        out: &mut [F],
        t: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        if !(self.eps > 0.0 && self.eps.is_finite()) {
            return Err(ProjError::InvalidParameter {
                name: "eps",
                value: self.eps,
                allowed: crate::any::POSITIVE.to_string(),
            });
        }
        normalize(v, classes, z, out.len(), &mut t.counts)?;
        let (m, l, eps) = (classes, t.counts.rows, self.eps);
        t.classes = m;
        t.y.clear();
        t.y.extend(v.iter().map(|x| x.to_f64().unwrap_or(0.0) / eps));
        let s = &t.y; // V/ε while iterating
        let z = &t.counts.z;
        let active = |j: usize| z[j] > 0.0;
        t.alpha.clear();
        t.alpha.resize(l, 0.0);
        t.beta.clear();
        t.beta.resize(m, 0.0);
        let tol = self.tol * l as f64;
        let mut iters = 0;
        loop {
            // β (in units of ε): column sums z.
            for j in 0..m {
                t.beta[j] = if active(j) {
                    log_sum_exp((0..l).map(|i| s[i * m + j] - t.alpha[i])) - z[j].ln()
                } else {
                    f64::INFINITY
                };
            }
            // α: row sums 1.
            for i in 0..l {
                let row = &s[i * m..][..m];
                t.alpha[i] = log_sum_exp((0..m).filter(|&j| active(j)).map(|j| row[j] - t.beta[j]));
            }
            iters += 1;
            let mut worst: f64 = 0.0;
            for j in (0..m).filter(|&j| active(j)) {
                let c: f64 = (0..l)
                    .map(|i| (s[i * m + j] - t.alpha[i] - t.beta[j]).exp())
                    .sum();
                worst = worst.max((c - z[j]).abs());
            }
            if worst <= tol {
                break;
            }
            if iters >= self.max_iters || !worst.is_finite() {
                return Err(ProjError::NotConverged {
                    solver: "Sinkhorn's iterations",
                    iters,
                    residual: worst,
                });
            }
        }
        t.iters = iters;
        for (i, row) in t.y.chunks_exact_mut(m).enumerate() {
            for (j, e) in row.iter_mut().enumerate() {
                *e = if active(j) {
                    (*e - t.alpha[i] - t.beta[j]).exp()
                } else {
                    0.0
                };
            }
        }
        for (o, &u) in out.iter_mut().zip(&t.y) {
            *o = F::from_f64(u).unwrap_or_else(F::zero);
        }
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F], gz: &mut [F]) {
        let m = t.classes;
        let yg: Vec<f64> = g
            .iter()
            .zip(&t.y)
            .map(|(x, y)| y * x.to_f64().unwrap_or(0.0))
            .collect();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        solve_bipartite_sums(&t.y, m, &yg, &mut x, &mut y);
        let inv_eps = 1.0 / self.eps;
        for (i, (gi, (gr, yr))) in gv
            .chunks_exact_mut(m)
            .zip(g.chunks_exact(m).zip(t.y.chunks_exact(m)))
            .enumerate()
        {
            for j in 0..m {
                let gij = gr[j].to_f64().unwrap_or(0.0);
                let d = yr[j] * (gij - x[i] - y[j]) * inv_eps;
                gi[j] = F::from_f64(d).unwrap_or_else(F::zero);
            }
        }
        rescale_vjp(&t.counts, &mut y);
        for (o, &d) in gz.iter_mut().zip(&y) {
            *o = F::from_f64(d).unwrap_or_else(F::zero);
        }
    }
}
