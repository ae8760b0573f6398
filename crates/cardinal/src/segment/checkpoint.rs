//! Resumable checkpoints of a multi-target (Section 6) run, through the binary runs'
//! machinery (`checkpoint::write_checkpoint`): `<dir>/checkpoints/epoch-NNNN` holds
//! the model directory of the state ([`super::saved`]), Adam's moments
//! (`optimizer.safetensors`, `F64`) and `progress.json` (Adam's step count and the epochs'
//! records); `LATEST` names the newest complete one.

use std::path::{Path, PathBuf};

use safetensors::SafeTensors;
use serde::{Deserialize, Serialize};

use super::saved::{self, read_f64, stage_f64, SegMeta};
use super::train::{SegConfig, SegEpoch, SegState};
use crate::checkpoint::{ckpt_err, latest_checkpoint, write_atomic, write_checkpoint};
use crate::data::multi_target::MultiTargetDataset;
use crate::error::Result;

/// The optimizer's file in a checkpoint.
const OPTIMIZER_FILE: &str = "optimizer.safetensors";
/// The progress record's file in a checkpoint.
const PROGRESS_FILE: &str = "progress.json";

/// `progress.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SegProgress {
    adam_steps: u64,
    history: Vec<SegEpoch>,
}

/// Writes the checkpoint of `state` (trained by `cfg` on `train`) into the run directory
/// `dir`.
pub fn save_state(
    dir: &Path,
    state: &SegState,
    cfg: &SegConfig,
    train: &MultiTargetDataset,
) -> Result<PathBuf> {
    write_checkpoint(dir, state.epochs_run(), |tmp| {
        saved::save(&state.model, cfg, tmp, train)?;
        let n = vec![state.m1.len()];
        stage_f64(
            &tmp.join(OPTIMIZER_FILE),
            &[("adam.m1", n.clone(), &state.m1), ("adam.m2", n, &state.m2)],
        )?
        .commit()?;
        let progress = SegProgress {
            adam_steps: state.adam_steps,
            history: state.history.clone(),
        };
        let bytes = serde_json::to_vec(&progress).expect("serialisable");
        write_atomic(&tmp.join(PROGRESS_FILE), &bytes)
    })
}

/// Loads the latest checkpoint of the run in `dir`: the state, its configuration and its
/// meta data. Every file is checked as the model directory's are (names the file on error).
pub fn load_state(dir: &Path) -> Result<(SegState, SegConfig, SegMeta)> {
    let ckpt = latest_checkpoint(dir)?.ok_or_else(|| {
        ckpt_err(
            dir,
            "no checkpoint to resume from (checkpoints/LATEST is missing)",
        )
    })?;
    let (model, cfg, meta) = saved::load(&ckpt)?;
    let n = model.n_params();
    let path = ckpt.join(OPTIMIZER_FILE);
    let bytes = crate::checkpoint::read_model_file(&path)?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| ckpt_err(&path, format!("not a valid safetensors file: {e}")))?;
    let (mut m1, mut m2) = (vec![0.0; n], vec![0.0; n]);
    read_f64(&st, &path, "adam.m1", &[n], &mut m1)?;
    read_f64(&st, &path, "adam.m2", &[n], &mut m2)?;
    if m2.iter().any(|&v| v < 0.0) {
        return Err(ckpt_err(&path, "`adam.m2` holds negative values"));
    }
    let path = ckpt.join(PROGRESS_FILE);
    let bytes = crate::checkpoint::read_model_file(&path)?;
    let progress: SegProgress = serde_json::from_slice(&bytes).map_err(|e| {
        let why = crate::checkpoint::json_problem(&e);
        ckpt_err(&path, format!("invalid progress record: {why}"))
    })?;
    let numbered = progress
        .history
        .iter()
        .enumerate()
        .all(|(i, r)| r.epoch == i + 1);
    if !numbered || progress.history.len() > cfg.epochs {
        return Err(ckpt_err(
            &path,
            format!(
                "expected epochs numbered 1, 2, ... and at most {} of them",
                cfg.epochs
            ),
        ));
    }
    let state = SegState {
        model,
        m1,
        m2,
        adam_steps: progress.adam_steps,
        history: progress.history,
    };
    Ok((state, cfg, meta))
}
