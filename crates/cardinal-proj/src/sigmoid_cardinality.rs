//! The "SC" alternative of the paper (§5, Review of Alternative Approaches): a cardinality
//! potential built from sigmoid indicators instead of a projection,
//!
//! ```text
//! s(y) = Σ_k w_k I_k (1 − I_{k+1}),   I_k = σ(S − k),   S = Σ_i y_i,
//! ```
//!
//! with `k = k_min, k_min + 1, …, k_min + K − 1` for `K = w.len()`. Everything depends on y only
//! through S, so `∂s/∂y_i = γ(S)` is the same for every coordinate, with (σ' = σ(1−σ))
//! `γ(S) = Σ_k w_k [σ'(S−k)(1 − I_{k+1}) − I_k σ'(S−k−1)]`.
//! Unrolled gradient ascent differentiates through γ: for the vector `G = γ(S)·1` and an upstream
//! adjoint `h`, with `H = Σ h_i`, `ȳ_i = H γ'(S)` and `w̄_k = H ∂γ/∂w_k`, where
//! `γ'(S) = Σ_k w_k [σ''(S−k)(1 − I_{k+1}) − 2σ'(S−k)σ'(S−k−1) − I_k σ''(S−k−1)]`,
//! `σ'' = σ'(1 − 2σ)`.

use crate::Real;

/// Numerically stable logistic function.
#[inline]
pub fn sigmoid<F: Real>(x: F) -> F {
    let one = F::one();
    if x >= F::zero() {
        one / (one + (-x).exp())
    } else {
        let e = x.exp();
        e / (one + e)
    }
}

/// (σ, σ', σ'') at `x`.
#[inline]
fn sig3<F: Real>(x: F) -> (F, F, F) {
    let one = F::one();
    let s = sigmoid(x);
    let d1 = s * (one - s);
    let d2 = d1 * (one - (s + s));
    (s, d1, d2)
}

#[inline]
fn k_of<F: Real>(k_min: F, idx: usize) -> F {
    k_min + F::from_usize(idx).expect("index fits a float")
}

/// `s` as a function of the label sum `S`.
pub fn value_of_sum<F: Real>(sum: F, w: &[F], k_min: F) -> F {
    let one = F::one();
    w.iter()
        .enumerate()
        .map(|(i, &wk)| {
            let k = k_of(k_min, i);
            wk * sigmoid(sum - k) * (one - sigmoid(sum - k - one))
        })
        .sum()
}

/// `γ(S) = ds/dS`.
pub fn grad_of_sum<F: Real>(sum: F, w: &[F], k_min: F) -> F {
    let one = F::one();
    w.iter()
        .enumerate()
        .map(|(i, &wk)| wk * dgamma_dw(sum, k_of(k_min, i), one))
        .sum()
}

/// `∂γ/∂w_k` at `S` for the term with threshold `k`.
#[inline]
fn dgamma_dw<F: Real>(sum: F, k: F, one: F) -> F {
    let (a, da, _) = sig3(sum - k);
    let (b, db, _) = sig3(sum - k - one);
    da * (one - b) - a * db
}

/// `γ'(S) = d²s/dS²`.
pub fn dgrad_of_sum<F: Real>(sum: F, w: &[F], k_min: F) -> F {
    let one = F::one();
    let two = one + one;
    w.iter()
        .enumerate()
        .map(|(i, &wk)| {
            let k = k_of(k_min, i);
            let (a, da, dda) = sig3(sum - k);
            let (b, db, ddb) = sig3(sum - k - one);
            wk * (dda * (one - b) - two * da * db - a * ddb)
        })
        .sum()
}

/// The potential `s(y)`.
pub fn value<F: Real>(y: &[F], w: &[F], k_min: F) -> F {
    value_of_sum(y.iter().copied().sum(), w, k_min)
}

/// `∂s/∂y_i` (identical for every i).
pub fn grad<F: Real>(y: &[F], w: &[F], k_min: F) -> F {
    grad_of_sum(y.iter().copied().sum(), w, k_min)
}

/// Writes the gradient vector `γ(S)·1` into `out`.
pub fn grad_into<F: Real>(y: &[F], w: &[F], k_min: F, out: &mut [F]) {
    let g = grad(y, w, k_min);
    out.iter_mut().for_each(|o| *o = g);
}

/// VJP of the gradient map `y ↦ γ(S)·1` (and of its weights): given the adjoint `h` of the
/// gradient vector, overwrites `gy` with `∂⟨h, G⟩/∂y` and `gw` with `∂⟨h, G⟩/∂w`.
pub fn grad_vjp<F: Real>(y: &[F], w: &[F], k_min: F, h: &[F], gy: &mut [F], gw: &mut [F]) {
    assert_eq!(y.len(), h.len(), "adjoint length");
    assert_eq!(y.len(), gy.len(), "gradient buffer length");
    assert_eq!(w.len(), gw.len(), "weight gradient length");
    let sum: F = y.iter().copied().sum();
    let hs: F = h.iter().copied().sum();
    let d = hs * dgrad_of_sum(sum, w, k_min);
    gy.iter_mut().for_each(|o| *o = d);
    let one = F::one();
    for (i, o) in gw.iter_mut().enumerate() {
        *o = hs * dgamma_dw(sum, k_of(k_min, i), one);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_is_stable_and_symmetric() {
        assert_eq!(sigmoid(1000.0f64), 1.0);
        assert_eq!(sigmoid(-1000.0f64), 0.0);
        for x in [-3.0f64, -0.5, 0.0, 0.7, 4.0] {
            assert!((sigmoid(x) + sigmoid(-x) - 1.0).abs() < 1e-15);
        }
    }

    #[test]
    fn potential_peaks_between_thresholds() {
        // One weight at k = 2: I_2(1 − I_3) is largest for S ≈ 2.5 and small far away.
        let w = [1.0f64];
        let at = |s: f64| value_of_sum(s, &w, 2.0);
        assert!(at(2.5) > at(0.0) && at(2.5) > at(5.0));
        assert!(grad_of_sum(2.5, &w, 2.0).abs() < 1e-12, "symmetric peak");
        assert!(grad_of_sum(1.5, &w, 2.0) > 0.0 && grad_of_sum(3.5, &w, 2.0) < 0.0);
    }
}
