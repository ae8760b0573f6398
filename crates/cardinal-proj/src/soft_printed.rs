//! The paper's Algorithm 1 (soft projection onto `B(z)`) exactly as it is printed, without the
//! ReLU that the authors' released code puts inside the softsign ([`crate::SoftSimplex`]):
//!
//! ```text
//! μ = sort_desc(v), c = cumsum(μ), j = 1..L,
//! r_j = j μ_j − (c_j − z),  δ_j = softsign(r_j) = r_j/(1 + |r_j|),  ρ = softmax(j δ_j),
//! N = Σ c_j ρ_j,  D = Σ j ρ_j (≥ 1),  θ = (N − z)/D,  out = relu(v − θ).
//! ```
//!
//! In the paper's notation `δ = Softsign(μ∘I − (μ̄ − z))`, `ρ = Softmax(δ∘I)` and
//! `θ = (μ̄ᵀρ − z)/(Iᵀρ)`, with `μ̄` the cumulative sum and `I = (1, …, L)`.
//!
//! Why both exist: the two operators agree exactly when every `r_j ≥ 0`. Since
//! `r_1 = z ≥ 0` and `r_{j+1} − r_j = j (μ_{j+1} − μ_j) ≤ 0`, that is when
//! `r_L = z − Σ_j (μ_j − μ_L) ≥ 0`. Otherwise the released variant gives every `j` with
//! `r_j ≤ 0` the logit 0 (a shared, often dominant softmax weight), while the printed one gives
//! it the negative logit `j δ_j ∈ (−j, 0)`, so the two `θ` differ. This module lets the
//! printed operator be measured next to the released one.
//!
//! Backward (reverse mode, `a = 1[v − θ > 0]`): `ḡ_v ← g⊙a`, `θ̄ = −Σ g⊙a`;
//! `N̄ = θ̄/D`, `D̄ = −θ̄ θ/D`, `z̄ = −θ̄/D`; `ρ̄_j = N̄ c_j + D̄ j` and, since
//! `Σ ρ_j ρ̄_j = N̄ N + D̄ D`, the softmax adjoint is `ā_j = ρ_j (ρ̄_j − N̄N − D̄D)` for the logit
//! `a_j = j δ_j`; `r̄_j = j ā_j/(1 + |r_j|)²` (softsign' is `1/(1 + |r|)²`, continuous at 0);
//! `r` feeds `μ̄_j += j r̄_j`, `c̄_j −= r̄_j`, `z̄ += r̄_j`; `c̄_j += N̄ ρ_j`; the cumsum adjoint is
//! a suffix sum, `μ̄_k += Σ_{j≥k} c̄_j`; finally μ̄ is scattered back through the sort
//! permutation.
//!
//! Implementation: dense, one sort (`util::argsort_desc`) and O(L) passes; every `j` has a
//! non-zero logit, so there is no head/tail split as in the released variant. The softmax
//! subtracts its largest logit (the logits reach ±L). The order Dykstra could pass in is not
//! used ([`Projector::uses_order`] is `false`): each call sorts its own row.

use crate::util::{argsort_desc, masked_copy_sum, of, validate, SortScratch, ZRange};
use crate::{ProjError, Projector, Real};

/// Algorithm 1 of the paper as printed (softsign without a ReLU), onto `B(z)`, `z ≥ 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoftSimplexPrinted;

/// Tape of [`SoftSimplexPrinted`].
#[derive(Debug, Clone, Default)]
pub struct SoftPrintedTape<F> {
    perm: Vec<u32>,
    sort: SortScratch,
    /// The cumulative sums `c_j`.
    c: Vec<F>,
    /// `j/(1 + |r_j|)²`: the logit's derivative with respect to `r_j`.
    w: Vec<F>,
    /// The softmax weights `ρ_j`.
    rho: Vec<F>,
    /// `1[v − θ > 0]`, in input order.
    active: Vec<F>,
    theta: F,
    n: F,
    d: F,
}

impl<F: Real> Projector<F> for SoftSimplexPrinted {
    type Tape = SoftPrintedTape<F>;

    fn forward(&self, v: &[F], z: F, out: &mut [F], t: &mut Self::Tape) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::NonNegative)?;
        let (zero, one) = (F::zero(), F::one());
        argsort_desc(v, &mut t.perm, &mut t.sort);
        t.c.clear();
        t.w.clear();
        t.rho.clear();
        // Cumsum, r_j, the logits j δ_j (in `rho` for now) and their largest value.
        let mut c = zero;
        let mut amax = F::neg_infinity();
        for (k, &i) in t.perm.iter().enumerate() {
            let m = v[i as usize];
            let j: F = of(k + 1);
            c += m;
            let r = j * m - (c - z);
            let s = one / (one + r.abs());
            let a = j * (r * s);
            amax = amax.max(a);
            t.c.push(c);
            t.w.push(j * s * s);
            t.rho.push(a);
        }
        // Stable softmax: every exponent is ≤ 0 and the largest is exactly 1.
        let mut sum = zero;
        for a in t.rho.iter_mut() {
            *a = (*a - amax).exp();
            sum += *a;
        }
        let inv = one / sum;
        let (mut n, mut d) = (zero, zero);
        for (k, (p, &ck)) in t.rho.iter_mut().zip(&t.c).enumerate() {
            *p *= inv;
            n += ck * *p;
            d += of::<F>(k + 1) * *p;
        }
        let theta = (n - z) / d;
        t.active.resize(v.len(), zero);
        for ((o, act), &x) in out.iter_mut().zip(t.active.iter_mut()).zip(v) {
            let u = x - theta;
            let pos = u > zero;
            *o = if pos { u } else { zero };
            *act = if pos { one } else { zero };
        }
        t.theta = theta;
        t.n = n;
        t.d = d;
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        let dtheta = -masked_copy_sum(&t.active, g, gv);
        let dn = dtheta / t.d;
        let dd = -dtheta * t.theta / t.d;
        let mut gz = -dtheta / t.d;
        let dot = dn * t.n + dd * t.d;
        // From the last rank to the first, carrying the suffix sum of c̄.
        let mut suffix = F::zero();
        for k in (0..t.perm.len()).rev() {
            let j: F = of(k + 1);
            let rho = t.rho[k];
            let da = rho * (dn * t.c[k] + dd * j - dot);
            let dr = da * t.w[k];
            gz += dr;
            suffix += dn * rho - dr;
            gv[t.perm[k] as usize] += j * dr + suffix;
        }
        gz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `v = (1, 0)`, `z = 1`: `r = (1, 0)`, `δ = (1/2, 0)`, logits `(1/2, 0)`; a hand check of
    /// the formula (the released variant gives the same here, since no `r_j` is negative).
    #[test]
    fn two_entries_by_hand() {
        let mut out = [0.0f64; 2];
        let mut t = SoftPrintedTape::default();
        SoftSimplexPrinted
            .forward(&[1.0, 0.0], 1.0, &mut out, &mut t)
            .unwrap();
        let e = 0.5f64.exp();
        let (p1, p2) = (e / (e + 1.0), 1.0 / (e + 1.0));
        // c = (1, 1): N = 1, D = p1 + 2 p2.
        let theta = (1.0 - 1.0) / (p1 + 2.0 * p2);
        assert!((out[0] - (1.0 - theta)).abs() < 1e-15, "{out:?}");
        assert_eq!(out[1], 0.0);
    }

    /// A negative `r_j` gets a negative logit: `v = (3, 0, 0)`, `z = 1` has `r = (1, −2, −2)`.
    #[test]
    fn negative_r_enters_the_softmax() {
        let mut out = [0.0f64; 3];
        let mut t = SoftPrintedTape::default();
        SoftSimplexPrinted
            .forward(&[3.0, 0.0, 0.0], 1.0, &mut out, &mut t)
            .unwrap();
        // Logits j δ_j = (1/2, −4/3, −2); c = (3, 3, 3).
        let a = [0.5f64, -4.0 / 3.0, -2.0];
        let s: f64 = a.iter().map(|x| x.exp()).sum();
        let rho: Vec<f64> = a.iter().map(|x| x.exp() / s).collect();
        let n = 3.0;
        let d = rho[0] + 2.0 * rho[1] + 3.0 * rho[2];
        let theta = (n - 1.0) / d;
        assert!((out[0] - (3.0 - theta)).abs() < 1e-14, "{out:?}");
        assert_eq!(&out[1..], &[0.0, 0.0]);
    }
}
