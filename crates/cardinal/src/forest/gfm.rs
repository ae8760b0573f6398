//! The label set of highest expected example-F1 under a joint distribution of label sets
//! (the general F-measure maximiser of Jansche 2007 and Dembczyński et al. 2011).
//!
//! With `Δ_is` the probability that label `i` is on and the set has `s` labels, a set `h` of
//! `k > 0` labels has the expected F1 `Σ_{i∈h} Σ_s 2·Δ_is/(s + k)`, and the empty set has
//! `P(0)`, the probability of an empty gold set (an empty prediction for an empty truth
//! scores 1). For each `k` the best `h` is the `k` labels of largest `f_i(k) = Σ_s
//! 2·Δ_is/(s + k)`, so the optimum is a scan over `k`.

/// The joint distribution of one row: `delta[i * s_max + s - 1] = Δ_is` for `s` in
/// `1..=s_max`, and `p_empty`, the probability of the empty set.
pub(crate) struct Joint<'a> {
    pub(crate) delta: &'a [f64],
    pub(crate) s_max: usize,
    pub(crate) p_empty: f64,
}

/// A decision: the labels (increasing), and every label's score `f_i(k)` at the chosen `k`
/// (at `k = 1` when the set is empty), the order a ranking of the labels follows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub(crate) labels: Vec<u32>,
    pub(crate) scores: Vec<f64>,
}

impl Joint<'_> {
    fn n_labels(&self) -> usize {
        self.delta.len() / self.s_max.max(1)
    }

    /// Every label's non-zero `(s, Δ_is)`, the only terms of its scores.
    fn terms(&self) -> Vec<Vec<(usize, f64)>> {
        (0..self.n_labels())
            .map(|i| {
                let row = &self.delta[i * self.s_max..(i + 1) * self.s_max];
                (1..=self.s_max)
                    .zip(row)
                    .filter(|(_, d)| **d > 0.0)
                    .map(|(s, &d)| (s, d))
                    .collect()
            })
            .collect()
    }

    /// `f_i(k)` for every label, from its `terms`.
    fn scores(terms: &[Vec<(usize, f64)>], k: usize, out: &mut [f64]) {
        for (f, t) in out.iter_mut().zip(terms) {
            *f = t.iter().map(|&(s, d)| 2.0 * d / ((s + k) as f64)).sum();
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
        let terms = self.terms();
        // Labels that can score: a set larger than their number only adds zeros.
        let support = terms.iter().filter(|t| !t.is_empty()).count();
        let k = match fixed {
            Some(k) => k.min(l),
            None => {
                let (mut best, mut best_k) = (self.p_empty, 0);
                // Every score is at least 0, so `k` labels' scores sum to at most all labels'
                // `Σ_s 2·m_s/(s + k)`, `m_s = Σ_i Δ_is`, which falls as `k` grows: once it is
                // below the best set's, no larger set can beat it (exact; it spares the scan
                // over every `k` when the labels are many and the sets small).
                let mass: Vec<f64> = (0..self.s_max)
                    .map(|s| (0..l).map(|i| self.delta[i * self.s_max + s]).sum())
                    .collect();
                let bound = |k: usize| -> f64 {
                    (1..=self.s_max)
                        .zip(&mass)
                        .map(|(s, &m)| 2.0 * m / ((s + k) as f64))
                        .sum()
                };
                for k in 1..=support {
                    if bound(k) < best - 1e-12 {
                        break;
                    }
                    Self::scores(&terms, k, &mut scores);
                    let e = Self::top(&scores, k, &mut order);
                    if e > best {
                        (best, best_k) = (e, k);
                    }
                }
                best_k
            }
        };
        Self::scores(&terms, k.max(1), &mut scores);
        Self::top(&scores, k, &mut order);
        order.sort_unstable();
        Decision {
            labels: order,
            scores,
        }
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
            let d = Joint {
                delta: &delta,
                s_max: l,
                p_empty: p0,
            }
            .decide(None);
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
            let fixed = Joint {
                delta: &delta,
                s_max: l,
                p_empty: p0,
            }
            .decide(Some(k));
            let fmask = fixed.labels.iter().fold(0u32, |m, &i| m | 1 << i);
            assert_eq!(fixed.labels.len(), k);
            let best_k = (0..1u32 << l)
                .filter(|h| h.count_ones() as usize == k)
                .map(|h| expected(&sets, h))
                .fold(f64::MIN, f64::max);
            assert!((expected(&sets, fmask) - best_k).abs() < 1e-12);
        }
    }

    #[test]
    fn an_empty_row_is_predicted_empty_when_that_is_likelier() {
        let sets = [(0b000, 0.7), (0b011, 0.3)];
        let (delta, p0) = joint(&sets, 3);
        let d = Joint {
            delta: &delta,
            s_max: 3,
            p_empty: p0,
        }
        .decide(None);
        assert!(d.labels.is_empty());
    }
}
