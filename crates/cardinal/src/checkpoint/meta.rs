//! `meta.json`: what a model directory says about itself and about the data it was trained
//! on, and the checks that keep a tampered one out.

use crate::error::Disagreement;
use serde::{Deserialize, Serialize};

use crate::data::{Dataset, IndexBase, InputSchema, LoadNote, NoteKind};

/// What a model directory says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The version of the on-disk layout of the writer (bumped on any incompatible change).
    pub format_version: u32,
    /// Version of the `cardinal` crate that wrote it.
    pub cardinal_version: String,
    /// Name of the training data.
    pub dataset: String,
    /// Input features the model expects.
    pub n_features: usize,
    /// Labels the model predicts.
    pub n_labels: usize,
    /// The labels' names, in column order (empty when the data had none).
    pub label_names: Vec<String>,
    /// The features' names, in column order (empty when the data had none, and in models
    /// written before names were recorded): new data is matched to them by name.
    #[serde(default)]
    pub feature_names: Vec<String>,
    /// For a model trained on LIBSVM data: the feature index base (0 or 1) it was read with,
    /// so that new LIBSVM files are read the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libsvm_feature_base: Option<u8>,
    /// Mean label count of the training data.
    pub train_mean_cardinality: f64,
    /// The counts `min..=max` of the cardinality network.
    pub count_min: usize,
    /// See `count_min`.
    pub count_max: usize,
    /// What the default's search did before the model trained: every candidate's
    /// cross-validated score and the one chosen (absent when it did not run, and in models
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::search_record::SearchRecord>,
}

impl Meta {
    /// How new data is read for this model (see [`crate::data::inputs`]).
    pub(crate) fn input_schema(&self) -> InputSchema {
        InputSchema {
            n_features: self.n_features,
            n_labels: self.n_labels,
            feature_names: self.feature_names.clone(),
            label_names: self.label_names.clone(),
            libsvm_base: self.libsvm_feature_base.map(|b| {
                if b == 0 {
                    IndexBase::Zero
                } else {
                    IndexBase::One
                }
            }),
        }
    }

    /// The fields a binary model's `meta.json` may hold: [`Meta`]'s, and `labels` (set to
    /// `"binary"`; see [`super::labels`]).
    const FIELDS: &'static [&'static str] = &[
        "format_version",
        "cardinal_version",
        "dataset",
        "n_features",
        "n_labels",
        "label_names",
        "feature_names",
        "libsvm_feature_base",
        "train_mean_cardinality",
        "count_min",
        "count_max",
        "search",
        "labels",
    ];

    /// Reads `meta.json`'s bytes (`path` names the file in errors), refusing a field this
    /// version does not know: a misspelt or foreign key is not silently ignored.
    pub(super) fn parse(path: &std::path::Path, bytes: &[u8]) -> crate::error::Result<Self> {
        use crate::error::{CheckpointProblem, Record};
        let invalid = |e: &serde_json::Error| super::record_err(path, Record::Meta, e);
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| invalid(&e))?;
        if let Some(fields) = value.as_object() {
            // Named by position, never quoted: the file may be someone else's.
            if let Some(i) = fields
                .keys()
                .position(|k| !Self::FIELDS.contains(&k.as_str()))
            {
                return Err(super::ckpt_err(
                    path,
                    CheckpointProblem::UnknownField {
                        record: Record::Meta,
                        number: i + 1,
                        known: Self::FIELDS,
                    },
                ));
            }
        }
        serde_json::from_value(value).map_err(|e| invalid(&e))
    }

    /// Why this meta data cannot describe a model, if it cannot (sizes that disagree, an
    /// index base other than 0 or 1).
    pub(super) fn inconsistency(&self) -> Option<Disagreement> {
        let disagree = |found: String, expected: String| Some(Disagreement { found, expected });
        // Counts are label counts: `count_min <= count_max <= n_labels` (so `k` cannot
        // overflow).
        if self.count_min > self.count_max || self.count_max > self.n_labels {
            disagree(
                format!(
                    "count_min = {}, count_max = {}",
                    self.count_min, self.count_max
                ),
                format!("count_min <= count_max <= n_labels = {}", self.n_labels),
            )
        } else if self.label_names.len() != self.n_labels && !self.label_names.is_empty() {
            disagree(
                format!("{} label names", self.label_names.len()),
                format!("n_labels = {}", self.n_labels),
            )
        } else if self.feature_names.len() != self.n_features && !self.feature_names.is_empty() {
            disagree(
                format!("{} feature names", self.feature_names.len()),
                format!("n_features = {}", self.n_features),
            )
        } else if self.libsvm_feature_base.is_some_and(|b| b > 1) {
            disagree(
                format!("libsvm_feature_base = {:?}", self.libsvm_feature_base),
                "0 or 1".into(),
            )
        } else {
            None
        }
    }
}

/// What a saved model records of the data it was trained on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrainedOn {
    /// The data's name.
    pub dataset: String,
    /// Feature names in column order (empty for formats without names).
    pub feature_names: Vec<String>,
    /// Label names in column order (empty for formats without names).
    pub label_names: Vec<String>,
    /// The LIBSVM feature index base the data was read with, for LIBSVM data.
    pub libsvm_base: Option<IndexBase>,
}

impl TrainedOn {
    /// The names of `data`. Data without feature names is taken for LIBSVM read 1-based
    /// unless [`Self::with_notes`] says otherwise.
    pub(crate) fn of(data: &Dataset) -> Self {
        Self {
            dataset: data.name.clone(),
            feature_names: data.feature_names.clone(),
            label_names: data.label_names.clone(),
            libsvm_base: data.feature_names.is_empty().then_some(IndexBase::One),
        }
    }

    /// Takes the index base the loader decided from its `notes` (a LIBSVM dataset read as
    /// 0-based).
    pub(crate) fn with_notes(mut self, notes: &[LoadNote]) -> Self {
        if notes.iter().any(|n| n.kind == NoteKind::ZeroBasedLibsvm) {
            self.libsvm_base = Some(IndexBase::Zero);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Meta {
        Meta {
            format_version: super::super::FORMAT_VERSION,
            cardinal_version: "0".into(),
            dataset: "d".into(),
            n_features: 2,
            n_labels: 3,
            label_names: vec!["a".into(), "b".into(), "c".into()],
            feature_names: vec!["x".into(), "y".into()],
            libsvm_feature_base: None,
            train_mean_cardinality: 1.0,
            count_min: 0,
            count_max: 3,
            search: None,
        }
    }

    #[test]
    fn tampered_names_and_index_bases_are_refused() {
        assert_eq!(meta().inconsistency(), None);
        let mut m = meta();
        m.feature_names.pop();
        assert!(m
            .inconsistency()
            .unwrap()
            .to_string()
            .contains("1 feature names"));
        let mut m = meta();
        m.libsvm_feature_base = Some(7);
        assert!(m
            .inconsistency()
            .unwrap()
            .to_string()
            .contains("expected 0 or 1"));
        let mut m = meta();
        m.count_max = 4;
        assert!(m.inconsistency().is_some());
        // Models written before feature names were recorded still load.
        let mut old = serde_json::to_value(meta()).unwrap();
        old.as_object_mut().unwrap().remove("feature_names");
        let m: Meta = serde_json::from_value(old).unwrap();
        assert!(m.feature_names.is_empty() && m.inconsistency().is_none());
    }

    #[test]
    fn the_libsvm_base_comes_from_the_loaders_notes() {
        let ds = Dataset::default();
        assert_eq!(TrainedOn::of(&ds).libsvm_base, Some(IndexBase::One));
        let note = LoadNote {
            path: "f".into(),
            message: "m".into(),
            kind: NoteKind::ZeroBasedLibsvm,
        };
        let t = TrainedOn::of(&ds).with_notes(&[note]);
        assert_eq!(t.libsvm_base, Some(IndexBase::Zero));
    }

    /// `meta.json` refuses a field it does not know, naming it; what this version writes,
    /// older models without `feature_names` and `"labels": "binary"` still load.
    #[test]
    fn unknown_fields_are_refused() {
        let p = std::path::Path::new("m/meta.json");
        let mut v = serde_json::to_value(meta()).unwrap();
        assert_eq!(Meta::parse(p, v.to_string().as_bytes()).unwrap(), meta());
        v.as_object_mut().unwrap().remove("feature_names");
        v["labels"] = "binary".into();
        assert!(Meta::parse(p, v.to_string().as_bytes()).is_ok());
        v["n_labelz"] = 3.into();
        let e = Meta::parse(p, v.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m/meta.json: invalid meta data: its field number")
                && e.contains("is not one this version writes")
                && !e.contains("n_labelz"),
            "{e}"
        );
        // A value of the wrong type is not quoted either.
        let mut v = serde_json::to_value(meta()).unwrap();
        v["dataset"] = 7.into();
        v["cardinal_version"] = serde_json::json!({"secret_token": "s3cr3t"});
        let e = Meta::parse(p, v.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("wrong type") && !e.contains("secret") && !e.contains("s3cr3t"),
            "{e}"
        );
    }
}
