//! [`SegConfig`] as a validated, strict JSON document: the `config.json` of a multi-target
//! model directory, and what `cardinal train --config FILE` reads when the data is
//! multi-target. The document is one section, `{"multi_target": {...}}`; a field left out
//! keeps its default ([`SegConfig::default`]), an unknown field is refused, and every value is
//! range-checked, the error naming the field (`multi_target.steps = 0 is out of range: expected 1..=100`).
//!
//! It is a section of its own rather than part of [`crate::Config`]: the binary model's
//! presets, systems, networks and schedules do not apply to it (docs/DESIGN.md).

use serde::{Deserialize, Serialize};

use crate::{Conflict, Mode, Result, SegConfig, SegError};
use cardinal_proj::matrix::{AnyMatrixProjector, MatrixMethod};

/// The name of the document's one section.
pub const SECTION: &str = "multi_target";

/// The JSON form of [`SegConfig`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct SegConfigJson {
    mode: String,
    method: String,
    rounds: usize,
    eps: f64,
    steps: usize,
    eta: f64,
    count_weight: f64,
    energy: usize,
    grid_energy: bool,
    epochs: usize,
    batch: usize,
    lr: f64,
    seed: u64,
}

impl Default for SegConfigJson {
    fn default() -> Self {
        SegConfigJson::of(&SegConfig::default())
    }
}

impl SegConfigJson {
    fn of(c: &SegConfig) -> Self {
        SegConfigJson {
            mode: c.mode.name().into(),
            method: c.proj.method.name().into(),
            rounds: c.proj.rounds,
            eps: c.proj.eps,
            steps: c.steps,
            eta: c.eta,
            count_weight: c.count_weight,
            energy: c.energy,
            grid_energy: c.grid_energy,
            epochs: c.epochs,
            batch: c.batch,
            lr: c.lr,
            seed: c.seed,
        }
    }
}

/// The document: `{"multi_target": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SegConfigDoc {
    multi_target: SegConfigJson,
}

/// `mode` by its command-line name (`unary`, `pnc`, `oracle`).
pub(crate) fn parse_mode(s: &str) -> Result<Mode> {
    Mode::ALL
        .into_iter()
        .find(|m| m.name() == s)
        .ok_or_else(|| {
            let names = Mode::ALL.map(Mode::name);
            not_one_of(&format!("{SECTION}.mode"), s, &names)
        })
}

/// The refusal of `value` for `field`, in the one format of every configuration section
/// (`FIELD = VALUE is out of range: expected RANGE`, as `cardinal::config::check` writes it).
fn out_of_range(field: &str, value: impl std::fmt::Display, allowed: &str) -> SegError {
    SegError::OutOfRange {
        field: field.into(),
        value: value.to_string(),
        allowed: allowed.into(),
    }
}

/// The refusal of the name `value` for `field`, which takes one of `names`.
fn not_one_of(field: &str, value: &str, names: &[&str]) -> SegError {
    let allowed = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_string(),
        None => "nothing".to_string(),
    };
    out_of_range(field, format_args!("{value:?}"), &allowed)
}

/// `multi_target.FIELD` lies in `lo..=hi`.
fn in_range(field: &str, v: usize, lo: usize, hi: usize) -> Result<()> {
    match (lo..=hi).contains(&v) {
        true => Ok(()),
        false => Err(out_of_range(
            &format!("{SECTION}.{field}"),
            v,
            &format!("{lo}..={hi}"),
        )),
    }
}

/// `multi_target.FIELD` is a finite number above 0 (at least 0 when `zero_ok`).
fn positive(field: &str, v: f64, zero_ok: bool) -> Result<()> {
    let (ok, allowed) = match zero_ok {
        true => (v.is_finite() && v >= 0.0, "a finite number >= 0"),
        false => (v.is_finite() && v > 0.0, "a finite number > 0"),
    };
    match ok {
        true => Ok(()),
        false => Err(out_of_range(&format!("{SECTION}.{field}"), v, allowed)),
    }
}

impl SegConfig {
    /// Checks every value's range (`epochs` may be 0, which leaves the initial model).
    pub fn validate(&self) -> Result<()> {
        in_range("rounds", self.proj.rounds, 1, 1000)?;
        positive("eps", self.proj.eps, false)?;
        in_range("steps", self.steps, 1, 100)?;
        positive("eta", self.eta, false)?;
        positive("count_weight", self.count_weight, true)?;
        in_range("energy", self.energy, 0, 256)?;
        if self.energy > 0 && !self.mode.unrolls() {
            return Err(SegError::Conflict {
                field: format!("{SECTION}.energy"),
                value: self.energy.to_string(),
                with: Conflict::UnaryMode {
                    term: "global energy",
                    off: "0",
                },
            });
        }
        if self.grid_energy && !self.mode.unrolls() {
            return Err(SegError::Conflict {
                field: format!("{SECTION}.grid_energy"),
                value: "true".into(),
                with: Conflict::UnaryMode {
                    term: "grid energy",
                    off: "false",
                },
            });
        }
        in_range("epochs", self.epochs, 0, 1000)?;
        in_range("batch", self.batch, 1, 100_000)?;
        positive("lr", self.lr, false)
    }

    /// The configuration as a pretty JSON document.
    pub fn to_json(self) -> String {
        let doc = SegConfigDoc {
            multi_target: SegConfigJson::of(&self),
        };
        serde_json::to_string_pretty(&doc).expect("serialisable")
    }

    /// Reads and validates a document like `SegConfig::to_json`'s, where any field may be
    /// left out.
    pub fn from_json(text: &str) -> Result<Self> {
        let doc: SegConfigDoc =
            serde_json::from_str(text).map_err(|source| SegError::InvalidConfig { source })?;
        let j = doc.multi_target;
        let method: MatrixMethod = j.method.parse().map_err(|_: cardinal_proj::ProjError| {
            let names = MatrixMethod::ALL.map(MatrixMethod::name);
            not_one_of(&format!("{SECTION}.method"), &j.method, &names)
        })?;
        let cfg = SegConfig {
            mode: parse_mode(&j.mode)?,
            proj: AnyMatrixProjector::new(method, j.rounds).with_eps(j.eps),
            steps: j.steps,
            eta: j.eta,
            count_weight: j.count_weight,
            energy: j.energy,
            grid_energy: j.grid_energy,
            epochs: j.epochs,
            batch: j.batch,
            lr: j.lr,
            seed: j.seed,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SegConfig {
        SegConfig {
            mode: Mode::Predicted,
            proj: AnyMatrixProjector::new(MatrixMethod::Dykstra, 3).with_eps(0.25),
            steps: 4,
            eta: 0.5,
            count_weight: 0.0,
            energy: 3,
            grid_energy: true,
            epochs: 2,
            batch: 8,
            lr: 0.01,
            seed: 7,
        }
    }

    #[test]
    fn the_json_round_trips_and_bad_values_are_refused() {
        let back = SegConfig::from_json(&cfg().to_json()).unwrap();
        assert_eq!(back.to_json(), cfg().to_json());
        assert_eq!(back.proj, cfg().proj);
        let bad = cfg().to_json().replace("\"eta\": 0.5", "\"eta\": -1.0");
        let e = SegConfig::from_json(&bad).unwrap_err().to_string();
        assert!(
            e.contains("multi_target.eta = -1 is out of range: expected a finite number > 0"),
            "{e}"
        );
        let bad = cfg().to_json().replace("\"steps\": 4", "\"steps\": 0");
        let e = SegConfig::from_json(&bad).unwrap_err().to_string();
        assert!(
            e.contains("multi_target.steps = 0 is out of range: expected 1..=100"),
            "{e}"
        );
        let bad = cfg()
            .to_json()
            .replace("\"mode\": \"pnc\"", "\"mode\": \"crf\"");
        let e = SegConfig::from_json(&bad).unwrap_err().to_string();
        assert!(e.contains("expected unary, rows, pnc or oracle"), "{e}");
        let bad = cfg().to_json().replace("\"seed\"", "\"sed\": 1, \"seed\"");
        let e = SegConfig::from_json(&bad).unwrap_err().to_string();
        assert!(e.contains("unknown field `sed`"), "{e}");
        // Fields left out keep their defaults; the section is required.
        let partial = SegConfig::from_json(r#"{"multi_target": {"energy": 16}}"#).unwrap();
        let want = SegConfig {
            energy: 16,
            ..SegConfig::default()
        };
        assert_eq!(partial.to_json(), want.to_json());
        let e = SegConfig::from_json(r#"{"train": {"epochs": 3}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown field `train`, expected `multi_target`"),
            "{e}"
        );
        let e = SegConfig::from_json(r#"{"multi_target": {"mode": "unary", "energy": 4}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("multi_target.energy = 4: the global energy"),
            "{e}"
        );
    }
}
