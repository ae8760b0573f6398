//! The forests as systems of their own: `forest` (a random forest whose neighbourhoods decide
//! each row's label set for the expected F1) and `forest-blend` (that forest's joint mixed with
//! Predict and Constrain's networks). Neither runs the energy, the unrolled ascent or the
//! projection: the model records which it is (`config.system`), so that nothing calls it
//! Predict and Constrain.

use super::{check, OutputKind, Pnc, System};
use crate::config::{Config, FOREST, FOREST_BLEND};
use crate::data::{CsrMatrix, Dataset};
use crate::error::{Error, Result};
use crate::fitted::{Fitted, ForestModel};
use crate::pipeline::{Model, Outputs};
use crate::train::{Hooks, Start, TrainState, Trained};
use cardinal_forest::{Forest, GrowSettings};

/// A forest system: the forest alone, or blended with the networks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForestSystem {
    blend: bool,
}

impl ForestSystem {
    /// `forest`: the forest decides alone; no network is trained.
    pub const FOREST: Self = Self { blend: false };
    /// `forest-blend`: the forest's joint mixed with the trained networks'.
    pub const BLEND: Self = Self { blend: true };
}

impl System for ForestSystem {
    fn name(&self) -> &'static str {
        if self.blend {
            FOREST_BLEND
        } else {
            FOREST
        }
    }

    fn about(&self) -> &'static str {
        if self.blend {
            "a random forest blended with Predict and Constrain's count and unary networks \
             (a quarter of the joint theirs), each row's label set decided for the expected \
             example-F1; not Predict and Constrain: no energy, no unrolled ascent, no \
             projection, z is the set's size"
        } else {
            "a random forest whose neighbourhoods decide each row's label set for the \
             expected example-F1; not Predict and Constrain: no networks, no energy, no \
             unrolled ascent, no projection, z is the set's size"
        }
    }

    fn outputs(&self) -> OutputKind {
        OutputKind::Decided
    }

    fn validate(&self, cfg: &Config) -> Result<()> {
        let share = cfg.model.forest.as_ref().map(|f| f.networks);
        let fits = match share {
            Some(s) if self.blend => s > 0.0,
            Some(s) => s == 0.0,
            None => false,
        };
        if fits {
            return Ok(());
        }
        Err(Error::OutOfRange {
            field: "model.forest".into(),
            value: share.map_or_else(|| "none".into(), |s| format!("networks = {s}")),
            allowed: if self.blend {
                "a forest with networks > 0 for system `forest-blend` (choosing that \
                 system sets one up)"
                    .into()
            } else {
                "a forest with networks = 0 for system `forest` (choosing that system sets one up)"
                    .into()
            },
        })
    }

    fn resumable(&self) -> bool {
        // The blend trains its networks epoch by epoch, the forest grown before them and
        // held by every checkpoint; the forest alone has no epochs.
        self.blend
    }

    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained> {
        match start {
            Start::Fresh(cfg) => {
                check(self, &cfg)?;
                fit_fresh(train, cfg, hooks)
            }
            Start::Resume(state) => crate::train::run(train, *state, hooks),
        }
    }

    // A forest alone decides by itself; a blend's networks carry their forest, and Predict
    // and Constrain's entry point routes them to the forest's decision.
    fn predict(&self, model: &Fitted, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>> {
        match model {
            Fitted::Forest(forest) => crate::eval::forest_alone_predict(forest, x, None),
            Fitted::Networks(_) => Pnc.predict(model, x, batch),
        }
    }

    fn predict_networks(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        batch: usize,
    ) -> Result<Outputs<f32>> {
        Pnc.predict_networks(model, x, batch)
    }

    fn predict_with_counts(
        &self,
        model: &Fitted,
        x: &CsrMatrix,
        counts: Vec<f32>,
        batch: usize,
    ) -> Result<Option<Outputs<f32>>> {
        match model {
            Fitted::Forest(forest) => {
                crate::eval::forest_alone_predict(forest, x, Some(&counts)).map(Some)
            }
            Fitted::Networks(_) => Pnc.predict_with_counts(model, x, counts, batch),
        }
    }
}

/// Trains `cfg` from scratch, whichever of Predict and Constrain and the forests it is, with
/// the search's record (`hooks.search`, if one ran above) kept in the model. A forest alone
/// is grown and is the whole model; a blend's forest is grown first (so that every checkpoint
/// of the networks' training holds it), then its networks train.
pub(super) fn fit_fresh(train: &Dataset, cfg: Config, hooks: &mut Hooks) -> Result<Trained> {
    let grow = |settings: GrowSettings, hooks: &Hooks| match hooks.forests {
        Some(cache) => cache.grow(train, &settings, cfg.seed, hooks.cancel),
        None => Forest::fit(train, &settings, cfg.seed, hooks.cancel),
    };
    if let Some(settings) = cfg.model.forest.as_ref().filter(|f| f.networks == 0.0) {
        // Nothing to train by gradient: the forest alone decides.
        cfg.validate()?;
        let forest = grow(settings.growth(), hooks)?;
        let rows = train.n_rows();
        let labels: usize = (0..rows).map(|r| train.labels.count(r)).sum();
        let model = ForestModel {
            n_features: train.n_features(),
            n_labels: train.n_labels(),
            train_mean_cardinality: labels as f64 / rows.max(1) as f64,
            search: hooks.search.take(),
            config: cfg,
            forest,
        };
        return Ok(Trained {
            model: model.into(),
            history: Vec::new(),
        });
    }
    let mut state = TrainState::new_within(train, &cfg, hooks.memory_budget)?;
    state.model.search = hooks.search.take();
    if let Some(settings) = &cfg.model.forest {
        state.model.forest = Some(grow(settings.growth(), hooks)?);
    }
    if let Some(prior) = &cfg.model.forest_prior {
        // Grown on every row of the training file, dev rows included: each row's prior in
        // training is out of bag (`eval::training_prior`), so no row's reads its own labels.
        state.model.forest = Some(grow(prior.growth(), hooks)?);
    }
    crate::train::run(train, state, hooks)
}

#[cfg(test)]
mod tests;
