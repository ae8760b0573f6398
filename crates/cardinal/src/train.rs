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
    pub fn step(&mut self, params: &mut Params<F>, grad: &Params<F>, learn_eta: bool) -> Option<&'static str> {
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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    Start { phase: u8, epochs: usize, batches_per_epoch: usize },
    Batch { phase: u8, epoch: usize, batch: usize, loss: f64 },
    Epoch(&'a EpochRecord),
}

/// A trained model with its history.
#[derive(Debug, Clone)]
pub struct Trained {
    pub model: Model<f32>,
    pub history: Vec<EpochRecord>,
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
    let mut model = init_model(train, cfg)?;
    // Batch order uses its own stream so that changing the split never changes the init.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x9E37_79B9_7F4A_7C15);
    let tc = &cfg.train;
    let (train_idx, dev_idx) = split::train_dev_split(train.n_rows(), tc.dev_fraction, tc.split_seed);
    let all_idx: Vec<usize> = (0..train.n_rows()).collect();
    let mut opt = Adagrad::new(&model.params, tc.lr, tc.adagrad_init);
    let mut ws = Workspace::default();
    let mut grad = model.params.zeros_like();
    let mut history = Vec::new();
    let mut best: Option<(f64, Params<f32>)> = None;
    let mut since_best = 0;

    for (phase, epochs, rows) in [(1u8, tc.epochs, &train_idx), (2u8, tc.full_epochs, &all_idx)] {
        let mut order = rows.clone();
        let n_batches = order.len().div_ceil(tc.batch_size);
        on_event(Event::Start { phase, epochs, batches_per_epoch: n_batches });
        for epoch in 1..=epochs {
            order.shuffle(&mut rng);
            let start = std::time::Instant::now();
            let mut loss_sum = 0.0;
            for (batch, rows) in order.chunks(tc.batch_size).enumerate() {
                let loss = model.loss_and_grad(&train.features, &train.labels, rows, &mut ws, &mut grad)?;
                if !loss.total().is_finite() {
                    if tc.skip_nonfinite_batches {
                        tracing::warn!(phase, epoch, batch, "skipping a batch with a non-finite loss");
                        continue;
                    }
                    return Err(Error::Diverged { epoch, batch, quantity: "the loss".into() });
                }
                let before = tc.skip_nonfinite_batches.then(|| (model.params.clone(), opt.clone()));
                if let Some(name) = opt.step(&mut model.params, &grad, cfg.inference.learn_eta) {
                    match before {
                        Some((params, state)) => {
                            tracing::warn!(phase, epoch, batch, name, "skipping a batch with non-finite gradients");
                            (model.params, opt) = (params, state);
                            continue;
                        }
                        None => {
                            return Err(Error::Diverged { epoch, batch, quantity: format!("parameter {name} after the update") })
                        }
                    }
                }
                loss_sum += loss.total();
                on_event(Event::Batch { phase, epoch, batch, loss: loss.total() });
            }
            let seconds = start.elapsed().as_secs_f64();
            let (mut dev_f1, mut dev_z) = (None, None);
            if phase == 1 && !dev_idx.is_empty() {
                let dev = train.select_rows(&dev_idx);
                let out = predict(&model, &dev.features, 256)?;
                let report = evaluate_outputs(&model, &out, &dev.labels);
                dev_f1 = Some(report.at_threshold.example_f1 * 100.0);
                dev_z = Some(report.cardinality.mean_z);
            }
            let record = EpochRecord { phase, epoch, loss: loss_sum / n_batches.max(1) as f64, dev_example_f1: dev_f1, dev_mean_z: dev_z, seconds };
            on_event(Event::Epoch(&record));
            history.push(record);
            if phase == 1 && tc.patience > 0 {
                let f1 = dev_f1.unwrap_or(0.0);
                if best.as_ref().is_none_or(|(b, _)| f1 > *b) {
                    best = Some((f1, model.params.clone()));
                    since_best = 0;
                } else {
                    since_best += 1;
                    if since_best >= tc.patience {
                        break;
                    }
                }
            }
        }
        if phase == 1 {
            if let Some((_, params)) = best.take() {
                model.params = params;
            }
        }
    }
    Ok(Trained { model, history })
}
