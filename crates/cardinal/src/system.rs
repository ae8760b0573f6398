//! One owner of "which system": the [`System`] trait that Predict and Constrain and every
//! Table 1 system implement, and the [`Systems`] registry that maps `config.system` to one.
//!
//! Training, evaluation and cross-validation take a `&dyn System` and never ask which it is;
//! [`Systems::get`] is the only place that looks at `config.system`. The product registers
//! [`Pnc`]; the `cardinal-paper` crate adds the baselines of the paper's Table 1.

use std::sync::Arc;

use crate::config::{Config, PNC, SECTION};
use crate::data::{CsrMatrix, Dataset};
use crate::error::{Error, Result};
use crate::eval;
use crate::pipeline::{Model, Outputs};
use crate::train::Trained;
pub use crate::train::{Hooks, Start, TrainState};

/// A system of the paper: how it trains, how it predicts, and what it accepts.
///
/// Every system stores its weights in the same [`Model`] container, so saving, loading,
/// `eval` and `predict` work the same for all.
pub trait System: Send + Sync {
    /// Its name in `config.system`.
    fn name(&self) -> &'static str;

    /// Refuses configuration fields that this system would otherwise silently ignore.
    fn validate(&self, _cfg: &Config) -> Result<()> {
        Ok(())
    }

    /// Whether it trains epoch by epoch from a [`TrainState`] and can therefore write
    /// checkpoints and resume.
    fn resumable(&self) -> bool {
        false
    }

    /// Trains on `train` (a dev part is held out as the configuration says).
    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained>;

    /// Inference on every row of `x`, `batch` rows at a time.
    fn predict(&self, model: &Model<f32>, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>>;

    /// Inference with each row's count `z` given (`counts`, one per row of `x`) instead of
    /// predicted; `None` for systems whose inference has no count.
    fn predict_with_counts(
        &self,
        _model: &Model<f32>,
        _x: &CsrMatrix,
        _counts: Vec<f32>,
        _batch: usize,
    ) -> Result<Option<Outputs<f32>>> {
        Ok(None)
    }
}

/// Predict and Constrain: the unrolled model, trained end to end by the crate's trainer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pnc;

impl System for Pnc {
    fn name(&self) -> &'static str {
        PNC
    }

    /// Refuses any setting of the `baseline` section ([`Config::system_settings`]): only the
    /// Table 1 systems read it, and a setting that does nothing must not pass for one that
    /// does. A field at the value every configuration saved before held sets nothing, so
    /// that those configurations train again.
    fn validate(&self, cfg: &Config) -> Result<()> {
        match cfg.system_settings.not_at_legacy_default() {
            Some(field) => Err(Error::NotRead {
                field: format!("{SECTION}.{field}"),
                system: PNC.into(),
                why: "the `baseline` section configures the Table 1 systems (`--system`) only"
                    .into(),
            }),
            None => Ok(()),
        }
    }

    fn resumable(&self) -> bool {
        true
    }

    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained> {
        let state = match start {
            Start::Fresh(cfg) => {
                self.validate(&cfg)?;
                // The default's data-dependent rule: on a small file, the configuration
                // that cross-validates best on it (unchanged otherwise).
                let cfg = crate::search::choose(
                    self,
                    train,
                    cfg,
                    hooks.wait,
                    hooks.memory_budget,
                    hooks.on_event,
                )?;
                if let Some(settings) = &cfg.model.forest {
                    // Nothing to train by gradient: the forest is the model.
                    let mut model = TrainState::new_within(train, &cfg, hooks.memory_budget)?.model;
                    model.forest = Some(crate::forest::Forest::fit(train, settings, cfg.seed)?);
                    return Ok(Trained {
                        model,
                        history: Vec::new(),
                    });
                }
                TrainState::new_within(train, &cfg, hooks.memory_budget)?
            }
            Start::Resume(state) => *state,
        };
        crate::train::run(train, state, hooks)
    }

    fn predict(&self, model: &Model<f32>, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>> {
        eval::predict(model, x, batch)
    }

    fn predict_with_counts(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        counts: Vec<f32>,
        batch: usize,
    ) -> Result<Option<Outputs<f32>>> {
        eval::predict_with_counts(model, x, counts, batch).map(Some)
    }
}

/// The systems a front end knows, by name.
#[derive(Clone)]
pub struct Systems {
    systems: Vec<Arc<dyn System>>,
}

impl std::fmt::Debug for Systems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Default for Systems {
    fn default() -> Self {
        Self::product()
    }
}

impl Systems {
    /// The product's systems: [`Pnc`].
    pub fn product() -> Self {
        Self {
            systems: vec![Arc::new(Pnc)],
        }
    }

    /// Adds `system` (replacing one of the same name).
    pub fn with(mut self, system: impl System + 'static) -> Self {
        self.systems.retain(|s| s.name() != system.name());
        self.systems.push(Arc::new(system));
        self
    }

    /// The names known, in registration order.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.systems.iter().map(|s| s.name()).collect()
    }

    /// The system called `name`.
    pub fn get(&self, name: &str) -> Result<&dyn System> {
        self.systems
            .iter()
            .find(|s| s.name() == name)
            .map(|s| s.as_ref())
            .ok_or_else(|| Error::UnknownSystem {
                name: name.to_owned(),
                known: self.names().join(", "),
            })
    }

    /// The system of `cfg`, after it has checked the configuration.
    pub fn for_config(&self, cfg: &Config) -> Result<&dyn System> {
        let system = self.get(&cfg.system)?;
        system.validate(cfg)?;
        Ok(system)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_systems_are_named_with_the_known_ones() {
        let systems = Systems::product();
        assert_eq!(systems.get("pnc").unwrap().name(), "pnc");
        let err = systems.get("dvn").err().unwrap().to_string();
        assert!(err.contains("`dvn`") && err.contains("pnc"), "{err}");
    }

    /// A field of the `baseline` section, which `pnc` ignores, is refused by its path and
    /// the system's name, from the configuration text on; the section a configuration saved
    /// before carried at its defaults passes.
    #[test]
    fn pnc_refuses_the_fields_it_ignores() {
        let systems = Systems::product();
        for (text, field) in [
            (
                r#"{"baseline": {"optimizer": "adam"}}"#,
                "baseline.optimizer",
            ),
            (
                r#"{"baseline": {"pretrain_epochs": 3}}"#,
                "baseline.pretrain_epochs",
            ),
            (r#"{"baseline": {"no_such": 1}}"#, "baseline.no_such"),
        ] {
            let cfg = Config::resolve(None, Some(text), None).unwrap();
            match systems.for_config(&cfg) {
                Err(Error::NotRead {
                    field: f,
                    system,
                    why,
                }) => {
                    assert_eq!((f.as_str(), system.as_str()), (field, PNC), "{text}");
                    assert!(why.contains("Table 1"), "{why}");
                }
                other => panic!("{text}: {:?}", other.map(|s| s.name())),
            }
        }
        let mut saved = Config::predict();
        saved
            .system_settings
            .set_fields(crate::config::SystemSettings::legacy_defaults());
        let text = serde_json::to_string(&saved).unwrap();
        let cfg = Config::resolve(None, Some(&text), None).unwrap();
        assert_eq!(systems.for_config(&cfg).unwrap().name(), PNC);
    }
}
