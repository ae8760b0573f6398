//! `mlp`: the MLP of Table 1 (the unary network alone, binary cross-entropy, AdaGrad) with its
//! width, dropout and learning rate chosen on the dev split, its epochs by early stopping on
//! dev and its threshold tuned there: the reference a user can run (`train --system mlp`).
//! Also the dev search that it and `br-logistic` share ([`choose_on_dev`]).
//!
//! Everything here is chosen on the dev part of the training file, never on test. The
//! candidates train on the rest of the training file only (no epochs on all of train
//! afterwards), so that the dev threshold and the choice between candidates stay honest.

use cardinal::config::Config;
use cardinal::data::{CsrMatrix, Dataset};
use cardinal::engine::{Event, Trained};
use cardinal::engine::{Model, Outputs};
use cardinal::eval::evaluate_outputs;
use cardinal::search::scaled_dev_fraction;
use cardinal::system::{Hooks, Pnc, Reads, Start, System};
use cardinal::{Error, Result};

/// `config.system` of the tuned MLP.
pub const MLP: &str = "mlp";

/// Hidden widths tried on dev.
pub const WIDTHS: [usize; 2] = [150, 1000];
/// Dropout rates on the hidden layer tried on dev.
pub const DROPOUTS: [f64; 2] = [0.0, 0.5];
/// AdaGrad learning rates tried on dev.
pub const LEARNING_RATES: [f64; 2] = [0.05, 0.2];

/// Trains every candidate with `fit_one` (which reports progress through its event sink) and
/// keeps the one with the best dev example-F1 at its own (dev-tuned) threshold; the first wins
/// a tie. Each candidate is scored on its own configuration's dev split.
pub fn choose_on_dev(
    train: &Dataset,
    candidates: Vec<Config>,
    hooks: &mut Hooks,
    mut fit_one: impl FnMut(&Config, &mut dyn FnMut(Event)) -> Result<Trained>,
) -> Result<Trained> {
    let mut best: Option<(f64, Trained)> = None;
    for cfg in &candidates {
        let trained = fit_one(cfg, &mut *hooks.on_event)?;
        let (_, dev_idx) = cfg.train.dev_split(train.n_rows());
        let dev = train.select_rows(&dev_idx);
        let out = super::systems()
            .get(&trained.model.config().system)?
            .predict(&trained.model, &dev.features, 256)?;
        let score = evaluate_outputs(&trained.model, &out, &dev.labels)
            .at_threshold
            .example_f1;
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, trained));
        }
    }
    best.map(|(_, t)| t).ok_or(Error::NoCandidates)
}

/// One candidate: Table 1's MLP with the user's seed and dev split (scaled by
/// the default's rule, [`scaled_dev_fraction`]), the given width, dropout and learning rate, up to 100 epochs with
/// early stopping (patience 5, the best dev epoch kept), the threshold tuned on dev.
pub fn candidate(base: &Config, n_rows: usize, hidden: usize, dropout: f64, lr: f64) -> Config {
    let mut c = mlp();
    c.preset = MLP.into();
    c.system = Pnc.name().into();
    c.seed = base.seed;
    c.train.split_seed = base.train.split_seed;
    c.train.dev_fold = base.train.dev_fold;
    c.train.dev_fraction = scaled_dev_fraction(base.train.dev_fraction, n_rows);
    c.model.hidden = hidden;
    c.model.dropout = dropout;
    c.train.lr = lr;
    c.train.epochs = 100;
    c.train.patience = 5;
    c.train.full_epochs = 0;
    c.train.tune_threshold = true;
    c
}

/// The tuned MLP (see the module documentation). Of the configuration it reads only the seed
/// and the dev split; the saved model's configuration is the chosen candidate's.
pub struct TunedMlp;

impl System for TunedMlp {
    fn name(&self) -> &'static str {
        MLP
    }

    fn about(&self) -> &'static str {
        "a tuned MLP with a sigmoid per label (binary relevance), its grid chosen on dev; not \
         Predict and Constrain: no count, no energy, no projection"
    }

    /// No field of the `baseline` section: its candidates train as `pnc`, which reads none. The product sections are not refused:
    /// the search replaces them by its candidates', which is what a saved model of this
    /// system records and trains again from, and the default `predict` preset sets them.
    fn reads(&self) -> Reads {
        Pnc.reads()
    }

    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained> {
        let Start::Fresh(cfg) = start else {
            return Err(Error::Unsupported {
                system: MLP.into(),
                what: "resume (it searches and trains in one go, without checkpoints)".into(),
            });
        };
        let mut candidates = Vec::new();
        for &hidden in &WIDTHS {
            for &dropout in &DROPOUTS {
                for &lr in &LEARNING_RATES {
                    candidates.push(candidate(&cfg, train.n_rows(), hidden, dropout, lr));
                }
            }
        }
        let (wait, memory_budget, cancel) = (hooks.wait, hooks.memory_budget, hooks.cancel);
        let mut trained = choose_on_dev(train, candidates, hooks, |c, on_event| {
            let mut inner = Hooks {
                on_event,
                after_epoch: &mut |_| Ok(()),
                wait,
                memory_budget,
                cancel,
                search: None,
                forests: None,
            };
            Pnc.fit(train, Start::Fresh(c.clone()), &mut inner)
        })?;
        trained.model.config_mut().system = MLP.into();
        Ok(trained)
    }

    fn predict_networks(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        batch: usize,
    ) -> Result<Outputs<f32>> {
        Pnc.predict_networks(model, x, batch)
    }
}

/// Table 1's MLP row: the unary network alone with binary cross-entropy (also the base of
/// the tuned `mlp` system's candidates).
pub(crate) fn mlp() -> Config {
    let mut c = Config::paper();
    c.preset = "table1-mlp".into();
    c.inference.steps = 0;
    c.loss.f1_weight = 0.0;
    c.loss.unary_bce_weight = 1.0;
    c.loss.sum_over_batch = false;
    c.train.unary_weight_decay_mult = 1.0;
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search runs every candidate, returns one that predicts through the registry's
    /// `mlp`, and keeps its dev-tuned threshold.
    #[test]
    fn the_tuned_mlp_trains_and_predicts() {
        let data = super::super::tests::toy(150, 9);
        let mut cfg = Config::paper();
        cfg.system = MLP.into();
        let mut starts = 0;
        let mut count = |e: Event| {
            if matches!(e, Event::Start { phase: 1, .. }) {
                starts += 1;
            }
        };
        let mut hooks = Hooks {
            on_event: &mut count,
            after_epoch: &mut |_| Ok(()),
            wait: cardinal::runtime::WaitPolicy::Active,
            memory_budget: cardinal::runtime::MemoryBudget::default(),
            cancel: &std::sync::atomic::AtomicBool::new(false),
            search: None,
            forests: None,
        };
        let trained = TunedMlp.fit(&data, Start::Fresh(cfg), &mut hooks).unwrap();
        assert_eq!(starts, WIDTHS.len() * DROPOUTS.len() * LEARNING_RATES.len());
        let model = trained.model;
        assert_eq!(model.config().system, MLP);
        assert!(WIDTHS.contains(&model.config().model.hidden));
        let out = crate::systems()
            .get(MLP)
            .unwrap()
            .predict(&model, &data.features, 64)
            .unwrap();
        let rep = evaluate_outputs(&model, &out, &data.labels);
        assert!(rep.at_threshold.example_f1 > 0.5, "{:?}", rep.at_threshold);
    }
}
