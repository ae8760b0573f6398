//! Resumable checkpoints of a run in progress: `<dir>/checkpoints/epoch-NNNN` (weights, the
//! optimizer, the best and averaged weights, progress) and `LATEST`, which names the newest.

use std::path::{Path, PathBuf};

use super::{
    ckpt_err, load, params_tensors, read_params, save, write_atomic, write_tensors, Meta, TrainedOn,
};
use crate::error::{Error, Result};
use crate::train::{Adagrad, Progress, TrainState};

/// Name of the file in `<dir>/checkpoints` that names the latest complete checkpoint.
pub const LATEST_FILE: &str = "LATEST";

/// Writes a resumable checkpoint of a run in progress to `<dir>/checkpoints/epoch-NNNN` and
/// points `<dir>/checkpoints/LATEST` at it. The checkpoint is assembled in a temporary
/// directory and renamed into place, so `LATEST` only ever names a complete checkpoint; older
/// checkpoints are removed afterwards.
pub fn save_state(dir: &Path, state: &TrainState, data: &TrainedOn) -> Result<PathBuf> {
    write_checkpoint(dir, state.epochs_run(), |tmp| {
        save(&state.model, tmp, data)?;
        write_tensors(
            &tmp.join("optimizer.safetensors"),
            &params_tensors(&state.optimizer.acc),
        )?;
        if let Some(best) = &state.best_params {
            write_tensors(&tmp.join("best.safetensors"), &params_tensors(best))?;
        }
        if let Some(avg) = &state.average {
            write_tensors(&tmp.join("average.safetensors"), &params_tensors(avg))?;
        }
        let progress = serde_json::to_vec(&state.progress).expect("serialisable");
        write_atomic(&tmp.join("progress.json"), &progress)
    })
}

/// Writes the checkpoint after `epochs_run` epochs as `<dir>/checkpoints/epoch-NNNN`: `fill`
/// writes its files into a temporary directory, which is then renamed into place and named by
/// `LATEST`; older checkpoints are removed afterwards. Shared by the binary and the
/// multi-target (Section 6) runs.
pub(crate) fn write_checkpoint(
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
    // The previous epoch's checkpoint is no longer needed. Only names this writer uses
    // (`epoch-` and four or more digits, directories) are touched: other files the user keeps
    // there stay.
    if let Ok(entries) = std::fs::read_dir(&root) {
        for e in entries.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            let checkpoint_name = n
                .strip_prefix("epoch-")
                .is_some_and(|d| d.len() >= 4 && d.bytes().all(|b| b.is_ascii_digit()));
            // Temporary directories of this writer left by a killed process.
            let stale_tmp = n.strip_prefix(".tmp-epoch-").is_some_and(|d| {
                d.bytes().all(|b| b.is_ascii_digit() || b == b'-') && e.path() != tmp
            });
            if (checkpoint_name && n != name || stale_tmp)
                && e.file_type().is_ok_and(|t| t.is_dir())
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    Ok(fin)
}

/// The directory of the latest complete checkpoint under `<dir>/checkpoints`, if any.
pub fn latest_checkpoint(dir: &Path) -> Result<Option<PathBuf>> {
    let root = dir.join("checkpoints");
    let latest = root.join(LATEST_FILE);
    match super::read_model_file_if_any(&latest)? {
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
                    "names no checkpoint of this directory: expected `epoch-` and digits",
                ));
            }
            Ok(Some(root.join(name)))
        }
        None => Ok(None),
    }
}

/// Loads the latest resumable checkpoint of the run in `dir`.
pub fn load_state(dir: &Path) -> Result<(TrainState, Meta)> {
    let ckpt = latest_checkpoint(dir)?.ok_or_else(|| {
        ckpt_err(
            dir,
            "no checkpoint to resume from (checkpoints/LATEST is missing)",
        )
    })?;
    let (model, meta) = load(&ckpt)?;
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
            format!("Adagrad accumulator `{name}` holds negative values"),
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
        return Err(ckpt_err(
            &avg_path,
            "missing: the run averages its weights (train.average_epochs)",
        ));
    } else {
        None
    };
    let p = ckpt.join("progress.json");
    let bytes = super::read_model_file(&p)?;
    let progress: Progress = serde_json::from_slice(&bytes).map_err(|e| {
        ckpt_err(
            &p,
            format!("invalid progress record: {}", super::json_problem(&e)),
        )
    })?;
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
