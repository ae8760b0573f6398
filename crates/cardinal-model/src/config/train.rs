//! Optimisation and schedule: AdaGrad, epochs, the train/dev split, decay and averaging.

use serde::{Deserialize, Serialize};

use super::check::{check, count, non_negative, positive, positive_or_null, rate, MAX_EPOCHS};
use crate::data::split;
use crate::error::Result;

/// Fold `index` (from 0) of a `k`-fold partition of the training rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevFold {
    /// Number of folds, at least 2.
    pub k: usize,
    /// The fold held out, below `k`.
    pub index: usize,
}

/// Optimisation and schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// AdaGrad learning rate.
    pub lr: f64,
    /// AdaGrad initial accumulator (TensorFlow's default is 0.1).
    pub adagrad_init: f64,
    /// Examples per batch.
    pub batch_size: usize,
    /// Epochs on the training part of the train/dev split.
    pub epochs: usize,
    /// Further epochs on all of train afterwards (the released code: 2).
    pub full_epochs: usize,
    /// Fraction of the training file held out as dev data.
    pub dev_fraction: f64,
    /// Seed of the train/dev split (fixed across `--seed`s, as in the released code).
    pub split_seed: u64,
    /// Hold out one fold of a `k`-fold partition of train (seeded by `split_seed`) as dev,
    /// instead of `dev_fraction` (`cardinal cv` sets it for each fold in turn).
    #[serde(deserialize_with = "super::strict::object_or_null")]
    pub dev_fold: Option<DevFold>,
    /// Coefficient of `½‖W‖²` on every weight matrix (biases are not decayed).
    pub weight_decay: f64,
    /// Multiplier of the weight decay on the unary network's two matrices. The released code
    /// adds their decay once per unrolled step plus once, i.e. `T + 1 = 16` times.
    pub unary_weight_decay_mult: f64,
    /// Stop phase 1 when dev example-F1 has not improved for this many epochs (0 = never) and
    /// keep the best epoch's weights.
    pub patience: usize,
    /// Skip (instead of stopping on) a batch whose loss or gradients are not finite.
    pub skip_nonfinite_batches: bool,
    /// Scale every weight decay by `min(1, c / m)`, with `m` the mean label count of the
    /// training examples and `c` this reference (`null`: no scaling, the paper). The relaxed-F1
    /// gradient of an example shrinks like `1/|y*|`, so a decay tuned where `|y*| ≈ c` (the
    /// authors' Bibtex, 2.4) is that much stronger, relative to the data, where labels are more
    /// numerous (Delicious, 19); the cap never makes it stronger than configured.
    pub decay_reference_cardinality: Option<f64>,
    /// At the end of phase 1, replace `threshold` by the one of the grid 0.05, 0.10, …, 0.95
    /// with the best dev example-F1 (the SPEN/GSPEN protocol; dev data only, never test).
    pub tune_threshold: bool,
    /// Keep an exponential moving average of the weights whose time constant is this many
    /// epochs (the decay per batch is `1 − 1/(epochs · batches per epoch)`, warmed up as
    /// `(1 + t)/(10 + t)`); dev evaluation, early stopping, threshold tuning and the saved
    /// model then use the average (`null`: the last iterate, as the paper).
    pub average_epochs: Option<f64>,
}

impl TrainConfig {
    /// The training and dev rows of a training file of `n` rows, each ascending: one fold
    /// when `dev_fold` is set, else a `dev_fraction` share, both seeded by `split_seed`.
    pub fn dev_split(&self, n: usize) -> (Vec<usize>, Vec<usize>) {
        match self.dev_fold {
            Some(DevFold { k, index }) => {
                let mut folds = split::kfold(n, k, self.split_seed);
                let dev = folds.swap_remove(index);
                let mut train: Vec<usize> = folds.concat();
                train.sort_unstable();
                (train, dev)
            }
            None => split::train_dev_split(n, self.dev_fraction, self.split_seed),
        }
    }

    /// Refuses a dev split that leaves none of a training file's `n` rows to train on in the
    /// first phase (`train.dev_fraction` 0.999 on 65 rows: epochs of 0 batches).
    pub fn check_rows(&self, n: usize) -> Result<()> {
        if !self.has_dev() || self.epochs == 0 || n == 0 {
            return Ok(());
        }
        let (train, dev) = self.dev_split(n);
        if !train.is_empty() {
            return Ok(());
        }
        let split = match self.dev_fold {
            Some(f) => format!("train.dev_fold = {{k: {}, index: {}}}", f.k, f.index),
            None => format!("train.dev_fraction = {}", self.dev_fraction),
        };
        Err(crate::error::Error::NoTrainingRows {
            split,
            held_out: dev.len(),
            rows: n,
        })
    }

    /// Whether a dev split is held out at all.
    pub fn has_dev(&self) -> bool {
        self.dev_fold.is_some() || self.dev_fraction > 0.0
    }

    /// Checks every field against its allowed range, and that early stopping has dev data;
    /// the error names the field (`train.lr`), its value and the range.
    pub fn validate(&self) -> Result<()> {
        positive("train.lr", self.lr)?;
        positive("train.adagrad_init", self.adagrad_init)?;
        count("train.batch_size", self.batch_size, 1, 1 << 20)?;
        count("train.epochs", self.epochs, 0, MAX_EPOCHS)?;
        count("train.full_epochs", self.full_epochs, 0, MAX_EPOCHS)?;
        check(
            self.epochs + self.full_epochs >= 1,
            "train.epochs",
            self.epochs,
            ">= 1 when train.full_epochs = 0",
        )?;
        rate("train.dev_fraction", self.dev_fraction)?;
        non_negative("train.weight_decay", self.weight_decay)?;
        non_negative(
            "train.unary_weight_decay_mult",
            self.unary_weight_decay_mult,
        )?;
        if let Some(DevFold { k, index }) = self.dev_fold {
            check(k >= 2, "train.dev_fold.k", k, ">= 2")?;
            check(
                index < k,
                "train.dev_fold.index",
                index,
                &format!("< train.dev_fold.k ({k})"),
            )?;
        }
        count("train.patience", self.patience, 0, MAX_EPOCHS)?;
        check(
            self.patience == 0 || self.has_dev(),
            "train.patience",
            self.patience,
            "0 when no dev data is held out (early stopping needs train.dev_fraction > 0 or \
             train.dev_fold)",
        )?;
        positive_or_null(
            "train.decay_reference_cardinality",
            self.decay_reference_cardinality,
        )?;
        positive_or_null("train.average_epochs", self.average_epochs)
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            lr: 0.1,
            adagrad_init: 0.1,
            batch_size: 50,
            epochs: 20,
            full_epochs: 2,
            dev_fraction: 0.05,
            split_seed: 0,
            dev_fold: None,
            weight_decay: 0.001,
            unary_weight_decay_mult: 16.0,
            patience: 0,
            skip_nonfinite_batches: false,
            tune_threshold: false,
            decay_reference_cardinality: None,
            average_epochs: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dev_fold_partitions_the_rows() {
        let tc = TrainConfig {
            dev_fold: Some(DevFold { k: 4, index: 1 }),
            ..TrainConfig::default()
        };
        tc.validate().unwrap();
        let (train, dev) = tc.dev_split(10);
        let mut all: Vec<usize> = train.iter().chain(&dev).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert!(train.windows(2).all(|w| w[0] < w[1]) && !dev.is_empty());
        assert!(tc.has_dev());
    }

    #[test]
    fn patience_without_dev_data_is_refused() {
        let tc = TrainConfig {
            patience: 3,
            dev_fraction: 0.0,
            ..TrainConfig::default()
        };
        assert!(!tc.has_dev());
        let err = tc.validate().unwrap_err().to_string();
        assert!(
            err.starts_with("train.patience = 3 is out of range"),
            "{err}"
        );
    }

    /// `train.dev_fraction` 0.999 on 65 rows would train epochs of 0 batches: refused,
    /// naming the field and the rows.
    #[test]
    fn a_dev_split_that_leaves_no_training_rows_is_refused() {
        let tc = TrainConfig {
            dev_fraction: 0.999,
            ..TrainConfig::default()
        };
        tc.validate().unwrap();
        let err = tc.check_rows(65).unwrap_err().to_string();
        assert!(
            err.starts_with("train.dev_fraction = 0.999 holds out 65 of the 65 training rows"),
            "{err}"
        );
        assert!(tc.check_rows(100_000).is_ok());
        let usual = TrainConfig::default();
        assert!(usual.check_rows(65).is_ok() && usual.check_rows(1).is_ok());
    }
}
