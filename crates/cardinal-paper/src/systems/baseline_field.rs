//! The fields of the `baseline` section as a type ([`BaselineField`]), as the product's
//! sections have theirs: what each system declares it reads ([`cardinal::system::Reads`]) is
//! made of them, so a field a declaration names that [`BaselineConfig`] lacks does not
//! compile, and [`SectionFields`] destructures the section whole, so a field added to it and
//! not named here does not compile either.

use cardinal::config::{Field, SectionFields, SECTION};

use super::BaselineConfig;

/// A field of the `baseline` section, by its name in a configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BaselineField {
    /// `baseline.dev_every`
    DevEvery,
    /// `baseline.dvn_adversarial_fraction`
    DvnAdversarialFraction,
    /// `baseline.energy_activation`
    EnergyActivation,
    /// `baseline.entropy_weight`
    EntropyWeight,
    /// `baseline.freeze_unary_epochs`
    FreezeUnaryEpochs,
    /// `baseline.hidden_activation`
    HiddenActivation,
    /// `baseline.init_zeros`
    InitZeros,
    /// `baseline.keep_best`
    KeepBest,
    /// `baseline.logit_iterates`
    LogitIterates,
    /// `baseline.lr_decay`
    LrDecay,
    /// `baseline.lr_drops`
    LrDrops,
    /// `baseline.margin_scale`
    MarginScale,
    /// `baseline.optimizer`
    Optimizer,
    /// `baseline.pretrain_dropout`
    PretrainDropout,
    /// `baseline.pretrain_epochs`
    PretrainEpochs,
    /// `baseline.pretrain_lr`
    PretrainLr,
    /// `baseline.pretrain_weight_decay`
    PretrainWeightDecay,
    /// `baseline.select_with_threshold_grid`
    SelectWithThresholdGrid,
    /// `baseline.task_loss`
    TaskLoss,
}

impl Field for BaselineField {
    const SECTION: &'static str = SECTION;
    const ALL: &'static [Self] = &[
        Self::DevEvery,
        Self::DvnAdversarialFraction,
        Self::EnergyActivation,
        Self::EntropyWeight,
        Self::FreezeUnaryEpochs,
        Self::HiddenActivation,
        Self::InitZeros,
        Self::KeepBest,
        Self::LogitIterates,
        Self::LrDecay,
        Self::LrDrops,
        Self::MarginScale,
        Self::Optimizer,
        Self::PretrainDropout,
        Self::PretrainEpochs,
        Self::PretrainLr,
        Self::PretrainWeightDecay,
        Self::SelectWithThresholdGrid,
        Self::TaskLoss,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::DevEvery => "dev_every",
            Self::DvnAdversarialFraction => "dvn_adversarial_fraction",
            Self::EnergyActivation => "energy_activation",
            Self::EntropyWeight => "entropy_weight",
            Self::FreezeUnaryEpochs => "freeze_unary_epochs",
            Self::HiddenActivation => "hidden_activation",
            Self::InitZeros => "init_zeros",
            Self::KeepBest => "keep_best",
            Self::LogitIterates => "logit_iterates",
            Self::LrDecay => "lr_decay",
            Self::LrDrops => "lr_drops",
            Self::MarginScale => "margin_scale",
            Self::Optimizer => "optimizer",
            Self::PretrainDropout => "pretrain_dropout",
            Self::PretrainEpochs => "pretrain_epochs",
            Self::PretrainLr => "pretrain_lr",
            Self::PretrainWeightDecay => "pretrain_weight_decay",
            Self::SelectWithThresholdGrid => "select_with_threshold_grid",
            Self::TaskLoss => "task_loss",
        }
    }
}

impl SectionFields for BaselineConfig {
    type Field = BaselineField;

    fn differing(&self, other: &Self) -> Vec<BaselineField> {
        use BaselineField as F;
        let BaselineConfig {
            optimizer,
            pretrain_epochs,
            pretrain_lr,
            pretrain_dropout,
            pretrain_weight_decay,
            hidden_activation,
            energy_activation,
            task_loss,
            margin_scale,
            freeze_unary_epochs,
            init_zeros,
            dvn_adversarial_fraction,
            lr_drops,
            lr_decay,
            keep_best,
            dev_every,
            select_with_threshold_grid,
            logit_iterates,
            entropy_weight,
        } = self;
        let mut out: Vec<BaselineField> = [
            (F::Optimizer, *optimizer != other.optimizer),
            (F::PretrainEpochs, *pretrain_epochs != other.pretrain_epochs),
            (F::PretrainLr, *pretrain_lr != other.pretrain_lr),
            (
                F::PretrainDropout,
                *pretrain_dropout != other.pretrain_dropout,
            ),
            (
                F::PretrainWeightDecay,
                *pretrain_weight_decay != other.pretrain_weight_decay,
            ),
            (
                F::HiddenActivation,
                *hidden_activation != other.hidden_activation,
            ),
            (
                F::EnergyActivation,
                *energy_activation != other.energy_activation,
            ),
            (F::TaskLoss, *task_loss != other.task_loss),
            (F::MarginScale, *margin_scale != other.margin_scale),
            (
                F::FreezeUnaryEpochs,
                *freeze_unary_epochs != other.freeze_unary_epochs,
            ),
            (F::InitZeros, *init_zeros != other.init_zeros),
            (
                F::DvnAdversarialFraction,
                *dvn_adversarial_fraction != other.dvn_adversarial_fraction,
            ),
            (F::LrDrops, *lr_drops != other.lr_drops),
            (F::LrDecay, *lr_decay != other.lr_decay),
            (F::KeepBest, *keep_best != other.keep_best),
            (F::DevEvery, *dev_every != other.dev_every),
            (
                F::SelectWithThresholdGrid,
                *select_with_threshold_grid != other.select_with_threshold_grid,
            ),
            (F::LogitIterates, *logit_iterates != other.logit_iterates),
            (F::EntropyWeight, *entropy_weight != other.entropy_weight),
        ]
        .into_iter()
        .filter_map(|(f, differs)| differs.then_some(f))
        .collect();
        out.sort_unstable_by_key(|f| f.name());
        out
    }

    fn reset(&mut self, default: &Self, field: BaselineField) {
        use BaselineField as F;
        match field {
            F::Optimizer => self.optimizer = default.optimizer,
            F::PretrainEpochs => self.pretrain_epochs = default.pretrain_epochs,
            F::PretrainLr => self.pretrain_lr = default.pretrain_lr,
            F::PretrainDropout => self.pretrain_dropout = default.pretrain_dropout,
            F::PretrainWeightDecay => self.pretrain_weight_decay = default.pretrain_weight_decay,
            F::HiddenActivation => self.hidden_activation = default.hidden_activation,
            F::EnergyActivation => self.energy_activation = default.energy_activation,
            F::TaskLoss => self.task_loss = default.task_loss,
            F::MarginScale => self.margin_scale = default.margin_scale,
            F::FreezeUnaryEpochs => self.freeze_unary_epochs = default.freeze_unary_epochs,
            F::InitZeros => self.init_zeros = default.init_zeros,
            F::DvnAdversarialFraction => {
                self.dvn_adversarial_fraction = default.dvn_adversarial_fraction
            }
            F::LrDrops => self.lr_drops = default.lr_drops.clone(),
            F::LrDecay => self.lr_decay = default.lr_decay,
            F::KeepBest => self.keep_best = default.keep_best,
            F::DevEvery => self.dev_every = default.dev_every,
            F::SelectWithThresholdGrid => {
                self.select_with_threshold_grid = default.select_with_threshold_grid
            }
            F::LogitIterates => self.logit_iterates = default.logit_iterates,
            F::EntropyWeight => self.entropy_weight = default.entropy_weight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::settings::settings_of_old;

    /// The enum names the section's keys as it is written, each once, in the order of their
    /// names; each field, changed alone, is the one `differing` reports and `reset` undoes.
    #[test]
    fn the_fields_are_the_sections_keys() {
        let mut keys: Vec<String> = settings_of_old().keys().cloned().collect();
        keys.sort();
        let names: Vec<&str> = BaselineField::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, keys);
        let default = BaselineConfig::default();
        for &field in BaselineField::ALL {
            let mut changed: serde_json::Value = serde_json::to_value(&default).unwrap();
            let value = &mut changed[field.name()];
            *value = match value.clone() {
                serde_json::Value::Bool(b) => serde_json::json!(!b),
                serde_json::Value::Number(n) => match n.as_u64() {
                    Some(k) => serde_json::json!(k + 1),
                    None => serde_json::json!(n.as_f64().unwrap() + 1.0),
                },
                serde_json::Value::Array(_) => serde_json::json!([7]),
                serde_json::Value::String(s) => serde_json::json!(match s.as_str() {
                    "adagrad" => "adam",
                    "relu" => "softplus",
                    _ => "f1",
                }),
                other => panic!("{other}"),
            };
            let mut changed: BaselineConfig = serde_json::from_value(changed).unwrap();
            assert_eq!(changed.differing(&default), [field]);
            changed.reset(&default, field);
            assert_eq!(changed, default, "{}", field.name());
        }
    }
}
