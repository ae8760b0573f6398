//! The training loop: the two phases (epochs on the train part of the split, then on all of
//! train), epochs of batches, dev evaluation, early stopping, threshold tuning on dev, and
//! divergence checks.

use rand::seq::SliceRandom;

use super::average::{fold_into_average, with_average};
use super::optim::Adagrad;
use super::state::{EpochRecord, Event, TrainState, Trained};
use crate::config::TrainConfig;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::{evaluate_outputs, networks_predict_with_prior};
use crate::metrics::{default_threshold_grid, tune_threshold, MetricOptions};
use crate::model::Params;
use crate::pipeline::{dropout_key, BatchLoss, Model, Stage, Workspace};
use crate::runtime::run_with_active_workers;
use crate::train::Hooks;

/// Trained networks with their history: what training by epochs makes.
#[derive(Debug)]
pub(crate) struct TrainedNetworks {
    /// The final networks (with the averaged weights when averaging).
    pub model: Model<f32>,
    /// One record per epoch run, in order.
    pub history: Vec<EpochRecord>,
}

/// Trains the networks of `cfg` on `train` (a dev part is held out as configured).
#[cfg(test)]
pub(crate) fn train(
    train: &Dataset,
    cfg: &crate::config::Config,
    on_event: &mut dyn FnMut(Event),
) -> Result<TrainedNetworks> {
    let mut hooks = Hooks::silent();
    hooks.on_event = on_event;
    run_networks(train, TrainState::new(train, cfg)?, &mut hooks)
}

/// Runs (or continues) `state` to the end. `hooks.after_epoch` is called with the state after
/// every epoch (e.g. to write a checkpoint); an error from it stops training.
pub(crate) fn run(train: &Dataset, state: TrainState, hooks: &mut Hooks) -> Result<Trained> {
    let trained = run_networks(train, state, hooks)?;
    Ok(Trained {
        model: trained.model.into(),
        history: trained.history,
    })
}

/// [`run`], with the networks it trains as they are.
pub(crate) fn run_networks(
    train: &Dataset,
    mut state: TrainState,
    hooks: &mut Hooks,
) -> Result<TrainedNetworks> {
    let on_event = &mut *hooks.on_event;
    let after_epoch = &mut *hooks.after_epoch;
    let wait = hooks.wait;
    let cancel = hooks.cancel;
    let cfg = state.model.config.clone();
    let tc = &cfg.train;
    let (train_idx, dev_idx) = tc.dev_split(train.n_rows());
    let all_idx: Vec<usize> = (0..train.n_rows()).collect();
    let mut ws = Workspace::default();
    // A forest prior's forest grew on every row of the training file (`system::fit_fresh`):
    // each row's prior is out of bag, the dev rows' too.
    ws.unary_prior = crate::eval::training_prior(&state.model, &train.features)?;
    let dev = (!dev_idx.is_empty()).then(|| Dev {
        data: train.select_rows(&dev_idx),
        prior: ws.unary_prior.as_ref().map(|p| {
            let l = train.n_labels();
            dev_idx
                .iter()
                .flat_map(|&r| p[r * l..(r + 1) * l].iter().copied())
                .collect()
        }),
    });
    let mut grad = state.model.params.zeros_like();
    let mut announced = 0u8;
    check_resumed_order(&state, train_idx.len(), train.n_rows())?;
    while state.progress.phase <= 2 {
        let phase = state.progress.phase;
        let (epochs, rows) = if phase == 1 {
            (tc.epochs, &train_idx)
        } else {
            (tc.full_epochs, &all_idx)
        };
        let ran_epoch = state.progress.epochs_done < epochs && !state.progress.stopped_early;
        if ran_epoch {
            if announced != phase {
                announce_phase(tc, phase, epochs, rows.len(), dev_idx.len(), on_event);
                announced = phase;
            }
            if state.progress.order.is_empty() {
                state.progress.order = rows.clone();
            }
            let epoch = state.progress.epochs_done + 1;
            let record = run_with_active_workers(wait, || {
                let dev = dev.as_ref();
                run_epoch(
                    train, dev, &mut state, phase, epoch, &mut ws, &mut grad, on_event,
                )
            })?;
            on_event(Event::Epoch(&record));
            state.progress.epochs_done = epoch;
            if phase == 1 && tc.patience > 0 {
                track_best_dev(&mut state, &record, tc.patience);
            }
            state.progress.history.push(record);
        }
        if state.progress.epochs_done >= epochs || state.progress.stopped_early {
            end_phase(&mut state, dev.as_ref(), tc.tune_threshold)?;
        }
        if ran_epoch {
            after_epoch(&state)?;
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(crate::Error::Interrupted {
                    epochs: state.epochs_run(),
                });
            }
        }
    }
    if let Some(avg) = state.average.take() {
        state.model.params = avg;
    }
    Ok(TrainedNetworks {
        model: state.model,
        history: state.progress.history,
    })
}

/// A resumed batch order must be a permutation of rows that exist (a corrupted or foreign
/// checkpoint must not index out of bounds): phase 1 orders the `train_rows` of the split,
/// phase 2 all `n_rows`.
fn check_resumed_order(state: &TrainState, train_rows: usize, n_rows: usize) -> Result<()> {
    let order = &state.progress.order;
    let expected = if state.progress.phase == 1 {
        train_rows
    } else {
        n_rows
    };
    if !order.is_empty() && (order.len() != expected || order.iter().any(|&r| r >= n_rows)) {
        return Err(Error::Shape {
            what: "the checkpoint's batch order".into(),
            found: format!("{} rows", order.len()),
            expected: format!(
                "the {expected} rows of this training data in phase {}",
                state.progress.phase
            ),
        });
    }
    Ok(())
}

/// Logs and reports the start of `phase`.
fn announce_phase(
    tc: &TrainConfig,
    phase: u8,
    epochs: usize,
    rows: usize,
    dev_rows: usize,
    on_event: &mut dyn FnMut(Event),
) {
    let n_batches = rows.div_ceil(tc.batch_size);
    tracing::info!(
        phase,
        max_epochs = epochs,
        rows,
        batches_per_epoch = n_batches,
        dev_rows,
        patience = tc.patience,
        "training phase starts"
    );
    on_event(Event::Start {
        phase,
        epochs,
        batches_per_epoch: n_batches,
    });
}

/// Early stopping after a phase-1 epoch: keeps the weights of a new best dev epoch (the
/// average's, if averaging), or counts one more epoch without improvement and stops after
/// `patience` of them.
fn track_best_dev(state: &mut TrainState, record: &EpochRecord, patience: usize) {
    let epoch = record.epoch;
    let p = &mut state.progress;
    let f1 = record.dev_example_f1.unwrap_or(0.0);
    if p.best_dev_f1.is_none_or(|b| f1 > b) {
        tracing::debug!(epoch, dev_example_f1 = f1, "new best dev epoch");
        p.best_dev_f1 = Some(f1);
        p.since_best = 0;
        state.best_params = Some(
            state
                .average
                .as_ref()
                .unwrap_or(&state.model.params)
                .clone(),
        );
    } else {
        p.since_best += 1;
        p.stopped_early = p.since_best >= patience;
        if p.stopped_early {
            tracing::info!(
                epoch,
                best_epoch = epoch - p.since_best,
                best_dev_example_f1 = p.best_dev_f1,
                patience,
                "stopping early: no dev improvement for `patience` epochs"
            );
        }
    }
}

/// The dev rows of the split, with their unary prior where the model has one (out of bag:
/// the forest grew on them too).
struct Dev {
    data: Dataset,
    prior: Option<Vec<f32>>,
}

impl Dev {
    /// The networks' outputs on the dev rows.
    fn predict(&self, model: &Model<f32>) -> Result<crate::pipeline::Outputs<f32>> {
        networks_predict_with_prior(model, &self.data.features, 256, None, self.prior.clone())
    }
}

/// The end of a phase: keeps the best dev epoch's weights, chooses the threshold on dev
/// (phase 1, if `tune_threshold`), and moves on to the next phase.
fn end_phase(state: &mut TrainState, dev: Option<&Dev>, tune_threshold: bool) -> Result<()> {
    let phase = state.progress.phase;
    if let Some(best) = state.best_params.take() {
        tracing::info!(
            phase,
            best_dev_example_f1 = state.progress.best_dev_f1,
            "end of phase: keeping the best dev epoch's weights"
        );
        if let Some(avg) = state.average.as_mut() {
            avg.clone_from(&best);
        }
        state.model.params = best;
    }
    if let (1, true, Some(dev)) = (phase, tune_threshold, dev) {
        let (thr, f1) = with_average(state, |m| dev_threshold(m, dev))?;
        tracing::info!(
            threshold = thr,
            dev_example_f1 = f1,
            "threshold chosen on dev"
        );
        state.model.config.threshold = thr;
    }
    let p = &mut state.progress;
    p.phase += 1;
    p.epochs_done = 0;
    p.order.clear();
    p.stopped_early = false;
    Ok(())
}

/// The threshold of the default grid with the best example-F1 on `dev`, and that F1 (%).
fn dev_threshold(model: &Model<f32>, dev: &Dev) -> Result<(f64, f64)> {
    let out = dev.predict(model)?;
    let grid = default_threshold_grid();
    let (thr, f1) = tune_threshold(&out.y, &dev.data.labels, &grid, &MetricOptions::default())?;
    Ok((crate::eval::grid_threshold(thr), f1 * 100.0))
}

/// One epoch of `phase` over `state.progress.order`, shuffled first, then (phase 1 with a dev
/// part) the dev evaluation.
fn run_epoch(
    train: &Dataset,
    dev: Option<&Dev>,
    state: &mut TrainState,
    phase: u8,
    epoch: usize,
    ws: &mut Workspace<f32>,
    grad: &mut Params<f32>,
    on_event: &mut dyn FnMut(Event),
) -> Result<EpochRecord> {
    let tc = state.model.config.train.clone();
    let TrainState {
        model,
        optimizer,
        progress,
        average,
        ..
    } = state;
    progress.order.shuffle(&mut progress.rng);
    let start = std::time::Instant::now();
    let mut loss_sum = 0.0;
    let n_batches = progress.order.len().div_ceil(tc.batch_size);
    for (batch, rows) in progress.order.chunks(tc.batch_size).enumerate() {
        let at = BatchAt {
            phase,
            epoch,
            batch,
        };
        ws.dropout_key = dropout_key(model.config.seed, phase, epoch, batch);
        let Some(mut loss) = checked_loss(model, train, rows, ws, grad, &tc, at)? else {
            continue;
        };
        let Some(decay) = checked_step(model, optimizer, grad, ws, &tc, at)? else {
            continue;
        };
        loss.decay_loss = decay;
        if let (Some(avg), Some(epochs)) = (average.as_mut(), tc.average_epochs) {
            ws.clock.time(Stage::Average, || {
                fold_into_average(
                    avg,
                    &model.params,
                    progress.average_steps,
                    epochs * n_batches as f64,
                )
            });
            progress.average_steps += 1;
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
    let (dev_f1, dev_z) = match (phase, dev) {
        (1, Some(dev)) => dev_scores(state, dev, phase, epoch, seconds)?,
        _ => (None, None),
    };
    Ok(EpochRecord {
        phase,
        epoch,
        loss: loss_sum / n_batches.max(1) as f64,
        dev_example_f1: dev_f1,
        dev_mean_z: dev_z,
        seconds,
    })
}

/// Where a batch is in the run (for divergence reports and logs).
#[derive(Debug, Clone, Copy)]
struct BatchAt {
    phase: u8,
    epoch: usize,
    batch: usize,
}

impl BatchAt {
    /// Divergence at this batch, in `quantity`.
    fn diverged(self, quantity: String) -> Error {
        Error::Diverged {
            phase: self.phase,
            epoch: self.epoch,
            batch: self.batch,
            quantity,
        }
    }
}

/// The batch `rows`' loss and gradient (into `grad` and `ws`); `None` for a batch to skip
/// (`train.skip_nonfinite_batches`) whose inference failed or whose loss is not finite, which
/// are divergence otherwise.
fn checked_loss(
    model: &Model<f32>,
    train: &Dataset,
    rows: &[usize],
    ws: &mut Workspace<f32>,
    grad: &mut Params<f32>,
    tc: &TrainConfig,
    at: BatchAt,
) -> Result<Option<BatchLoss>> {
    let BatchAt {
        phase,
        epoch,
        batch,
    } = at;
    // Non-finite values reaching a projection (e.g. a NaN count) are divergence too.
    let loss = match model.loss_and_sparse_grad(&train.features, &train.labels, rows, ws, grad) {
        Ok(loss) => loss,
        Err(Error::Projection(e)) => {
            if tc.skip_nonfinite_batches {
                tracing::warn!(phase, epoch, batch, %e, "skipping a batch whose inference failed");
                return Ok(None);
            }
            return Err(at.diverged(format!("the inference input ({e})")));
        }
        Err(e) => return Err(e),
    };
    if !loss.total().is_finite() {
        if tc.skip_nonfinite_batches {
            tracing::warn!(
                phase,
                epoch,
                batch,
                "skipping a batch with a non-finite loss"
            );
            return Ok(None);
        }
        return Err(at.diverged("the loss".into()));
    }
    Ok(Some(loss))
}

/// The optimiser's step on `grad`; returns the weight-decay term, or `None` for a batch to
/// skip (`train.skip_nonfinite_batches`: the parameters and the optimiser are put back) whose
/// update left a non-finite parameter, which is divergence otherwise.
fn checked_step(
    model: &mut Model<f32>,
    optimizer: &mut Adagrad<f32>,
    grad: &mut Params<f32>,
    ws: &mut Workspace<f32>,
    tc: &TrainConfig,
    at: BatchAt,
) -> Result<Option<f64>> {
    let before = tc
        .skip_nonfinite_batches
        .then(|| (model.params.clone(), optimizer.clone()));
    let step_start = std::time::Instant::now();
    let (decay, bad) = optimizer.step_fused(model, grad, ws);
    ws.clock.add(Stage::Optimizer, step_start);
    let Some(name) = bad else {
        return Ok(Some(decay));
    };
    match before {
        Some((params, opt)) => {
            let BatchAt {
                phase,
                epoch,
                batch,
            } = at;
            tracing::warn!(
                phase,
                epoch,
                batch,
                name,
                "skipping a batch with non-finite gradients"
            );
            (model.params, *optimizer) = (params, opt);
            Ok(None)
        }
        None => Err(at.diverged(format!("parameter {name} after the update"))),
    }
}

/// The dev example-F1 (%) and mean count after an epoch, with the averaged weights if
/// averaging.
fn dev_scores(
    state: &mut TrainState,
    dev: &Dev,
    phase: u8,
    epoch: usize,
    train_seconds: f64,
) -> Result<(Option<f64>, Option<f64>)> {
    let dev_start = std::time::Instant::now();
    let report = with_average(state, |model| -> Result<_> {
        let out = dev.predict(model)?;
        Ok(evaluate_outputs(model, &out, &dev.data.labels))
    })?;
    tracing::debug!(
        phase,
        epoch,
        train_seconds,
        dev_seconds = dev_start.elapsed().as_secs_f64(),
        dev_rows = dev.data.n_rows(),
        "epoch timings"
    );
    Ok((
        Some(report.at_threshold.example_f1 * 100.0),
        Some(report.cardinality.mean_z),
    ))
}

/// Runs one epoch over every row of `train` (no dev evaluation), for benchmarks. Returns the
/// mean loss per batch.
pub(crate) fn epoch_over_all(
    train: &Dataset,
    state: &mut TrainState,
    ws: &mut Workspace<f32>,
    grad: &mut Params<f32>,
    wait: crate::runtime::WaitPolicy,
) -> Result<f64> {
    if state.progress.order.len() != train.n_rows() {
        state.progress.order = (0..train.n_rows()).collect();
    }
    let record = run_with_active_workers(wait, || {
        run_epoch(train, None, state, 2, 1, ws, grad, &mut |_| {})
    })?;
    Ok(record.loss)
}

#[cfg(test)]
mod tests;
