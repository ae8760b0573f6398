//! The state of a run: model, optimiser, schedule position and history, and what a run reports.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::init::init_model_within;
use super::optim::Adagrad;
use crate::config::Config;
use std::sync::atomic::AtomicBool;

use crate::data::Dataset;
use crate::error::Result;
use crate::model::Params;
use crate::pipeline::Model;
use crate::runtime::{MemoryBudget, WaitPolicy};

/// What happened during training, for progress display and `metrics.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochRecord {
    /// 1 = epochs on the train part of the split, 2 = epochs on all of train.
    pub phase: u8,
    /// Epoch number within its phase, from 1.
    pub epoch: usize,
    /// Mean total loss per batch.
    pub loss: f64,
    /// Dev example-F1 (%) at the configured threshold (phase 1 with a dev split only).
    pub dev_example_f1: Option<f64>,
    /// Mean predicted count on dev.
    pub dev_mean_z: Option<f64>,
    /// Wall-clock seconds of the epoch's training (without dev evaluation).
    pub seconds: f64,
}

/// Progress events.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A phase begins.
    Start {
        /// 1 or 2, as in [`EpochRecord::phase`].
        phase: u8,
        /// Epochs the phase runs at most.
        epochs: usize,
        /// Batches in each of its epochs.
        batches_per_epoch: usize,
    },
    /// A batch was trained on.
    Batch {
        /// 1 or 2, as in [`EpochRecord::phase`].
        phase: u8,
        /// Epoch number within its phase, from 1.
        epoch: usize,
        /// Batch number within its epoch, from 0.
        batch: usize,
        /// The batch's total loss.
        loss: f64,
    },
    /// An epoch finished.
    Epoch(&'a EpochRecord),
    /// The default's search (`crate::search`) starts to cross-validate its candidates.
    Searching {
        /// Candidates it scores.
        candidates: usize,
        /// Folds of the cross-validation.
        folds: usize,
        /// Of those, the folds trained and scored ([`crate::config::SearchConfig::folds_run`]).
        folds_run: usize,
        /// Rows of the training file.
        rows: usize,
    },
    /// The default's search trained and scored one fold of a candidate (or of several that
    /// share its trainings), for progress off a terminal.
    SearchFold {
        /// The candidates scored, by preset name, the one trained first.
        candidates: &'a [String],
        /// The fold, from 1.
        fold: usize,
        /// Folds run for these candidates.
        folds_run: usize,
        /// Wall-clock seconds the fold took.
        seconds: f64,
    },
    /// The default's search (`crate::search`) scored its candidates and chose one, before
    /// the chosen configuration trains.
    Searched {
        /// What it did: every candidate's score, and the one chosen.
        record: &'a crate::search_record::SearchRecord,
    },
}

/// A trained model with its history.
#[derive(Debug, Clone)]
pub struct Trained {
    /// The final model (with the averaged weights when averaging), of its system's kind.
    pub model: crate::fitted::Fitted,
    /// One record per epoch run, in order.
    pub history: Vec<EpochRecord>,
}

/// Where a run stands between two epochs: with the model and optimiser, everything needed to
/// continue it bit-identically (batch order, generator state, early-stopping state).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Phase of the next epoch (1: train part of the split, 2: all of train, 3: finished).
    pub phase: u8,
    /// Epochs finished in the current phase.
    pub epochs_done: usize,
    /// The batch order, shuffled in place at the start of every epoch.
    pub order: Vec<usize>,
    /// The generator of the batch shuffles.
    pub rng: Xoshiro256PlusPlus,
    /// Best dev example-F1 (%) so far (early stopping only).
    pub best_dev_f1: Option<f64>,
    /// Epochs since the best dev epoch.
    pub since_best: usize,
    /// Early stopping has ended the current phase.
    pub stopped_early: bool,
    /// One record per epoch run so far, over both phases.
    pub history: Vec<EpochRecord>,
    /// Updates folded into the weight average so far (`train.average_epochs`).
    #[serde(default)]
    pub average_steps: u64,
}

/// A run in progress.
#[derive(Debug, Clone)]
pub struct TrainState {
    /// The model being trained.
    pub model: Model<f32>,
    /// Its optimiser.
    pub(crate) optimizer: Adagrad<f32>,
    /// Parameters of the best dev epoch so far (early stopping only).
    pub best_params: Option<Params<f32>>,
    /// Moving average of the weights (`train.average_epochs`), `None` when not averaging.
    pub average: Option<Params<f32>>,
    /// Where the schedule stands.
    pub progress: Progress,
}

impl TrainState {
    /// A fresh run of `cfg` on `train`, within the default memory budget (tests' shorthand).
    #[cfg(test)]
    pub(crate) fn new(train: &Dataset, cfg: &Config) -> Result<Self> {
        Self::new_within(train, cfg, MemoryBudget::default())
    }

    /// A fresh run of `cfg` on `train`, refused when its model would not fit `budget`.
    pub(crate) fn new_within(train: &Dataset, cfg: &Config, budget: MemoryBudget) -> Result<Self> {
        let model = init_model_within(train, cfg, budget)?;
        let optimizer = Adagrad::new(&model.params, cfg.train.lr, cfg.train.adagrad_init);
        // Batch order uses its own stream so that changing the split never changes the init.
        let rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x9E37_79B9_7F4A_7C15);
        let progress = Progress {
            phase: 1,
            epochs_done: 0,
            order: Vec::new(),
            rng,
            best_dev_f1: None,
            since_best: 0,
            stopped_early: false,
            history: Vec::new(),
            average_steps: 0,
        };
        let average = cfg.train.average_epochs.map(|_| model.params.clone());
        Ok(Self {
            model,
            optimizer,
            best_params: None,
            average,
            progress,
        })
    }

    /// Total epochs run so far, over both phases.
    pub(crate) fn epochs_run(&self) -> usize {
        self.progress.history.len()
    }
}

/// Where a training run starts.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per run: the size does not matter
pub enum Start {
    /// A fresh run of this configuration.
    Fresh(Config),
    /// An interrupted run, from its last checkpoint (resumable systems only).
    Resume(Box<TrainState>),
}

/// What a training run reports back while it runs.
pub struct Hooks<'a> {
    /// Progress: phases, batches, epochs.
    pub on_event: &'a mut dyn FnMut(Event),
    /// Called with the state after every epoch of a resumable system (e.g. to write a
    /// checkpoint); an error from it stops training.
    pub after_epoch: &'a mut dyn FnMut(&TrainState) -> Result<()>,
    /// How idle workers wait between parallel sections.
    pub wait: WaitPolicy,
    /// The memory budget a fresh model is checked against ([`crate::train::init_model_within`]).
    pub memory_budget: MemoryBudget,
    /// Set (by a front end whose user interrupts, say Ctrl-C in Python) to stop training with
    /// [`crate::Error::Interrupted`]: checked after every epoch, between the search's folds
    /// and between a forest's trees.
    pub cancel: &'a AtomicBool,
    /// What the default's search, run above the system, chose: recorded in the model a
    /// fresh training makes, from its first checkpoint on (`None`: no search ran).
    pub search: Option<crate::search_record::SearchRecord>,
    /// The forests a search has grown, shared by its trainings (`None`: every forest is
    /// grown where it is needed).
    pub forests: Option<&'a cardinal_forest::ForestCache>,
}

impl<'a> Hooks<'a> {
    /// Hooks that ignore every event and write nothing, with active waiting and the default
    /// memory budget (the crate's tests).
    #[cfg(test)]
    pub(crate) fn silent() -> Self {
        // Leaked zero-sized closures: `'static` no-ops without allocation.
        Hooks {
            on_event: Box::leak(Box::new(|_: Event| {})),
            after_epoch: Box::leak(Box::new(|_: &TrainState| Ok(()))),
            wait: WaitPolicy::Active,
            memory_budget: MemoryBudget::default(),
            cancel: Box::leak(Box::new(AtomicBool::new(false))),
            search: None,
            forests: None,
        }
    }
}
