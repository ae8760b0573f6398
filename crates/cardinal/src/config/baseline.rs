//! Settings of the Table 1 baseline systems and of unary pre-training.

use serde::{Deserialize, Serialize};

use super::check::{check, count, non_negative, positive, rate, MAX_EPOCHS};
use crate::error::Result;

/// Activation of a hidden layer or of the global energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// `max(0, x)`.
    Relu,
    /// `ln(1 + eˣ)`.
    Softplus,
}

/// The task loss `Δ(ŷ, y*)` of loss-augmented inference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskLoss {
    /// `Σ_i |ŷ_i − y*_i|` (linear on the box for binary `y*`).
    Hamming,
    /// `1 − soft F1(ŷ, y*)`.
    F1,
}

/// Optimiser of the baseline systems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Optimizer {
    /// AdaGrad with `train.lr` and `train.adagrad_init`.
    Adagrad,
    /// Adam (β = 0.9, 0.999, ε = 1e-8) with `train.lr`.
    Adam,
    /// Plain SGD with `train.lr` (DVN's released code).
    Sgd,
}

/// Settings of the baseline systems (`system` other than `pnc`, and unary pre-training).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BaselineConfig {
    /// Optimiser of the system's own training.
    pub optimizer: Optimizer,
    /// Epochs of pre-training the unary network alone with binary cross-entropy before the
    /// system's own training (SPEN's `pretrain_unaries` stage); 0 = none. Also for `pnc`.
    pub pretrain_epochs: usize,
    /// Learning rate of the pre-training (AdaGrad).
    pub pretrain_lr: f64,
    /// Dropout rate on the unary hidden layer during pre-training (the baselines' own training
    /// has no dropout; `model.dropout` is P&C's).
    pub pretrain_dropout: f64,
    /// Weight decay of the pre-training (every matrix).
    pub pretrain_weight_decay: f64,
    /// Hidden activation of the unary network (baselines only; `pnc` uses ReLU).
    pub hidden_activation: Activation,
    /// Activation of the global energy `w2ᵀ act(Wpᵀ y)` (baselines only).
    pub energy_activation: Activation,
    /// Task loss of loss-augmented inference (`spen-ssvm`).
    pub task_loss: TaskLoss,
    /// Multiplier of the task loss in the hinge (`spen-ssvm`, `topz-hinge`).
    pub margin_scale: f64,
    /// Epochs during which the unary network is held fixed (SPEN's `clamp_features` stage).
    pub freeze_unary_epochs: usize,
    /// Start inference from zeros (DVN) instead of `σ(u)`.
    pub init_zeros: bool,
    /// Fraction of DVN's training batches whose hypotheses come from one inference step
    /// started at the gold labels (for half the rows) or at zeros, as the released code does.
    pub dvn_adversarial_fraction: f64,
    /// Learning-rate schedule: after these epochs of phase 1 the rate is multiplied by
    /// `lr_decay` (DVN: 150, 300 with 0.1); empty = constant.
    pub lr_drops: Vec<usize>,
    /// Factor applied to the learning rate at each of `lr_drops`.
    pub lr_decay: f64,
    /// Keep the weights of the phase-1 epoch with the best dev example-F1 (at the dev-tuned
    /// threshold when `select_with_threshold_grid`), evaluated every `dev_every` epochs.
    pub keep_best: bool,
    /// Epochs between dev evaluations (the last epoch is always evaluated).
    pub dev_every: usize,
    /// Select the epoch by the dev F1 at the best grid threshold (SPEN protocol) instead of
    /// at `threshold`.
    pub select_with_threshold_grid: bool,
    /// SPEN's inference in logit space (`unconstrained_iterates`) instead of clipped steps.
    pub logit_iterates: bool,
    /// Weight `λ` of the entropy `H(y) = −Σ y log y + (1−y) log(1−y)` added to the score in
    /// logit-space inference (SPEN's `entropy_weight`; 0 = none).
    pub entropy_weight: f64,
}

impl Default for BaselineConfig {
    fn default() -> Self {
        Self {
            optimizer: Optimizer::Adagrad,
            pretrain_epochs: 0,
            pretrain_lr: 0.1,
            pretrain_dropout: 0.0,
            pretrain_weight_decay: 0.001,
            hidden_activation: Activation::Relu,
            energy_activation: Activation::Relu,
            task_loss: TaskLoss::Hamming,
            margin_scale: 1.0,
            freeze_unary_epochs: 0,
            init_zeros: false,
            dvn_adversarial_fraction: 0.5,
            lr_drops: Vec::new(),
            lr_decay: 0.1,
            keep_best: false,
            dev_every: 1,
            select_with_threshold_grid: false,
            logit_iterates: false,
            entropy_weight: 0.0,
        }
    }
}

impl BaselineConfig {
    /// Checks every field against its allowed range; the error names the field
    /// (`baseline.lr_decay`), its value and the range. That `keep_best` has dev data to
    /// select on is checked by [`super::Config::validate`], which sees the split.
    pub fn validate(&self) -> Result<()> {
        count(
            "baseline.pretrain_epochs",
            self.pretrain_epochs,
            0,
            MAX_EPOCHS,
        )?;
        positive("baseline.pretrain_lr", self.pretrain_lr)?;
        rate("baseline.pretrain_dropout", self.pretrain_dropout)?;
        non_negative("baseline.pretrain_weight_decay", self.pretrain_weight_decay)?;
        non_negative("baseline.margin_scale", self.margin_scale)?;
        count(
            "baseline.freeze_unary_epochs",
            self.freeze_unary_epochs,
            0,
            MAX_EPOCHS,
        )?;
        check(
            (0.0..=1.0).contains(&self.dvn_adversarial_fraction),
            "baseline.dvn_adversarial_fraction",
            self.dvn_adversarial_fraction,
            "[0, 1]",
        )?;
        for (i, &drop) in self.lr_drops.iter().enumerate() {
            count(&format!("baseline.lr_drops[{i}]"), drop, 0, MAX_EPOCHS)?;
        }
        positive("baseline.lr_decay", self.lr_decay)?;
        count("baseline.dev_every", self.dev_every, 1, MAX_EPOCHS)?;
        non_negative("baseline.entropy_weight", self.entropy_weight)
    }
}
