//! The paper's Algorithm 1 (soft projection onto `B(z)`) as the authors' released code computes
//! it, including the ReLU inside the softsign:
//!
//! ```text
//! μ = sort_desc(v), c = cumsum(μ), j = 1..L,
//! r_j = j μ_j − (c_j − z),  δ_j = softsign(relu(r_j)),  ρ = softmax(j δ_j),
//! N = Σ c_j ρ_j,  D = Σ j ρ_j (≥ 1),  θ = (N − z)/D,  out = relu(v − θ).
//! ```
//!
//! Backward (reverse mode, `a = 1[v − θ > 0]`): `ḡ_v ← g⊙a`, `θ̄ = −Σ g⊙a`;
//! `N̄ = θ̄/D`, `D̄ = −θ̄ θ/D`, `z̄ = −θ̄/D`; `ρ̄_j = N̄ c_j + D̄ j` and, since
//! `Σ ρ_j ρ̄_j = N̄ N + D̄ D`, the softmax adjoint is `ā_j = ρ_j (ρ̄_j − N̄N − D̄D)`;
//! `r̄_j = j ā_j 1[r_j > 0]/(1 + r_j)²`; `r` feeds `μ̄_j += j r̄_j`, `c̄_j −= r̄_j`, `z̄ += r̄_j`;
//! `c̄_j += N̄ ρ_j`; the cumsum adjoint is a suffix sum, `μ̄_k += Σ_{j≥k} c̄_j`; finally μ̄ is
//! scattered back through the sort permutation.

use crate::util::{argsort_desc_with, of, validate, ZRange};
use crate::{ProjError, Projector, Real};

/// Algorithm 1 of the paper (authors' variant with relu inside softsign), `z ≥ 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoftSimplex;

/// Tape of [`SoftSimplex`].
#[derive(Debug, Clone, Default)]
pub struct SoftTape<F> {
    perm: Vec<u32>,
    mu: Vec<F>,
    pairs: Vec<(F, u32)>,
    c: Vec<F>,
    r: Vec<F>,
    rho: Vec<F>,
    active: Vec<F>,
    theta: F,
    n: F,
    d: F,
}

impl<F: Real> Projector<F> for SoftSimplex {
    type Tape = SoftTape<F>;

    fn forward(&self, v: &[F], z: F, out: &mut [F], t: &mut Self::Tape) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::NonNegative)?;
        let l = v.len();
        let zero = F::zero();
        argsort_desc_with(v, &mut t.perm, &mut t.mu, &mut t.pairs);
        t.c.clear();
        t.r.clear();
        t.rho.clear();
        let mut c = zero;
        let mut amax = F::neg_infinity();
        for (k, &m) in t.mu.iter().enumerate() {
            let j: F = of(k + 1);
            c += m;
            let r = j * m - (c - z);
            let rr = r.max(zero);
            let a = j * rr / (F::one() + rr);
            amax = amax.max(a);
            t.c.push(c);
            t.r.push(r);
            t.rho.push(a);
        }
        // Stable softmax: scores reach L, so subtract the max before exponentiating.
        let mut s = zero;
        for a in t.rho.iter_mut() {
            *a = (*a - amax).exp();
            s += *a;
        }
        let (mut n, mut d) = (zero, zero);
        for (k, p) in t.rho.iter_mut().enumerate() {
            *p /= s;
            n += t.c[k] * *p;
            d += of::<F>(k + 1) * *p;
        }
        let theta = (n - z) / d;
        t.active.clear();
        t.active.resize(l, zero);
        for ((o, a), &x) in out.iter_mut().zip(t.active.iter_mut()).zip(v) {
            let u = x - theta;
            if u > zero {
                *o = u;
                *a = F::one();
            } else {
                *o = zero;
            }
        }
        t.theta = theta;
        t.n = n;
        t.d = d;
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        let zero = F::zero();
        let mut dtheta = zero;
        for ((o, &a), &gi) in gv.iter_mut().zip(&t.active).zip(g) {
            *o = a * gi;
            dtheta -= a * gi;
        }
        let dn = dtheta / t.d;
        let dd = -dtheta * t.theta / t.d;
        let mut gz = -dtheta / t.d;
        let dot = dn * t.n + dd * t.d;
        let mut suffix = zero;
        for k in (0..t.mu.len()).rev() {
            let j: F = of(k + 1);
            let rho = t.rho[k];
            let da = rho * (dn * t.c[k] + dd * j - dot);
            let r = t.r[k];
            let dr = if r > zero {
                let q = F::one() + r;
                j * da / (q * q)
            } else {
                zero
            };
            gz += dr;
            suffix += dn * rho - dr;
            gv[t.perm[k] as usize] += j * dr + suffix;
        }
        gz
    }
}
