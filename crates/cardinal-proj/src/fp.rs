//! "FP": the differentiable version of the fast exact projection of Gupta et al. (2010) that the
//! paper describes in §5.3 (Review of Alternative Approaches, "Fast Exact Projection").
//!
//! Interpretations we had to make (the paper gives prose only):
//! * `μ` = v sorted descending, `c_j = Σ_{i≤j} μ_i`, with an extra index 0 (`c_0 = 0`, score 0)
//!   so that a soft one-hot can say "no coordinate is a one / positive"; indices run 0..L.
//! * The uncertainty interval starts at `[min(ṽ), max(v)]` with `ṽ = max(v − 1, 0)`, as written.
//!   This lower end is ≥ 0, so when the exact λ is negative (large z relative to v) FP cannot
//!   reach it and its output sums to less than z; we keep the paper's interval on purpose.
//! * The median of the breakpoints is replaced by the interval midpoint (plain bisection).
//! * At a trial λ, the soft one-hots are `ρ¹ = softmax(I ⊙ softsign(μ − λ − 1))` (last "one")
//!   and `ρ² = softmax(I ⊙ softsign(μ − λ))` (last positive); `r_k = ⟨I, ρᵏ⟩`,
//!   `C_k = ⟨c, ρᵏ⟩`, and `z_λ = r₁ + C₂ − C₁ − (r₂ − r₁) λ` (Eq. (lambda) solved for z).
//!   `z_λ > z` means λ is too small (lo ← λ), else hi ← λ.
//! * After J iterations, at the final midpoint λ_J the one-hots give, by Eq. (lambda),
//!   `λ* = (C₂ − C₁ − (z − r₁)) / (r₂ − r₁)` and the output is Eq. (u_maximizer):
//!   `u = clip(v − λ*, 0, 1)`. If the soft free count `r₂ − r₁ ≤ 1/2` (no free coordinate) we
//!   use `λ* = λ_J` as a constant instead of dividing by ~0.
//!
//! VJP: the bisection's bound updates are discrete choices and are held constant; the gradient
//! flows through the clip, the formula for λ*, the two soft one-hots (softmax and softsign of
//! `μ`, the cumsum, the sort permutation) and z in the formula. With the choices fixed,
//! `λ_J = α·min(ṽ) + β·max(v)` for dyadic α + β = 1, so λ_J still moves with the interval's
//! initial ends; we include that term, which makes the VJP the exact derivative of the forward
//! map wherever no choice flips.

use crate::util::{argsort_desc, of, validate, SortScratch, ZRange};
use crate::{ProjError, Projector, Real};

/// Differentiable bisection projection onto `C(z)` with `iters` (J) iterations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FastProjection {
    /// Bisection iterations J. 0 is accepted and degenerate: λ_J is the midpoint of the initial
    /// interval, and only Eq. (lambda) at that point is left to find λ*; the CLI and
    /// configurations require `1..=200`.
    pub iters: usize,
}

/// Tape of [`FastProjection`].
#[derive(Debug, Clone, Default)]
pub struct FpTape<F> {
    perm: Vec<u32>,
    mu: Vec<F>,
    sort: SortScratch,
    c: Vec<F>,
    /// Soft one-hots over indices 1..L (index 0 only enters the normalisation).
    rho1: Vec<F>,
    rho2: Vec<F>,
    lam_j: F,
    /// λ_J = α·lo₀ + β·hi₀ (the bisection only ever averages the two initial ends).
    alpha_beta: (F, F),
    lo0_active: bool,
    lam: F,
    sums: [F; 4], // C1, C2, r1, r2
    formula: bool,
    free: Vec<F>,
}

/// Soft one-hot of the last index with `μ_j − t > 0`; returns (⟨c, ρ⟩, ⟨I, ρ⟩).
fn soft_last<F: Real>(mu: &[F], c: &[F], t: F, rho: &mut Vec<F>) -> (F, F) {
    let (zero, one) = (F::zero(), F::one());
    rho.clear();
    let mut amax = zero; // index 0 has score 0
    for (k, &m) in mu.iter().enumerate() {
        let x = m - t;
        let a = of::<F>(k + 1) * x / (one + x.abs());
        amax = amax.max(a);
        rho.push(a);
    }
    let mut s = (zero - amax).exp();
    for a in rho.iter_mut() {
        *a = (*a - amax).exp();
        s += *a;
    }
    let (mut cs, mut is) = (zero, zero);
    for (k, p) in rho.iter_mut().enumerate() {
        *p /= s;
        cs += c[k] * *p;
        is += of::<F>(k + 1) * *p;
    }
    (cs, is)
}

impl<F: Real> Projector<F> for FastProjection {
    type Tape = FpTape<F>;

    fn forward(&self, v: &[F], z: F, out: &mut [F], t: &mut Self::Tape) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::UpToLen)?;
        let (zero, one) = (F::zero(), F::one());
        let half = F::from_f64(0.5).unwrap();
        argsort_desc(v, &mut t.perm, &mut t.sort);
        t.mu.clear();
        t.mu.extend(t.perm.iter().map(|&i| v[i as usize]));
        t.c.clear();
        let mut acc = zero;
        for &m in &t.mu {
            acc += m;
            t.c.push(acc);
        }
        let l = v.len();
        let lo_arg = t.mu[l - 1] - one;
        t.lo0_active = lo_arg > zero;
        let mut lo = lo_arg.max(zero);
        let mut hi = t.mu[0];
        let mut lam = half * (lo + hi);
        // Coefficients of lo, hi and λ on (lo₀, hi₀), for the derivative of λ_J.
        let (mut clo, mut chi) = ((one, zero), (zero, one));
        let mut clam = (half, half);
        for _ in 0..self.iters {
            let (c1, r1) = soft_last(&t.mu, &t.c, lam + one, &mut t.rho1);
            let (c2, r2) = soft_last(&t.mu, &t.c, lam, &mut t.rho2);
            let z_lam = r1 + c2 - c1 - (r2 - r1) * lam;
            if z_lam > z {
                lo = lam;
                clo = clam;
            } else {
                hi = lam;
                chi = clam;
            }
            lam = half * (lo + hi);
            clam = (half * (clo.0 + chi.0), half * (clo.1 + chi.1));
        }
        let (c1, r1) = soft_last(&t.mu, &t.c, lam + one, &mut t.rho1);
        let (c2, r2) = soft_last(&t.mu, &t.c, lam, &mut t.rho2);
        let d = r2 - r1;
        t.formula = d > half;
        t.lam_j = lam;
        t.alpha_beta = clam;
        t.lam = if t.formula {
            (c2 - c1 - (z - r1)) / d
        } else {
            lam
        };
        t.sums = [c1, c2, r1, r2];
        t.free.clear();
        t.free.resize(l, zero);
        for ((o, f), &x) in out.iter_mut().zip(t.free.iter_mut()).zip(v) {
            let u = (x - t.lam).max(zero).min(one);
            *o = u;
            *f = if u > zero && u < one { one } else { zero };
        }
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        let (zero, one) = (F::zero(), F::one());
        let mut dlam = zero;
        for ((o, &f), &gi) in gv.iter_mut().zip(&t.free).zip(g) {
            *o = f * gi;
            dlam -= f * gi;
        }
        let l = t.mu.len();
        let (alpha, beta) = t.alpha_beta;
        if !t.formula {
            // λ* = λ_J: only the interval ends carry gradient.
            gv[t.perm[0] as usize] += beta * dlam;
            if t.lo0_active {
                gv[t.perm[l - 1] as usize] += alpha * dlam;
            }
            return zero;
        }
        let [c1, c2, r1, r2] = t.sums;
        let inv = one / (r2 - r1);
        let (dc2, dc1) = (dlam * inv, -dlam * inv);
        let gz = -dlam * inv;
        let dr1 = dlam * inv * (one + t.lam);
        let dr2 = -dlam * inv * t.lam;
        let dot1 = dc1 * c1 + dr1 * r1;
        let dot2 = dc2 * c2 + dr2 * r2;
        let mut suffix = zero;
        let mut dlam_j = zero;
        for k in (0..l).rev() {
            let j: F = of(k + 1);
            let (p1, p2) = (t.rho1[k], t.rho2[k]);
            let x1 = t.mu[k] - t.lam_j - one;
            let x2 = t.mu[k] - t.lam_j;
            let a1 = p1 * (dc1 * t.c[k] + dr1 * j - dot1);
            let a2 = p2 * (dc2 * t.c[k] + dr2 * j - dot2);
            let q1 = one + x1.abs();
            let q2 = one + x2.abs();
            let dmu = j * (a1 / (q1 * q1) + a2 / (q2 * q2));
            dlam_j -= dmu; // the scores see μ_j − λ_J
            suffix += dc1 * p1 + dc2 * p2;
            gv[t.perm[k] as usize] += dmu + suffix;
        }
        gv[t.perm[0] as usize] += beta * dlam_j;
        if t.lo0_active {
            gv[t.perm[l - 1] as usize] += alpha * dlam_j;
        }
        gz
    }
}
