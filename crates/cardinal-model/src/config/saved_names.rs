//! The names a saved configuration's `preset` may carry besides the presets: a search
//! candidate's, a system's, a crate's configurations. Each is read over a preset; the registry
//! says which. The product's names are built in ([`SavedNames::product`]); a crate that adds
//! systems adds its configurations' names (the paper crate: its Table 1 rows), and a front end
//! hands its registry to [`ConfigRequest`](super::ConfigRequest).

use super::{Config, FOREST, FOREST_BLEND, PREDICT_FOREST_PRIOR};

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

/// The registry of saved configurations' names ([`SavedName`]).
///
/// ```
/// use cardinal_model::config::{NameMatch, SavedName, SavedNames};
///
/// let names = SavedNames::product().with(SavedName {
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
pub struct SavedNames(Vec<SavedName>);

impl Default for SavedNames {
    fn default() -> Self {
        Self::product()
    }
}

impl SavedNames {
    /// The product's names: the default search's candidates derived from `paper`
    /// (`paper-projected`, `paper-wide`), the forests and the forest prior (over `predict`).
    pub fn product() -> Self {
        let over = |name, base| SavedName {
            name: NameMatch::Exact(name),
            base,
        };
        Self(vec![
            over("paper-projected", "paper"),
            over("paper-wide", "paper"),
            over(FOREST, "predict"),
            over(FOREST_BLEND, "predict"),
            over(PREDICT_FOREST_PRIOR, "predict"),
        ])
    }

    /// Adds `name` (before the names known, so that it is matched first).
    pub fn with(mut self, name: SavedName) -> Self {
        self.0.insert(0, name);
        self
    }

    /// The entry that matches `name`, if one does.
    pub fn get(&self, name: &str) -> Option<&SavedName> {
        self.0.iter().find(|n| n.name.matches(name))
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
