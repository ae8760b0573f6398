//! Resumable checkpoints of a run in progress, for every model kind: `checkpoints/epoch-NNNN`
//! holds what the kind's [`RunModel::save_state`] writes (its model directory and its
//! optimizer and progress), and `checkpoints/LATEST` names the newest complete one. When a
//! run writes one is [`Checkpoints`]' call.

use std::path::{Path, PathBuf};

use super::RunModel;
use crate::checkpoint::{ckpt_err, read_model_file_if_any, write_atomic};
use crate::error::{Error, Result};

/// Name of the file in `<dir>/checkpoints` that names the latest complete checkpoint.
pub(crate) const LATEST_FILE: &str = "LATEST";

/// When a run writes its resumable checkpoint (`checkpoints/`, for `--resume`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoints {
    /// Never: an interrupted run starts over.
    Never,
    /// After every epoch.
    EveryEpoch,
    /// After an epoch when at least this long has passed since the run started or since the
    /// last checkpoint: an interruption loses at most about this much work, and a short run
    /// pays nothing.
    AtMostEvery(std::time::Duration),
}

impl Checkpoints {
    /// The default: at most every 30 s. A checkpoint holds four copies of the weights (with
    /// the optimizer, best and averaged weights), which after every epoch costs more than
    /// the README's main job can afford (measured in docs/RESULTS.md, "Reliability").
    pub(crate) const DEFAULT: Self = Self::AtMostEvery(std::time::Duration::from_secs(30));

    /// Whether a checkpoint is due after an epoch, the last one written at `last` (or the run
    /// started then).
    pub(crate) fn due(self, last: std::time::Instant) -> bool {
        match self {
            Checkpoints::Never => false,
            Checkpoints::EveryEpoch => true,
            Checkpoints::AtMostEvery(every) => last.elapsed() >= every,
        }
    }
}

impl Default for Checkpoints {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Writes a run's checkpoints after its epochs, as [`Checkpoints`] says.
#[derive(Debug)]
pub(crate) struct Checkpointer<'a, M> {
    kind: &'a M,
    dir: PathBuf,
    when: Checkpoints,
    last: std::time::Instant,
}

impl<'a, M: RunModel> Checkpointer<'a, M> {
    /// Checkpoints of the run written into `dir` (its [`super::RunDir::path`]), of the model
    /// kind `kind`; the clock starts now.
    pub(crate) fn new(kind: &'a M, dir: &Path, when: Checkpoints) -> Self {
        Self {
            kind,
            dir: dir.to_path_buf(),
            when,
            last: std::time::Instant::now(),
        }
    }

    /// Called after every epoch: writes the checkpoint of `state` when one is due.
    pub(crate) fn after_epoch(&mut self, state: &M::State) -> Result<()> {
        if self.when.due(self.last) {
            save_checkpoint(self.kind, &self.dir, state)?;
            tracing::debug!(
                dir = %self.dir.display(),
                epochs_run = M::epochs_run(state),
                "checkpoint written"
            );
            self.last = std::time::Instant::now();
        }
        Ok(())
    }
}

/// Writes the checkpoint of `state`, a run of the model kind `kind` in progress, into the run
/// directory `dir`, and returns its folder.
pub(crate) fn save_checkpoint<M: RunModel>(
    kind: &M,
    dir: &Path,
    state: &M::State,
) -> Result<PathBuf> {
    write_checkpoint(dir, M::epochs_run(state), |tmp| kind.save_state(state, tmp))
}

/// Reads the latest checkpoint of the run in `dir` back, as the model kind `M` wrote it.
pub(crate) fn load_checkpoint<M: RunModel>(dir: &Path) -> Result<M::Resumed> {
    let ckpt = latest_checkpoint(dir)?.ok_or_else(|| Error::NotResumable {
        run: dir.to_path_buf(),
        finished: dir.join(super::EVAL_FILE).is_file(),
    })?;
    M::load_state(&ckpt)
}

/// Writes the checkpoint after `epochs_run` epochs as `<dir>/checkpoints/epoch-NNNN`: `fill`
/// writes its files into a temporary directory, which is then renamed into place and named by
/// `LATEST`, so `LATEST` only ever names a complete checkpoint; older checkpoints are removed
/// afterwards.
fn write_checkpoint(
    dir: &Path,
    epochs_run: usize,
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let root = dir.join("checkpoints");
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    let name = format!("epoch-{epochs_run:04}");
    let tmp = root.join(format!(".tmp-{name}-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    fill(&tmp)?;
    let fin = root.join(&name);
    if fin.exists() {
        std::fs::remove_dir_all(&fin).map_err(|e| Error::io(&fin, e))?;
    }
    std::fs::rename(&tmp, &fin).map_err(|e| Error::io(&fin, e))?;
    if let Ok(d) = std::fs::File::open(&root) {
        let _ = d.sync_all();
    }
    write_atomic(&root.join(LATEST_FILE), name.as_bytes())?;
    remove_older(&root, &name, &tmp);
    Ok(fin)
}

/// Removes the checkpoints under `root` other than `keep`, and temporary folders of this
/// writer other than `tmp` that a killed process left. Only names this writer uses (`epoch-`
/// and four or more digits, directories) are touched: other files the user keeps there stay.
fn remove_older(root: &Path, keep: &str, tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name();
        let n = n.to_string_lossy();
        let checkpoint_name = n
            .strip_prefix("epoch-")
            .is_some_and(|d| d.len() >= 4 && d.bytes().all(|b| b.is_ascii_digit()));
        let stale_tmp = n
            .strip_prefix(".tmp-epoch-")
            .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit() || b == b'-') && e.path() != tmp);
        if (checkpoint_name && n != keep || stale_tmp) && e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The directory of the latest complete checkpoint under `<dir>/checkpoints`, if any.
pub(crate) fn latest_checkpoint(dir: &Path) -> Result<Option<PathBuf>> {
    let root = dir.join("checkpoints");
    let latest = root.join(LATEST_FILE);
    match read_model_file_if_any(&latest)? {
        Some(name) => {
            let name = String::from_utf8_lossy(&name);
            // A model directory is untrusted input: LATEST may only name a checkpoint of
            // this directory (`epoch-NNNN`), never a path elsewhere.
            let name = name.trim();
            let ours = name
                .strip_prefix("epoch-")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !ours {
                return Err(ckpt_err(
                    &latest,
                    crate::error::CheckpointProblem::NotACheckpointName,
                ));
            }
            Ok(Some(root.join(name)))
        }
        None => Ok(None),
    }
}
