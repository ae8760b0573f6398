//! The count that maximises an approximation of the expected example-F1, from the count
//! network's distribution `P(s)` over the counts and per-label marginals `m` (GFM-style
//! decoding, after Waegeman et al., "On the Bayes-optimality of F-measure maximizers", 2014).
//!
//! Predicting the `k` labels of highest marginal, a row of gold count `s` scores
//! `F1 = 2·hits / (k + s)`. With the number of hits among them taken as their summed marginals,
//! whatever `s` (the labels' marginals as independent of the count), the expected F1 is
//!
//! ```text
//! E(k) = Σ_{s > 0} P(s) · 2·(m_(1) + … + m_(k)) / (k + s)      (k ≥ 1)
//! E(0) = P(0)                                               (an empty set for an empty row)
//! ```
//!
//! where `m_(1) ≥ m_(2) ≥ …` are the marginals in decreasing order; for a given `k` the `k`
//! labels of highest marginal maximise the expression over all sets of `k` labels, so the
//! best set is found by trying every `k`. The empty prediction counts 1 on an empty row (the
//! convention of the default's search, `crate::search`).

/// The expected example-F1 `E(k)` of predicting the `k` labels of highest marginal, for every
/// `k` from 0 to `marginals.len()` (module docs). `probs[j]` is the probability of the count
/// `counts[j]`; `marginals` need not be sorted.
pub fn expected_f1_by_size(probs: &[f64], counts: &[f64], marginals: &[f64]) -> Vec<f64> {
    let mut m = marginals.to_vec();
    m.sort_by(|a, b| b.total_cmp(a));
    let mut e = vec![0.0; m.len() + 1];
    for (&p, &s) in probs.iter().zip(counts) {
        if s <= 0.0 {
            e[0] += p;
            continue;
        }
        let mut hits = 0.0;
        for (k, &v) in m.iter().enumerate() {
            hits += v;
            e[k + 1] += p * 2.0 * hits / (k as f64 + 1.0 + s);
        }
    }
    e
}

/// The set size with the highest expected example-F1 ([`expected_f1_by_size`]), the smallest
/// among ties.
pub fn expected_f1_count(probs: &[f64], counts: &[f64], marginals: &[f64]) -> usize {
    let e = expected_f1_by_size(probs, counts, marginals);
    let mut best = 0;
    for (k, &v) in e.iter().enumerate() {
        if v > e[best] {
            best = k;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The approximate expected F1 of the set `set` (a bit mask over labels), computed
    /// directly from the definition: `Σ_s P(s) F1`, hits counted as the set's marginals.
    fn expected_f1_of_set(probs: &[f64], counts: &[f64], m: &[f64], set: u32) -> f64 {
        let k = set.count_ones() as f64;
        let hits: f64 = (0..m.len())
            .filter(|&i| set >> i & 1 == 1)
            .map(|i| m[i])
            .sum();
        probs
            .iter()
            .zip(counts)
            .map(|(&p, &s)| match (k == 0.0, s == 0.0) {
                (true, true) => p,
                (true, false) | (false, true) => 0.0,
                (false, false) => p * 2.0 * hits / (k + s),
            })
            .sum()
    }

    /// On small label sets, the best size's top-`k` set is as good as the best of every subset
    /// (by brute force), and `E(k)` is the best subset of size `k`.
    #[test]
    fn the_best_size_matches_brute_force_over_every_subset() {
        let mut g = cardinal_testkit::Lcg::new(12345);
        let mut next = || g.uniform();
        for case in 0..300 {
            let l = 1 + case % 6;
            let m: Vec<f64> = (0..l).map(|_| next()).collect();
            let counts: Vec<f64> = (0..=l.min(4)).map(|c| c as f64).collect();
            let mut probs: Vec<f64> = counts.iter().map(|_| next().powi(2)).collect();
            if case % 3 == 0 {
                probs[0] = 0.0;
            }
            let total: f64 = probs.iter().sum();
            probs.iter_mut().for_each(|p| *p /= total);
            let by_size = expected_f1_by_size(&probs, &counts, &m);
            let mut best_of_size = vec![f64::MIN; l + 1];
            for set in 0u32..(1 << l) {
                let e = expected_f1_of_set(&probs, &counts, &m, set);
                let k = set.count_ones() as usize;
                best_of_size[k] = best_of_size[k].max(e);
            }
            for k in 0..=l {
                assert!(
                    (by_size[k] - best_of_size[k]).abs() < 1e-12,
                    "case {case} k {k}"
                );
            }
            let k = expected_f1_count(&probs, &counts, &m);
            let best = best_of_size.iter().cloned().fold(f64::MIN, f64::max);
            assert!((by_size[k] - best).abs() < 1e-12);
            assert!(by_size[..k].iter().all(|&v| v < best));
        }
    }

    /// Hand-checked cases: a sure empty row predicts nothing; a sure count of 2 with two
    /// confident labels predicts both; with one confident label of three, one.
    #[test]
    fn hand_checked_sizes() {
        let counts = [0.0, 1.0, 2.0];
        assert_eq!(expected_f1_count(&[1.0, 0.0, 0.0], &counts, &[0.9, 0.9]), 0);
        assert_eq!(
            expected_f1_count(&[0.0, 0.0, 1.0], &counts, &[0.9, 0.9, 0.1]),
            2
        );
        // k = 1: 2·0.9/3 = 0.6; k = 2: 2·1.0/4 = 0.5.
        let e = expected_f1_by_size(&[0.0, 0.0, 1.0], &counts, &[0.9, 0.1, 0.0]);
        assert!((e[1] - 0.6).abs() < 1e-12 && (e[2] - 0.5).abs() < 1e-12);
        assert_eq!(
            expected_f1_count(&[0.0, 0.0, 1.0], &counts, &[0.9, 0.1, 0.0]),
            1
        );
    }
}
