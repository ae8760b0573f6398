//! Training: AdaGrad over the end-to-end loss, the two-phase schedule of the released code
//! (epochs on the train part of a seeded train/dev split, then epochs on all of train), dev
//! evaluation, early stopping, and divergence checks.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::config::{resolve_counts, Config};
use crate::data::{split, Dataset};
use crate::error::{Error, Result};
use crate::eval::{evaluate_outputs, predict};
use crate::model::{c, Float, Params, Standardizer};
use crate::pipeline::{count_values, Model, Workspace};

/// AdaGrad, as TensorFlow's: `acc += g²; w −= lr·g/√acc`, `acc` starting at `init`.
#[derive(Debug, Clone, PartialEq)]
pub struct Adagrad<F: Float> {
    pub lr: F,
    pub acc: Params<F>,
}

impl<F: Float> Adagrad<F> {
    pub fn new(params: &Params<F>, lr: f64, init: f64) -> Self {
        let mut acc = params.zeros_like();
        acc.visit_mut(|_, a, _| a.fill(c(init)));
        Self { lr: c(lr), acc }
    }

    /// One update; `η` is updated only when `learn_eta`. Returns the name of the first tensor
    /// holding a non-finite value afterwards (a non-finite gradient always shows up here).
    pub fn step(
        &mut self,
        params: &mut Params<F>,
        grad: &Params<F>,
        learn_eta: bool,
    ) -> Option<&'static str> {
        let lr = self.lr;
        let mut bad = None;
        params.update_with(&mut self.acc, grad, |name, w, acc, g| {
            if name == "inference.eta" && !learn_eta {
                return;
            }
            let mut finite = true;
            for ((w, a), &g) in w.iter_mut().zip(acc.iter_mut()).zip(g) {
                *a += g * g;
                *w -= lr * g / a.sqrt();
                finite &= w.is_finite();
            }
            if !finite && bad.is_none() {
                bad = Some(name);
            }
        });
        bad
    }
}

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
    Start {
        phase: u8,
        epochs: usize,
        batches_per_epoch: usize,
    },
    Batch {
        phase: u8,
        epoch: usize,
        batch: usize,
        loss: f64,
    },
    Epoch(&'a EpochRecord),
}

/// A trained model with its history.
#[derive(Debug, Clone)]
pub struct Trained {
    pub model: Model<f32>,
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
    pub rng: Xoshiro256PlusPlus,
    pub best_dev_f1: Option<f64>,
    pub since_best: usize,
    pub stopped_early: bool,
    pub history: Vec<EpochRecord>,
}

/// A run in progress.
#[derive(Debug, Clone)]
pub struct TrainState {
    pub model: Model<f32>,
    pub optimizer: Adagrad<f32>,
    /// Parameters of the best dev epoch so far (early stopping only).
    pub best_params: Option<Params<f32>>,
    pub progress: Progress,
}

impl TrainState {
    /// A fresh run of `cfg` on `train`.
    pub fn new(train: &Dataset, cfg: &Config) -> Result<Self> {
        let model = init_model(train, cfg)?;
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
        };
        Ok(Self {
            model,
            optimizer,
            best_params: None,
            progress,
        })
    }

    /// Total epochs run so far, over both phases.
    pub fn epochs_run(&self) -> usize {
        self.progress.history.len()
    }
}

/// A freshly initialised model for `train` under `cfg`.
pub fn init_model(train: &Dataset, cfg: &Config) -> Result<Model<f32>> {
    cfg.validate()?;
    let counts: Vec<usize> = (0..train.n_rows()).map(|r| train.labels.count(r)).collect();
    let (kmin, kmax) = resolve_counts(&cfg.model.counts, &counts, train.n_labels());
    let m = &cfg.model;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let params = Params::glorot(
        train.n_features(),
        m.hidden,
        train.n_labels(),
        m.energy_hidden,
        m.card_hidden,
        kmax - kmin + 1,
        cfg.inference.eta,
        &mut rng,
    );
    Ok(Model {
        config: cfg.clone(),
        params,
        standardizer: Standardizer::fit(&train.features),
        counts: count_values(kmin, kmax),
        train_mean_cardinality: counts.iter().sum::<usize>() as f64 / counts.len().max(1) as f64,
    })
}

/// Trains a model on `train` (a dev part is held out as configured).
pub fn train(train: &Dataset, cfg: &Config, on_event: &mut dyn FnMut(Event)) -> Result<Trained> {
    run(
        train,
        TrainState::new(train, cfg)?,
        &mut |_| Ok(()),
        on_event,
    )
}

/// Runs (or continues) `state` to the end. `after_epoch` is called with the state after every
/// epoch (e.g. to write a checkpoint); an error from it stops training.
pub fn run(
    train: &Dataset,
    mut state: TrainState,
    after_epoch: &mut dyn FnMut(&TrainState) -> Result<()>,
    on_event: &mut dyn FnMut(Event),
) -> Result<Trained> {
    let cfg = state.model.config.clone();
    let tc = &cfg.train;
    let (train_idx, dev_idx) =
        split::train_dev_split(train.n_rows(), tc.dev_fraction, tc.split_seed);
    let all_idx: Vec<usize> = (0..train.n_rows()).collect();
    let dev = (!dev_idx.is_empty()).then(|| train.select_rows(&dev_idx));
    let mut ws = Workspace::default();
    let mut grad = state.model.params.zeros_like();
    let mut announced = 0u8;

    while state.progress.phase <= 2 {
        let phase = state.progress.phase;
        let (epochs, rows) = if phase == 1 {
            (tc.epochs, &train_idx)
        } else {
            (tc.full_epochs, &all_idx)
        };
        let n_batches = rows.len().div_ceil(tc.batch_size);
        let ran_epoch = state.progress.epochs_done < epochs && !state.progress.stopped_early;
        if ran_epoch {
            if announced != phase {
                on_event(Event::Start {
                    phase,
                    epochs,
                    batches_per_epoch: n_batches,
                });
                announced = phase;
            }
            if state.progress.order.is_empty() {
                state.progress.order = rows.clone();
            }
            let epoch = state.progress.epochs_done + 1;
            let record = run_epoch(
                train,
                dev.as_ref(),
                &mut state,
                phase,
                epoch,
                &mut ws,
                &mut grad,
                on_event,
            )?;
            on_event(Event::Epoch(&record));
            let p = &mut state.progress;
            p.epochs_done = epoch;
            if phase == 1 && tc.patience > 0 {
                let f1 = record.dev_example_f1.unwrap_or(0.0);
                if p.best_dev_f1.is_none_or(|b| f1 > b) {
                    p.best_dev_f1 = Some(f1);
                    p.since_best = 0;
                    state.best_params = Some(state.model.params.clone());
                } else {
                    p.since_best += 1;
                    p.stopped_early = p.since_best >= tc.patience;
                }
            }
            state.progress.history.push(record);
        }
        if state.progress.epochs_done >= epochs || state.progress.stopped_early {
            // End of the phase: keep the best dev epoch's weights, move on.
            if let Some(best) = state.best_params.take() {
                state.model.params = best;
            }
            let p = &mut state.progress;
            p.phase += 1;
            p.epochs_done = 0;
            p.order.clear();
            p.stopped_early = false;
        }
        if ran_epoch {
            after_epoch(&state)?;
        }
    }
    Ok(Trained {
        model: state.model,
        history: state.progress.history,
    })
}

fn run_epoch(
    train: &Dataset,
    dev: Option<&Dataset>,
    state: &mut TrainState,
    phase: u8,
    epoch: usize,
    ws: &mut Workspace<f32>,
    grad: &mut Params<f32>,
    on_event: &mut dyn FnMut(Event),
) -> Result<EpochRecord> {
    let tc = state.model.config.train.clone();
    let learn_eta = state.model.config.inference.learn_eta;
    let TrainState {
        model,
        optimizer,
        progress,
        ..
    } = state;
    progress.order.shuffle(&mut progress.rng);
    let start = std::time::Instant::now();
    let mut loss_sum = 0.0;
    let n_batches = progress.order.len().div_ceil(tc.batch_size);
    for (batch, rows) in progress.order.chunks(tc.batch_size).enumerate() {
        let loss = model.loss_and_grad(&train.features, &train.labels, rows, ws, grad)?;
        if !loss.total().is_finite() {
            if tc.skip_nonfinite_batches {
                tracing::warn!(
                    phase,
                    epoch,
                    batch,
                    "skipping a batch with a non-finite loss"
                );
                continue;
            }
            return Err(Error::Diverged {
                phase,
                epoch,
                batch,
                quantity: "the loss".into(),
            });
        }
        let before = tc
            .skip_nonfinite_batches
            .then(|| (model.params.clone(), optimizer.clone()));
        if let Some(name) = optimizer.step(&mut model.params, grad, learn_eta) {
            match before {
                Some((params, opt)) => {
                    tracing::warn!(
                        phase,
                        epoch,
                        batch,
                        name,
                        "skipping a batch with non-finite gradients"
                    );
                    (model.params, *optimizer) = (params, opt);
                    continue;
                }
                None => {
                    return Err(Error::Diverged {
                        phase,
                        epoch,
                        batch,
                        quantity: format!("parameter {name} after the update"),
                    })
                }
            }
        }
        loss_sum += loss.total();
        on_event(Event::Batch {
            phase,
            epoch,
            batch,
            loss: loss.total(),
        });
    }
    let seconds = start.elapsed().as_secs_f64();
    let (mut dev_f1, mut dev_z) = (None, None);
    if let (1, Some(dev)) = (phase, dev) {
        let out = predict(model, &dev.features, 256)?;
        let report = evaluate_outputs(model, &out, &dev.labels);
        dev_f1 = Some(report.at_threshold.example_f1 * 100.0);
        dev_z = Some(report.cardinality.mean_z);
    }
    Ok(EpochRecord {
        phase,
        epoch,
        loss: loss_sum / n_batches.max(1) as f64,
        dev_example_f1: dev_f1,
        dev_mean_z: dev_z,
        seconds,
    })
}

/// Runs one epoch over every row of `train` (no dev evaluation), for benchmarks. Returns the
/// mean loss per batch.
pub fn epoch_over_all(
    train: &Dataset,
    state: &mut TrainState,
    ws: &mut Workspace<f32>,
    grad: &mut Params<f32>,
) -> Result<f64> {
    if state.progress.order.len() != train.n_rows() {
        state.progress.order = (0..train.n_rows()).collect();
    }
    let record = run_epoch(train, None, state, 2, 1, ws, grad, &mut |_| {})?;
    Ok(record.loss)
}
