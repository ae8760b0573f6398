//! The label structure a model directory records in `meta.json`, so that one loader, `eval`
//! and `predict` can tell a binary multi-label model from a multi-target (Section 6) one.
//!
//! A binary model's `meta.json` has no `labels` field (it predates the field, and its files
//! stay as they were); a multi-target one says `"labels": "multi_target"` with its `positions`
//! `L` and `classes` `M`.

use std::path::Path;

use super::{ckpt_err, META_FILE};
use crate::error::{CheckpointProblem, Record, Result};

/// The value of `labels` in a multi-target model's `meta.json`.
pub(crate) const MULTI_TARGET: &str = "multi_target";

/// What a model directory predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LabelStructure {
    /// A set of binary labels per row (the paper's Sections 3 to 5; [`Engine::load`](crate::engine::Engine::load)).
    Binary,
    /// One of `classes` classes at each of `positions` positions (the paper's Section 6;
    /// [`Engine::load_segmentation`](crate::engine::Engine::load_segmentation)).
    MultiTarget {
        /// Positions `L`.
        positions: usize,
        /// Classes `M`.
        classes: usize,
    },
}

impl LabelStructure {
    /// Whether this is [`LabelStructure::MultiTarget`].
    pub(crate) fn is_multi_target(self) -> bool {
        matches!(self, LabelStructure::MultiTarget { .. })
    }
}

impl std::fmt::Display for LabelStructure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelStructure::Binary => f.write_str("a binary multi-label model"),
            LabelStructure::MultiTarget { positions, classes } => write!(
                f,
                "a multi-target (Section 6) model of {positions} positions and {classes} classes"
            ),
        }
    }
}

/// The label structure `meta.json`'s bytes declare (`path` names the file in errors).
pub(crate) fn of_meta_bytes(path: &Path, bytes: &[u8]) -> Result<LabelStructure> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| super::record_err(path, Record::Meta, &e))?;
    let size = |field: &'static str| -> Result<usize> {
        value
            .get(field)
            .and_then(serde_json::Value::as_u64)
            .and_then(|v| usize::try_from(v).ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| ckpt_err(path, CheckpointProblem::MetaSize { field }))
    };
    match value.get("labels") {
        None => Ok(LabelStructure::Binary),
        Some(serde_json::Value::String(s)) if s == "binary" => Ok(LabelStructure::Binary),
        Some(serde_json::Value::String(s)) if s == MULTI_TARGET => {
            Ok(LabelStructure::MultiTarget {
                positions: size("positions")?,
                classes: size("classes")?,
            })
        }
        Some(_) => Err(ckpt_err(path, CheckpointProblem::LabelStructure)),
    }
}

/// The label structure of the model directory `dir`, from its `meta.json`.
pub(crate) fn label_structure(dir: &Path) -> Result<LabelStructure> {
    let (path, bytes) = super::read_snapshot(dir, |snap| snap.read_current(META_FILE))?;
    of_meta_bytes(&path, &bytes)
}

/// Refuses a `meta.json` that declares anything but binary labels, saying what it is (the
/// binary loader would otherwise fail on a missing field). Malformed JSON passes: the binary
/// loader's own parse reports it.
pub(super) fn require_binary(path: &Path, bytes: &[u8]) -> Result<()> {
    if serde_json::from_slice::<serde_json::Value>(bytes).is_err() {
        return Ok(());
    }
    match of_meta_bytes(path, bytes)? {
        LabelStructure::Binary => Ok(()),
        other => Err(ckpt_err(
            path,
            CheckpointProblem::OtherLabels {
                found: other.to_string(),
                expected: "a binary multi-label model",
                load_with: "`Engine::load_segmentation` (`cardinal eval` and `cardinal predict` \
                            do so)",
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_structure_is_read_and_checked() {
        let p = Path::new("m/meta.json");
        let of = |s: &str| of_meta_bytes(p, s.as_bytes());
        assert_eq!(of(r#"{"n_labels": 3}"#).unwrap(), LabelStructure::Binary);
        assert_eq!(
            of(r#"{"labels": "multi_target", "positions": 4, "classes": 3}"#).unwrap(),
            LabelStructure::MultiTarget {
                positions: 4,
                classes: 3
            }
        );
        let e = of(r#"{"labels": "multi_target", "positions": 0, "classes": 3}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`positions` is missing or not a positive integer"),
            "{e}"
        );
        let e = of(r#"{"labels": "ternary"}"#).unwrap_err().to_string();
        assert!(e.contains("expected \"binary\" or \"multi_target\""), "{e}");
        let e = require_binary(
            p,
            br#"{"labels": "multi_target", "positions": 4, "classes": 3}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("multi-target (Section 6) model of 4 positions"),
            "{e}"
        );
        assert!(require_binary(p, b"{not json").is_ok());
    }
}
