//! The label set of highest expected example-F1 under a joint distribution of label sets
//! (the general F-measure maximiser of Jansche 2007 and Dembczyński et al. 2011).
//!
//! With `Δ_is` the probability that label `i` is on and the set has `s` labels, a set `h` of
//! `k > 0` labels has the expected F1 `Σ_{i∈h} Σ_s 2·Δ_is/(s + k)`, and the empty set has
//! `P(0)`, the probability of an empty gold set (an empty prediction for an empty truth
//! scores 1). For each `k` the best `h` is the `k` labels of largest `f_i(k) = Σ_s
//! 2·Δ_is/(s + k)`, so the optimum is a scan over `k`.

/// The joint distribution of one row, stored sparsely: only the pairs `(i, s)` with
/// `Δ_is > 0`. A forest's row touches only the label sets of a few training rows, so its
/// pairs are far fewer than `L × s_max`, which for a file with one large set would not fit
/// in memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Joint {
    /// Label `i`'s pairs are `terms[offsets[i]..offsets[i + 1]]`.
    pub(crate) offsets: Vec<usize>,
    /// `(s, Δ_is)`, sizes increasing within a label, every `Δ_is > 0`.
    pub(crate) terms: Vec<(u32, f64)>,
    /// The probability of the empty set.
    pub(crate) p_empty: f64,
}

/// A decision: the labels (increasing), and every label's score `f_i(k)` at the chosen `k`
/// (at `k = 1` when the set is empty), the order a ranking of the labels follows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub(crate) labels: Vec<u32>,
    pub(crate) scores: Vec<f64>,
}

/// Sizes scored evenly over the range before the scan.
const PROBES: usize = 16;

/// Slack for rounding: a bound this far below the best may still hide an equal set.
const SLACK: f64 = 1e-12;

impl Joint {
    /// A joint of `n_labels` labels from each label's pairs, given label by label in order.
    pub(crate) fn from_labels<I>(labels: I, p_empty: f64) -> Self
    where
        I: IntoIterator,
        I::Item: IntoIterator<Item = (u32, f64)>,
    {
        let mut offsets = vec![0];
        let mut terms = Vec::new();
        for label in labels {
            terms.extend(label.into_iter().filter(|t| t.1 > 0.0));
            offsets.push(terms.len());
        }
        Self {
            offsets,
            terms,
            p_empty,
        }
    }

    pub(crate) fn n_labels(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Label `i`'s pairs.
    pub(crate) fn label(&self, i: usize) -> &[(u32, f64)] {
        &self.terms[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Every label's marginal `Σ_s Δ_is`.
    pub(crate) fn marginals(&self) -> impl Iterator<Item = f64> + '_ {
        // From +0.0: an empty sum of `f64` is -0.0, which would print as "-0.0".
        (0..self.n_labels()).map(|i| self.label(i).iter().fold(0.0, |a, t| a + t.1))
    }

    /// `f_i(k)` for every label.
    fn scores(&self, k: usize, out: &mut [f64]) {
        for (i, f) in out.iter_mut().enumerate() {
            *f = self
                .label(i)
                .iter()
                .map(|&(s, d)| 2.0 * d / ((s as usize + k) as f64))
                .sum();
        }
    }

    /// The `k` labels of largest score (ties to the lower label), and their sum.
    fn top(scores: &[f64], k: usize, order: &mut Vec<u32>) -> f64 {
        order.clear();
        order.extend(0..scores.len() as u32);
        let by = |a: &u32, b: &u32| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then(a.cmp(b))
        };
        if k < order.len() {
            order.select_nth_unstable_by(k, by);
            order.truncate(k);
        }
        order.iter().map(|&i| scores[i as usize]).sum()
    }

    /// The set of highest expected F1 (the smallest such set on ties), or with `fixed` the
    /// best set of exactly that many labels.
    pub(crate) fn decide(&self, fixed: Option<usize>) -> Decision {
        let l = self.n_labels();
        let mut scores = vec![0.0; l];
        let mut order = Vec::with_capacity(l);
        let k = match fixed {
            Some(k) => k.min(l),
            None => self.best_size(&mut scores, &mut order),
        };
        self.scores(k.max(1), &mut scores);
        Self::top(&scores, k, &mut order);
        order.sort_unstable();
        Decision {
            labels: order,
            scores,
        }
    }

    /// The size of the set of highest expected F1, the smallest on ties: exact, without
    /// scoring every size where most cannot win.
    ///
    /// Two bounds skip sizes. Every label's scores sum to at most `Σ_s 2·m_s/(s + k)`,
    /// `m_s = Σ_i Δ_is`, which falls as `k` grows: once it is below the best set's, no
    /// larger set can win. And for `k` above a size `a` already scored, each
    /// `f_i(k) ≤ f_i(a)·(S + a)/(S + k)` (`S` the largest size with a pair), so the `k`
    /// best scores at `a`, summed and scaled, bound the best set of `k`: a size is scored
    /// only where that bound reaches the best so far, which starts at the best of a few sizes spread
    /// over the range and the expected size.
    fn best_size(&self, scores: &mut [f64], order: &mut Vec<u32>) -> usize {
        let l = self.n_labels();
        // Labels that can score: a set larger than their number only adds zeros.
        let support = (0..l).filter(|&i| !self.label(i).is_empty()).count();
        let mass = self.size_mass();
        let s_top = mass.len() as f64;
        // The sizes with mass, the only terms of the first bound (few where labels are many).
        let sized: Vec<(usize, f64)> = (1..=mass.len())
            .zip(mass.iter().copied())
            .filter(|&(_, m)| m != 0.0)
            .collect();
        let spread =
            |k: usize| -> f64 { sized.iter().map(|&(s, m)| 2.0 * m / ((s + k) as f64)).sum() };
        let (mut best, mut best_k) = (self.p_empty, 0);
        let mut score = |k: usize, scores: &mut [f64], best: &mut f64, best_k: &mut usize| {
            self.scores(k, scores);
            let e = Self::top(scores, k, order);
            if e > *best || (e == *best && k < *best_k) {
                (*best, *best_k) = (e, k);
            }
        };
        // The expected size and sizes spread evenly over the range first: the best set is
        // usually near one of them, and a good best early lets the bounds skip most sizes.
        let expected: f64 = mass.iter().sum();
        let guess = (expected.round() as usize).clamp(1, support.max(1));
        // (On few labels the scan is cheap: the expected size alone.)
        let probes = if support > 4 * PROBES { PROBES } else { 0 };
        let mut first: Vec<usize> = (1..=probes)
            .map(|j| (support * j).div_ceil(probes))
            .collect();
        first.push(guess);
        first.sort_unstable();
        first.dedup();
        first.retain(|&k| k >= 1);
        for &k in &first {
            score(k, scores, &mut best, &mut best_k);
        }
        // The last size scored, and its scores sorted and summed: `prefix[k]` is the sum of
        // its `k` largest.
        let mut anchor: Option<usize> = None;
        let mut prefix: Vec<f64> = Vec::with_capacity(l + 1);
        let mut sorted: Vec<f64> = Vec::with_capacity(l);
        // Rounding in the sums: the bounds are widened by a hair above their exact value.
        let widen = |v: f64| v + v.abs() * 1e-12;
        for k in 1..=support {
            if widen(spread(k)) < best - SLACK {
                break;
            }
            if let Some(a) = anchor {
                let bound = prefix[k] * (s_top + a as f64) / (s_top + k as f64);
                if widen(bound) < best - SLACK {
                    continue;
                }
            }
            if first.binary_search(&k).is_err() {
                score(k, scores, &mut best, &mut best_k);
            } else {
                self.scores(k, scores);
            }
            sorted.clear();
            sorted.extend_from_slice(scores);
            sorted.sort_unstable_by(|a, b| b.total_cmp(a));
            prefix.clear();
            prefix.push(0.0);
            let mut run = 0.0;
            for v in &sorted {
                run += v;
                prefix.push(run);
            }
            anchor = Some(k);
        }
        best_k
    }

    /// `m_s = Σ_i Δ_is`, indexed by `s - 1`.
    fn size_mass(&self) -> Vec<f64> {
        let s_max = self.terms.iter().map(|t| t.0 as usize).max().unwrap_or(0);
        let mut mass = vec![0.0; s_max];
        for i in 0..self.n_labels() {
            for &(s, d) in self.label(i) {
                mass[s as usize - 1] += d;
            }
        }
        mass
    }
}

#[cfg(test)]
impl Joint {
    /// The joint of a dense `delta` (`delta[i * s_max + s - 1] = Δ_is`).
    pub(crate) fn from_dense(delta: &[f64], s_max: usize, p_empty: f64) -> Self {
        let labels = delta.chunks(s_max).map(|row| {
            (1..=s_max as u32)
                .zip(row.iter().copied())
                .collect::<Vec<_>>()
        });
        Self::from_labels(labels, p_empty)
    }

    /// `delta` as `from_dense` takes it.
    pub(crate) fn dense(&self, s_max: usize) -> Vec<f64> {
        let mut delta = vec![0.0; self.n_labels() * s_max];
        for i in 0..self.n_labels() {
            for &(s, d) in self.label(i) {
                delta[i * s_max + s as usize - 1] = d;
            }
        }
        delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cardinal_testkit::Lcg;

    /// Example-F1 of `h` against `y` (bit masks), an empty pair scoring 1.
    fn f1(h: u32, y: u32) -> f64 {
        let (a, b) = (h.count_ones(), y.count_ones());
        if a + b == 0 {
            1.0
        } else {
            2.0 * (h & y).count_ones() as f64 / (a + b) as f64
        }
    }

    /// A random distribution over a few label sets of `l` labels, as (mask, probability).
    fn distribution(rng: &mut Lcg, l: usize) -> Vec<(u32, f64)> {
        let n = 1 + (rng.uniform() * 6.0) as usize;
        let mut sets: Vec<(u32, f64)> = (0..n)
            .map(|_| {
                let mask = (rng.uniform() * (1u32 << l) as f64) as u32 & ((1 << l) - 1);
                (mask, rng.uniform() + 0.01)
            })
            .collect();
        let total: f64 = sets.iter().map(|s| s.1).sum();
        for s in &mut sets {
            s.1 /= total;
        }
        sets
    }

    fn joint(sets: &[(u32, f64)], l: usize) -> (Vec<f64>, f64) {
        let mut delta = vec![0.0; l * l];
        let mut p0 = 0.0;
        for &(mask, p) in sets {
            let s = mask.count_ones() as usize;
            if s == 0 {
                p0 += p;
            }
            for i in (0..l).filter(|i| mask >> i & 1 == 1) {
                delta[i * l + s - 1] += p;
            }
        }
        (delta, p0)
    }

    fn expected(sets: &[(u32, f64)], h: u32) -> f64 {
        sets.iter().map(|&(y, p)| p * f1(h, y)).sum()
    }

    #[test]
    fn the_decision_is_the_best_of_every_subset() {
        let mut rng = Lcg::new(7);
        for _ in 0..300 {
            let l = 1 + (rng.uniform() * 6.0) as usize;
            let sets = distribution(&mut rng, l);
            let (delta, p0) = joint(&sets, l);
            let d = Joint::from_dense(&delta, l, p0).decide(None);
            let mask = d.labels.iter().fold(0u32, |m, &i| m | 1 << i);
            let best = (0..1u32 << l)
                .map(|h| expected(&sets, h))
                .fold(f64::MIN, f64::max);
            assert!(
                (expected(&sets, mask) - best).abs() < 1e-12,
                "{sets:?}: chose {mask:b}"
            );
            // With the size fixed, the best set of that size.
            let k = d.labels.len().max(1).min(l);
            let fixed = Joint::from_dense(&delta, l, p0).decide(Some(k));
            let fmask = fixed.labels.iter().fold(0u32, |m, &i| m | 1 << i);
            assert_eq!(fixed.labels.len(), k);
            let best_k = (0..1u32 << l)
                .filter(|h| h.count_ones() as usize == k)
                .map(|h| expected(&sets, h))
                .fold(f64::MIN, f64::max);
            assert!((expected(&sets, fmask) - best_k).abs() < 1e-12);
        }
    }

    /// On many labels, where the sizes are skipped by bounds, the size chosen is the one a
    /// scan over every size finds (its expected F1 at least as high, and no larger on ties).
    #[test]
    fn the_bounded_search_finds_what_a_full_scan_finds() {
        let mut rng = Lcg::new(11);
        for case in 0..40 {
            let l = 70 + (rng.uniform() * 300.0) as usize;
            // Label sets of sizes spread over the range, or all small.
            let wide = case % 2 == 0;
            let n_sets = 2 + (rng.uniform() * 40.0) as usize;
            let mut delta = vec![0.0; l * l];
            let mut p0 = 0.0;
            let weights: Vec<f64> = (0..n_sets).map(|_| rng.uniform() + 0.05).collect();
            let total: f64 = weights.iter().sum();
            for w in weights {
                let cap = if wide { l } else { 1 + l / 20 };
                let s = (rng.uniform() * (cap + 1) as f64) as usize;
                let s = s.min(l);
                if s == 0 {
                    p0 += w / total;
                    continue;
                }
                let mut on: Vec<usize> = (0..l).collect();
                for j in 0..s {
                    let pick = j + (rng.uniform() * (l - j) as f64) as usize;
                    on.swap(j, pick.min(l - 1));
                }
                for &i in &on[..s] {
                    delta[i * l + s - 1] += w / total;
                }
            }
            let joint = Joint::from_dense(&delta, l, p0);
            let chosen = joint.decide(None).labels.len();
            // The reference: every size scored.
            let mut scores = vec![0.0; l];
            let mut order = Vec::new();
            let (mut best, mut best_k) = (p0, 0);
            for k in 1..=l {
                joint.scores(k, &mut scores);
                let e = Joint::top(&scores, k, &mut order);
                if e > best {
                    (best, best_k) = (e, k);
                }
            }
            assert_eq!(chosen, best_k, "case {case}: {l} labels");
        }
    }

    #[test]
    fn an_empty_row_is_predicted_empty_when_that_is_likelier() {
        let sets = [(0b000, 0.7), (0b011, 0.3)];
        let (delta, p0) = joint(&sets, 3);
        let d = Joint::from_dense(&delta, 3, p0).decide(None);
        assert!(d.labels.is_empty());
    }
}
