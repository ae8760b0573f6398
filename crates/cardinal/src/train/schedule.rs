//! The training loop: the two phases (epochs on the train part of the split, then on all of
//! train), epochs of batches, dev evaluation, early stopping, threshold tuning on dev, and
//! divergence checks.

use rand::seq::SliceRandom;

use super::average::{fold_into_average, with_average};
use super::state::{EpochRecord, Event, TrainState, Trained};
use crate::config::Config;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::{evaluate_outputs, predict};
use crate::metrics::{default_threshold_grid, tune_threshold, MetricOptions};
use crate::model::Params;
use crate::pipeline::{dropout_key, Model, Stage, Workspace};
use crate::runtime::run_with_active_workers;
use crate::train::Hooks;

/// Trains a model on `train` (a dev part is held out as configured).
pub fn train(train: &Dataset, cfg: &Config, on_event: &mut dyn FnMut(Event)) -> Result<Trained> {
    let mut hooks = Hooks::silent();
    hooks.on_event = on_event;
    run(train, TrainState::new(train, cfg)?, &mut hooks)
}

/// Runs (or continues) `state` to the end. `hooks.after_epoch` is called with the state after
/// every epoch (e.g. to write a checkpoint); an error from it stops training.
pub fn run(train: &Dataset, mut state: TrainState, hooks: &mut Hooks) -> Result<Trained> {
    let on_event = &mut *hooks.on_event;
    let after_epoch = &mut *hooks.after_epoch;
    let wait = hooks.wait;
    let cfg = state.model.config.clone();
    let tc = &cfg.train;
    let (train_idx, dev_idx) = tc.dev_split(train.n_rows());
    let all_idx: Vec<usize> = (0..train.n_rows()).collect();
    let dev = (!dev_idx.is_empty()).then(|| train.select_rows(&dev_idx));
    let mut ws = Workspace::default();
    let mut grad = state.model.params.zeros_like();
    let mut announced = 0u8;
    // A resumed batch order must be a permutation of rows that exist (a corrupted or foreign
    // checkpoint must not index out of bounds).
    {
        let order = &state.progress.order;
        let expected = if state.progress.phase == 1 {
            train_idx.len()
        } else {
            all_idx.len()
        };
        if !order.is_empty()
            && (order.len() != expected || order.iter().any(|&r| r >= train.n_rows()))
        {
            return Err(Error::Shape {
                what: "the checkpoint's batch order".into(),
                found: format!("{} rows", order.len()),
                expected: format!(
                    "the {expected} rows of this training data in phase {}",
                    state.progress.phase
                ),
            });
        }
    }

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
                tracing::info!(
                    phase,
                    max_epochs = epochs,
                    rows = rows.len(),
                    batches_per_epoch = n_batches,
                    dev_rows = dev_idx.len(),
                    patience = tc.patience,
                    "training phase starts"
                );
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
            let record = run_with_active_workers(wait, || {
                run_epoch(
                    train,
                    dev.as_ref(),
                    &mut state,
                    phase,
                    epoch,
                    &mut ws,
                    &mut grad,
                    on_event,
                )
            })?;
            on_event(Event::Epoch(&record));
            let p = &mut state.progress;
            p.epochs_done = epoch;
            if phase == 1 && tc.patience > 0 {
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
                    p.stopped_early = p.since_best >= tc.patience;
                    if p.stopped_early {
                        tracing::info!(
                            epoch,
                            best_epoch = epoch - p.since_best,
                            best_dev_example_f1 = p.best_dev_f1,
                            patience = tc.patience,
                            "stopping early: no dev improvement for `patience` epochs"
                        );
                    }
                }
            }
            state.progress.history.push(record);
        }
        if state.progress.epochs_done >= epochs || state.progress.stopped_early {
            // End of the phase: keep the best dev epoch's weights, move on.
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
            if phase == 1 && tc.tune_threshold {
                if let Some(dev) = dev.as_ref() {
                    let (thr, f1) = with_average(&mut state, |m| dev_threshold(m, dev))?;
                    tracing::info!(
                        threshold = thr,
                        dev_example_f1 = f1,
                        "threshold chosen on dev"
                    );
                    state.model.config.threshold = thr;
                }
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
    if let Some(avg) = state.average.take() {
        state.model.params = avg;
    }
    Ok(Trained {
        model: state.model,
        history: state.progress.history,
    })
}

/// The threshold of the default grid with the best example-F1 on `dev`, and that F1 (%).
fn dev_threshold(model: &Model<f32>, dev: &Dataset) -> Result<(f64, f64)> {
    let out = predict(model, &dev.features, 256)?;
    let grid = default_threshold_grid();
    let (thr, f1) = tune_threshold(&out.y, &dev.labels, &grid, &MetricOptions::default())?;
    Ok((crate::eval::grid_threshold(thr), f1 * 100.0))
}

/// One epoch of `phase` over `state.progress.order`, shuffled first, then (phase 1 with a dev
/// part) the dev evaluation.
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
        // Non-finite values reaching a projection (e.g. a NaN count) are divergence too.
        ws.dropout_key = dropout_key(model.config.seed, phase, epoch, batch);
        let mut loss = match model.loss_and_sparse_grad(
            &train.features,
            &train.labels,
            rows,
            ws,
            grad,
        ) {
            Ok(loss) => loss,
            Err(Error::Projection(e)) => {
                if tc.skip_nonfinite_batches {
                    tracing::warn!(phase, epoch, batch, %e, "skipping a batch whose inference failed");
                    continue;
                }
                return Err(Error::Diverged {
                    phase,
                    epoch,
                    batch,
                    quantity: format!("the inference input ({e})"),
                });
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
        let step_start = std::time::Instant::now();
        let (decay, bad) = optimizer.step_fused(model, grad, ws);
        ws.clock.add(Stage::Optimizer, step_start);
        loss.decay_loss = decay;
        if let Some(name) = bad {
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
    let (mut dev_f1, mut dev_z) = (None, None);
    if let (1, Some(dev)) = (phase, dev) {
        let dev_start = std::time::Instant::now();
        let report = with_average(state, |model| -> Result<_> {
            let out = predict(model, &dev.features, 256)?;
            Ok(evaluate_outputs(model, &out, &dev.labels))
        })?;
        dev_f1 = Some(report.at_threshold.example_f1 * 100.0);
        dev_z = Some(report.cardinality.mean_z);
        tracing::debug!(
            phase,
            epoch,
            train_seconds = seconds,
            dev_seconds = dev_start.elapsed().as_secs_f64(),
            dev_rows = dev.n_rows(),
            "epoch timings"
        );
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
