//! The training loop of the Table 1 systems ([`fit`]), in named steps: an epoch's learning
//! rate and frozen tensors, its batches, its dev evaluation, and the end of phase 1.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::nets::Opt;
use super::{dev_f1, predict, BaselineConfig, BatchObjective};
use cardinal::config::Config;
use cardinal::data::Dataset;
use cardinal::engine::Model;
use cardinal::engine::{EpochRecord, Event, Trained};
use cardinal::metrics::{default_threshold_grid, tune_threshold, MetricOptions};
use cardinal::parts::init_model_within;
use cardinal::parts::Params;
use cardinal::runtime::MemoryBudget;
use cardinal::{Error, Result};

/// The tensors of the unary network, held fixed during `baseline.freeze_unary_epochs`.
const UNARY: [&str; 4] = ["unary.w1", "unary.b1", "unary.w2", "unary.b2"];

/// The training loop of the baselines: the P&C schedule (epochs on the train part of the
/// split, then `full_epochs` on all of train), the configured optimiser with weight decay, a
/// step learning-rate schedule, frozen unaries for the first epochs, and optionally the
/// weights of the best dev epoch. The model is refused when it would not fit `budget`.
pub fn fit(
    train: &Dataset,
    cfg: &Config,
    obj: &mut dyn BatchObjective,
    on_event: &mut dyn FnMut(Event),
    budget: MemoryBudget,
) -> Result<Trained> {
    let mut model = init_model_within(train, cfg, budget)?;
    let tc = &cfg.train;
    let (train_idx, dev_idx) = tc.dev_split(train.n_rows());
    let dev = (!dev_idx.is_empty()).then(|| train.select_rows(&dev_idx));
    obj.prepare(&mut model, train, &train_idx);
    let mut run = Loop::new(cfg, &model);
    let all_idx: Vec<usize> = (0..train.n_rows()).collect();
    for phase in [1u8, 2] {
        let (epochs, rows) = if phase == 1 {
            (tc.epochs, &train_idx)
        } else {
            (tc.full_epochs, &all_idx)
        };
        if epochs == 0 {
            continue;
        }
        on_event(Event::Start {
            phase,
            epochs,
            batches_per_epoch: rows.len().div_ceil(tc.batch_size),
        });
        let mut order = rows.clone();
        for epoch in 1..=epochs {
            let at = At {
                phase,
                epoch,
                epochs,
            };
            let data = (train, dev.as_ref());
            run.epoch(&mut model, data, obj, &mut order, at, on_event)?;
        }
        if phase == 1 {
            run.end_phase_one(&mut model, dev.as_ref())?;
        }
    }
    Ok(Trained {
        model: model.into(),
        history: run.history,
    })
}

/// Where the loop stands: the phase, the epoch within it (from 1), and its epochs.
#[derive(Clone, Copy)]
struct At {
    phase: u8,
    epoch: usize,
    epochs: usize,
}

/// The state of the loop across epochs.
struct Loop<'a> {
    cfg: &'a Config,
    /// The system's settings (`baseline`).
    bc: BaselineConfig,
    opt: Opt,
    /// One stream for the batch order and the objectives' draws, in that order.
    rng: Xoshiro256PlusPlus,
    grad: Params<f32>,
    history: Vec<EpochRecord>,
    /// The best dev score and its weights (`baseline.keep_best`).
    best: Option<(f64, Params<f32>)>,
}

impl<'a> Loop<'a> {
    /// The loop for `model`, after its objective has prepared it.
    fn new(cfg: &'a Config, model: &Model<f32>) -> Self {
        let bc = BaselineConfig::read(cfg);
        let tc = &cfg.train;
        Self {
            opt: Opt::new(bc.optimizer, &model.params, tc.lr, tc.adagrad_init),
            bc,
            cfg,
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x9E37_79B9_7F4A_7C15),
            grad: model.params.zeros_like(),
            history: Vec::new(),
            best: None,
        }
    }

    /// One epoch over `order` (shuffled first): the step schedule of the learning rate, the
    /// batches, the dev evaluation, the record.
    fn epoch(
        &mut self,
        model: &mut Model<f32>,
        (train, dev): (&Dataset, Option<&Dataset>),
        obj: &mut dyn BatchObjective,
        order: &mut [usize],
        at: At,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<()> {
        let (tc, bc) = (&self.cfg.train, &self.bc);
        if at.phase == 1 {
            let drops = bc.lr_drops.iter().filter(|&&d| at.epoch > d).count();
            self.opt.lr = tc.lr * bc.lr_decay.powi(drops as i32);
        }
        let frozen: &[&str] = if at.phase == 1 && at.epoch <= bc.freeze_unary_epochs {
            &UNARY
        } else {
            &[]
        };
        order.shuffle(&mut self.rng);
        let start = std::time::Instant::now();
        let loss_sum = self.batches(model, train, obj, order, at, frozen, on_event)?;
        let seconds = start.elapsed().as_secs_f64();
        let dev_example_f1 = match (at.phase, dev) {
            (1, Some(dev)) => self.evaluate(model, dev, at)?,
            _ => None,
        };
        let record = EpochRecord {
            phase: at.phase,
            epoch: at.epoch,
            loss: loss_sum / order.len().div_ceil(tc.batch_size).max(1) as f64,
            dev_example_f1,
            dev_mean_z: None,
            seconds,
        };
        on_event(Event::Epoch(&record));
        self.history.push(record);
        Ok(())
    }

    /// The batches of one epoch, each a step of the optimiser (the `frozen` tensors left as
    /// they are); the sum of their losses. A non-finite loss or parameter stops training.
    fn batches(
        &mut self,
        model: &mut Model<f32>,
        train: &Dataset,
        obj: &mut dyn BatchObjective,
        order: &[usize],
        at: At,
        frozen: &[&str],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<f64> {
        let (phase, epoch) = (at.phase, at.epoch);
        let mut loss_sum = 0.0;
        for (batch, chunk) in order.chunks(self.cfg.train.batch_size).enumerate() {
            let loss = obj.loss_and_grad(model, train, chunk, &mut self.grad, &mut self.rng)?;
            if !loss.is_finite() {
                return Err(Error::Diverged {
                    phase,
                    epoch,
                    batch,
                    quantity: "the loss".into(),
                });
            }
            if let Some(name) = self
                .opt
                .step(&mut model.params, &self.grad, self.cfg, frozen)
            {
                return Err(Error::Diverged {
                    phase,
                    epoch,
                    batch,
                    quantity: format!("parameter {name} after the update"),
                });
            }
            loss_sum += loss;
            on_event(Event::Batch {
                phase,
                epoch,
                batch,
                loss,
            });
        }
        Ok(loss_sum)
    }

    /// The dev example-F1 at the model's threshold, every `baseline.dev_every` epochs and at
    /// the last; the best epoch's weights kept when `baseline.keep_best` (scored at the best
    /// grid threshold when `baseline.select_with_threshold_grid`).
    fn evaluate(&mut self, model: &Model<f32>, dev: &Dataset, at: At) -> Result<Option<f64>> {
        let bc = &self.bc;
        if !at.epoch.is_multiple_of(bc.dev_every) && at.epoch != at.epochs {
            return Ok(None);
        }
        let (at_thr, at_grid) = dev_f1(model, dev)?;
        let score = if bc.select_with_threshold_grid {
            at_grid
        } else {
            at_thr
        };
        if bc.keep_best && self.best.as_ref().is_none_or(|(b, _)| score > *b) {
            self.best = Some((score, model.params.clone()));
        }
        Ok(Some(at_thr))
    }

    /// After phase 1: the best dev epoch's weights restored (when kept), and the threshold
    /// tuned on dev when `train.tune_threshold`.
    fn end_phase_one(&mut self, model: &mut Model<f32>, dev: Option<&Dataset>) -> Result<()> {
        if let Some((_, params)) = self.best.take() {
            model.params = params;
        }
        if let (true, Some(dev)) = (self.cfg.train.tune_threshold, dev) {
            let out = predict(model, &dev.features, 256)?;
            let (thr, _) = tune_threshold(
                &out.y,
                &dev.labels,
                &default_threshold_grid(),
                &MetricOptions::default(),
            )?;
            model.config.threshold = thr as f64;
        }
        Ok(())
    }
}
