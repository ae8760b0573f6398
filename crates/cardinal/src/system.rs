//! One owner of "which system": the [`System`] trait that Predict and Constrain and every
//! Table 1 system implement, and the [`Systems`] registry that maps `config.system` to one.
//!
//! Training, evaluation and cross-validation take a `&dyn System` and never ask which it is;
//! [`Systems::get`] is the only place that looks at `config.system`. The product registers
//! [`Pnc`]; the `cardinal-paper` crate adds the baselines of the paper's Table 1. Each system
//! declares what of a configuration it reads ([`Reads`]), and a field it does not read is
//! refused when set ([`check`]), so that a setting that does nothing never passes for one
//! that does.

use std::sync::Arc;

use crate::config::{Config, SavedConfigs, SavedName, PNC, SECTION};
pub use crate::config::{Fields, Reads, SettingFields, SettingGroups, NO_SETTINGS};
use crate::data::{CsrMatrix, Dataset};
use crate::error::{Error, Result, Unread};
use crate::eval;
pub use crate::fitted::Fitted;
pub use crate::output_kind::OutputKind;
use crate::pipeline::{Model, Outputs};
use crate::train::Trained;
pub use crate::train::{Hooks, Start, TrainState};
pub use forest::ForestSystem;

mod forest;

/// A system of the paper: how it trains, how it predicts, and what it accepts.
///
/// What a system's training makes is a [`Fitted`] model of its own kind (networks, or a
/// forest alone), which it predicts with; saving, loading, `eval` and `predict` take every kind.
pub trait System: Send + Sync {
    /// Its name in `config.system`.
    fn name(&self) -> &'static str;

    /// What of a configuration it reads: every product section and no field of the
    /// `baseline` section unless it says otherwise.
    fn reads(&self) -> Reads {
        Reads::PNC
    }

    /// Its own checks of a configuration, beyond the refusal of what it does not read
    /// ([`check`] runs both).
    fn validate(&self, _cfg: &Config) -> Result<()> {
        Ok(())
    }

    /// What it is, in one line for a user (`info`, `eval`, `train`'s last line).
    fn about(&self) -> &'static str {
        "a baseline of the paper's Table 1 (not Predict and Constrain)"
    }

    /// What its outputs are: what of `eval`'s diagnostics applies to it and which labelling
    /// rules it accepts ([`OutputKind`]). Systems whose outputs are graded label scores
    /// without a predicted count need not say.
    fn outputs(&self) -> OutputKind {
        OutputKind::Scores
    }

    /// Whether the default's search chooses its configuration when the `search` section asks
    /// for it (Predict and Constrain: the candidates are made from its configuration). The
    /// engine runs the search above the system, before a fresh training; the chosen
    /// candidate is trained by its own system, with the search's record in [`Hooks::search`].
    fn searched(&self) -> bool {
        false
    }

    /// Whether it trains epoch by epoch from a [`TrainState`] and can therefore write
    /// checkpoints and resume.
    fn resumable(&self) -> bool {
        false
    }

    /// Trains on `train` (a dev part is held out as the configuration says).
    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained>;

    /// Inference on every row of `x`, `batch` rows at a time. The default runs
    /// [`System::predict_networks`] on a model of networks and refuses a forest alone
    /// ([`Error::ModelKind`]).
    fn predict(&self, model: &Fitted, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>> {
        self.predict_networks(model.networks_for(self.name())?, x, batch)
    }

    /// Inference of the networks `model` on every row of `x`, `batch` rows at a time: what a
    /// system whose model is networks implements (and its own training calls, on the model
    /// it is training).
    fn predict_networks(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        batch: usize,
    ) -> Result<Outputs<f32>>;

    /// Inference with each row's count `z` given (`counts`, one per row of `x`) instead of
    /// predicted; `None` for systems whose inference has no count.
    fn predict_with_counts(
        &self,
        _model: &Fitted,
        _x: &CsrMatrix,
        _counts: Vec<f32>,
        _batch: usize,
    ) -> Result<Option<Outputs<f32>>> {
        Ok(None)
    }
}

/// What a Predict and Constrain model with a forest's prior (`model.forest_prior`) is, in the
/// words of [`System::about`].
pub const PNC_FOREST_PRIOR_ABOUT: &str =
    "Predict and Constrain over a forest prior: a count network predicts z = h(x), unary MLP \
     scores plus a random forest's label log-odds (model.forest_prior) and a global energy \
     network are maximised by unrolled projected gradient ascent on {0 <= y <= 1, sum y = z}";

/// Predict and Constrain: the unrolled model, trained end to end by the crate's trainer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pnc;

impl System for Pnc {
    fn name(&self) -> &'static str {
        PNC
    }

    fn resumable(&self) -> bool {
        true
    }

    fn searched(&self) -> bool {
        true
    }

    fn about(&self) -> &'static str {
        "Predict and Constrain: a count network predicts z = h(x), unary MLP scores plus a \
         global energy network are maximised by unrolled projected gradient ascent on \
         {0 <= y <= 1, sum y = z}"
    }

    fn outputs(&self) -> OutputKind {
        OutputKind::Constrained
    }

    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained> {
        match start {
            Start::Fresh(cfg) => {
                check(self, &cfg)?;
                // A model with a forest (a candidate of the search, trained in its folds) is
                // trained as the forest's system trains it.
                forest::fit_fresh(train, cfg, hooks)
            }
            Start::Resume(state) => crate::train::run(train, *state, hooks),
        }
    }

    fn predict_networks(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        batch: usize,
    ) -> Result<Outputs<f32>> {
        eval::predict(model, x, batch)
    }

    fn predict_with_counts(
        &self,
        model: &Fitted,
        x: &CsrMatrix,
        counts: Vec<f32>,
        batch: usize,
    ) -> Result<Option<Outputs<f32>>> {
        eval::predict_with_counts(model.networks_for(self.name())?, x, counts, batch).map(Some)
    }
}

/// Checks `cfg` for `system`: refuses a field it does not read ([`System::reads`]) with
/// [`Error::NotRead`], naming the field and the system, then runs its own checks
/// ([`System::validate`]).
pub fn check<S: System + ?Sized>(system: &S, cfg: &Config) -> Result<()> {
    if cfg.model.forest_prior.is_some() && system.name() != PNC {
        return Err(Error::NotRead {
            field: "model.forest_prior".into(),
            system: system.name().into(),
            because: Unread::UnaryScoresOnly,
        });
    }
    if let Some((field, because)) = system.reads().first_unread(cfg) {
        return Err(Error::NotRead {
            field,
            system: system.name().into(),
            because,
        });
    }
    system.validate(cfg)
}

/// The systems a front end knows, by name, with the names their saved configurations carry
/// ([`SavedConfigs`]).
#[derive(Clone)]
pub struct Systems {
    systems: Vec<Arc<dyn System>>,
    saved_configs: SavedConfigs,
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
    /// The product's systems: [`Pnc`] and the forests the default's search may choose
    /// ([`ForestSystem`]: `forest`, `forest-blend`).
    pub fn product() -> Self {
        Self {
            systems: vec![
                Arc::new(Pnc),
                Arc::new(ForestSystem::FOREST),
                Arc::new(ForestSystem::BLEND),
            ],
            saved_configs: SavedConfigs::product(),
        }
    }

    /// Adds `name`, a name configurations of a system added here are saved under, with the
    /// preset they are read over.
    pub fn with_saved_name(mut self, name: SavedName) -> Self {
        self.saved_configs = self.saved_configs.with(name);
        self
    }

    /// Adds `fields`, settings of the `baseline` section at the values every configuration
    /// saved in their time held ([`SavedConfigs::with_settings_of_old`]): dropped when a
    /// configuration or a model folder is read, since they set nothing.
    pub fn with_settings_of_old(
        mut self,
        fields: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        self.saved_configs = self.saved_configs.with_settings_of_old(fields);
        self
    }

    /// What saved configurations of these systems carry (names, settings of old), for
    /// [`ConfigRequest::saved`](crate::config::ConfigRequest::saved).
    pub fn saved_configs(&self) -> &SavedConfigs {
        &self.saved_configs
    }

    /// Adds `system` (replacing one of the same name).
    pub fn with(mut self, system: impl System + 'static) -> Self {
        self.systems.retain(|s| s.name() != system.name());
        self.systems.push(Arc::new(system));
        self
    }

    /// The names known, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
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

    /// The system of `cfg`, after it has checked the configuration ([`check`]).
    pub fn for_config(&self, cfg: &Config) -> Result<&dyn System> {
        let system = self.get(&cfg.system)?;
        check(system, cfg)?;
        Ok(system)
    }

    /// A loaded model's configuration made one its system accepts: each field the system
    /// does not read is dropped from the `baseline` section, or set back to its default in a
    /// product section; returns their dotted paths, for a note. A model folder saved before
    /// its system declared what it reads may carry such a field (the `dvn` preset set `baseline.init_zeros`, which `dvn`
    /// never read): it set nothing when the model was trained, so dropping it changes no
    /// prediction, where refusing it would lose the model, and keeping it would hand it on
    /// with the model's configuration (to `train --config`, which refuses it). Unknown
    /// systems are refused.
    pub(crate) fn drop_unread(&self, cfg: &mut Config) -> Result<Vec<String>> {
        let reads = self.get(&cfg.system)?.reads();
        // Settings of old set nothing: dropped without a note.
        self.saved_configs
            .drop_old_settings(&mut cfg.system_settings);
        let mut dropped: Vec<String> = cfg
            .system_settings
            .drop_not_read(&reads.settings())
            .into_iter()
            .map(|f| format!("{SECTION}.{f}"))
            .collect();
        for field in reads.unread_product_fields(cfg) {
            field.reset(cfg);
            dropped.push(field.path());
        }
        Ok(dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Field, InferenceConfig, InferenceField, LossConfig, SearchConfig};

    #[test]
    fn unknown_systems_are_named_with_the_known_ones() {
        let systems = Systems::product();
        assert_eq!(systems.get("pnc").unwrap().name(), "pnc");
        let err = systems.get("dvn").err().unwrap().to_string();
        assert!(err.contains("`dvn`") && err.contains("pnc"), "{err}");
    }

    /// A field of the `baseline` section, which `pnc` ignores, is refused by its path and
    /// the system's name, from the configuration text on; the fields a registry names as
    /// settings of old pass at their old values.
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
                    because,
                }) => {
                    assert_eq!((f.as_str(), system.as_str()), (field, PNC), "{text}");
                    assert_eq!(
                        because,
                        Unread::OthersSection {
                            section: "baseline"
                        }
                    );
                }
                other => panic!("{text}: {:?}", other.map(|s| s.name())),
            }
        }
        // Settings of old a registry names are dropped on reading, at their old value only.
        let old = serde_json::json!({"optimizer": "adagrad", "pretrain_epochs": 0});
        let old = old.as_object().unwrap().clone();
        let registry = Systems::product().with_settings_of_old(old.clone());
        let mut saved = Config::predict();
        saved.system_settings.set_fields(old);
        let text = serde_json::to_string(&saved).unwrap();
        let request = |saved| crate::config::ConfigRequest {
            file: Some(&text),
            saved,
            ..Default::default()
        };
        let cfg = request(Some(registry.saved_configs())).resolve().unwrap();
        assert!(cfg.system_settings.is_empty());
        assert_eq!(registry.for_config(&cfg).unwrap().name(), PNC);
        let cfg = request(None).resolve().unwrap();
        assert!(systems.for_config(&cfg).is_err());
        // A model folder's configuration loses them without a note.
        let mut loaded = saved.clone();
        assert!(registry.drop_unread(&mut loaded).unwrap().is_empty());
        assert!(loaded.system_settings.is_empty());
        let mut other = saved.clone();
        other.system_settings.set_fields(
            serde_json::json!({"optimizer": "adam"})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(
            registry.drop_unread(&mut other).unwrap(),
            ["baseline.optimizer"]
        );
    }

    /// A system that reads one field of the `baseline` section, two of `inference` and no
    /// `loss` or `search`.
    struct Narrow;

    /// The one field of the `baseline` section `Narrow` reads, typed as the crate that owns
    /// the section types its fields.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Optimizer;

    impl Field for Optimizer {
        const SECTION: &'static str = SECTION;
        const ALL: &'static [Self] = &[Optimizer];
        fn name(self) -> &'static str {
            "optimizer"
        }
    }

    impl System for Narrow {
        fn name(&self) -> &'static str {
            "narrow"
        }
        fn reads(&self) -> Reads {
            Reads {
                settings: &SettingGroups(&[&[Optimizer]]),
                inference: Fields::Only(&[InferenceField::Steps, InferenceField::Eta]),
                loss: Fields::NONE,
                search: Fields::NONE,
            }
        }
        fn fit(&self, _: &Dataset, _: Start, _: &mut Hooks) -> Result<Trained> {
            unreachable!("never trained")
        }
        fn predict_networks(
            &self,
            _: &Model<f32>,
            _: &CsrMatrix,
            _: usize,
        ) -> Result<Outputs<f32>> {
            unreachable!("never run")
        }
    }

    /// What a system does not read is refused by its path, what it reads passes; a loaded
    /// configuration drops the first and keeps the second.
    #[test]
    fn a_system_refuses_what_it_does_not_read_and_a_loaded_model_drops_it() {
        let systems = Systems::product().with(Narrow);
        let refused = |text: &str| {
            let mut cfg = Config::paper();
            cfg = cfg.with_overrides(text).unwrap();
            cfg.system = "narrow".into();
            match systems.for_config(&cfg) {
                Ok(_) => None,
                Err(Error::NotRead { field, system, .. }) => {
                    assert_eq!(system, "narrow");
                    Some(field)
                }
                Err(e) => panic!("{text}: {e}"),
            }
        };
        assert_eq!(refused(r#"{"baseline": {"optimizer": "adam"}}"#), None);
        assert_eq!(refused(r#"{"inference": {"eta": 0.1, "steps": 3}}"#), None);
        assert_eq!(
            refused(r#"{"inference": {"eta": 0.1, "momentum": 0.5}}"#).as_deref(),
            Some("inference.momentum")
        );
        assert_eq!(
            refused(r#"{"inference": {"rounds": 3}}"#).as_deref(),
            Some("inference.rounds")
        );
        assert_eq!(
            refused(r#"{"baseline": {"lr_decay": 0.5}}"#).as_deref(),
            Some("baseline.lr_decay")
        );
        assert_eq!(
            refused(r#"{"loss": {"f1_weight": 2.0}}"#).as_deref(),
            Some("loss.f1_weight")
        );
        let mut cfg = Config::paper();
        cfg.search = SearchConfig::predict();
        cfg.system = "narrow".into();
        let e = systems.for_config(&cfg).err().unwrap().to_string();
        assert!(e.starts_with("search.") && e.contains("`narrow`"), "{e}");

        cfg = cfg
            .with_overrides(
                r#"{"baseline": {"optimizer": "adam", "lr_decay": 0.5},
                    "inference": {"eta": 0.1, "momentum": 0.5, "rounds": 3},
                    "loss": {"f1_weight": 2.0}, "search": {}}"#,
            )
            .unwrap();
        cfg.search = SearchConfig::predict();
        let dropped = systems.drop_unread(&mut cfg).unwrap();
        assert_eq!(
            dropped,
            [
                "baseline.lr_decay",
                "inference.momentum",
                "inference.rounds",
                "loss.f1_weight",
                "search.max_rows"
            ],
        );
        assert_eq!(cfg.system_settings.fields().len(), 1);
        assert_eq!(cfg.inference.eta, 0.1);
        assert_eq!(
            (&cfg.loss, &cfg.search),
            (&LossConfig::default(), &SearchConfig::default())
        );
        cfg.inference.eta = InferenceConfig::default().eta;
        assert_eq!(cfg.inference, InferenceConfig::default());
        assert_eq!(systems.for_config(&cfg).unwrap().name(), "narrow");
    }
}
