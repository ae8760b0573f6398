//! Typed, validated configuration of a model and its training, saved next to every checkpoint.
//!
//! Every field has a default; [`Config::paper`] is the configuration of the authors' released
//! code (its departures from the printed paper: `docs/departures.md`), and [`Config::predict`] is what `cardinal train` uses
//! unless told otherwise. One section per concern: [`ModelConfig`], [`InferenceConfig`], [`LossConfig`],
//! [`TrainConfig`], [`SearchConfig`]; each checks its own fields, and [`Config::validate`]
//! adds the checks that span sections. The settings of the systems other than `pnc` (the
//! `baseline` section of the Table 1 systems) are not the product's: [`SystemSettings`] keeps
//! them as JSON for the chosen system to read and check ([`Config::system_section`]). A
//! refusal reads `FIELD = VALUE is out of range: expected RANGE`, by the helpers of
//! [`mod@check`]. The JSON reader is strict: objects only, no unknown field, each refusal with
//! the field's path and its line and column in the text read.

use serde::{Deserialize, Serialize};

use crate::error::{ConfigProblem, Error, Result};
use check::{check, out_of_range};

pub mod check;
mod fields;
mod inference;
mod loss;
mod model;
mod presets;
mod reads;
mod request;
mod saved_configs;
mod search;
mod strict;
mod system_settings;
mod train;

#[doc(hidden)]
pub use fields::named_order;
pub use fields::{Field, InferenceField, LossField, SearchField, SectionFields};
pub use inference::InferenceConfig;
pub use loss::{IterateWeights, LossConfig};
pub use model::resolve_counts;
pub use model::{CountRange, ForestConfig, ForestPriorConfig, ModelConfig, ZMode};
pub use reads::{Fields, Reads, SettingFields, SettingGroups, NO_SETTINGS};
pub use request::ConfigRequest;
pub use saved_configs::{NameMatch, SavedConfigs, SavedName};
pub use search::{cv_words, SearchConfig, SearchScope, SearchScoring, CV_TRAINING_ROWS};
pub use system_settings::SystemSettings;
pub use system_settings::SECTION;
pub use train::{DevFold, TrainConfig};

/// The name of Predict and Constrain in `config.system`.
pub const PNC: &str = "pnc";
/// `config.system` (and `preset`) of the random forest decided for the expected F1.
pub const FOREST: &str = "forest";
/// `config.system` (and `preset`) of that forest blended with the networks' joint.
pub const FOREST_BLEND: &str = "forest-blend";
/// The preset name of the default search's Predict and Constrain candidate whose unary scores
/// have a forest's prior ([`Config::forest_prior`]).
pub const PREDICT_FOREST_PRIOR: &str = "predict-forest-prior";

/// Everything that defines a model and how it is trained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Name of the preset this configuration started from (informational).
    pub preset: String,
    /// Seed of the weight initialisation and the batch order.
    pub seed: u64,
    /// Sizes of the networks and how `z` is formed.
    #[serde(deserialize_with = "strict::object")]
    pub model: ModelConfig,
    /// The unrolled projected gradient ascent.
    #[serde(deserialize_with = "strict::inference")]
    pub inference: InferenceConfig,
    /// The training objective.
    #[serde(deserialize_with = "strict::object")]
    pub loss: LossConfig,
    /// Optimisation and schedule.
    #[serde(deserialize_with = "strict::object")]
    pub train: TrainConfig,
    /// Threshold on the last iterate for the headline prediction.
    pub threshold: f64,
    /// Which system trains and runs this configuration, by name (`pnc`: Predict and
    /// Constrain; the Table 1 systems of the `cardinal-paper` crate register theirs). Looked
    /// up in a `cardinal::system::Systems` registry, the one place that tells systems apart.
    pub system: String,
    /// Settings that only the chosen system reads, as JSON: the `baseline` section of the
    /// Table 1 systems, which the `cardinal-paper` crate owns and checks; `pnc` reads none
    /// and refuses them (`cardinal::system::Pnc`). Left out of saved configurations when empty.
    #[serde(
        rename = "baseline",
        deserialize_with = "strict::object",
        skip_serializing_if = "SystemSettings::is_empty"
    )]
    pub system_settings: SystemSettings,
    /// The default's data-dependent rule (a search by cross-validation on small training
    /// files); off, and left out of saved configurations, but in the `predict` preset.
    #[serde(
        deserialize_with = "strict::object",
        skip_serializing_if = "SearchConfig::is_off"
    )]
    pub search: SearchConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self::paper()
    }
}

/// The largest configuration file read: as large as a model folder's JSON files may be.
pub const MAX_CONFIG_BYTES: u64 = 256 << 20;

/// The text of the configuration file `path` (`--config`), refused (naming the file and the
/// limit) beyond [`MAX_CONFIG_BYTES`], or when it is a folder or not UTF-8. At most one byte
/// beyond the limit is read: `/dev/zero` or a runaway file ends in that message, not in an
/// allocation failure or a read that never ends.
pub fn read_config_file(path: &std::path::Path) -> Result<String> {
    use std::io::Read;
    let refused = |problem: ConfigProblem| Error::ConfigFile {
        path: path.to_path_buf(),
        source: Box::new(Error::InvalidConfig {
            field: None,
            problem: Box::new(problem),
            line: None,
            column: None,
        }),
    };
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            what: "a folder",
            expected: "a JSON configuration file",
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(refused(ConfigProblem::TooLarge {
            limit: MAX_CONFIG_BYTES,
        }));
    }
    // A byte-order mark (editors on Windows write one) is not part of the JSON.
    let text = bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(&bytes)
        .to_vec();
    String::from_utf8(text).map_err(|e| refused(ConfigProblem::NotUtf8(e.utf8_error())))
}

impl Config {
    /// The configuration a front end asks for: the JSON `overrides` read over a preset, `seed`
    /// set, validated. The preset is `preset` when given; otherwise the one the JSON names (a
    /// saved `config.json` names its own, read over the preset [`SavedConfigs::product`] gives
    /// for it, so that it trains again as it did even after new fields were added to the
    /// presets); otherwise `predict`. (The tests' shorthand for a [`ConfigRequest`] with the
    /// product's names.)
    pub fn resolve(
        preset: Option<&str>,
        overrides: Option<&str>,
        seed: Option<u64>,
    ) -> Result<Self> {
        ConfigRequest {
            preset,
            file: overrides,
            seed,
            ..ConfigRequest::default()
        }
        .resolve()
    }

    /// A configuration saved before the forests were systems of their own says `pnc` with a
    /// forest in it: it is named for the system it is (`forest`, `forest-blend`), so that a
    /// model folder of that time loads as what it is.
    pub fn name_legacy_forest(&mut self) {
        if self.system == PNC {
            if let Some(f) = &self.model.forest {
                self.system = if f.networks > 0.0 {
                    FOREST_BLEND
                } else {
                    FOREST
                }
                .into();
            }
        }
    }

    /// The preset (given, named by `overrides`, else `predict`) with `overrides` read over it,
    /// not yet validated: [`ConfigRequest::resolve`]'s first two steps.
    fn unvalidated(
        preset: Option<&str>,
        overrides: Option<&str>,
        names: &SavedConfigs,
    ) -> Result<Self> {
        let named = overrides
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .and_then(|v| v.get("preset").and_then(|p| p.as_str()).map(str::to_owned));
        if let Some(n) = named.as_deref() {
            if !names.knows(n) {
                return Err(Error::UnknownPreset {
                    name: n.into(),
                    known: Self::PRESETS.join(", "),
                });
            }
        }
        // A saved config.json names its system (older ones at least their model section).
        let saved_whole = overrides
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .is_some_and(|v| v.get("system").is_some() || v.get("model").is_some());
        if let Some(n) = named.as_deref() {
            // The name of a saved configuration, not a preset: only the whole configuration
            // it names trains it (a bare name would train another system under its name).
            let rebuilt = [FOREST, FOREST_BLEND].contains(&n);
            if !Self::PRESETS.contains(&n) && !rebuilt && !saved_whole {
                return Err(Error::InvalidConfig {
                    field: Some("preset".into()),
                    line: None,
                    column: None,
                    problem: Box::new(ConfigProblem::SavedNameAlone {
                        name: n.into(),
                        presets: Self::PRESETS.join(", "),
                    }),
                });
            }
        }
        let base = match (preset, named.as_deref()) {
            (Some(p), Some(FOREST)) => Self::preset(p)?.forest(),
            (Some(p), Some(FOREST_BLEND)) => Self::preset(p)?.forest_blend(),
            (Some(p), _) => Self::preset(p)?,
            (None, Some(n)) if Self::PRESETS.contains(&n) => Self::preset(n)?,
            // The forests as `--system forest` builds them (a saved one names every field).
            (None, Some(FOREST)) => Self::predict().forest(),
            (None, Some(FOREST_BLEND)) => Self::predict().forest_blend(),
            (None, Some(n)) => Self::preset(names.base_preset(n))?,
            _ => Self::predict(),
        };
        match overrides {
            Some(text) => base.with_overrides(text),
            None => Ok(base),
        }
    }

    /// The user's JSON `text` read over `self` (`Config::read_over`), with one rule
    /// more, the one rule every front end's options follow: a text that changes a
    /// hyper-parameter (sets any field but `preset`, `seed`, `system` and `search` to a value
    /// other than `self`'s) turns the default's search off unless it sets `search.max_rows`
    /// (the search's switch) itself. The search's candidates are fixed configurations, so it
    /// would otherwise replace what the user set (`{"model": {"hidden": 32}}` trained with
    /// 500 units); a field set to the value it has changes nothing, so the search stays on (a
    /// grid over a field then compares the configuration as given at every value but one);
    /// a saved `config.json` names `search.max_rows`, so it trains again as it did.
    pub fn with_overrides(&self, text: &str) -> Result<Self> {
        let (mut cfg, user) = Self::read_over(self, text)?;
        let search = user.get("search");
        if search.and_then(|s| s.get("max_rows")).is_none() && cfg.trains_otherwise_than(self) {
            // Off; what else the text said of the search (its scoring) kept.
            cfg.search = match search {
                Some(_) => SearchConfig {
                    max_rows: 0,
                    ..cfg.search
                },
                None => SearchConfig::default(),
            };
        }
        Ok(cfg)
    }

    /// Whether `self` trains otherwise than `other`: a field other than `preset`, `seed`,
    /// `system` and `search` differs.
    pub fn trains_otherwise_than(&self, other: &Config) -> bool {
        let same_but_names = |c: &Config| Config {
            preset: String::new(),
            seed: 0,
            system: String::new(),
            search: SearchConfig::default(),
            ..c.clone()
        };
        same_but_names(self) != same_but_names(other)
    }

    /// Reads a JSON configuration over `base`: fields left out keep `base`'s values (objects
    /// are merged field by field; a `model.counts` given replaces `base`'s whole, and a
    /// `train.dev_fold` given names both its fields). `text` is first read on its own,
    /// strictly (see [`Config::from_json`]), so that a refusal names a line and column of
    /// `text`, not of the merged configuration.
    pub fn from_json_over(base: &Config, text: &str) -> Result<Self> {
        Self::read_over(base, text).map(|(cfg, _)| cfg)
    }

    /// `Config::from_json_over`, with the user's JSON as read (for the keys it names).
    fn read_over(base: &Config, text: &str) -> Result<(Self, serde_json::Value)> {
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
        strict::read(text)?;
        let user: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::InvalidConfig {
                field: None,
                line: Some(e.line()).filter(|&l| l > 0),
                column: Some(e.column()).filter(|_| e.line() > 0),
                problem: Box::new(ConfigProblem::Json(e)),
            })?;
        let mut merged = serde_json::to_value(base).expect("serialisable");
        // A counts range given by the user replaces the base's whole (tagged) object.
        if let Some(counts) = user.get("model").and_then(|m| m.get("counts")) {
            merged["model"]["counts"] = counts.clone();
        }
        merge(&mut merged, user.clone());
        Ok((Self::from_json(&merged.to_string())?, user))
    }

    /// Reads a JSON configuration; fields left out keep the defaults of the `paper` preset.
    /// The top level and every section and nested object must be JSON objects; an unknown
    /// field, a value of the wrong type or one out of range is refused, by its dotted path
    /// (`inference.train_projection`) and, but for the range checks, its line and column in
    /// `text`. The retired fields `inference.mirror` and `inference.learn_eta`, which older
    /// versions wrote into every `config.json`, load when `false` and are refused otherwise.
    pub fn from_json(text: &str) -> Result<Self> {
        let cfg = strict::read(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every field against its allowed range, section by section, and the settings
    /// that depend on another section's; the error names the field by its full path
    /// (`inference.smooth_eps`), its value and the range.
    pub fn validate(&self) -> Result<()> {
        self.model.validate()?;
        self.inference.validate()?;
        self.loss.validate()?;
        // An argmax `z` passes no gradient, so the count network learns from this term alone.
        if self.model.z_mode == ZMode::Argmax && self.loss.cardinality_weight == 0.0 {
            return Err(out_of_range(
                "loss.cardinality_weight",
                self.loss.cardinality_weight,
                "> 0 when model.z_mode = argmax (an argmax z passes no gradient)",
            ));
        }
        self.train.validate()?;
        // Labels with y_T >= threshold are predicted, y_T in [0, 1]: at 0 every label, above 1
        // none.
        check(
            self.threshold > 0.0 && self.threshold < 1.0,
            "threshold",
            self.threshold,
            "a number in (0, 1)",
        )?;
        check(
            !self.system.is_empty(),
            "system",
            "\"\"",
            "a system's name, e.g. pnc",
        )?;
        self.search.validate()
    }
}

#[cfg(test)]
mod file_tests;
#[cfg(test)]
mod range_tests;
#[cfg(test)]
mod tests;
