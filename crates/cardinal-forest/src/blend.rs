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
pub struct Networks<'a> {
    /// Unary scores, `n × L` row-major.
    pub unary: &'a [f64],
    /// Count probabilities, `n × K` row-major, over `counts`.
    pub count_probs: &'a [f64],
    /// The counts the probabilities are over.
    pub counts: &'a [usize],
    /// The networks' weight in the mixture, in `[0, 1)` as configured; the forest has the rest.
    pub share: f64,
}

/// The most counts of the networks' distribution a row's blend reads: with more, the likeliest
/// this many (their probabilities scaled to sum to 1). Each count adds a pair for every label,
/// so this bounds a row's pairs at `L` times it (the development suite's files have at most
/// 175 counts, and are read whole).
pub const MAX_NETWORK_COUNTS: usize = 256;

use super::gfm::Joint;

impl Networks<'_> {
    /// The blend of the forest's joint `forest` with the networks' joint on row `r`; the
    /// forest's alone where the networks' outputs are not all finite (weights or inputs so
    /// large that they overflow), which would otherwise make every probability NaN.
    pub(crate) fn blend(&self, r: usize, forest: Joint) -> Joint {
        let k = self.counts.len();
        let l = forest.n_labels();
        let u = &self.unary[r * l..(r + 1) * l];
        let probs = &self.count_probs[r * k..(r + 1) * k];
        if !u.iter().chain(probs).all(|v| v.is_finite()) {
            return forest;
        }
        let keep = 1.0 - self.share;
        let mut p_empty = keep * forest.p_empty;
        // The counts read, in the networks' order: (size, mass), sizes beyond the labels put
        // every label on (the whole set).
        let mut read: Vec<(usize, f64)> = self
            .counts
            .iter()
            .zip(probs)
            .map(|(&s, &p)| (s, self.share * p))
            .filter(|&(_, mass)| mass > 0.0)
            .collect();
        if read.len() > MAX_NETWORK_COUNTS {
            let mut by_mass: Vec<usize> = (0..read.len()).collect();
            by_mass.sort_by(|&a, &b| read[b].1.total_cmp(&read[a].1).then(a.cmp(&b)));
            by_mass.truncate(MAX_NETWORK_COUNTS);
            by_mass.sort_unstable();
            let scale = self.share / by_mass.iter().map(|&j| read[j].1).sum::<f64>();
            read = by_mass
                .into_iter()
                .map(|j| (read[j].0, read[j].1 * scale))
                .collect();
        }
        let mut components: Vec<(u32, f64, Vec<f64>)> = Vec::with_capacity(read.len());
        for (s, mass) in read {
            if s == 0 {
                p_empty += mass;
                continue;
            }
            let s = s.min(l);
            let mut on = vec![0.0; l];
            tilted(u, s as f64, &mut on);
            components.push((s as u32, mass, on));
        }
        // Sizes in order; a stable sort keeps the networks' order among equal sizes, the order
        // their masses are added in.
        components.sort_by_key(|c| c.0);
        let labels = (0..l).map(|i| {
            let mut out: Vec<(u32, f64)> = Vec::new();
            let mut f = forest.label(i).iter().peekable();
            let mut c = components.iter().peekable();
            loop {
                let s = match (f.peek(), c.peek()) {
                    (Some(a), Some(b)) => a.0.min(b.0),
                    (Some(a), None) => a.0,
                    (None, Some(b)) => b.0,
                    (None, None) => break,
                };
                let mut v = match f.next_if(|t| t.0 == s) {
                    Some(&(_, d)) => keep * d,
                    None => 0.0,
                };
                while let Some((_, mass, on)) = c.next_if(|t| t.0 == s) {
                    v += mass * on[i];
                }
                out.push((s, v));
            }
            out
        });
        Joint::from_labels(labels.collect::<Vec<_>>(), p_empty)
    }
}

/// `out_i = σ(u_i + λ)` with `λ` such that `Σ_i out_i = s`, for `0 < s ≤ L`: Newton's method on
/// the increasing `Σ σ(u_i + λ)`, kept inside a bracket that bisection shrinks when a step
/// would leave it. At `s = L` every label is on.
pub fn tilted(u: &[f64], s: f64, out: &mut [f64]) {
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
        let forest = || Joint::from_dense(&[0.5, 0.3, 0.0, 0.3], 2, 0.2);
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
        assert_eq!(f, forest());
        let n = nets(1.0).blend(0, forest());
        assert!((n.p_empty - 0.1).abs() < 1e-12);
        let n = n.dense(2);
        // s = 2 of 2 labels: both on; s = 1: σ(±1 + λ) with λ = 0 (they sum to 1).
        let s1 = 1.0 / (1.0 + (-1.0f64).exp());
        let want = [0.6 * s1, 0.3, 0.6 * (1.0 - s1), 0.3];
        for (a, b) in n.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{n:?}");
        }
        let m = nets(0.25).blend(0, forest());
        assert!((m.p_empty - (0.75 * 0.2 + 0.25 * 0.1)).abs() < 1e-12);
        let m = m.dense(2);
        for ((a, b), c) in m.iter().zip(&forest().dense(2)).zip(&n) {
            assert!((a - (0.75 * b + 0.25 * c)).abs() < 1e-12);
        }
        // Σ_i Δ_is / s is P(s); with P(∅) they sum to 1 (the mixture below).
        let total: f64 = (1..=2)
            .map(|s| (0..2).map(|i| m[i * 2 + s - 1]).sum::<f64>() / s as f64)
            .sum();
        assert!((total + 0.75 * 0.2 + 0.25 * 0.1 - 1.0).abs() < 1e-9);
    }

    /// Counts the forest never saw widen the joint (the forest's `Δ` re-laid in the wider
    /// rows), counts beyond the labels put every label on, and a row whose network outputs
    /// are not finite is decided by the forest alone.
    #[test]
    fn wider_counts_widen_the_joint_and_non_finite_outputs_leave_the_forest() {
        // Two labels; the forest saw only sets of one label: {0} 0.6, {1} 0.4.
        let forest = || Joint::from_dense(&[0.6, 0.4], 1, 0.0);
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
        assert!((b.p_empty - 0.05).abs() < 1e-12);
        let b = b.dense(2);
        // s = 1: each label half on (equal scores); s = 2 and the impossible s = 3: both on.
        let want = [
            0.5 * 0.6 + 0.5 * 0.2 * 0.5,
            0.5 * (0.3 + 0.4),
            0.5 * 0.4 + 0.5 * 0.2 * 0.5,
            0.5 * (0.3 + 0.4),
        ];
        for (a, w) in b.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{b:?}");
        }
        // Row 1's scores are NaN: the forest's joint, unchanged.
        assert_eq!(nets.blend(1, forest()), forest());
    }

    /// Beyond `MAX_NETWORK_COUNTS` counts of positive probability, the likeliest are read and
    /// scaled to the networks' share; fewer are read whole (the other tests).
    #[test]
    fn only_the_likeliest_counts_are_read_when_they_are_many() {
        let n = MAX_NETWORK_COUNTS + 44;
        let l = n + 10;
        let unary = vec![0.0; l];
        // Count `s` has probability proportional to `s + 1`: the 44 smallest are dropped.
        let total = (n * (n + 1) / 2) as f64;
        let probs: Vec<f64> = (0..n).map(|s| (s + 1) as f64 / total).collect();
        let counts: Vec<usize> = (0..n).collect();
        let nets = Networks {
            unary: &unary,
            count_probs: &probs,
            counts: &counts,
            share: 0.5,
        };
        let forest = Joint::from_labels((0..l).map(|_| Vec::new()), 0.0);
        let b = nets.blend(0, forest);
        // Every label has equal scores, so each is on with probability s/L in a set of s.
        let kept: f64 = (44..n).map(|s| (s + 1) as f64).sum();
        let sizes: Vec<u32> = b.label(0).iter().map(|t| t.0).collect();
        assert_eq!(sizes, (44..n as u32).collect::<Vec<_>>());
        for &(s, d) in b.label(3) {
            let want = 0.5 * (s + 1) as f64 / kept * s as f64 / l as f64;
            assert!((d - want).abs() < 1e-12, "{s}: {d} against {want}");
        }
        assert_eq!(b.p_empty, 0.0);
    }
}
