//! What saved configurations carry beyond the product's presets and sections: the names their
//! `preset` may hold (a search candidate's, a system's, a crate's configurations), each read
//! over a preset the registry names, and the `baseline` fields they held at the values of their
//! time, which set nothing. The product's are built in ([`SavedConfigs::product`]); a crate
//! that adds systems adds its own (the paper crate: its Table 1 rows' names and its
//! settings' old defaults), and a front end hands its registry to
//! [`ConfigRequest`](super::ConfigRequest).

use serde_json::{Map, Value};

use super::{Config, SystemSettings, FOREST, FOREST_BLEND, PREDICT_FOREST_PRIOR};

/// How a saved configuration's name is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameMatch {
    /// This name.
    Exact(&'static str),
    /// Every name that starts with this (a family of configurations, such as a table's rows).
    Prefix(&'static str),
}

impl NameMatch {
    /// Whether `name` is matched.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Self::Exact(n) => name == *n,
            Self::Prefix(p) => name.starts_with(p),
        }
    }
}

/// A name saved configurations carry in `preset`, and the preset they are read over (so that
/// a saved configuration trains again as it did, even after new fields were added to the
/// presets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedName {
    /// The name, or the family of names.
    pub name: NameMatch,
    /// The preset it is read over ([`Config::PRESETS`]).
    pub base: &'static str,
}

/// The registry of what saved configurations carry: names ([`SavedName`]) and settings at
/// the values every configuration of their time held
/// ([`SavedConfigs::with_settings_of_old`]).
///
/// ```
/// use cardinal_model::config::{NameMatch, SavedName, SavedConfigs};
///
/// let names = SavedConfigs::product().with(SavedName {
///     name: NameMatch::Prefix("row-"),
///     base: "paper",
/// });
/// assert_eq!(names.base_preset("paper-wide"), "paper");
/// assert_eq!(names.base_preset("row-7"), "paper");
/// assert_eq!(names.base_preset("paper-printed"), "paper-printed");
/// assert_eq!(names.base_preset("forest"), "predict");
/// assert!(names.knows("row-7") && !names.knows("nothing"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedConfigs {
    names: Vec<SavedName>,
    old_settings: Map<String, Value>,
}

impl Default for SavedConfigs {
    fn default() -> Self {
        Self::product()
    }
}

impl SavedConfigs {
    /// The product's names: the default search's candidates derived from `paper`
    /// (`paper-projected`, `paper-wide`), the forests and the forest prior (over `predict`).
    pub fn product() -> Self {
        let over = |name, base| SavedName {
            name: NameMatch::Exact(name),
            base,
        };
        Self {
            names: vec![
                over("paper-projected", "paper"),
                over("paper-wide", "paper"),
                over(FOREST, "predict"),
                over(FOREST_BLEND, "predict"),
                over(PREDICT_FOREST_PRIOR, "predict"),
            ],
            old_settings: Map::new(),
        }
    }

    /// Adds `name` (before the names known, so that it is matched first).
    pub fn with(mut self, name: SavedName) -> Self {
        self.names.insert(0, name);
        self
    }

    /// Adds `fields`, fields of the `baseline` section ([`SystemSettings`]) at the values every
    /// configuration saved in their time held, whatever its system: read, each at that value
    /// is dropped ([`SavedConfigs::drop_old_settings`]), since it sets nothing (the paper
    /// crate's settings' defaults, which `pnc` configurations saved while the product carried
    /// the section hold whole).
    pub fn with_settings_of_old(mut self, fields: Map<String, Value>) -> Self {
        self.old_settings.extend(fields);
        self
    }

    /// Drops from `settings` each field at the value [`SavedConfigs::with_settings_of_old`]
    /// registered for it.
    pub fn drop_old_settings(&self, settings: &mut SystemSettings) {
        let kept = settings
            .fields()
            .iter()
            .filter(|(k, v)| self.old_settings.get(k.as_str()) != Some(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        settings.set_fields(kept);
    }

    /// The entry that matches `name`, if one does.
    pub fn get(&self, name: &str) -> Option<&SavedName> {
        self.names.iter().find(|n| n.name.matches(name))
    }

    /// Whether `name` is a preset or a saved configuration's name.
    pub fn knows(&self, name: &str) -> bool {
        Config::PRESETS.contains(&name) || self.get(name).is_some()
    }

    /// The preset a saved configuration named `name` is read over: the preset itself, the
    /// registered base for a saved configuration's name, `predict` otherwise. The one rule
    /// every front end uses.
    pub fn base_preset(&self, name: &str) -> &'static str {
        match Config::PRESETS.iter().find(|p| **p == name) {
            Some(p) => p,
            None => self.get(name).map_or("predict", |n| n.base),
        }
    }
}
