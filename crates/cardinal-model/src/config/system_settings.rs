//! Settings that only the chosen system reads ([`SystemSettings`]): the `baseline` section
//! of a configuration file, which the Table 1 systems of the `cardinal-paper` crate own. The
//! product keeps it as JSON and neither reads nor checks it; a system that reads it parses
//! and checks its own with [`Config::system_section`]. Each system declares the fields it
//! reads (`cardinal::system::Reads`); any other is refused by field
//! ([`SystemSettings::first_not_read`]), `pnc`, which reads none, included. The fields that
//! configurations saved while the product carried the section hold at their values of the
//! time are the paper crate's to know: its registry drops them on reading
//! ([`super::SavedConfigs::with_settings_of_old`]).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Config;
use crate::error::{Error, Result};

/// The key of [`Config::system_settings`] in a configuration file.
pub const SECTION: &str = "baseline";

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

    /// The first field other than those in `read`: a setting for a system that does not
    /// read it is one that does nothing. (Fields a saved configuration held at their values
    /// of old were dropped on reading it: [`super::SavedConfigs::drop_old_settings`].)
    pub fn first_not_read(&self, read: &[&str]) -> Option<&str> {
        self.0
            .keys()
            .find(|k| !read.contains(&k.as_str()))
            .map(String::as_str)
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

    /// Every field not read is named, in name order; dropping keeps what is read.
    #[test]
    fn fields_not_read_are_named_and_dropped() {
        let mut set: SystemSettings = serde_json::from_str(
            r#"{"pretrain_epochs": 0, "optimizer": "adam", "init_zeros": true}"#,
        )
        .unwrap();
        assert_eq!(set.first_not_read(&[]), Some("init_zeros"));
        assert_eq!(set.first_not_read(&["init_zeros"]), Some("optimizer"));
        let all = ["optimizer", "init_zeros", "pretrain_epochs"];
        assert_eq!(set.first_not_read(&all), None);
        let unknown: SystemSettings = serde_json::from_str(r#"{"optimiser": "adam"}"#).unwrap();
        assert_eq!(unknown.first_not_read(&["optimizer"]), Some("optimiser"));
        assert_eq!(
            set.drop_not_read(&["init_zeros"]),
            ["optimizer", "pretrain_epochs"]
        );
        assert_eq!(set.fields().len(), 1);
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
