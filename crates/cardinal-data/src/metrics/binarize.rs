//! Turning dense scores into label sets, precision@k, and threshold tuning.
//!
//! Scores are a row-major `n × L` `f32` slice. Ranking puts higher scores first, breaks ties
//! towards the lower label index, and ranks NaN below every number; a NaN score never passes a
//! threshold.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{EmptyF1, MetricOptions, MetricsError, PrecisionAtK};
use crate::data::LabelSets;

/// How to turn one row of scores into a label set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binarize {
    /// Labels with `score >= t` (the P&C/DVN protocol uses `t = 0.5` on the last iterate).
    Threshold(f32),
    /// The `k` best-scored labels (all of them when `k >= L`).
    TopK(usize),
    /// The `round(z_i)` best-scored labels of row `i`, with `z` the predicted cardinalities;
    /// see [`round_cardinality`].
    TopRoundZ,
}

impl Default for Binarize {
    fn default() -> Self {
        Binarize::Threshold(0.5)
    }
}

impl fmt::Display for Binarize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Binarize::Threshold(t) => write!(f, "threshold={t}"),
            Binarize::TopK(k) => write!(f, "top-k={k}"),
            Binarize::TopRoundZ => f.write_str("round-z"),
        }
    }
}

/// Parses `threshold=0.5` (or a bare number; a threshold lies in `[0, 1]`), `top-k=3` and
/// `round-z`.
impl FromStr for Binarize {
    type Err = MetricsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || MetricsError::Parse {
            what: "a binarisation",
            found: s.to_string(),
            expected: "`threshold=T` or a bare T with T in [0, 1], `top-k=K` or `round-z`",
        };
        let t = s.trim();
        if t == "round-z" || t == "top-round-z" {
            return Ok(Binarize::TopRoundZ);
        }
        // A threshold is a score in [0, 1] (NaN would pass no score, infinities all or none).
        let threshold = |v: &str| match v.parse::<f32>() {
            Ok(t) if (0.0..=1.0).contains(&t) => Ok(Binarize::Threshold(t)),
            _ => Err(bad()),
        };
        if let Some(v) = t.strip_prefix("threshold=") {
            return threshold(v);
        }
        if let Some(v) = t.strip_prefix("top-k=") {
            // Zero labels a row is no rule: it empties every row.
            return match v.parse() {
                Ok(0) => Err(MetricsError::Parse {
                    what: "a binarisation",
                    found: s.to_string(),
                    expected: "`top-k=K` with K >= 1 (top-k=0 would choose no label in any row)",
                }),
                Ok(k) => Ok(Binarize::TopK(k)),
                Err(_) => Err(bad()),
            };
        }
        threshold(t)
    }
}

/// Number of rows of a row-major score matrix with `n_labels` columns.
fn score_rows(scores: &[f32], n_labels: usize) -> Result<usize, MetricsError> {
    if n_labels == 0 {
        return Err(MetricsError::ZeroLabels);
    }
    if !scores.len().is_multiple_of(n_labels) {
        return Err(MetricsError::ScoresShape {
            len: scores.len(),
            n_labels,
        });
    }
    Ok(scores.len() / n_labels)
}

/// Checks that `scores` is `gold.n_rows × gold.n_labels`.
pub(super) fn check_scores_gold(scores: &[f32], gold: &LabelSets) -> Result<(), MetricsError> {
    let n = score_rows(scores, gold.n_labels)?;
    if n != gold.n_rows {
        return Err(MetricsError::RowMismatch {
            what: "scores vs gold",
            left: n,
            right: gold.n_rows,
        });
    }
    Ok(())
}

/// `round(z)` (half away from zero) clamped to `[0, n_labels]`: the cardinality `TopRoundZ` uses.
/// A non-finite `z` gives 0; [`binarize`] rejects it before calling this.
pub fn round_cardinality(z: f32, n_labels: usize) -> usize {
    let r = z.round();
    if r.is_nan() || r <= 0.0 {
        0
    } else if r >= n_labels as f32 {
        n_labels
    } else {
        r as usize
    }
}

/// NaN ranks below every number.
#[inline]
fn key(s: f32) -> f32 {
    if s.is_nan() {
        f32::NEG_INFINITY
    } else {
        s
    }
}

/// Up to this `k`, top-k is one scan keeping a sorted buffer; above, a partial selection.
const SMALL_K: usize = 32;

/// The `min(k, L)` best-ranked labels of one score row, best first, into `out` (cleared first).
pub fn top_k_labels(row: &[f32], k: usize, out: &mut Vec<u32>) {
    top_k_with(row, k, out, &mut Vec::new());
}

/// [`top_k_labels`] with a reusable scratch buffer for large `k`.
fn top_k_with(row: &[f32], k: usize, out: &mut Vec<u32>, scratch: &mut Vec<(f32, u32)>) {
    out.clear();
    let k = k.min(row.len());
    if k == 0 {
        return;
    }
    if k <= SMALL_K && k < row.len() {
        // Labels arrive in index order, so an equal score never displaces a kept one: most
        // labels cost one comparison against the current k-th key.
        let mut keys = [0f32; SMALL_K];
        for (l, &s) in row.iter().enumerate() {
            let s = key(s);
            let len = out.len();
            if len == k && s <= keys[k - 1] {
                continue;
            }
            let pos = keys[..len].partition_point(|&x| x >= s);
            let end = if len == k { k - 1 } else { len };
            keys.copy_within(pos..end, pos + 1);
            keys[pos] = s;
            if len == k {
                out.pop();
            }
            out.insert(pos, l as u32);
        }
        return;
    }
    // Sorting (key, index) pairs avoids indirect loads in the comparator.
    let cmp = |a: &(f32, u32), b: &(f32, u32)| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(Ordering::Equal)
            .then(a.1.cmp(&b.1))
    };
    scratch.clear();
    scratch.extend(row.iter().enumerate().map(|(l, &s)| (key(s), l as u32)));
    if k < scratch.len() {
        scratch.select_nth_unstable_by(k - 1, cmp);
        scratch.truncate(k);
    }
    scratch.sort_unstable_by(cmp);
    out.extend(scratch.iter().map(|p| p.1));
}

/// Binarises row-major `n × n_labels` `scores` with `rule`. `z` (one value per row) is needed by
/// [`Binarize::TopRoundZ`] only and ignored otherwise.
///
/// Errors: `n_labels == 0`, a length that is not a multiple of `n_labels`, and for `TopRoundZ`
/// a missing `z`, a `z` of the wrong length, or a non-finite `z_i`.
pub fn binarize(
    scores: &[f32],
    n_labels: usize,
    rule: &Binarize,
    z: Option<&[f32]>,
) -> Result<LabelSets, MetricsError> {
    let n = score_rows(scores, n_labels)?;
    let z = match rule {
        Binarize::TopRoundZ => {
            let z = z.ok_or(MetricsError::MissingZ)?;
            if z.len() != n {
                return Err(MetricsError::ZLength {
                    len: z.len(),
                    rows: n,
                });
            }
            if let Some((row, &value)) = z.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(MetricsError::NonFiniteZ { row, value });
            }
            Some(z)
        }
        _ => None,
    };
    let mut out = LabelSets::new(n_labels);
    let mut buf = Vec::with_capacity(n_labels);
    let mut scratch = Vec::new();
    for (r, row) in scores.chunks_exact(n_labels).enumerate() {
        match *rule {
            Binarize::Threshold(t) => {
                buf.clear();
                buf.extend((0..n_labels as u32).filter(|&l| row[l as usize] >= t));
            }
            Binarize::TopK(k) => {
                top_k_with(row, k, &mut buf, &mut scratch);
                buf.sort_unstable();
            }
            Binarize::TopRoundZ => {
                let k = round_cardinality(z.expect("checked above")[r], n_labels);
                top_k_with(row, k, &mut buf, &mut scratch);
                buf.sort_unstable();
            }
        }
        out.push_row(&buf);
    }
    Ok(out)
}

/// precision@k for each `k` in `ks`: the mean over examples of `|top_k ∩ G| / k`, divided by `k`
/// even when `k > L`. With no examples every value is 0.
pub fn precision_at_k(
    scores: &[f32],
    gold: &LabelSets,
    ks: &[usize],
) -> Result<Vec<PrecisionAtK>, MetricsError> {
    if ks.is_empty() {
        return Ok(Vec::new());
    }
    if ks.contains(&0) {
        return Err(MetricsError::ZeroK);
    }
    check_scores_gold(scores, gold)?;
    let k_max = ks.iter().copied().max().unwrap_or(0);
    let mut hits = vec![0u64; ks.len()];
    let mut top = Vec::with_capacity(k_max.min(gold.n_labels));
    let mut scratch = Vec::new();
    let mut cum_at = Vec::with_capacity(k_max.min(gold.n_labels) + 1);
    for (r, row) in scores.chunks_exact(gold.n_labels).enumerate() {
        top_k_with(row, k_max, &mut top, &mut scratch);
        let g = gold.row(r);
        // Gold rows are sorted, so membership is a binary search.
        let mut cum = 0u64;
        cum_at.clear();
        cum_at.push(0u64);
        for &l in &top {
            cum += g.binary_search(&l).is_ok() as u64;
            cum_at.push(cum);
        }
        for (h, &k) in hits.iter_mut().zip(ks) {
            *h += cum_at[k.min(top.len())];
        }
    }
    let n = gold.n_rows;
    Ok(ks
        .iter()
        .zip(&hits)
        .map(|(&k, &h)| PrecisionAtK {
            k,
            value: if n == 0 {
                0.0
            } else {
                h as f64 / (k as f64 * n as f64)
            },
        })
        .collect())
}

/// The default tuning grid `0.05, 0.10, …, 0.95` (each `i / 20` rounded once to `f32`).
pub fn default_threshold_grid() -> Vec<f32> {
    (1..=19).map(|i| i as f32 / 20.0).collect()
}

/// Example-based F1 of [`Binarize::Threshold`]`(t)` for every `t` of `grid`, in grid order.
///
/// One pass over the scores: each score is bucketed by how many grid thresholds it passes, so the
/// cost is `O(n·L·log|grid|)` rather than `|grid|` full binarisations.
pub fn example_f1_by_threshold(
    scores: &[f32],
    gold: &LabelSets,
    grid: &[f32],
    empty: EmptyF1,
) -> Result<Vec<f64>, MetricsError> {
    if grid.is_empty() {
        return Err(MetricsError::EmptyGrid);
    }
    if let Some(&value) = grid.iter().find(|t| !t.is_finite()) {
        return Err(MetricsError::NonFiniteThreshold { value });
    }
    check_scores_gold(scores, gold)?;
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by(|&a, &b| grid[a].total_cmp(&grid[b]));
    let sorted: Vec<f32> = order.iter().map(|&i| grid[i]).collect();
    let g_len = sorted.len();
    // bucket(s) = #{j : sorted[j] <= s}; s passes sorted[j] iff j < bucket(s). NaN gets 0.
    let lowest = sorted[0];
    let bucket = |s: f32| sorted.partition_point(|&t| t <= s);
    let mut cnt_all = vec![0u32; g_len + 1];
    let mut cnt_gold = vec![0u32; g_len + 1];
    let mut sums = vec![0f64; g_len];
    for (r, row) in scores.chunks_exact(gold.n_labels).enumerate() {
        cnt_all.fill(0);
        cnt_gold.fill(0);
        for &s in row {
            // Bucket 0 passes no threshold and is never read: skip the search (and NaN).
            if s >= lowest {
                cnt_all[bucket(s)] += 1;
            }
        }
        let g = gold.row(r);
        for &l in g {
            cnt_gold[bucket(row[l as usize])] += 1;
        }
        let (mut n_pred, mut tp) = (0u32, 0u32);
        for j in (0..g_len).rev() {
            n_pred += cnt_all[j + 1];
            tp += cnt_gold[j + 1];
            let den = n_pred + g.len() as u32;
            sums[j] += if den == 0 {
                empty.value()
            } else {
                2.0 * tp as f64 / den as f64
            };
        }
    }
    let n = gold.n_rows;
    let mut out = vec![0.0; grid.len()];
    for (j, &i) in order.iter().enumerate() {
        out[i] = if n == 0 { 0.0 } else { sums[j] / n as f64 };
    }
    Ok(out)
}

/// Picks the threshold of `grid` with the best example-based F1 of `scores` against `gold`
/// (use a validation split, never the test set). Returns `(threshold, example_f1)`.
///
/// Ties (F1 within `1e-12`, to absorb summation rounding) go to the threshold closest to 0.5,
/// then to the lower one, so the choice is deterministic and leans on the P&C default.
pub fn tune_threshold(
    scores: &[f32],
    gold: &LabelSets,
    grid: &[f32],
    opts: &MetricOptions,
) -> Result<(f32, f64), MetricsError> {
    let f1 = example_f1_by_threshold(scores, gold, grid, opts.empty_f1)?;
    let best = f1.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let dist = |t: f32| (t as f64 - 0.5).abs();
    let (t, v) = grid
        .iter()
        .zip(&f1)
        .filter(|(_, &v)| v >= best - 1e-12)
        .min_by(|(a, _), (b, _)| dist(**a).total_cmp(&dist(**b)).then(a.total_cmp(b)))
        .expect("grid is non-empty");
    Ok((*t, *v))
}
