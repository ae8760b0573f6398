//! The settings of the Table 1 systems and of unary pre-training ([`BaselineConfig`]): the
//! `baseline` section of a configuration, which this crate owns. The product keeps the
//! section as JSON ([`Config::system_settings`]); the systems read it here, through
//! [`Config::system_section`], and check it with the product's range-check helpers. Each
//! system reads some of its fields only, and declares which beside its code, by their type
//! ([`BaselineField`], in a [`cardinal::system::SettingGroups`] of [`cardinal::system::Reads`]);
//! the product refuses the others when set.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use cardinal::config::check::{check, count, non_negative, positive, rate, MAX_EPOCHS};
use cardinal::config::{Config, Field, SectionFields};
use cardinal::Result;

pub use super::baseline_field::BaselineField;

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

/// The `baseline` section as every configuration saved while the product still carried it
/// wrote it, for every system: its fields at their defaults of the time (which are
/// [`BaselineConfig`]'s). A `pnc` configuration saved then holds it whole, and still loads
/// and trains: this crate's registry drops each field at this value on reading
/// ([`cardinal::config::SavedConfigs::with_settings_of_old`]).
pub const SETTINGS_OF_OLD: &str = r#"{
    "optimizer": "adagrad",
    "pretrain_epochs": 0,
    "pretrain_lr": 0.1,
    "pretrain_dropout": 0.0,
    "pretrain_weight_decay": 0.001,
    "hidden_activation": "relu",
    "energy_activation": "relu",
    "task_loss": "hamming",
    "margin_scale": 1.0,
    "freeze_unary_epochs": 0,
    "init_zeros": false,
    "dvn_adversarial_fraction": 0.5,
    "lr_drops": [],
    "lr_decay": 0.1,
    "keep_best": false,
    "dev_every": 1,
    "select_with_threshold_grid": false,
    "logit_iterates": false,
    "entropy_weight": 0.0
}"#;

/// [`SETTINGS_OF_OLD`], as fields.
pub fn settings_of_old() -> Map<String, Value> {
    serde_json::from_str(SETTINGS_OF_OLD).expect("a JSON object")
}

/// Settings of the baseline systems (`system` other than `pnc`, and unary pre-training).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BaselineConfig {
    /// Optimiser of the system's own training.
    pub optimizer: Optimizer,
    /// Epochs of pre-training the unary network alone with binary cross-entropy before the
    /// system's own training (SPEN's `pretrain_unaries` stage); 0 = none.
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
    /// The settings `cfg` gives (fields left out keep their defaults), read strictly and
    /// checked ([`BaselineConfig::validate`]).
    pub fn of(cfg: &Config) -> Result<Self> {
        let settings: Self = cfg.system_section()?;
        settings.validate(cfg)?;
        Ok(settings)
    }

    /// The settings of `cfg`, which its system checked before it trained or ran it
    /// ([`BaselineConfig::of`], in the systems' `validate` and `predict`): the defaults where
    /// they would not read, which those checks never let through.
    pub fn read(cfg: &Config) -> Self {
        cfg.system_section().unwrap_or_default()
    }

    /// Changes `cfg`'s settings by `change`: the presets of the Table 1 rows and the tests
    /// set their fields this way. Only the fields that differ from the defaults are written.
    pub fn edit(cfg: &mut Config, change: impl FnOnce(&mut Self)) {
        let mut settings = Self::read(cfg);
        change(&mut settings);
        settings.write_into(cfg);
    }

    /// Writes these settings into `cfg`: the fields that differ from the defaults
    /// ([`SectionFields::differing`]), as the section writes them.
    pub fn write_into(&self, cfg: &mut Config) {
        let given = serde_json::to_value(self).expect("serialisable");
        let set: Map<String, Value> = self
            .differing(&Self::default())
            .into_iter()
            .map(|f| (f.name().to_owned(), given[f.name()].clone()))
            .collect();
        cfg.system_settings.set_fields(set);
    }

    /// Checks every field against its allowed range; the error names the field
    /// (`baseline.lr_decay`), its value and the range. `keep_best` needs dev data to select
    /// on, which `cfg`'s split holds out.
    pub fn validate(&self, cfg: &Config) -> Result<()> {
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
        non_negative("baseline.entropy_weight", self.entropy_weight)?;
        check(
            !self.keep_best || cfg.train.has_dev(),
            "baseline.keep_best",
            self.keep_best,
            "false when no dev data is held out (selecting an epoch needs train.dev_fraction > \
             0 or train.dev_fold)",
        )
    }
}

/// The `baseline` fields the shared training loop reads (`fit`), every system's.
pub const TRAINING_LOOP: &[BaselineField] = &[
    BaselineField::Optimizer,
    BaselineField::LrDrops,
    BaselineField::LrDecay,
    BaselineField::FreezeUnaryEpochs,
    BaselineField::KeepBest,
    BaselineField::DevEvery,
];

/// The dev epoch chosen at the threshold grid's best (read where outputs are not 0/1).
pub const THRESHOLD_SELECTION: &[BaselineField] = &[BaselineField::SelectWithThresholdGrid];

/// The unary pre-training's fields (`pretrain_unary`).
pub const PRETRAINING: &[BaselineField] = &[
    BaselineField::PretrainEpochs,
    BaselineField::PretrainLr,
    BaselineField::PretrainDropout,
    BaselineField::PretrainWeightDecay,
];

/// The networks' activations.
pub const ACTIVATIONS: &[BaselineField] = &[
    BaselineField::HiddenActivation,
    BaselineField::EnergyActivation,
];

#[cfg(test)]
mod tests {
    use super::*;
    use cardinal::Error;

    /// The defaults are those every configuration saved before this crate owned the section
    /// carried, so that such a configuration reads as it was written.
    #[test]
    fn the_defaults_are_the_saved_ones() {
        let default = serde_json::to_value(BaselineConfig::default()).unwrap();
        assert_eq!(default, Value::Object(settings_of_old()));
        assert_eq!(settings_of_old().len(), 19);
    }

    /// A `pnc` configuration saved while the product carried the section, which holds it
    /// whole at these values, reads through this crate's registry as it was trained: the
    /// section dropped, Predict and Constrain's own. One field away from its old value is
    /// refused by name.
    #[test]
    fn a_configuration_saved_with_the_section_whole_reads_as_it_was_trained() {
        let registry = crate::systems();
        let mut saved = Config::predict();
        saved.system_settings.set_fields(settings_of_old());
        let read = |cfg: &Config| {
            let text = serde_json::to_string(cfg).unwrap();
            cardinal::config::ConfigRequest {
                file: Some(&text),
                saved: Some(registry.saved_configs()),
                ..Default::default()
            }
            .resolve()
        };
        let cfg = read(&saved).unwrap();
        assert_eq!(cfg, Config::predict());
        assert_eq!(
            registry.for_config(&cfg).unwrap().name(),
            cardinal::config::PNC
        );
        let mut fields = settings_of_old();
        fields.insert("lr_decay".into(), serde_json::json!(0.5));
        saved.system_settings.set_fields(fields);
        let cfg = read(&saved).unwrap();
        match registry.for_config(&cfg) {
            Err(Error::NotRead { field, .. }) => assert_eq!(field, "baseline.lr_decay"),
            other => panic!("{:?}", other.map(|s| s.name())),
        }
    }

    /// Only the fields set away from their defaults are written, and read back.
    #[test]
    fn settings_round_trip_through_the_configuration() {
        let mut cfg = Config::paper();
        BaselineConfig::edit(&mut cfg, |b| {
            b.optimizer = Optimizer::Adam;
            b.lr_drops = vec![10, 20];
        });
        let text = serde_json::to_string(&cfg).unwrap();
        assert!(
            text.contains(r#""baseline":{"optimizer":"adam","lr_drops":[10,20]}"#)
                || text.contains(r#""baseline":{"lr_drops":[10,20],"optimizer":"adam"}"#),
            "{text}"
        );
        let back = Config::from_json(&text).unwrap();
        let b = BaselineConfig::of(&back).unwrap();
        assert_eq!((b.optimizer, b.lr_drops), (Optimizer::Adam, vec![10, 20]));
        BaselineConfig::edit(&mut cfg, |b| *b = BaselineConfig::default());
        assert!(cfg.system_settings.is_empty());
    }

    /// A value of the wrong type is refused by its path.
    #[test]
    fn a_value_of_the_wrong_type_is_named() {
        let text = r#"{"preset": "paper", "baseline": {"lr_drops": [1, "x"]}}"#;
        let cfg = Config::from_json(text).unwrap();
        let e = BaselineConfig::of(&cfg).unwrap_err().to_string();
        assert!(e.contains("`baseline.lr_drops[1]`"), "{e}");
    }

    /// Every out-of-range value is refused by the shared helper's error, naming the field,
    /// the value and the range.
    #[test]
    fn every_out_of_range_value_is_refused_by_name() {
        type Edit = fn(&mut BaselineConfig);
        let rows: [(&str, Edit); 14] = [
            ("baseline.pretrain_epochs", |b| {
                b.pretrain_epochs = MAX_EPOCHS + 1
            }),
            ("baseline.pretrain_lr", |b| b.pretrain_lr = 0.0),
            ("baseline.pretrain_dropout", |b| b.pretrain_dropout = 1.0),
            ("baseline.pretrain_weight_decay", |b| {
                b.pretrain_weight_decay = -1.0
            }),
            ("baseline.margin_scale", |b| b.margin_scale = f64::NAN),
            ("baseline.freeze_unary_epochs", |b| {
                b.freeze_unary_epochs = MAX_EPOCHS + 1
            }),
            ("baseline.dvn_adversarial_fraction", |b| {
                b.dvn_adversarial_fraction = 1.1
            }),
            ("baseline.lr_drops[1]", |b| {
                b.lr_drops = vec![1, MAX_EPOCHS + 1]
            }),
            ("baseline.lr_decay", |b| b.lr_decay = -1.0),
            ("baseline.dev_every", |b| b.dev_every = 0),
            ("baseline.entropy_weight", |b| b.entropy_weight = -1.0),
            ("baseline.pretrain_lr", |b| b.pretrain_lr = f64::INFINITY),
            ("baseline.dvn_adversarial_fraction", |b| {
                b.dvn_adversarial_fraction = -0.1
            }),
            ("baseline.keep_best", |b| b.keep_best = true),
        ];
        for (field, change) in rows {
            let mut cfg = Config::paper();
            cfg.train.dev_fraction = 0.0;
            cfg.train.patience = 0;
            let mut b = BaselineConfig::default();
            change(&mut b);
            match b.validate(&cfg) {
                Err(Error::OutOfRange { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
