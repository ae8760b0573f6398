//! Run directories, one implementation for every model kind. A run directory holds:
//!
//! * `run.json`, where the data came from (a [`DataSpec`](crate::data_spec::DataSpec)), and
//!   `data.json`, what it was (a SHA-256 of its content), written when a run is created and
//!   checked when it is reopened or evaluated on its own data;
//! * `.cardinal.lock` while a process writes into it ([`lock()`]);
//! * `metrics.jsonl`, one line per epoch ([`MetricsLog`]);
//! * `checkpoints/epoch-NNNN` and `checkpoints/LATEST`, the resumable state of a run in
//!   progress ([`Checkpointer`], [`load_checkpoint`]);
//! * the model (`config.json`, `meta.json`, `model.safetensors`: [`RunDir::save_model`]);
//! * `eval.json`, the evaluation on the test data ([`RunDir::finish`]);
//! * `.cardinal-written.json`, the entries cardinal wrote, recorded when the run is made the
//!   run ([`RunDir::commit`]): a replacement removes exactly those, and keeps the rest.
//!
//! What differs between model kinds (the binary multi-label model, the Section 6 model) is
//! what they write as the model and as a checkpoint's state: a [`RunModel`]. The rest is here.
//!
//! Run directories never lose a model: an existing directory is only reused when the caller
//! says so, one process at a time writes into it (a lock file, with stale locks of killed
//! processes detected), and a replaced run stays whole until the new one is whole: the new
//! run is written beside it and swapped in with one rename ([`RunDir::commit`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checkpoint::{write_atomic, META_FILE, WEIGHTS_FILE};
use crate::error::{Error, NotARun, Result};

mod checkpoints;
mod files;
mod model;
mod reader;
mod swap;

pub(crate) use cardinal_store::{lock, RunLock, LOCK_FILE};
pub use checkpoints::Checkpoints;
pub(crate) use checkpoints::{latest_checkpoint, load_checkpoint, Checkpointer};
#[cfg(test)]
pub(crate) use checkpoints::{save_checkpoint, LATEST_FILE};
pub use files::hash_dataset;
pub use files::RunRecord;
pub(crate) use files::DATA_FILE;
pub(crate) use files::{check_identity, create, reopen};
pub(crate) use model::RunModel;
pub use reader::{read_eval, read_history, read_names};

/// The name of the file in a run directory that records where its data came from.
pub(crate) const RUN_FILE: &str = "run.json";
/// The name of the per-epoch log in a run directory (one JSON object per line).
pub const METRICS_FILE: &str = "metrics.jsonl";
/// The name of the final evaluation in a run directory.
pub const EVAL_FILE: &str = "eval.json";

/// `e`, an error loading the model folder `dir`, said as what it is when `dir` is a folder
/// without a model (no `meta.json`): which model folders it holds, if any (a folder of runs,
/// `runs/`, given for one of them), or that it holds none.
pub(crate) fn explain_missing_model(dir: &Path, e: Error) -> Error {
    let missing_meta = matches!(&e, Error::Io { path, source }
        if source.kind() == std::io::ErrorKind::NotFound && path == &dir.join(META_FILE));
    if !missing_meta || !dir.is_dir() {
        return e;
    }
    let mut models: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.path().join(META_FILE).is_file())
                .map(|entry| entry.path().display().to_string())
                .collect()
        })
        .unwrap_or_default();
    models.sort();
    let more = models.len().saturating_sub(5);
    models.truncate(5);
    Error::Checkpoint {
        path: dir.to_path_buf(),
        problem: Box::new(crate::error::CheckpointProblem::NoModel {
            model_folders: models,
            more,
        }),
    }
}

/// `metrics.jsonl` of a run: the records of the epochs run so far, one JSON object per line,
/// the whole file rewritten atomically after every epoch.
#[derive(Debug)]
pub(crate) struct MetricsLog {
    path: PathBuf,
    lines: String,
}

impl MetricsLog {
    /// The log of the run written into `dir`, starting with the records of the epochs an
    /// interrupted run had run (`history`, empty for a fresh run); nothing is written yet.
    pub(crate) fn new<E: Serialize>(dir: &Path, history: &[E]) -> Self {
        let mut log = Self {
            path: dir.join(METRICS_FILE),
            lines: String::new(),
        };
        history.iter().for_each(|r| log.add(r));
        log
    }

    fn add(&mut self, record: &impl Serialize) {
        self.lines
            .push_str(&serde_json::to_string(record).expect("serialisable"));
        self.lines.push('\n');
    }

    /// Adds the record of an epoch just run, and writes the log.
    pub(crate) fn push(&mut self, record: &impl Serialize) -> Result<()> {
        self.add(record);
        Ok(write_atomic(&self.path, self.lines.as_bytes())?)
    }
}

/// What [`prepare`] does with a directory that already holds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Existing {
    /// Refuse it (the default: never overwrite a model without being asked).
    Refuse,
    /// Replace the run: the new run is written into a fresh sibling folder and swapped in
    /// whole by [`RunDir::commit`]; until then the old run stays as it was.
    Replace,
    /// Continue it (`--resume`).
    Continue,
}

/// Whether `dir` holds anything but lock files (its own, or one being staged).
fn holds_anything(dir: &Path) -> Result<bool> {
    let is_lock = |name: &std::ffi::OsStr| {
        name.to_str()
            .is_some_and(|n| n == LOCK_FILE || (n.starts_with(LOCK_FILE) && n.ends_with(".new")))
    };
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries.flatten().any(|e| !is_lock(&e.file_name()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// A run directory held for writing: the lock of the run directory as named, and the folder
/// the run's files are written into until [`RunDir::commit`] makes them the run.
#[derive(Debug)]
pub(crate) struct RunDir {
    target: PathBuf,
    /// The lock of `target` (taken out only when dropped).
    lock: Option<RunLock>,
    /// When replacing a run: the sibling folder the new run is written into, and its lock.
    staging: Option<(PathBuf, RunLock)>,
    /// A new run written straight into `target` (an empty or new folder: whether it was
    /// new), until it is committed.
    fresh: Option<bool>,
}

impl RunDir {
    /// Where the run's files are written: the run directory itself, or, while an existing run
    /// is being replaced, the sibling folder that becomes it at [`RunDir::commit`].
    pub(crate) fn path(&self) -> &Path {
        match &self.staging {
            Some((staging, _)) => staging,
            None => &self.target,
        }
    }

    /// Writes the trained `model`, of the model kind `kind`, as the run's model.
    pub(crate) fn save_model<M: RunModel>(&self, kind: &M, model: &M::Model) -> Result<()> {
        kind.save(model, self.path())
    }

    /// Ends a run: writes its evaluation `eval` as `eval.json`, then makes it the run
    /// ([`RunDir::commit`]).
    pub(crate) fn finish(self, eval: &impl Serialize) -> Result<()> {
        let json = serde_json::to_string_pretty(eval).expect("serialisable");
        write_atomic(&self.path().join(EVAL_FILE), json.as_bytes())?;
        self.commit()
    }

    /// Makes what was written the run: a replacement is swapped in with one rename (the old
    /// run is then removed, keeping any files cardinal did not write); otherwise nothing is
    /// left to do. Dropped without it, a replacement is abandoned and the old run stays whole.
    pub(crate) fn commit(mut self) -> Result<()> {
        swap::record_written(self.path())?;
        if let Some((staging, mut staging_lock)) = self.staging.take() {
            let lock = self.lock.as_mut().expect("held until dropped");
            let target = &self.target;
            swap::swap_in(&staging, target, &mut || {
                // The two folders changed names: so did their lock files. Named from the
                // folders' absolute paths: the lock's own may be relative to the working
                // folder (`--out .`), which is the old run now.
                lock.moved_to(staging.join(LOCK_FILE));
                staging_lock.moved_to(target.join(LOCK_FILE));
            })?;
        }
        self.fresh = None;
        Ok(())
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        // A replacement that was never committed (its run failed): the old run stays, and
        // the half-written new one goes.
        if let Some((staging, _lock)) = self.staging.take() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        // A new run that failed before its first epoch was recorded (refused over the memory
        // budget, say) leaves nothing: a retry needs no `--force`. One that trained keeps
        // what it wrote (its metrics, its checkpoints to resume from).
        if let Some(created) = self.fresh.take() {
            let dir = &self.target;
            if !dir.join(METRICS_FILE).exists() && !dir.join("checkpoints").exists() {
                for name in [RUN_FILE, DATA_FILE] {
                    let _ = std::fs::remove_file(dir.join(name));
                }
                drop(self.lock.take());
                if created {
                    // Only where it is empty: a file someone put there meanwhile stays.
                    let _ = std::fs::remove_dir(dir);
                }
            }
        }
    }
}

/// Creates (or reuses, as `existing` allows) the run directory `dir` and locks it. Replacing
/// an existing run writes the new one into a fresh sibling folder (see [`RunDir`]), so that
/// the old run stays whole until [`RunDir::commit`].
pub(crate) fn prepare(dir: &Path, existing: Existing) -> Result<RunDir> {
    // Looked at before locking (a run in the way is refused without touching its folder),
    // and again once locked: another run may have finished there meanwhile.
    refuse_unless_allowed(dir, existing)?;
    let created = std::fs::symlink_metadata(dir).is_err();
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lock = lock(dir)?;
    let occupied = refuse_unless_allowed(dir, existing)?;
    if occupied && existing == Existing::Replace {
        if let Some(why) = not_a_run(dir) {
            return Err(Error::NotARun {
                path: dir.to_path_buf(),
                what: why,
            });
        }
        // The folder itself, where `dir` is a link to it: that is what gets replaced.
        let real = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
        let path = swap::fresh_staging(&real)?;
        let staging_lock = self::lock(&path)?;
        return Ok(RunDir {
            target: real,
            lock: Some(lock),
            staging: Some((path, staging_lock)),
            fresh: None,
        });
    }
    Ok(RunDir {
        target: dir.to_path_buf(),
        lock: Some(lock),
        fresh: (!occupied && existing != Existing::Continue).then_some(created),
        staging: None,
    })
}

/// Why the occupied folder `dir` is not a run that may be replaced, if it is not: a
/// filesystem root or the home folder never is; a run holds `run.json` or `meta.json` as this
/// library writes them.
fn not_a_run(dir: &Path) -> Option<NotARun> {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if real.parent().is_none() {
        return Some(NotARun::FilesystemRoot);
    }
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    if home.is_some_and(|h| h == real) {
        return Some(NotARun::Home);
    }
    let json = |name: &str| -> Option<serde_json::Value> {
        let p = dir.join(name);
        let meta = std::fs::symlink_metadata(&p).ok()?;
        if !meta.is_file() || meta.len() > 1 << 20 {
            return None;
        }
        serde_json::from_slice(&std::fs::read(&p).ok()?).ok()
    };
    let is_run = json(RUN_FILE)
        .is_some_and(|v| serde_json::from_value::<crate::data_spec::DataSpec>(v).is_ok());
    let is_model = json(META_FILE).is_some_and(|v| {
        v.get("format_version").is_some_and(|f| f.is_u64())
            && v.get("cardinal_version").is_some_and(|c| c.is_string())
    });
    if is_run || is_model {
        return None;
    }
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name() != LOCK_FILE)
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    match e.file_type().is_ok_and(|t| t.is_dir()) {
                        true => format!("{name}/"),
                        false => name,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let more = names.len().saturating_sub(5);
    names.truncate(5);
    Some(NotARun::Foreign {
        run_file: RUN_FILE,
        meta_file: META_FILE,
        entries: names,
        more,
    })
}

/// Whether `dir` holds anything, refusing what `existing` does not allow.
fn refuse_unless_allowed(dir: &Path, existing: Existing) -> Result<bool> {
    let occupied = holds_anything(dir)?;
    if occupied && existing == Existing::Refuse {
        // A folder --force would refuse too is told so now, not sent to --force; one with a
        // lock may be a run another process is creating, its files not all written yet.
        let being_created = std::fs::symlink_metadata(dir.join(LOCK_FILE)).is_ok();
        if let Some(why) = not_a_run(dir).filter(|_| !being_created) {
            return Err(Error::NotARun {
                path: dir.to_path_buf(),
                what: why,
            });
        }
        // Said as what it is, so that --resume is offered only where it can work.
        let resumable = !dir.join(EVAL_FILE).exists()
            && dir
                .join("checkpoints")
                .join(checkpoints::LATEST_FILE)
                .exists();
        let what = if dir.join(EVAL_FILE).exists() {
            "holds a finished run"
        } else if resumable {
            "holds an unfinished run"
        } else if dir.join(WEIGHTS_FILE).exists() {
            "holds a model"
        } else if dir.join(RUN_FILE).exists() {
            "holds a run stopped before its first checkpoint"
        } else {
            "is not empty"
        };
        return Err(Error::RunExists {
            path: dir.to_path_buf(),
            what: what.into(),
            resumable,
        });
    }
    Ok(occupied)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cardinal-rundir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Files of a run folder, sorted, with their content (folders end in `/`).
    fn files(d: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                match e.file_type().unwrap().is_dir() {
                    true => (format!("{name}/"), Vec::new()),
                    false => (name, std::fs::read(e.path()).unwrap()),
                }
            })
            .collect();
        out.sort();
        out
    }

    /// A folder holding a run, with a file of the user's.
    fn old_run(d: &Path) {
        std::fs::create_dir_all(d.join("checkpoints/epoch-0001")).unwrap();
        std::fs::write(d.join(WEIGHTS_FILE), b"old weights").unwrap();
        std::fs::write(d.join("metrics.jsonl"), b"{}").unwrap();
        std::fs::write(d.join("notes.txt"), b"mine").unwrap();
        std::fs::write(d.join(RUN_FILE), r#"{"dataset": "bibtex", "train": null, "test": null, "labels": null, "data_dir": null, "train_fraction": 0.8}"#).unwrap();
    }

    #[test]
    fn an_existing_run_is_refused_unless_replaced_and_stays_whole_until_committed() {
        let d = tmp("existing");
        old_run(&d);
        let before = files(&d);
        let err = prepare(&d, Existing::Refuse).unwrap_err();
        assert!(
            err.to_string().contains("holds a model") && !err.to_string().contains("--resume"),
            "{err}"
        );
        let run = prepare(&d, Existing::Replace).unwrap();
        let staging = run.path().to_path_buf();
        assert_ne!(staging, d);
        std::fs::write(staging.join(WEIGHTS_FILE), b"new weights").unwrap();
        std::fs::write(staging.join(RUN_FILE), b"{}").unwrap();
        // Until the commit, the old run is all there is under its name.
        let mut held = files(&d);
        held.retain(|(n, _)| n != LOCK_FILE);
        assert_eq!(held, before);
        run.commit().unwrap();
        let mut after = files(&d);
        after.retain(|(n, _)| n != swap::WRITTEN_FILE);
        assert_eq!(
            after,
            vec![
                ("model.safetensors".into(), b"new weights".to_vec()),
                ("notes.txt".into(), b"mine".to_vec()),
                (RUN_FILE.into(), b"{}".to_vec()),
            ]
        );
        assert!(!staging.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_abandoned_replacement_leaves_the_old_run_and_no_trace() {
        let d = tmp("abandoned");
        old_run(&d);
        let before = files(&d);
        let run = prepare(&d, Existing::Replace).unwrap();
        let staging = run.path().to_path_buf();
        std::fs::write(staging.join(WEIGHTS_FILE), b"half").unwrap();
        drop(run);
        assert_eq!(files(&d), before);
        assert!(!staging.exists());
        // A killed one (no drop) leaves its folder, which the next replacement clears.
        let run = prepare(&d, Existing::Replace).unwrap();
        std::fs::write(run.path().join(WEIGHTS_FILE), b"half").unwrap();
        std::mem::forget(run);
        std::fs::remove_file(d.join(LOCK_FILE)).unwrap();
        assert!(staging.join(WEIGHTS_FILE).exists());
        let run = prepare(&d, Existing::Replace).unwrap();
        assert_eq!(run.path(), staging);
        assert!(!staging.join(WEIGHTS_FILE).exists());
        drop(run);
        // ... unless it holds a file cardinal does not write: then it is refused, named.
        std::fs::create_dir(&staging).unwrap();
        std::fs::write(staging.join("moved-here.txt"), b"theirs").unwrap();
        let err = prepare(&d, Existing::Replace).unwrap_err().to_string();
        assert!(
            err.contains("interrupted replacement") && err.contains("moved-here.txt"),
            "{err}"
        );
        assert!(staging.join("moved-here.txt").exists());
        std::fs::remove_dir_all(&staging).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A new run dropped before its first epoch (refused before training) leaves nothing: no
    /// `run.json`, no `data.json`, not the folder it created; one that trained keeps its files.
    #[test]
    fn a_run_refused_before_training_leaves_nothing() {
        let d = tmp("refused");
        for made_by_user in [false, true] {
            if made_by_user {
                std::fs::create_dir_all(&d).unwrap();
            }
            let run = prepare(&d, Existing::Refuse).unwrap();
            std::fs::write(run.path().join(RUN_FILE), b"{}").unwrap();
            std::fs::write(run.path().join(DATA_FILE), b"{}").unwrap();
            drop(run);
            assert_eq!(d.exists(), made_by_user);
            if made_by_user {
                assert!(files(&d).is_empty(), "{:?}", files(&d));
            }
        }
        let run = prepare(&d, Existing::Refuse).unwrap();
        std::fs::write(run.path().join(RUN_FILE), b"{}").unwrap();
        std::fs::write(run.path().join(METRICS_FILE), b"{}").unwrap();
        drop(run);
        assert_eq!(files(&d).len(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Through a link to the run folder, the folder is replaced and the link kept.
    #[cfg(unix)]
    #[test]
    fn a_linked_run_folder_is_replaced_in_place() {
        let (d, link) = (tmp("linked"), tmp("link"));
        old_run(&d);
        std::os::unix::fs::symlink(&d, &link).unwrap();
        let run = prepare(&link, Existing::Replace).unwrap();
        std::fs::write(run.path().join(WEIGHTS_FILE), b"new weights").unwrap();
        run.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(d.join(WEIGHTS_FILE)).unwrap(), b"new weights");
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Replacing refuses what is not a run (naming what is in the way), a filesystem root and
    /// the home folder, and touches nothing there.
    #[test]
    fn only_a_run_is_replaced() {
        let d = tmp("not-a-run");
        std::fs::create_dir_all(d.join("checkpoints/resnet")).unwrap();
        std::fs::write(d.join("checkpoints/resnet/weights.pt"), b"theirs").unwrap();
        std::fs::write(d.join("metrics.jsonl"), b"{}").unwrap();
        std::fs::write(d.join(RUN_FILE), b"{\"epochs\": 3}").unwrap();
        let err = prepare(&d, Existing::Replace).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::NotARun { .. }), "{msg}");
        assert!(
            msg.contains("is not a cardinal run")
                && msg.contains("checkpoints/, metrics.jsonl, run.json"),
            "{msg}"
        );
        assert!(
            d.join("checkpoints/resnet/weights.pt").exists() && d.join("metrics.jsonl").exists()
        );
        assert!(!d.join(LOCK_FILE).exists());
        // A saved model (meta.json of this library, no run.json) is a run.
        std::fs::remove_file(d.join(RUN_FILE)).unwrap();
        std::fs::write(
            d.join(META_FILE),
            b"{\"format_version\": 2, \"cardinal_version\": \"0.1.0\"}",
        )
        .unwrap();
        prepare(&d, Existing::Replace).unwrap().commit().unwrap();
        // Cardinal's files go; the user's, in `checkpoints/` too, stay.
        assert!(!d.join("metrics.jsonl").exists() && !d.join(META_FILE).exists());
        assert!(d.join("checkpoints/resnet/weights.pt").exists());
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(not_a_run(Path::new("/")), Some(NotARun::FilesystemRoot));
        if let Some(home) = std::env::var_os("HOME").filter(|h| Path::new(h).is_dir()) {
            assert_eq!(not_a_run(Path::new(&home)), Some(NotARun::Home));
        }
    }
}
