//! Typed, validated configuration of a model and its training, saved next to every checkpoint.
//!
//! Every field has a default; [`Config::paper`] is the faithful configuration of the authors'
//! released code (see `docs/DESIGN.md`), and it is what `cardinal train` uses unless told
//! otherwise.

use serde::{Deserialize, Serialize};

use crate::data::split;
use crate::error::{Error, Result};
use cardinal_proj::Method;

/// Which counts the cardinality network chooses among; `z` is a function of its softmax.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CountRange {
    /// The counts `min..=max`.
    Fixed { min: usize, max: usize },
    /// From the training label counts: `min` is the smallest training count, `max` the smallest
    /// count that covers at least `coverage` of the training examples, but never below
    /// `min + 2`. With `coverage = 0.8` this gives the authors' `{1,2,3}` on Bibtex
    /// (81.2 % of its training examples have at most 3 labels).
    Auto { coverage: f64 },
}

/// How `z` is read off the cardinality network's softmax `p` over counts `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZMode {
    /// `z = Σ_k k·p_k`: differentiable, the authors' choice.
    Expectation,
    /// `z = argmax_k p_k`: not differentiable; the network then learns only from the
    /// supervised cardinality term.
    Argmax,
}

/// Sizes of the three networks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Hidden units of the unary (feature) network `x → H → L`.
    pub hidden: usize,
    /// Hidden units of the global energy `w2ᵀ relu(Wpᵀ y)`.
    pub energy_hidden: usize,
    /// Hidden units of the cardinality network `x → Hc → K`.
    pub card_hidden: usize,
    pub counts: CountRange,
    pub z_mode: ZMode,
    /// Dropout rate on the unary network's hidden units while training (0 = none, the paper;
    /// inverted dropout, so inference uses the network as is).
    pub dropout: f64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            hidden: 150,
            energy_hidden: 16,
            card_hidden: 150,
            counts: CountRange::Auto { coverage: 0.8 },
            z_mode: ZMode::Expectation,
            dropout: 0.0,
        }
    }
}

/// The unrolled projected gradient ascent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InferenceConfig {
    /// Number of unrolled steps `T`.
    pub steps: usize,
    /// Step size `η` of the inner ascent.
    pub eta: f64,
    /// Momentum of the inner ascent.
    pub momentum: f64,
    /// Projection used while training (exact, simplex, soft, dykstra-soft, dykstra-exact, fp,
    /// smooth).
    #[serde(with = "method_name")]
    pub train_projection: Method,
    /// Projection used at evaluation and prediction.
    #[serde(with = "method_name")]
    pub test_projection: Method,
    /// A projection applied once more to the last iterate, in training and at test (`null`:
    /// none, the paper). `exact` after soft Dykstra steps makes `y_T` feasible.
    #[serde(with = "opt_method_name")]
    pub final_projection: Option<Method>,
    /// Dykstra rounds `R` (for the Dykstra methods).
    pub rounds: usize,
    /// Bisection iterations `J` of the FP method.
    pub fp_iters: usize,
    /// Temperature `ε` of the smoothed projection (`smooth`), in units of `y`.
    pub smooth_eps: f64,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        Self {
            steps: 15,
            eta: 0.005,
            momentum: 0.9,
            train_projection: Method::DykstraSoft,
            test_projection: Method::DykstraSoft,
            final_projection: None,
            rounds: 2,
            fp_iters: 20,
            smooth_eps: 0.1,
        }
    }
}

/// Weights of the per-iterate losses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterateWeights {
    /// The released code: `(1/T)·1/(T − i + 1)` for the iterate `y_{i+1}`, `i = 0..T−1`
    /// (weights 1/(T+1) … 1/2, divided by T).
    Authors,
    /// Only the last iterate, weight 1.
    Last,
}

/// The training objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LossConfig {
    pub iterate_weights: IterateWeights,
    /// Weight of the relaxed-F1 loss on the iterates (0 turns it off, e.g. for the MLP baseline
    /// trained with the unary BCE only).
    pub f1_weight: f64,
    /// Weight of a supervised cross-entropy term on the true count (0 = the paper: `h` learns
    /// only through the F1 loss).
    pub cardinality_weight: f64,
    /// Weight of an auxiliary binary cross-entropy on the unary scores `σ(u)` (summed over
    /// labels): a dense learning signal for every label, also those a projection clips to 0.
    pub unary_bce_weight: f64,
    /// Sum the per-example losses over the batch (the released code) instead of averaging.
    pub sum_over_batch: bool,
}

impl Default for LossConfig {
    fn default() -> Self {
        Self {
            iterate_weights: IterateWeights::Authors,
            f1_weight: 1.0,
            cardinality_weight: 0.0,
            unary_bce_weight: 0.0,
            sum_over_batch: true,
        }
    }
}

/// Fold `index` (from 0) of a `k`-fold partition of the training rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevFold {
    pub k: usize,
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

    /// Whether a dev split is held out at all.
    pub fn has_dev(&self) -> bool {
        self.dev_fold.is_some() || self.dev_fraction > 0.0
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

/// Everything that defines a model and how it is trained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Name of the preset this configuration started from (informational).
    pub preset: String,
    /// Seed of the weight initialisation and the batch order.
    pub seed: u64,
    pub model: ModelConfig,
    pub inference: InferenceConfig,
    pub loss: LossConfig,
    pub train: TrainConfig,
    /// Threshold on the last iterate for the headline prediction.
    pub threshold: f64,
    /// Which system trains and runs this configuration, by name (`pnc`: Predict and
    /// Constrain; the Table 1 systems of the `cardinal-paper` crate register theirs). Looked
    /// up in a [`crate::system::Systems`] registry, the one place that tells systems apart.
    pub system: String,
    /// Settings of the Table 1 systems (read by them only; see `cardinal-paper`).
    pub baseline: BaselineConfig,
}

/// Activation of a hidden layer or of the global energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    Relu,
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
    pub lr_decay: f64,
    /// Keep the weights of the phase-1 epoch with the best dev example-F1 (at the dev-tuned
    /// threshold for `threshold_grid_dev`), evaluated every `dev_every` epochs.
    pub keep_best: bool,
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

impl Default for Config {
    fn default() -> Self {
        Self::paper()
    }
}

impl Config {
    /// The faithful configuration of the authors' released code (anchors §1).
    pub fn paper() -> Self {
        Self {
            preset: "paper".into(),
            seed: 0,
            model: ModelConfig::default(),
            inference: InferenceConfig::default(),
            loss: LossConfig::default(),
            train: TrainConfig::default(),
            threshold: 0.5,
            system: crate::system::PNC.into(),
            baseline: BaselineConfig::default(),
        }
    }

    /// `paper` with the count actually predicted: a supervised cross-entropy on the true count
    /// (weight 1) and counts from the smallest to the 99th-percentile training count, weight
    /// decay scaled by the label count, and the weights averaged over about the last epoch
    /// (time constant 1 epoch, chosen on dev over 2 on both datasets); the last iterate
    /// projected onto `C(z)` by the entropic projection (temperature 0.05), so that
    /// `Σ y_T = z` and `y_T ∈ [0, 1]` hold exactly; 300 hidden units; early stopping (patience
    /// 5, up to 60 epochs). Measured in docs/RESULTS.md (section "Beyond the paper").
    pub fn predict() -> Self {
        let mut cfg = Self::paper();
        cfg.preset = "predict".into();
        cfg.loss.cardinality_weight = 1.0;
        cfg.model.counts = CountRange::Auto { coverage: 0.99 };
        cfg.train.decay_reference_cardinality = Some(2.4);
        cfg.train.average_epochs = Some(1.0);
        // Chosen by 5-fold CV on Bibtex's training file (docs/journal): the last iterate
        // projected onto C(z) by the entropic projection, so that the constraint holds
        // exactly; epochs until the dev F1 stops improving.
        cfg.inference.final_projection = Some(Method::Smooth);
        cfg.inference.smooth_eps = 0.05;
        cfg.train.epochs = 60;
        cfg.train.patience = 5;
        // Chosen by 5-fold CV on Bibtex's training file and one 5-fold dev fold of
        // Delicious's (docs/journal): a wide unary net held back by dropout, and an auxiliary
        // BCE on the unary scores. Summed over labels, the BCE weighs more where labels are many (Delicious, where
        // it is what improves the ranking) and stays small where they are few (Bibtex, where a
        // larger weight costs F1).
        cfg.model.hidden = 2000;
        cfg.model.dropout = 0.5;
        cfg.loss.unary_bce_weight = 0.003;
        cfg
    }

    /// Names of the presets, for help texts.
    pub const PRESETS: &'static [&'static str] = &["paper", "predict"];

    /// A configuration by preset name.
    pub fn preset(name: &str) -> Result<Self> {
        match name {
            "paper" => Ok(Self::paper()),
            "predict" => Ok(Self::predict()),
            other => Err(Error::Config(format!(
                "unknown preset `{other}`; known presets: {}",
                Self::PRESETS.join(", ")
            ))),
        }
    }

    /// The configuration a front end asks for: the JSON `overrides` read over a preset, `seed`
    /// set, validated. The preset is `preset` when given; otherwise the one the JSON names (a
    /// saved `config.json` names its own, so that it trains again as it did even after new
    /// fields were added to the presets; the `table1-*` rows and the cardinality analysis
    /// derive from `paper`); otherwise `predict`.
    pub fn resolve(
        preset: Option<&str>,
        overrides: Option<&str>,
        seed: Option<u64>,
    ) -> Result<Self> {
        let named = overrides
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .and_then(|v| v.get("preset").and_then(|p| p.as_str()).map(str::to_owned));
        let base = match (preset, named.as_deref()) {
            (Some(p), _) => Self::preset(p)?,
            (None, Some(n)) if Self::PRESETS.contains(&n) => Self::preset(n)?,
            (None, Some(n)) if n.starts_with("table1-") || n == "cardinality-only" => Self::paper(),
            _ => Self::predict(),
        };
        let mut cfg = match overrides {
            Some(text) => Self::from_json_over(&base, text)?,
            None => base,
        };
        if let Some(seed) = seed {
            cfg.seed = seed;
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads a JSON configuration over `base`: fields left out keep `base`'s values (objects
    /// are merged field by field).
    pub fn from_json_over(base: &Config, text: &str) -> Result<Self> {
        fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
            match (into, from) {
                (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                    for (k, v) in b {
                        merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                    }
                }
                (slot, v) => *slot = v,
            }
        }
        let user: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::Config(format!("invalid configuration: {e}")))?;
        let mut merged = serde_json::to_value(base).expect("serialisable");
        // A counts range given by the user replaces the base's whole (tagged) object.
        if let Some(counts) = user.get("model").and_then(|m| m.get("counts")) {
            merged["model"]["counts"] = counts.clone();
        }
        merge(&mut merged, user);
        Self::from_json(&merged.to_string())
    }

    /// Reads a JSON configuration; fields left out keep the defaults of the `paper` preset.
    pub fn from_json(text: &str) -> Result<Self> {
        let text = drop_retired_fields(text)?;
        // The path of the offending field (`inference.train_projection`) goes into the message.
        let de = &mut serde_json::Deserializer::from_str(&text);
        let cfg: Self = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            Error::Config(format!(
                "invalid configuration at `{path}`: {}",
                e.into_inner()
            ))
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every field against its allowed range; the error names field, value and range.
    pub fn validate(&self) -> Result<()> {
        fn check(ok: bool, field: &str, value: impl std::fmt::Display, range: &str) -> Result<()> {
            if ok {
                Ok(())
            } else {
                Err(Error::Config(format!(
                    "{field} = {value} is out of range: expected {range}"
                )))
            }
        }
        let m = &self.model;
        check(
            m.hidden >= 1 && m.hidden <= 1 << 16,
            "model.hidden",
            m.hidden,
            "1..=65536",
        )?;
        check(
            m.energy_hidden <= 1 << 16,
            "model.energy_hidden",
            m.energy_hidden,
            "0..=65536",
        )?;
        check(
            m.card_hidden >= 1 && m.card_hidden <= 1 << 16,
            "model.card_hidden",
            m.card_hidden,
            "1..=65536",
        )?;
        if let Some(a) = self.train.average_epochs {
            check(
                a.is_finite() && a > 0.0,
                "train.average_epochs",
                a,
                "a finite number > 0, or null",
            )?;
        }
        if let Some(r) = self.train.decay_reference_cardinality {
            check(
                r.is_finite() && r > 0.0,
                "train.decay_reference_cardinality",
                r,
                "a finite number > 0, or null",
            )?;
        }
        check(
            (0.0..1.0).contains(&m.dropout),
            "model.dropout",
            m.dropout,
            "[0, 1)",
        )?;
        match m.counts {
            CountRange::Fixed { min, max } => check(
                min <= max,
                "model.counts.max",
                max,
                &format!(">= model.counts.min ({min})"),
            )?,
            CountRange::Auto { coverage } => check(
                coverage > 0.0 && coverage <= 1.0,
                "model.counts.coverage",
                coverage,
                "(0, 1]",
            )?,
        }
        let i = &self.inference;
        check(i.steps <= 1000, "inference.steps", i.steps, "0..=1000")?;
        check(
            i.eta.is_finite() && i.eta > 0.0,
            "inference.eta",
            i.eta,
            "a finite number > 0",
        )?;
        check(
            (0.0..1.0).contains(&i.momentum),
            "inference.momentum",
            i.momentum,
            "[0, 1)",
        )?;
        check(
            i.rounds >= 1 && i.rounds <= 1000,
            "inference.rounds",
            i.rounds,
            "1..=1000",
        )?;
        check(
            i.fp_iters >= 1 && i.fp_iters <= 200,
            "inference.fp_iters",
            i.fp_iters,
            "1..=200",
        )?;
        let l = &self.loss;
        check(
            l.cardinality_weight.is_finite() && l.cardinality_weight >= 0.0,
            "loss.cardinality_weight",
            l.cardinality_weight,
            "a finite number >= 0",
        )?;
        check(
            l.f1_weight.is_finite() && l.f1_weight >= 0.0,
            "loss.f1_weight",
            l.f1_weight,
            "a finite number >= 0",
        )?;
        check(
            l.unary_bce_weight.is_finite() && l.unary_bce_weight >= 0.0,
            "loss.unary_bce_weight",
            l.unary_bce_weight,
            "a finite number >= 0",
        )?;
        if m.z_mode == ZMode::Argmax && l.cardinality_weight == 0.0 {
            return Err(Error::Config(
                "model.z_mode = argmax needs loss.cardinality_weight > 0: an argmax z passes no gradient".into(),
            ));
        }
        let t = &self.train;
        check(
            t.lr.is_finite() && t.lr > 0.0,
            "train.lr",
            t.lr,
            "a finite number > 0",
        )?;
        check(
            t.adagrad_init.is_finite() && t.adagrad_init > 0.0,
            "train.adagrad_init",
            t.adagrad_init,
            "a finite number > 0",
        )?;
        check(
            t.batch_size >= 1 && t.batch_size <= 1 << 20,
            "train.batch_size",
            t.batch_size,
            "1..=1048576",
        )?;
        check(
            t.epochs + t.full_epochs >= 1,
            "train.epochs",
            t.epochs,
            ">= 1 when train.full_epochs = 0",
        )?;
        check(
            (0.0..1.0).contains(&t.dev_fraction),
            "train.dev_fraction",
            t.dev_fraction,
            "[0, 1)",
        )?;
        check(
            t.weight_decay.is_finite() && t.weight_decay >= 0.0,
            "train.weight_decay",
            t.weight_decay,
            "a finite number >= 0",
        )?;
        check(
            t.unary_weight_decay_mult.is_finite() && t.unary_weight_decay_mult >= 0.0,
            "train.unary_weight_decay_mult",
            t.unary_weight_decay_mult,
            "a finite number >= 0",
        )?;
        if let Some(DevFold { k, index }) = t.dev_fold {
            check(k >= 2, "train.dev_fold.k", k, ">= 2")?;
            check(
                index < k,
                "train.dev_fold.index",
                index,
                "< train.dev_fold.k",
            )?;
        }
        if t.patience > 0 && !t.has_dev() {
            return Err(Error::Config(
                "train.patience > 0 needs train.dev_fraction > 0 (or train.dev_fold)".into(),
            ));
        }
        check(
            self.threshold.is_finite(),
            "threshold",
            self.threshold,
            "a finite number",
        )?;
        let b = &self.baseline;
        check(
            b.pretrain_lr.is_finite() && b.pretrain_lr > 0.0,
            "baseline.pretrain_lr",
            b.pretrain_lr,
            "a finite number > 0",
        )?;
        check(
            (0.0..1.0).contains(&b.pretrain_dropout),
            "baseline.pretrain_dropout",
            b.pretrain_dropout,
            "0 <= rate < 1",
        )?;
        check(
            !self.system.is_empty(),
            "system",
            "\"\"",
            "a system's name, e.g. pnc",
        )?;
        check(
            b.pretrain_weight_decay.is_finite() && b.pretrain_weight_decay >= 0.0,
            "baseline.pretrain_weight_decay",
            b.pretrain_weight_decay,
            "a finite number >= 0",
        )?;
        check(
            b.margin_scale.is_finite() && b.margin_scale >= 0.0,
            "baseline.margin_scale",
            b.margin_scale,
            "a finite number >= 0",
        )?;
        check(
            (0.0..=1.0).contains(&b.dvn_adversarial_fraction),
            "baseline.dvn_adversarial_fraction",
            b.dvn_adversarial_fraction,
            "[0, 1]",
        )?;
        check(
            b.lr_decay.is_finite() && b.lr_decay > 0.0,
            "baseline.lr_decay",
            b.lr_decay,
            "a finite number > 0",
        )?;
        check(b.dev_every >= 1, "baseline.dev_every", b.dev_every, ">= 1")?;
        check(
            b.entropy_weight.is_finite() && b.entropy_weight >= 0.0,
            "baseline.entropy_weight",
            b.entropy_weight,
            "a finite number >= 0",
        )?;
        if b.keep_best && !self.train.has_dev() {
            return Err(Error::Config(
                "baseline.keep_best needs train.dev_fraction > 0 (or train.dev_fold)".into(),
            ));
        }
        Ok(())
    }
}

/// Fields that older versions wrote into every `config.json` and that no longer exist
/// (`inference.mirror`, `inference.learn_eta`): dropped when they hold the value that meant
/// "off", so that saved models still load, and refused otherwise.
fn drop_retired_fields(text: &str) -> Result<String> {
    let mut value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        // Not JSON: the typed reader reports where.
        Err(_) => return Ok(text.to_owned()),
    };
    if let Some(inf) = value
        .get_mut("inference")
        .and_then(serde_json::Value::as_object_mut)
    {
        for field in ["mirror", "learn_eta"] {
            match inf.get(field) {
                None => {}
                Some(serde_json::Value::Bool(false)) => {
                    inf.remove(field);
                }
                Some(other) => {
                    return Err(Error::Config(format!(
                        "inference.{field} = {other} is no longer supported (only false, the \
                         only value that any preset or Table 1 row used)"
                    )))
                }
            }
        }
    }
    Ok(value.to_string())
}

/// (De)serialises a projection [`Method`] by its command-line name.
mod method_name {
    use cardinal_proj::Method;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(m)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Method, D::Error> {
        let name = String::deserialize(d)?;
        name.parse()
            .map_err(|e| serde::de::Error::custom(format!("{e}")))
    }
}

/// (De)serialises an optional projection [`Method`] by its name (`null` for none).
mod opt_method_name {
    use cardinal_proj::Method;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &Option<Method>, s: S) -> Result<S::Ok, S::Error> {
        match m {
            Some(m) => s.collect_str(m),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Method>, D::Error> {
        let name: Option<String> = Option::deserialize(d)?;
        name.map(|n| {
            n.parse()
                .map_err(|e| serde::de::Error::custom(format!("{e}")))
        })
        .transpose()
    }
}

/// Resolves a [`CountRange`] against the training label counts.
pub fn resolve_counts(
    range: &CountRange,
    train_counts: &[usize],
    n_labels: usize,
) -> (usize, usize) {
    match *range {
        CountRange::Fixed { min, max } => (min, max.min(n_labels)),
        CountRange::Auto { coverage } => {
            if train_counts.is_empty() {
                return (0, 2.min(n_labels));
            }
            let mut sorted = train_counts.to_vec();
            sorted.sort_unstable();
            let min = sorted[0];
            let need = ((coverage * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            let covered = sorted[need - 1];
            (min, covered.max(min + 2).min(n_labels).max(min))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_preset_is_valid_and_round_trips() {
        let cfg = Config::paper();
        cfg.validate().unwrap();
        let text = serde_json::to_string_pretty(&cfg).unwrap();
        assert_eq!(Config::from_json(&text).unwrap(), cfg);
    }

    #[test]
    fn presets_are_valid() {
        for name in Config::PRESETS {
            let cfg = Config::preset(name).unwrap();
            cfg.validate().unwrap();
            assert_eq!(&cfg.preset, name);
        }
        assert!(Config::preset("nope")
            .unwrap_err()
            .to_string()
            .contains("paper, predict"));
    }

    #[test]
    fn json_over_a_preset_keeps_the_preset() {
        let cfg =
            Config::from_json_over(&Config::predict(), r#"{"inference": {"steps": 7}}"#).unwrap();
        assert_eq!(cfg.inference.steps, 7);
        assert_eq!(cfg.loss.cardinality_weight, 1.0);
        assert_eq!(cfg.preset, "predict");
        let cfg = Config::from_json_over(
            &Config::predict(),
            r#"{"model": {"counts": {"kind": "fixed", "min": 1, "max": 4}}}"#,
        )
        .unwrap();
        assert_eq!(cfg.model.counts, CountRange::Fixed { min: 1, max: 4 });
        let err = Config::from_json_over(&Config::paper(), r#"{"train": {"lr": -1}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("train.lr"), "{err}");
    }

    #[test]
    fn partial_json_keeps_defaults() {
        let cfg = Config::from_json(r#"{"inference": {"steps": 7}}"#).unwrap();
        assert_eq!(cfg.inference.steps, 7);
        assert_eq!(cfg.inference.eta, 0.005);
        assert_eq!(cfg.train.batch_size, 50);
    }

    /// Older `config.json` files carry `inference.mirror` and `inference.learn_eta` as
    /// `false`: they still load; any other value is refused by name.
    #[test]
    fn retired_fields_load_when_off_and_are_refused_when_on() {
        let cfg = Config::from_json(
            r#"{"inference": {"mirror": false, "learn_eta": false, "steps": 3}}"#,
        )
        .unwrap();
        assert_eq!(cfg.inference.steps, 3);
        for json in [
            r#"{"inference": {"mirror": true}}"#,
            r#"{"inference": {"learn_eta": true}}"#,
        ] {
            let err = Config::from_json(json).unwrap_err().to_string();
            assert!(err.contains("no longer supported"), "{err}");
        }
    }

    #[test]
    fn out_of_range_fields_are_named() {
        let err = Config::from_json(r#"{"inference": {"eta": -1}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("inference.eta") && err.contains("-1") && err.contains("> 0"),
            "{err}"
        );
        let err = Config::from_json(r#"{"train": {"dev_fraction": 1.5}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("train.dev_fraction") && err.contains("1.5"),
            "{err}"
        );
        let err =
            Config::from_json(r#"{"model": {"counts": {"kind": "fixed", "min": 5, "max": 2}}}"#)
                .unwrap_err()
                .to_string();
        assert!(err.contains("model.counts.max"), "{err}");
        let err = Config::from_json(r#"{"inference": {"train_projection": "bogus"}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("inference.train_projection")
                && err.contains("bogus")
                && err.contains("exact|"),
            "{err}"
        );
        let err = Config::from_json(r#"{"loss": {"iterate_weights": "all"}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("loss.iterate_weights") && err.contains("authors"),
            "{err}"
        );
        let err = Config::from_json(r#"{"train": {"batch_size": -3}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("train.batch_size"), "{err}");
        let err = Config::from_json(r#"{"train": {"bogus": 1}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn auto_counts_reproduce_the_authors_range_on_bibtex_like_counts() {
        // Bibtex training histogram head: 1849 ones, 1230 twos, 885 threes, then 916 above 3.
        let mut counts = vec![1; 1849];
        counts.extend(vec![2; 1230]);
        counts.extend(vec![3; 885]);
        counts.extend(vec![5; 916]);
        assert_eq!(
            resolve_counts(&CountRange::Auto { coverage: 0.8 }, &counts, 159),
            (1, 3)
        );
        assert_eq!(
            resolve_counts(&CountRange::Auto { coverage: 1.0 }, &counts, 159),
            (1, 5)
        );
        assert_eq!(
            resolve_counts(&CountRange::Fixed { min: 0, max: 500 }, &counts, 159),
            (0, 159)
        );
    }
}
