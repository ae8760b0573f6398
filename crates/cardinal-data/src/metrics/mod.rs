//! Multi-label evaluation metrics, binarisation rules and cardinality diagnostics.
//!
//! Everything is computed from confusion counts gathered in one merge pass over the sorted label
//! lists of [`LabelSets`]: per example (`|P ∩ G|`, `|P|`, `|G|`) and per label (TP, FP, FN).
//! No dense `n × L` matrix is built, so a 20 000 × 1 000 evaluation takes milliseconds.
//!
//! # Metrics and conventions
//!
//! * **Example-based F1** (the metric of Table 1 in Brukhim & Globerson 2018, and of SPEN/DVN):
//!   mean over examples of `2|P ∩ G| / (|P| + |G|)`. When both sets are empty the ratio is 0/0 and
//!   [`EmptyF1`] decides: [`EmptyF1::Zero`] (default) is what `sklearn.metrics.f1_score` returns
//!   with `zero_division=0`, i.e. the authors' evaluation; [`EmptyF1::One`] is the SPEN/DVN
//!   convention (an empty prediction for an empty gold set is perfect).
//! * **Example precision / recall / Jaccard**: sklearn `average='samples'`; a zero denominator
//!   (`|P| = 0`, `|G| = 0`, resp. `P ∪ G = ∅`) scores 0 under [`EmptyF1::Zero`] and 1 under
//!   [`EmptyF1::One`], i.e. sklearn's `zero_division` set to the same value.
//! * **Macro-F1** (over labels, sklearn `average='macro'`): mean of the per-label F1 over *all* `L`
//!   labels; a label never predicted and never gold scores 0 (sklearn `zero_division=0`) whatever
//!   [`EmptyF1`] says, so that absent labels pull the mean down as they do in sklearn.
//! * **Micro-F1 / precision / recall**: pooled counts; 0 when the denominator is 0.
//! * **Hamming loss**: `(FP + FN) / (n·L)`. **Subset accuracy**: fraction of examples with `P = G`.
//! * **precision@k**: from scores, `|top_k ∩ G| / k` averaged over examples, always divided by `k`
//!   even when `k > L` (XMC convention). Ties are broken towards the lower label index and NaN
//!   scores rank below every number.
//!
//! With no examples (or no labels) every mean is reported as 0.

mod binarize;
mod cardinality;
mod ranking;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::data::LabelSets;

pub use binarize::{
    binarize, default_threshold_grid, example_f1_by_threshold, precision_at_k, round_cardinality,
    top_k_labels, tune_threshold, Binarize,
};
pub use cardinality::{cardinality_report, mean_cardinality, CardinalityReport};
pub use ranking::{ranking_report, RankingReport, MAX_AUC_ENTRIES};

/// Errors for inputs whose shapes or values do not fit together.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricsError {
    /// A score matrix with 0 labels (columns).
    #[error("the number of labels must be positive")]
    ZeroLabels,
    /// A score slice whose length is not a multiple of the number of labels.
    #[error("score matrix has {len} entries, not a multiple of n_labels = {n_labels}")]
    ScoresShape {
        /// Entries in the slice.
        len: usize,
        /// Number of labels (columns).
        n_labels: usize,
    },
    /// Two inputs with different numbers of rows.
    #[error("{what}: {left} rows vs {right} rows")]
    RowMismatch {
        /// Which inputs.
        what: &'static str,
        /// Rows of the first.
        left: usize,
        /// Rows of the second.
        right: usize,
    },
    /// Two inputs with different numbers of labels.
    #[error("{what}: {left} labels vs {right} labels")]
    LabelMismatch {
        /// Which inputs.
        what: &'static str,
        /// Labels of the first.
        left: usize,
        /// Labels of the second.
        right: usize,
    },
    /// A label set holding a label `>= n_labels`.
    #[error("{what}: row {row} holds label {label} but there are only {n_labels} labels")]
    LabelOutOfRange {
        /// Which input.
        what: &'static str,
        /// The row.
        row: usize,
        /// The label.
        label: u32,
        /// Number of labels of the input.
        n_labels: usize,
    },
    /// [`Binarize::TopRoundZ`] without cardinalities.
    #[error("Binarize::TopRoundZ needs the predicted cardinalities z (one per row), got none")]
    MissingZ,
    /// Cardinalities `z` of another length than the number of rows.
    #[error("z has {len} entries for {rows} rows")]
    ZLength {
        /// Entries of `z`.
        len: usize,
        /// Number of rows.
        rows: usize,
    },
    /// A cardinality that is NaN or infinite.
    #[error("z[{row}] = {value} is not finite")]
    NonFiniteZ {
        /// Its row.
        row: usize,
        /// The value.
        value: f32,
    },
    /// A threshold grid without entries.
    #[error("the threshold grid is empty")]
    EmptyGrid,
    /// A threshold grid entry that is NaN or infinite.
    #[error("threshold grid entry {value} is not finite")]
    NonFiniteThreshold {
        /// The entry.
        value: f32,
    },
    /// precision@k with `k = 0`.
    #[error("precision@k needs k >= 1")]
    ZeroK,
    /// A string that is not a valid [`EmptyF1`] or [`Binarize`].
    #[error("cannot parse {found:?} as {what}: expected {expected}")]
    Parse {
        /// What was being parsed.
        what: &'static str,
        /// The string given.
        found: String,
        /// The accepted forms.
        expected: &'static str,
    },
}

/// Score of an example whose prediction and gold set are both empty (0/0 in F1 and Jaccard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmptyF1 {
    /// 0, like sklearn's `zero_division=0`: the authors' (P&C, via sklearn) evaluation.
    #[default]
    Zero,
    /// 1: the SPEN/DVN convention, where predicting nothing for an empty gold set is perfect.
    One,
}

impl EmptyF1 {
    /// The value given to a 0/0 ratio.
    pub fn value(self) -> f64 {
        match self {
            EmptyF1::Zero => 0.0,
            EmptyF1::One => 1.0,
        }
    }

    /// The other convention.
    pub fn other(self) -> Self {
        match self {
            EmptyF1::Zero => EmptyF1::One,
            EmptyF1::One => EmptyF1::Zero,
        }
    }
}

impl fmt::Display for EmptyF1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EmptyF1::Zero => "zero",
            EmptyF1::One => "one",
        })
    }
}

impl FromStr for EmptyF1 {
    type Err = MetricsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zero" | "0" => Ok(EmptyF1::Zero),
            "one" | "1" => Ok(EmptyF1::One),
            _ => Err(MetricsError::Parse {
                what: "the F1 of an empty prediction for an empty gold set",
                found: s.to_string(),
                expected: "`zero` (or 0) or `one` (or 1)",
            }),
        }
    }
}

/// Options of [`evaluate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricOptions {
    /// Convention for examples whose prediction and gold set are both empty.
    pub empty_f1: EmptyF1,
    /// The `k` of precision@k; only used when scores are given ([`evaluate_with_scores`]).
    pub precision_at: Vec<usize>,
}

impl Default for MetricOptions {
    fn default() -> Self {
        Self {
            empty_f1: EmptyF1::Zero,
            precision_at: vec![1, 3, 5],
        }
    }
}

/// Confusion counts of one example.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExampleCounts {
    /// `|P ∩ G|`.
    pub tp: u32,
    /// `|P|`.
    pub n_pred: u32,
    /// `|G|`.
    pub n_gold: u32,
}

/// `num / den`, or `zero_div` when `den == 0`.
fn ratio(num: f64, den: f64, zero_div: f64) -> f64 {
    if den == 0.0 {
        zero_div
    } else {
        num / den
    }
}

impl ExampleCounts {
    /// `2|P ∩ G| / (|P| + |G|)`, with `empty` deciding 0/0.
    pub fn f1(&self, empty: EmptyF1) -> f64 {
        ratio(
            2.0 * self.tp as f64,
            (self.n_pred + self.n_gold) as f64,
            empty.value(),
        )
    }
    /// `|P ∩ G| / |P|`.
    pub fn precision(&self, empty: EmptyF1) -> f64 {
        ratio(self.tp as f64, self.n_pred as f64, empty.value())
    }
    /// `|P ∩ G| / |G|`.
    pub fn recall(&self, empty: EmptyF1) -> f64 {
        ratio(self.tp as f64, self.n_gold as f64, empty.value())
    }
    /// `|P ∩ G| / |P ∪ G|`.
    pub fn jaccard(&self, empty: EmptyF1) -> f64 {
        ratio(
            self.tp as f64,
            (self.n_pred + self.n_gold - self.tp) as f64,
            empty.value(),
        )
    }
    /// Whether `P = G`.
    pub fn exact(&self) -> bool {
        self.tp == self.n_pred && self.tp == self.n_gold
    }
}

/// Confusion counts of one label over all examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LabelCounts {
    /// True positives: examples with the label predicted and gold.
    pub tp: u64,
    /// False positives: examples with the label predicted but not gold.
    pub fp: u64,
    /// False negatives: examples with the label gold but not predicted (`fn` is a keyword).
    pub fneg: u64,
}

impl LabelCounts {
    /// Per-label F1, 0 when the label is neither predicted nor gold anywhere.
    pub fn f1(&self) -> f64 {
        ratio(
            2.0 * self.tp as f64,
            (2 * self.tp + self.fp + self.fneg) as f64,
            0.0,
        )
    }
}

/// Per-example and per-label confusion counts of a prediction against gold label sets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Confusion {
    /// Number of labels.
    pub n_labels: usize,
    /// Counts of every example, in row order.
    pub examples: Vec<ExampleCounts>,
    /// Counts of every label, by label index.
    pub labels: Vec<LabelCounts>,
}

/// Checks that every label of `s` is `< s.n_labels` and `indptr` is consistent.
fn check_labels(s: &LabelSets, what: &'static str) -> Result<(), MetricsError> {
    if s.indptr.len() != s.n_rows + 1 {
        return Err(MetricsError::RowMismatch {
            what,
            left: s.indptr.len(),
            right: s.n_rows + 1,
        });
    }
    for r in 0..s.n_rows {
        if let Some(&l) = s.row(r).iter().find(|&&l| l as usize >= s.n_labels) {
            return Err(MetricsError::LabelOutOfRange {
                what,
                row: r,
                label: l,
                n_labels: s.n_labels,
            });
        }
    }
    Ok(())
}

impl Confusion {
    /// Counts `pred` against `gold` (same rows, same labels; rows sorted, as [`LabelSets`] keeps them).
    pub fn new(pred: &LabelSets, gold: &LabelSets) -> Result<Self, MetricsError> {
        if pred.n_rows != gold.n_rows {
            return Err(MetricsError::RowMismatch {
                what: "prediction vs gold",
                left: pred.n_rows,
                right: gold.n_rows,
            });
        }
        if pred.n_labels != gold.n_labels {
            return Err(MetricsError::LabelMismatch {
                what: "prediction vs gold",
                left: pred.n_labels,
                right: gold.n_labels,
            });
        }
        check_labels(pred, "prediction")?;
        check_labels(gold, "gold")?;
        let mut labels = vec![LabelCounts::default(); gold.n_labels];
        let examples = (0..gold.n_rows)
            .map(|r| {
                let (p, g) = (pred.row(r), gold.row(r));
                let tp = merge_row(p, g, &mut labels);
                ExampleCounts {
                    tp,
                    n_pred: p.len() as u32,
                    n_gold: g.len() as u32,
                }
            })
            .collect();
        Ok(Self {
            n_labels: gold.n_labels,
            examples,
            labels,
        })
    }

    /// All metrics from these counts (precision@k is left empty: it needs scores).
    pub fn report(&self, opts: &MetricOptions) -> MetricReport {
        let e = opts.empty_f1;
        let n = self.examples.len();
        let mean = |f: &dyn Fn(&ExampleCounts) -> f64| -> f64 {
            if n == 0 {
                0.0
            } else {
                self.examples.iter().map(f).sum::<f64>() / n as f64
            }
        };
        let (mut tp, mut fp, mut fneg) = (0u64, 0u64, 0u64);
        for c in &self.labels {
            tp += c.tp;
            fp += c.fp;
            fneg += c.fneg;
        }
        let (tp, fp, fneg) = (tp as f64, fp as f64, fneg as f64);
        let l = self.n_labels;
        let macro_f1 = if l == 0 {
            0.0
        } else {
            self.labels.iter().map(LabelCounts::f1).sum::<f64>() / l as f64
        };
        MetricReport {
            n_examples: n,
            n_labels: l,
            empty_f1: e,
            example_f1: mean(&|c| c.f1(e)),
            example_f1_other_empty: mean(&|c| c.f1(e.other())),
            example_precision: mean(&|c| c.precision(e)),
            example_recall: mean(&|c| c.recall(e)),
            example_jaccard: mean(&|c| c.jaccard(e)),
            macro_f1,
            micro_f1: ratio(2.0 * tp, 2.0 * tp + fp + fneg, 0.0),
            micro_precision: ratio(tp, tp + fp, 0.0),
            micro_recall: ratio(tp, tp + fneg, 0.0),
            hamming_loss: ratio(fp + fneg, (n * l) as f64, 0.0),
            subset_accuracy: mean(&|c| if c.exact() { 1.0 } else { 0.0 }),
            mean_pred_cardinality: mean(&|c| c.n_pred as f64),
            mean_gold_cardinality: mean(&|c| c.n_gold as f64),
            n_empty_pred: self.examples.iter().filter(|c| c.n_pred == 0).count(),
            n_empty_gold: self.examples.iter().filter(|c| c.n_gold == 0).count(),
            n_both_empty: self
                .examples
                .iter()
                .filter(|c| c.n_pred == 0 && c.n_gold == 0)
                .count(),
            labels_never_seen: self
                .labels
                .iter()
                .filter(|c| c.tp + c.fp + c.fneg == 0)
                .count(),
            precision_at_k: Vec::new(),
        }
    }
}

/// One merge pass over two sorted label lists: returns `|p ∩ g|` and updates the label counts.
fn merge_row(p: &[u32], g: &[u32], labels: &mut [LabelCounts]) -> u32 {
    use std::cmp::Ordering::*;
    let (mut i, mut j, mut tp) = (0, 0, 0u32);
    while i < p.len() && j < g.len() {
        match p[i].cmp(&g[j]) {
            Less => {
                labels[p[i] as usize].fp += 1;
                i += 1;
            }
            Greater => {
                labels[g[j] as usize].fneg += 1;
                j += 1;
            }
            Equal => {
                labels[p[i] as usize].tp += 1;
                tp += 1;
                i += 1;
                j += 1;
            }
        }
    }
    for &l in &p[i..] {
        labels[l as usize].fp += 1;
    }
    for &l in &g[j..] {
        labels[l as usize].fneg += 1;
    }
    tp
}

/// precision@k for one `k`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrecisionAtK {
    /// The number of top-scored labels.
    pub k: usize,
    /// Mean over examples of `|top_k ∩ G| / k`.
    pub value: f64,
}

/// All metrics of one prediction against gold label sets (see the module docs for conventions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricReport {
    /// Number of examples.
    pub n_examples: usize,
    /// Number of labels.
    pub n_labels: usize,
    /// The convention used for examples with empty prediction and empty gold.
    pub empty_f1: EmptyF1,
    /// Mean over examples of `2|P∩G| / (|P|+|G|)`: the paper's metric, with a both-empty
    /// example scored by [`MetricReport::empty_f1`].
    pub example_f1: f64,
    /// The same mean under the other convention for both-empty examples (scored 1 where
    /// `empty_f1` scores 0, and 0 where it scores 1), so that every report carries example-F1
    /// under both: an empty prediction for an empty gold set is what a user means by
    /// "correctly predicted no labels" (SPEN's and DVN's convention), and a score of 0 is
    /// the authors' evaluation. Absent (0) in reports written by older versions.
    #[serde(default)]
    pub example_f1_other_empty: f64,
    /// Mean over examples of `|P∩G| / |P|` (sklearn `average='samples'`).
    pub example_precision: f64,
    /// Mean over examples of `|P∩G| / |G|` (sklearn `average='samples'`).
    pub example_recall: f64,
    /// Mean over examples of `|P∩G| / |P∪G|` (sklearn `jaccard_score(average='samples')`).
    pub example_jaccard: f64,
    /// Mean of per-label F1 over all labels (absent labels count as 0).
    pub macro_f1: f64,
    /// F1 of the pooled counts, `2TP / (2TP + FP + FN)`.
    pub micro_f1: f64,
    /// Precision of the pooled counts, `TP / (TP + FP)`.
    pub micro_precision: f64,
    /// Recall of the pooled counts, `TP / (TP + FN)`.
    pub micro_recall: f64,
    /// `(FP + FN) / (n·L)`.
    pub hamming_loss: f64,
    /// Fraction of examples predicted exactly.
    pub subset_accuracy: f64,
    /// Mean `|P|`.
    pub mean_pred_cardinality: f64,
    /// Mean `|G|`.
    pub mean_gold_cardinality: f64,
    /// Examples with an empty prediction.
    pub n_empty_pred: usize,
    /// Examples with an empty gold set.
    pub n_empty_gold: usize,
    /// Examples with both empty (scored by [`MetricReport::empty_f1`]).
    pub n_both_empty: usize,
    /// Labels neither predicted nor gold in any example (each adds a 0 to the macro-F1 mean).
    pub labels_never_seen: usize,
    /// Filled by [`evaluate_with_scores`]; empty otherwise.
    #[serde(default)]
    pub precision_at_k: Vec<PrecisionAtK>,
}

/// Evaluates `pred` against `gold`.
///
/// # Panics
/// If the two collections differ in rows or labels, or hold a label `>= n_labels`
/// (use [`Confusion::new`] for a `Result`).
pub fn evaluate(pred: &LabelSets, gold: &LabelSets, opts: &MetricOptions) -> MetricReport {
    match Confusion::new(pred, gold) {
        Ok(c) => c.report(opts),
        Err(e) => panic!("evaluate: {e}"),
    }
}

/// [`evaluate`] plus precision@k for each `k` of `opts.precision_at`, from row-major `n × L`
/// `scores`.
pub fn evaluate_with_scores(
    pred: &LabelSets,
    gold: &LabelSets,
    scores: &[f32],
    opts: &MetricOptions,
) -> Result<MetricReport, MetricsError> {
    let mut report = Confusion::new(pred, gold)?.report(opts);
    report.precision_at_k = precision_at_k(scores, gold, &opts.precision_at)?;
    Ok(report)
}

impl fmt::Display for MetricReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |x: f64| 100.0 * x;
        writeln!(
            f,
            "{} examples x {} labels (both-empty examples score {}: {})",
            self.n_examples, self.n_labels, self.empty_f1, self.n_both_empty
        )?;
        writeln!(
            f,
            "  example F1         {:7.3} %  (both-empty scoring {}: {:.3} %)",
            pct(self.example_f1),
            self.empty_f1.other(),
            pct(self.example_f1_other_empty)
        )?;
        writeln!(
            f,
            "  example P / R      {:7.3} % / {:.3} %",
            pct(self.example_precision),
            pct(self.example_recall)
        )?;
        writeln!(
            f,
            "  example Jaccard    {:7.3} %",
            pct(self.example_jaccard)
        )?;
        writeln!(
            f,
            "  macro F1 (labels)  {:7.3} %  ({} labels never seen)",
            pct(self.macro_f1),
            self.labels_never_seen
        )?;
        writeln!(
            f,
            "  micro F1           {:7.3} %  (P {:.3} % / R {:.3} %)",
            pct(self.micro_f1),
            pct(self.micro_precision),
            pct(self.micro_recall)
        )?;
        writeln!(f, "  Hamming loss       {:9.5}", self.hamming_loss)?;
        writeln!(
            f,
            "  subset accuracy    {:7.3} %",
            pct(self.subset_accuracy)
        )?;
        for p in &self.precision_at_k {
            writeln!(f, "  precision@{:<3}      {:7.3} %", p.k, pct(p.value))?;
        }
        write!(
            f,
            "  mean |P| / |G|     {:.3} / {:.3}  (empty P: {}, empty G: {})",
            self.mean_pred_cardinality,
            self.mean_gold_cardinality,
            self.n_empty_pred,
            self.n_empty_gold
        )
    }
}
