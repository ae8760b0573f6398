//! The ranking metrics MULAN and MEKA users compare on, from each row's label scores: ranking
//! loss, coverage, label-ranking average precision (LRAP) and the micro and macro ROC AUC.
//! Each follows scikit-learn's definition (`label_ranking_loss`, `coverage_error`,
//! `label_ranking_average_precision_score`, `roc_auc_score`), ties included; a NaN score ranks
//! below every number, as in [`super::binarize`].

use serde::{Deserialize, Serialize};

use super::MetricsError;
use crate::data::LabelSets;

/// The most score entries (rows × labels) the micro AUC sorts at once; beyond it the micro
/// AUC is left out (`None`) rather than allocating without bound.
pub const MAX_AUC_ENTRIES: usize = 1 << 26;

/// Ranking metrics of label scores against gold label sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankingReport {
    /// Mean over rows of the fraction of (relevant, irrelevant) label pairs ordered wrongly
    /// (the irrelevant label scored at least as high); 0 for rows with no relevant or no
    /// irrelevant label. Lower is better.
    pub ranking_loss: f64,
    /// Mean over rows of how many labels rank at or above the lowest-scored relevant label (how
    /// far down the ranking one must go to cover every relevant label); 0 for rows with no
    /// relevant label. Lower is better; at best the mean label count.
    pub coverage: f64,
    /// Label-ranking average precision: mean over rows and their relevant labels of the share
    /// of relevant labels among the labels ranked at or above it; 1 for rows with no relevant
    /// or no irrelevant label.
    pub lrap: f64,
    /// ROC AUC of every (row, label) score against its gold bit, pooled; `None` when every
    /// entry has the same gold bit or there are more than [`MAX_AUC_ENTRIES`].
    pub micro_auc: Option<f64>,
    /// Mean over labels of each label's ROC AUC over the rows; labels whose rows are all
    /// relevant or all irrelevant have none and are left out (`auc_labels` says how many
    /// count). `None` when no label has both.
    pub macro_auc: Option<f64>,
    /// Labels the macro AUC averages.
    pub auc_labels: usize,
}

/// A score as it ranks: NaN below every number.
fn key(s: f32) -> f32 {
    if s.is_nan() {
        f32::NEG_INFINITY
    } else {
        s
    }
}

/// The ROC AUC of `entries` (score, relevant), ties counting one half: the Mann-Whitney
/// statistic from average ranks. `None` without both classes. Sorts `entries`.
fn auc(entries: &mut [(f32, bool)]) -> Option<f64> {
    let pos = entries.iter().filter(|e| e.1).count();
    let neg = entries.len() - pos;
    if pos == 0 || neg == 0 {
        return None;
    }
    entries.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    // Sum of the relevant entries' ranks (1-based, tied entries sharing their mean rank).
    let mut rank_sum = 0.0f64;
    let mut i = 0;
    while i < entries.len() {
        let mut j = i;
        while j < entries.len() && entries[j].0 == entries[i].0 {
            j += 1;
        }
        let mean_rank = (i + 1 + j) as f64 / 2.0;
        let in_group = entries[i..j].iter().filter(|e| e.1).count();
        rank_sum += mean_rank * in_group as f64;
        i = j;
    }
    let (p, n) = (pos as f64, neg as f64);
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * n))
}

/// The ranking metrics of row-major `n × L` `scores` against `gold`.
pub fn ranking_report(scores: &[f32], gold: &LabelSets) -> Result<RankingReport, MetricsError> {
    super::binarize::check_scores_gold(scores, gold)?;
    let l = gold.n_labels;
    let n = gold.n_rows;
    let (mut loss_sum, mut coverage_sum, mut lrap_sum) = (0.0f64, 0.0f64, 0.0f64);
    let mut relevant = vec![false; l];
    // (score, relevant) of the row's labels, best first.
    let mut order: Vec<(f32, bool)> = Vec::with_capacity(l);
    for (r, row) in scores.chunks_exact(l.max(1)).enumerate().take(n) {
        let g = gold.row(r);
        g.iter().for_each(|&j| relevant[j as usize] = true);
        order.clear();
        order.extend(row.iter().enumerate().map(|(j, &s)| (key(s), relevant[j])));
        g.iter().for_each(|&j| relevant[j as usize] = false);
        order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        let n_pos = g.len();
        if n_pos == 0 {
            lrap_sum += 1.0;
            continue;
        }
        // Down the ranking, a tied group at a time: labels and relevant labels so far.
        let (mut pos_above, mut wrong_pairs) = (0usize, 0u64);
        let (mut precision_sum, mut cover) = (0.0f64, 0usize);
        let mut i = 0;
        while i < order.len() {
            let mut j = i;
            while j < order.len() && order[j].0 == order[i].0 {
                j += 1;
            }
            let group_pos = order[i..j].iter().filter(|e| e.1).count();
            let group_neg = (j - i) - group_pos;
            let above = j;
            pos_above += group_pos;
            // Each irrelevant label here is at least as high as every relevant label at or
            // below it: those not yet passed, this group's included.
            wrong_pairs += (group_neg * (n_pos - (pos_above - group_pos))) as u64;
            precision_sum += group_pos as f64 * pos_above as f64 / above as f64;
            if group_pos > 0 {
                cover = above;
            }
            i = j;
        }
        coverage_sum += cover as f64;
        if n_pos < l {
            loss_sum += wrong_pairs as f64 / (n_pos * (l - n_pos)) as f64;
            lrap_sum += precision_sum / n_pos as f64;
        } else {
            lrap_sum += 1.0;
        }
    }
    let mean = |s: f64| if n == 0 { 0.0 } else { s / n as f64 };
    let gold_bit = |r: usize, j: usize| gold.row(r).binary_search(&(j as u32)).is_ok();
    let micro_auc = if n * l <= MAX_AUC_ENTRIES {
        let mut all: Vec<(f32, bool)> = Vec::with_capacity(n * l);
        for r in 0..n {
            let g = gold.row(r);
            let row = &scores[r * l..(r + 1) * l];
            let mut next = 0;
            for (j, &s) in row.iter().enumerate() {
                let hit = g.get(next).is_some_and(|&x| x as usize == j);
                next += usize::from(hit);
                all.push((key(s), hit));
            }
        }
        auc(&mut all)
    } else {
        None
    };
    let (mut auc_sum, mut auc_labels) = (0.0f64, 0usize);
    let mut column: Vec<(f32, bool)> = Vec::with_capacity(n);
    for j in 0..l {
        column.clear();
        column.extend((0..n).map(|r| (key(scores[r * l + j]), gold_bit(r, j))));
        if let Some(a) = auc(&mut column) {
            auc_sum += a;
            auc_labels += 1;
        }
    }
    Ok(RankingReport {
        ranking_loss: mean(loss_sum),
        coverage: mean(coverage_sum),
        lrap: mean(lrap_sum),
        micro_auc,
        macro_auc: (auc_labels > 0).then(|| auc_sum / auc_labels as f64),
        auc_labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(l: usize, rows: &[&[u32]]) -> LabelSets {
        let mut s = LabelSets::new(l);
        rows.iter().for_each(|r| s.push_row(r));
        s
    }

    /// The definitions written out pair by pair and label by label, slowly: the reference the
    /// grouped single pass must match.
    fn brute(scores: &[f32], gold: &LabelSets) -> (f64, f64, f64) {
        let l = gold.n_labels;
        let (mut loss, mut cov, mut lrap) = (0.0, 0.0, 0.0);
        for r in 0..gold.n_rows {
            let s: Vec<f32> = scores[r * l..(r + 1) * l].iter().map(|&v| key(v)).collect();
            let rel: Vec<bool> = (0..l).map(|j| gold.row(r).contains(&(j as u32))).collect();
            let n_pos = rel.iter().filter(|&&b| b).count();
            if n_pos > 0 {
                let min_rel = (0..l)
                    .filter(|&j| rel[j])
                    .map(|j| s[j])
                    .fold(f32::INFINITY, f32::min);
                cov += (0..l).filter(|&j| s[j] >= min_rel).count() as f64;
            }
            if n_pos == 0 || n_pos == l {
                lrap += 1.0;
                continue;
            }
            let mut wrong = 0;
            for p in (0..l).filter(|&j| rel[j]) {
                for q in (0..l).filter(|&j| !rel[j]) {
                    wrong += usize::from(s[q] >= s[p]);
                }
            }
            loss += wrong as f64 / (n_pos * (l - n_pos)) as f64;
            let mut ap = 0.0;
            for p in (0..l).filter(|&j| rel[j]) {
                let rank = (0..l).filter(|&j| s[j] >= s[p]).count() as f64;
                let hits = (0..l).filter(|&j| rel[j] && s[j] >= s[p]).count() as f64;
                ap += hits / rank;
            }
            lrap += ap / n_pos as f64;
        }
        let n = gold.n_rows as f64;
        (loss / n, cov / n, lrap / n)
    }

    /// AUC as the share of (relevant, irrelevant) pairs ordered rightly, ties one half.
    fn brute_auc(entries: &[(f32, bool)]) -> Option<f64> {
        let (mut good, mut pairs) = (0.0, 0.0);
        for a in entries.iter().filter(|e| e.1) {
            for b in entries.iter().filter(|e| !e.1) {
                pairs += 1.0;
                good += if a.0 > b.0 {
                    1.0
                } else if a.0 == b.0 {
                    0.5
                } else {
                    0.0
                };
            }
        }
        (pairs > 0.0).then(|| good / pairs)
    }

    #[test]
    fn the_single_pass_matches_the_definitions_with_ties_and_nan() {
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        for case in 0..60 {
            let (n, l) = (1 + next() as usize % 9, 1 + next() as usize % 7);
            // Few distinct values, so that ties are common; a NaN now and then.
            let scores: Vec<f32> = (0..n * l)
                .map(|_| match next() % 11 {
                    0 => f32::NAN,
                    v => (v % 4) as f32 / 4.0,
                })
                .collect();
            let rows: Vec<Vec<u32>> = (0..n)
                .map(|_| (0..l as u32).filter(|_| next() % 3 == 0).collect())
                .collect();
            let refs: Vec<&[u32]> = rows.iter().map(|r| r.as_slice()).collect();
            let gold = sets(l, &refs);
            let got = ranking_report(&scores, &gold).unwrap();
            let (loss, cov, lrap) = brute(&scores, &gold);
            assert!(
                (got.ranking_loss - loss).abs() < 1e-12,
                "{case}: {got:?} vs {loss}"
            );
            assert!(
                (got.coverage - cov).abs() < 1e-12,
                "{case}: {got:?} vs {cov}"
            );
            assert!((got.lrap - lrap).abs() < 1e-12, "{case}: {got:?} vs {lrap}");
            let entry =
                |r: usize, j: usize| (key(scores[r * l + j]), rows[r].contains(&(j as u32)));
            let all: Vec<(f32, bool)> = (0..n)
                .flat_map(|r| (0..l).map(move |j| (r, j)))
                .map(|(r, j)| entry(r, j))
                .collect();
            match (got.micro_auc, brute_auc(&all)) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-12, "{case}"),
                (a, b) => assert_eq!(a, b, "{case}"),
            }
            let per_label: Vec<f64> = (0..l)
                .filter_map(|j| brute_auc(&(0..n).map(|r| entry(r, j)).collect::<Vec<_>>()))
                .collect();
            assert_eq!(got.auc_labels, per_label.len(), "{case}");
            if let Some(m) = got.macro_auc {
                let want = per_label.iter().sum::<f64>() / per_label.len() as f64;
                assert!((m - want).abs() < 1e-12, "{case}");
            }
        }
    }

    #[test]
    fn a_perfect_ranking_scores_best() {
        let gold = sets(4, &[&[0, 2], &[1]]);
        let scores = [0.9, 0.1, 0.8, 0.2, 0.1, 0.7, 0.3, 0.2];
        let r = ranking_report(&scores, &gold).unwrap();
        assert_eq!((r.ranking_loss, r.lrap), (0.0, 1.0));
        assert_eq!(r.coverage, 1.5);
        assert_eq!(r.micro_auc, Some(1.0));
        assert_eq!((r.macro_auc, r.auc_labels), (Some(1.0), 3));
    }
}
