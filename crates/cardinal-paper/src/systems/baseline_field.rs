//! The fields of the `baseline` section as a type ([`BaselineField`]), made as the product's
//! sections' are ([`cardinal::plain_section!`]): what each system declares it reads
//! ([`cardinal::system::Reads`]) is made of them, so a field a declaration names that
//! [`BaselineConfig`] lacks does not compile, and the section's comparison destructures it
//! whole, so a field added to it and not named here does not compile either.

use super::BaselineConfig;

cardinal::plain_section!(
    /// A field of the `baseline` section, by its name in a configuration file.
    BaselineConfig => BaselineField, "baseline" {
        dev_every => DevEvery,
        dvn_adversarial_fraction => DvnAdversarialFraction,
        energy_activation => EnergyActivation,
        entropy_weight => EntropyWeight,
        freeze_unary_epochs => FreezeUnaryEpochs,
        hidden_activation => HiddenActivation,
        init_zeros => InitZeros,
        keep_best => KeepBest,
        logit_iterates => LogitIterates,
        lr_decay => LrDecay,
        lr_drops => LrDrops,
        margin_scale => MarginScale,
        optimizer => Optimizer,
        pretrain_dropout => PretrainDropout,
        pretrain_epochs => PretrainEpochs,
        pretrain_lr => PretrainLr,
        pretrain_weight_decay => PretrainWeightDecay,
        select_with_threshold_grid => SelectWithThresholdGrid,
        task_loss => TaskLoss,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::settings::settings_of_old;
    use cardinal::config::{Field, SectionFields, SECTION};

    /// The enum names the section's keys as it is written, each once, in the order of their
    /// names; each field, changed alone, is the one `differing` reports and `reset` undoes.
    #[test]
    fn the_fields_are_the_sections_keys() {
        let mut keys: Vec<String> = settings_of_old().keys().cloned().collect();
        keys.sort();
        let names: Vec<&str> = BaselineField::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, keys);
        assert_eq!(BaselineField::SECTION, SECTION);
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
