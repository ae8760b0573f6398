//! Settings that only the chosen system reads ([`SystemSettings`]): the `baseline` section
//! of a configuration file, which the Table 1 systems of the `cardinal-paper` crate own. The
//! product keeps it as JSON and neither reads nor checks it; a system that reads it parses
//! and checks its own with [`Config::system_section`]. Each system declares the fields it
//! reads ([`crate::system::Reads`]); any other is refused by field
//! ([`SystemSettings::first_not_read`]), `pnc`, which reads none, included.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Config;
use crate::error::{Error, Result};

/// The key of [`Config::system_settings`] in a configuration file.
pub const SECTION: &str = "baseline";

/// The section as every configuration saved while the product still carried it wrote it,
/// for every system: its fields at their defaults of the time. A `pnc` configuration saved
/// then holds it whole, and still loads and trains: a field at this value sets nothing.
const LEGACY_DEFAULTS: &str = r#"{
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

/// The settings of the chosen system beyond the product's sections, as JSON fields (the
/// `baseline` section of a configuration file). Left out of a saved configuration when empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SystemSettings(Map<String, Value>);

impl SystemSettings {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The fields, by name.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.0
    }

    /// Replaces the fields with `fields`.
    pub fn set_fields(&mut self, fields: Map<String, Value>) {
        self.0 = fields;
    }

    /// The section as every configuration saved before the Table 1 systems owned it held it:
    /// its fields at the defaults of the time.
    pub fn legacy_defaults() -> Map<String, Value> {
        serde_json::from_str(LEGACY_DEFAULTS).expect("a JSON object")
    }

    /// The first field, other than those in `read`, set to anything but what every
    /// configuration saved before held (which are the Table 1 systems' defaults too): a
    /// setting for a system that does not read it is one that does nothing.
    pub fn first_not_read(&self, read: &[&str]) -> Option<&str> {
        let defaults = Self::legacy_defaults();
        self.0
            .iter()
            .find(|(k, v)| !read.contains(&k.as_str()) && defaults.get(k.as_str()) != Some(v))
            .map(|(k, _)| k.as_str())
    }

    /// Removes the fields [`SystemSettings::first_not_read`] would name, and returns their
    /// names.
    pub fn drop_not_read(&mut self, read: &[&str]) -> Vec<String> {
        let mut dropped = Vec::new();
        while let Some(field) = self.first_not_read(read).map(str::to_owned) {
            self.0.remove(&field);
            dropped.push(field);
        }
        dropped
    }
}

impl Config {
    /// The typed extension point of the systems other than `pnc`: their settings read from
    /// [`Config::system_settings`] into `T` (a struct whose fields left out keep their
    /// defaults), strictly: a value of the wrong type or a field `T` does not know is
    /// refused, by its dotted path (`baseline.lr_drops[1]`).
    pub fn system_section<T: DeserializeOwned>(&self) -> Result<T> {
        let value = Value::Object(self.system_settings.0.clone());
        serde_path_to_error::deserialize(value).map_err(|e| {
            let field = match e.path().to_string() {
                p if p == "." => SECTION.to_owned(),
                p => format!("{SECTION}.{p}"),
            };
            Error::InvalidConfig {
                field: Some(field),
                problem: Box::new(crate::error::ConfigProblem::Json(e.into_inner())),
                line: None,
                column: None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saved `pnc` configuration's section at the old defaults sets nothing; any other
    /// value is named.
    #[test]
    fn the_legacy_section_sets_nothing_and_other_values_are_named() {
        let saved: SystemSettings = serde_json::from_str(LEGACY_DEFAULTS).unwrap();
        assert_eq!(saved.fields().len(), 19);
        assert_eq!(saved.first_not_read(&[]), None);
        let mut set: SystemSettings = serde_json::from_str(
            r#"{"pretrain_epochs": 0, "optimizer": "adam", "init_zeros": true}"#,
        )
        .unwrap();
        // Fields in name order.
        assert_eq!(set.first_not_read(&[]), Some("init_zeros"));
        assert_eq!(set.first_not_read(&["init_zeros"]), Some("optimizer"));
        assert_eq!(set.first_not_read(&["optimizer", "init_zeros"]), None);
        let unknown: SystemSettings = serde_json::from_str(r#"{"optimiser": "adam"}"#).unwrap();
        assert_eq!(unknown.first_not_read(&["optimizer"]), Some("optimiser"));
        // Dropping keeps what is read and what is at its default.
        assert_eq!(set.drop_not_read(&["init_zeros"]), ["optimizer"]);
        assert_eq!(set.fields().len(), 2);
        assert_eq!(
            SystemSettings::legacy_defaults().get("lr_decay"),
            Some(&serde_json::json!(0.1))
        );
    }

    /// A system's section is read strictly, a refusal naming the field's path.
    #[test]
    fn a_system_section_is_read_strictly() {
        #[derive(Debug, Default, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        struct Section {
            lr_drops: Vec<usize>,
        }
        let mut cfg = Config::paper();
        assert!(cfg.system_section::<Section>().unwrap().lr_drops.is_empty());
        cfg.system_settings = serde_json::from_str(r#"{"lr_drops": [1, "x"]}"#).unwrap();
        let e = cfg.system_section::<Section>().unwrap_err().to_string();
        assert!(
            e.starts_with("invalid configuration at `baseline.lr_drops[1]`:"),
            "{e}"
        );
        cfg.system_settings = serde_json::from_str(r#"{"lr_dropz": [1]}"#).unwrap();
        let e = cfg.system_section::<Section>().unwrap_err().to_string();
        assert!(e.contains("unknown field `lr_dropz`"), "{e}");
    }
}
