//! The binary multi-label model in a run directory ([`BinaryRun`], its [`RunModel`]): its model
//! folder ([`crate::checkpoint::save`], [`crate::checkpoint::load`]) and its resumable checkpoint (the model, the
//! optimizer, the best and averaged weights, progress). The checkpoints' folders and `LATEST`
//! are [`crate::run_dir`]'s, shared with every model kind.

use std::path::Path;

use crate::checkpoint::{
    ckpt_err, load, params_tensors, read_params, read_snapshot, save, save_fitted, write_atomic,
    write_tensors, Meta, TrainedOn,
};
use crate::error::{CheckpointProblem, Record, Result};
use crate::fitted::Fitted;
use crate::run_dir::{self, RunModel};
use crate::train::{Adagrad, EpochRecord, Progress, TrainState};

/// The binary multi-label model as a run directory's [`RunModel`]: its files record
/// `trained_on` (the data's name and columns) beside the weights.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BinaryRun<'a> {
    /// What the model was trained on, as `meta.json` records it.
    pub trained_on: &'a TrainedOn,
}

impl RunModel for BinaryRun<'_> {
    type Model = Fitted;
    type State = TrainState;
    type Epoch = EpochRecord;
    type Loaded = (Fitted, Meta);
    type Resumed = (TrainState, Meta);

    fn save(&self, model: &Fitted, dir: &Path) -> Result<()> {
        save_fitted(model, dir, self.trained_on)
    }

    fn load(dir: &Path) -> Result<(Fitted, Meta)> {
        read_snapshot(dir, crate::checkpoint::load_from)
    }

    fn save_state(&self, state: &TrainState, ckpt: &Path) -> Result<()> {
        save(&state.model, ckpt, self.trained_on)?;
        write_tensors(
            &ckpt.join("optimizer.safetensors"),
            &params_tensors(&state.optimizer.acc),
        )?;
        if let Some(best) = &state.best_params {
            write_tensors(&ckpt.join("best.safetensors"), &params_tensors(best))?;
        }
        if let Some(avg) = &state.average {
            write_tensors(&ckpt.join("average.safetensors"), &params_tensors(avg))?;
        }
        let progress = serde_json::to_vec(&state.progress).expect("serialisable");
        Ok(write_atomic(&ckpt.join("progress.json"), &progress)?)
    }

    fn load_state(ckpt: &Path) -> Result<(TrainState, Meta)> {
        read_state(ckpt)
    }

    fn epochs_run(state: &TrainState) -> usize {
        state.epochs_run()
    }

    fn history(state: &TrainState) -> &[EpochRecord] {
        &state.progress.history
    }
}

/// Writes a resumable checkpoint of a run in progress to `<dir>/checkpoints/epoch-NNNN` and
/// points `<dir>/checkpoints/LATEST` at it (see [`run_dir::save_checkpoint`]).
#[cfg(test)]
pub(crate) fn save_state(
    dir: &Path,
    state: &TrainState,
    data: &TrainedOn,
) -> Result<std::path::PathBuf> {
    run_dir::save_checkpoint(&BinaryRun { trained_on: data }, dir, state)
}

/// Loads the latest resumable checkpoint of the run in `dir`.
pub fn load_state(dir: &Path) -> Result<(TrainState, Meta)> {
    run_dir::load_checkpoint::<BinaryRun>(dir)
}

/// Reads the checkpoint folder `ckpt`, every file checked as a model folder's are.
fn read_state(ckpt: &Path) -> Result<(TrainState, Meta)> {
    let (model, meta) = load(ckpt)?;
    let acc_path = ckpt.join("optimizer.safetensors");
    let acc = read_params(&acc_path, &model.params)?;
    let mut negative = None;
    acc.visit(|name, data, _| {
        if negative.is_none() && data.iter().any(|&a| a < 0.0) {
            negative = Some(name);
        }
    });
    if let Some(name) = negative {
        return Err(ckpt_err(
            &acc_path,
            cardinal_store::TensorProblem::Negative { name: name.into() },
        ));
    }
    let best_path = ckpt.join("best.safetensors");
    let best_params = if best_path.exists() {
        Some(read_params(&best_path, &model.params)?)
    } else {
        None
    };
    let avg_path = ckpt.join("average.safetensors");
    let average = if avg_path.exists() {
        Some(read_params(&avg_path, &model.params)?)
    } else if model.config.train.average_epochs.is_some() {
        return Err(ckpt_err(&avg_path, CheckpointProblem::NoAverage));
    } else {
        None
    };
    let p = ckpt.join("progress.json");
    let bytes = crate::checkpoint::read_model_file(&p)?;
    let progress: Progress = serde_json::from_slice(&bytes)
        .map_err(|e| crate::checkpoint::record_err(&p, Record::Progress, &e))?;
    let optimizer = Adagrad {
        lr: model.config.train.lr as f32,
        acc,
    };
    Ok((
        TrainState {
            model,
            optimizer,
            best_params,
            average,
            progress,
        },
        meta,
    ))
}

#[cfg(test)]
mod round_trip_tests {
    /// The resumable state's floats (`best_dev_f1`, the loss history) survive JSON exactly:
    /// a dev F1 that comes back one ULP off breaks a tie differently after `--resume`. Values
    /// spread over many magnitudes, as F1s, losses and seconds are.
    #[test]
    fn progress_floats_round_trip_exactly() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut bad = Vec::new();
        for _ in 0..20_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = f64::from_bits(s >> 2) % 1e6;
            if !v.is_finite() {
                continue;
            }
            let text = serde_json::to_string(&v).unwrap();
            let back: f64 = serde_json::from_str(&text).unwrap();
            if back.to_bits() != v.to_bits() {
                bad.push((v, back));
            }
        }
        assert!(
            bad.is_empty(),
            "{} values off, e.g. {:?}",
            bad.len(),
            &bad[..bad.len().min(3)]
        );
    }
}
