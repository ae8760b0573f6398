//! The Section 6 model in a run directory ([`SegmentRun`], its [`RunModel`]): its model folder
//! ([`super::saved`]) and its resumable checkpoint: the model folder of the state, Adam's
//! moments (`optimizer.safetensors`, `F64`) and `progress.json` (Adam's step count and the
//! epochs' records). The checkpoints' folders and `LATEST` are [`crate::run_dir`]'s, shared
//! with the binary model.

use std::path::Path;

use safetensors::SafeTensors;
use serde::{Deserialize, Serialize};

use super::saved::{self, read_f64, stage_f64, SegMeta};
use crate::checkpoint::{ckpt_err, write_atomic};
use crate::data::multi_target::MultiTargetDataset;
use crate::error::{CheckpointProblem, Record, Result};
use crate::run_dir::RunModel;
use cardinal_segment::{SegConfig, SegEpoch, SegModel, SegState};

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

/// The Section 6 model as a run directory's [`RunModel`]: its files record the configuration
/// `config` and the names and shape of the training data `train` beside the weights.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SegmentRun<'a> {
    /// The configuration the model is trained by (`config.json`).
    pub config: &'a SegConfig,
    /// The training data (`meta.json` records its name, shape and names).
    pub train: &'a MultiTargetDataset,
}

impl RunModel for SegmentRun<'_> {
    type Model = SegModel;
    type State = SegState;
    type Epoch = SegEpoch;
    type Loaded = (SegModel, SegConfig, SegMeta);
    type Resumed = (SegState, SegConfig, SegMeta);

    fn save(&self, model: &SegModel, dir: &Path) -> Result<()> {
        saved::save(model, self.config, dir, self.train).map(|_| ())
    }

    fn load(dir: &Path) -> Result<(SegModel, SegConfig, SegMeta)> {
        saved::load(dir)
    }

    fn save_state(&self, state: &SegState, ckpt: &Path) -> Result<()> {
        self.save(&state.model, ckpt)?;
        let n = vec![state.m1.len()];
        stage_f64(
            &ckpt.join(OPTIMIZER_FILE),
            &[("adam.m1", n.clone(), &state.m1), ("adam.m2", n, &state.m2)],
        )?
        .commit()?;
        let progress = SegProgress {
            adam_steps: state.adam_steps,
            history: state.history.clone(),
        };
        let bytes = serde_json::to_vec(&progress).expect("serialisable");
        Ok(write_atomic(&ckpt.join(PROGRESS_FILE), &bytes)?)
    }

    fn load_state(ckpt: &Path) -> Result<(SegState, SegConfig, SegMeta)> {
        read_state(ckpt)
    }

    fn epochs_run(state: &SegState) -> usize {
        state.epochs_run()
    }

    fn history(state: &SegState) -> &[SegEpoch] {
        &state.history
    }
}

/// Reads the checkpoint folder `ckpt`.
fn read_state(ckpt: &Path) -> Result<(SegState, SegConfig, SegMeta)> {
    let (model, cfg, meta) = saved::load(ckpt)?;
    let n = model.n_params();
    let path = ckpt.join(OPTIMIZER_FILE);
    let bytes = crate::checkpoint::read_model_file(&path)?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| ckpt_err(&path, CheckpointProblem::NotSafetensors(e)))?;
    let (mut m1, mut m2) = (vec![0.0; n], vec![0.0; n]);
    read_f64(&st, &path, "adam.m1", &[n], &mut m1)?;
    read_f64(&st, &path, "adam.m2", &[n], &mut m2)?;
    if m2.iter().any(|&v| v < 0.0) {
        return Err(ckpt_err(
            &path,
            cardinal_store::TensorProblem::Negative {
                name: "adam.m2".into(),
            },
        ));
    }
    let path = ckpt.join(PROGRESS_FILE);
    let bytes = crate::checkpoint::read_model_file(&path)?;
    let progress: SegProgress = serde_json::from_slice(&bytes)
        .map_err(|e| crate::checkpoint::record_err(&path, Record::Progress, &e))?;
    let numbered = progress
        .history
        .iter()
        .enumerate()
        .all(|(i, r)| r.epoch == i + 1);
    if !numbered || progress.history.len() > cfg.epochs {
        return Err(ckpt_err(
            &path,
            CheckpointProblem::EpochNumbers { max: cfg.epochs },
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
