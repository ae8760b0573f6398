//! How well a predicted cardinality `z` tracks the gold label counts.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{round_cardinality, MetricsError};
use crate::data::LabelSets;

/// Mean number of labels per example (0 with no examples): the constant baseline predictor when
/// computed on the training labels.
pub fn mean_cardinality(labels: &LabelSets) -> f64 {
    if labels.n_rows == 0 {
        0.0
    } else {
        labels.indices.len() as f64 / labels.n_rows as f64
    }
}

/// Predicted cardinalities against gold counts, with the constant train-mean predictor alongside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CardinalityReport {
    /// Number of examples.
    pub n_examples: usize,
    /// Number of labels.
    pub n_labels: usize,
    /// Mean predicted cardinality `z_i`.
    pub mean_z: f64,
    /// Mean gold count `|G_i|`.
    pub mean_gold: f64,
    /// Mean `|z_i − |G_i||`.
    pub mae: f64,
    /// Mean `(z_i − |G_i|)²`.
    pub mse: f64,
    /// Pearson correlation of `z` and `|G|`; `None` when either is constant (or n < 2).
    pub pearson: Option<f64>,
    /// Fraction of examples with `round(z_i) = |G_i|` (rounding as in [`round_cardinality`]).
    pub rounded_accuracy: f64,
    /// `hist_round_z[k]` = examples with `round(z_i) = k` (clamped to `[0, L]`).
    pub hist_round_z: Vec<usize>,
    /// `hist_gold[k]` = examples with `k` gold labels; same length as `hist_round_z`.
    pub hist_gold: Vec<usize>,
    /// The constant predictor, normally [`mean_cardinality`] of the training labels.
    pub train_mean: f64,
    /// [`CardinalityReport::mae`] of the constant predictor `train_mean`.
    pub baseline_mae: f64,
    /// [`CardinalityReport::mse`] of the constant predictor `train_mean`.
    pub baseline_mse: f64,
}

/// Compares predicted cardinalities `z` (one per row of `gold`) with the gold counts.
///
/// Errors when `z.len() != gold.n_rows` or some `z_i` is not finite.
pub fn cardinality_report(
    z: &[f32],
    gold: &LabelSets,
    train_mean: f64,
) -> Result<CardinalityReport, MetricsError> {
    let n = gold.n_rows;
    if z.len() != n {
        return Err(MetricsError::ZLength {
            len: z.len(),
            rows: n,
        });
    }
    if let Some((row, &value)) = z.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(MetricsError::NonFiniteZ { row, value });
    }
    let l = gold.n_labels;
    let counts: Vec<f64> = (0..n).map(|r| gold.count(r) as f64).collect();
    let zs: Vec<f64> = z.iter().map(|&v| v as f64).collect();
    let mean = |v: &[f64]| {
        if n == 0 {
            0.0
        } else {
            v.iter().sum::<f64>() / n as f64
        }
    };
    let (mean_z, mean_gold) = (mean(&zs), mean(&counts));
    let (mae, mse) = abs_and_squared_error(&counts, &|i| zs[i]);
    let (baseline_mae, baseline_mse) = abs_and_squared_error(&counts, &|_| train_mean);
    let pearson = pearson(&zs, &counts, mean_z, mean_gold);
    let rounded: Vec<usize> = z.iter().map(|&v| round_cardinality(v, l)).collect();
    let hits = rounded
        .iter()
        .enumerate()
        .filter(|&(r, &k)| k == gold.count(r))
        .count();
    let top = rounded
        .iter()
        .copied()
        .chain((0..n).map(|r| gold.count(r)))
        .max();
    let len = top.map_or(0, |m| m + 1);
    let (mut hist_round_z, mut hist_gold) = (vec![0; len], vec![0; len]);
    for (r, &k) in rounded.iter().enumerate() {
        hist_round_z[k] += 1;
        hist_gold[gold.count(r)] += 1;
    }
    Ok(CardinalityReport {
        n_examples: n,
        n_labels: l,
        mean_z,
        mean_gold,
        mae,
        mse,
        pearson,
        rounded_accuracy: if n == 0 { 0.0 } else { hits as f64 / n as f64 },
        hist_round_z,
        hist_gold,
        train_mean,
        baseline_mae,
        baseline_mse,
    })
}

/// The mean absolute and the mean squared error of `pred(i)` against `counts[i]` (0 and 0 for
/// no rows).
fn abs_and_squared_error(counts: &[f64], pred: &dyn Fn(usize) -> f64) -> (f64, f64) {
    let n = counts.len();
    let (mut a, mut s) = (0.0, 0.0);
    for (i, &c) in counts.iter().enumerate() {
        let d = pred(i) - c;
        a += d.abs();
        s += d * d;
    }
    if n == 0 {
        (0.0, 0.0)
    } else {
        (a / n as f64, s / n as f64)
    }
}

/// Pearson's correlation of `x` and `y` given their means; `None` for fewer than two rows or a
/// constant one.
fn pearson(x: &[f64], y: &[f64], mean_x: f64, mean_y: f64) -> Option<f64> {
    // Centred sums: more stable than the one-pass formula.
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (&x, &y) in x.iter().zip(y) {
        let (dx, dy) = (x - mean_x, y - mean_y);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if x.len() >= 2 && sxx > 0.0 && syy > 0.0 {
        Some(sxy / (sxx * syy).sqrt())
    } else {
        None
    }
}

impl fmt::Display for CardinalityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "cardinality over {} examples ({} labels)",
            self.n_examples, self.n_labels
        )?;
        writeln!(
            f,
            "  mean z / mean |G|   {:.3} / {:.3}",
            self.mean_z, self.mean_gold
        )?;
        let pearson = self
            .pearson
            .map_or_else(|| "n/a".to_string(), |p| format!("{p:.4}"));
        writeln!(
            f,
            "  z:          MAE {:.4}  MSE {:.4}  Pearson {pearson}  round(z) = |G| {:.2} %",
            self.mae,
            self.mse,
            100.0 * self.rounded_accuracy
        )?;
        writeln!(
            f,
            "  train mean {:.3}: MAE {:.4}  MSE {:.4}",
            self.train_mean, self.baseline_mae, self.baseline_mse
        )?;
        write!(f, "  {:>5} {:>9} {:>9}", "k", "round(z)", "gold")?;
        for (k, (a, b)) in self.hist_round_z.iter().zip(&self.hist_gold).enumerate() {
            write!(f, "\n  {k:>5} {a:>9} {b:>9}")?;
        }
        Ok(())
    }
}
