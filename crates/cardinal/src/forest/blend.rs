//! A forest's joint distribution of label sets blended with the networks' (`model.forest.networks`).
//!
//! The networks give, for a row, a count distribution `P(s)` and unary scores `u`, labels
//! independent given `x` with marginals `σ(u_i)`. Their joint is approximated as `P(s)` times
//! each label's probability of being on in a set of `s` labels, `σ(u_i + λ_s)`, with `λ_s` the
//! shift of every score that makes the labels' expected number `s` (the exponential tilt of
//! independent labels toward the count, the saddle-point estimate of their conditional
//! marginals): `Δ_is = P(s)·σ(u_i + λ_s)`, `Σ_i Δ_is = s·P(s)` as for any joint. A mixture of
//! two joint distributions is a joint distribution, and its `Δ` and `P(∅)` are the mixtures
//! of theirs, so the blend is decided exactly like the forest alone (`gfm`).

/// The networks' outputs for the rows being decided, and their share of the blend.
pub(crate) struct Networks<'a> {
    /// Unary scores, `n × L` row-major.
    pub(crate) unary: &'a [f64],
    /// Count probabilities, `n × K` row-major, over `counts`.
    pub(crate) count_probs: &'a [f64],
    /// The counts the probabilities are over.
    pub(crate) counts: &'a [usize],
    /// The networks' weight in the mixture, in `[0, 1)` as configured; the forest has the rest.
    pub(crate) share: f64,
}

/// A row's joint distribution of label sets.
pub(crate) struct RowJoint {
    /// `delta[i * s_max + s - 1] = Δ_is`, the probability that label `i` is on in a set of
    /// `s` labels.
    pub(crate) delta: Vec<f64>,
    /// The largest set size `delta` has room for.
    pub(crate) s_max: usize,
    /// The probability of the empty set.
    pub(crate) p_empty: f64,
}

impl Networks<'_> {
    /// The blend of the forest's joint `forest` with the networks' joint on row `r`; the
    /// forest's alone where the networks' outputs are not all finite (weights or inputs so
    /// large that they overflow), which would otherwise make every probability NaN.
    pub(crate) fn blend(&self, r: usize, forest: RowJoint) -> RowJoint {
        let k = self.counts.len();
        let l = forest.delta.len() / forest.s_max.max(1);
        let u = &self.unary[r * l..(r + 1) * l];
        let probs = &self.count_probs[r * k..(r + 1) * k];
        if !u.iter().chain(probs).all(|v| v.is_finite()) {
            return forest;
        }
        let s_max = forest
            .s_max
            .max(self.counts.iter().copied().max().unwrap_or(0).min(l));
        let keep = 1.0 - self.share;
        let mut delta = vec![0.0; l * s_max];
        for i in 0..l {
            for s in 1..=forest.s_max {
                delta[i * s_max + s - 1] = keep * forest.delta[i * forest.s_max + s - 1];
            }
        }
        let mut p_empty = keep * forest.p_empty;
        let mut on = vec![0.0; l];
        for (&s, &p) in self.counts.iter().zip(probs) {
            let mass = self.share * p;
            if mass <= 0.0 {
                continue;
            }
            if s == 0 {
                p_empty += mass;
                continue;
            }
            // More labels than there are cannot be on: the whole set.
            let s = s.min(l);
            tilted(u, s as f64, &mut on);
            for (i, &q) in on.iter().enumerate() {
                delta[i * s_max + s - 1] += mass * q;
            }
        }
        RowJoint {
            delta,
            s_max,
            p_empty,
        }
    }
}

/// `out_i = σ(u_i + λ)` with `λ` such that `Σ_i out_i = s`, for `0 < s ≤ L`: Newton's method on
/// the increasing `Σ σ(u_i + λ)`, kept inside a bracket that bisection shrinks when a step
/// would leave it. At `s = L` every label is on.
pub(crate) fn tilted(u: &[f64], s: f64, out: &mut [f64]) {
    let l = u.len() as f64;
    if s >= l {
        out.fill(1.0);
        return;
    }
    let sigma = |v: f64| {
        if v >= 0.0 {
            1.0 / (1.0 + (-v).exp())
        } else {
            let e = v.exp();
            e / (1.0 + e)
        }
    };
    // Finite scores (`Networks::blend` checks); starting at 0 keeps the bracket finite for
    // any row and still holds every score.
    let (min_u, max_u) = u
        .iter()
        .fold((0.0f64, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
    // Every σ below e^-50 at `lo`, above 1 − e^-50 at `hi`: the sum is below `s` at `lo`, above at `hi`.
    let (mut lo, mut hi) = (-max_u - 50.0, -min_u + 50.0);
    let mut lambda = 0.0f64.clamp(lo, hi);
    for _ in 0..200 {
        let (mut f, mut df) = (-s, 0.0);
        for &v in u {
            let q = sigma(v + lambda);
            f += q;
            df += q * (1.0 - q);
        }
        if f.abs() <= 1e-12 * s.max(1.0) {
            break;
        }
        if f > 0.0 {
            hi = lambda;
        } else {
            lo = lambda;
        }
        let newton = lambda - f / df;
        lambda = if df > 0.0 && newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if hi - lo <= 1e-15 * (1.0 + lambda.abs()) {
            break;
        }
    }
    for (o, &v) in out.iter_mut().zip(u) {
        *o = sigma(v + lambda);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tilted marginals sum to the count, keep the scores' order, and are the marginals
    /// themselves when the count is their sum (λ = 0); checked on scores far apart too.
    #[test]
    fn tilted_marginals_sum_to_the_count() {
        let u = [2.0, -1.0, 0.5, -30.0, 12.0, 0.0];
        let mut out = [0.0; 6];
        for s in 1..=6 {
            tilted(&u, s as f64, &mut out);
            let sum: f64 = out.iter().sum();
            assert!((sum - s as f64).abs() < 1e-9, "s = {s}: {sum}");
            assert!(out.iter().all(|q| (0.0..=1.0).contains(q)));
            let mut order: Vec<usize> = (0..6).collect();
            order.sort_by(|&a, &b| u[b].total_cmp(&u[a]));
            assert!(order.windows(2).all(|w| out[w[0]] >= out[w[1]]));
        }
        let sigma: Vec<f64> = u.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
        tilted(&u, sigma.iter().sum(), &mut out);
        for (a, b) in out.iter().zip(&sigma) {
            assert!((a - b).abs() < 1e-9);
        }
    }

    /// The blend is the mixture: at share 0 the forest's joint, at share 1 the networks', and
    /// in between each `Δ_is` and `P(∅)` the weighted sum; the blended joint keeps
    /// `Σ_i Δ_is = s·P(s)` and a total probability of 1.
    #[test]
    fn the_blend_is_the_mixture_of_the_two_joints() {
        // Two labels; the forest: {0} with 0.5, {0, 1} with 0.3, ∅ with 0.2.
        let forest = || RowJoint {
            delta: vec![0.5, 0.3, 0.0, 0.3],
            s_max: 2,
            p_empty: 0.2,
        };
        let unary = [1.0, -1.0];
        let probs = [0.1, 0.6, 0.3];
        let counts = [0, 1, 2];
        let nets = |share| Networks {
            unary: &unary,
            count_probs: &probs,
            counts: &counts,
            share,
        };
        let f = nets(0.0).blend(0, forest());
        assert_eq!((f.delta, f.s_max, f.p_empty), (forest().delta, 2, 0.2));
        let n = nets(1.0).blend(0, forest());
        assert!((n.p_empty - 0.1).abs() < 1e-12);
        // s = 2 of 2 labels: both on; s = 1: σ(±1 + λ) with λ = 0 (they sum to 1).
        let s1 = 1.0 / (1.0 + (-1.0f64).exp());
        let want = [0.6 * s1, 0.3, 0.6 * (1.0 - s1), 0.3];
        for (a, b) in n.delta.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{:?}", n.delta);
        }
        let m = nets(0.25).blend(0, forest());
        for ((a, b), c) in m.delta.iter().zip(&forest().delta).zip(&n.delta) {
            assert!((a - (0.75 * b + 0.25 * c)).abs() < 1e-12);
        }
        assert!((m.p_empty - (0.75 * 0.2 + 0.25 * 0.1)).abs() < 1e-12);
        // Σ_i Δ_is / s is P(s); with P(∅) they sum to 1 (the mixture below).
        let total: f64 = (1..=2)
            .map(|s| (0..2).map(|i| m.delta[i * 2 + s - 1]).sum::<f64>() / s as f64)
            .sum();
        assert!((total + m.p_empty - 1.0).abs() < 1e-9);
    }

    /// Counts the forest never saw widen the joint (the forest's `Δ` re-laid in the wider
    /// rows), counts beyond the labels put every label on, and a row whose network outputs
    /// are not finite is decided by the forest alone.
    #[test]
    fn wider_counts_widen_the_joint_and_non_finite_outputs_leave_the_forest() {
        // Two labels; the forest saw only sets of one label: {0} 0.6, {1} 0.4.
        let forest = || RowJoint {
            delta: vec![0.6, 0.4],
            s_max: 1,
            p_empty: 0.0,
        };
        let unary = [0.0, 0.0, f64::NAN, f64::NAN];
        let probs = [0.1, 0.2, 0.3, 0.4, 0.25, 0.25, 0.25, 0.25];
        let counts = [0, 1, 2, 3];
        let nets = Networks {
            unary: &unary,
            count_probs: &probs,
            counts: &counts,
            share: 0.5,
        };
        let b = nets.blend(0, forest());
        assert_eq!(b.s_max, 2);
        // s = 1: each label half on (equal scores); s = 2 and the impossible s = 3: both on.
        let want = [
            0.5 * 0.6 + 0.5 * 0.2 * 0.5,
            0.5 * (0.3 + 0.4),
            0.5 * 0.4 + 0.5 * 0.2 * 0.5,
            0.5 * (0.3 + 0.4),
        ];
        for (a, w) in b.delta.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{:?}", b.delta);
        }
        assert!((b.p_empty - 0.05).abs() < 1e-12);
        // Row 1's scores are NaN: the forest's joint, unchanged.
        let f = nets.blend(1, forest());
        assert_eq!((f.delta, f.s_max, f.p_empty), (vec![0.6, 0.4], 1, 0.0));
    }
}
