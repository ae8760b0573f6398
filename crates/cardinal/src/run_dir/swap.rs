//! Replacing a run as one step. The new run is written into a fresh sibling folder
//! (`.NAME.cardinal-replacement`); when it is whole, the two folders are exchanged in a single
//! `renameat2(RENAME_EXCHANGE)`, which is the commit. A crash before it leaves the old run
//! whole under its name; one after it, the new run. Readers never see a mix of the two.
//!
//! Files in the old folder that cardinal did not write (a user's notes) are moved into the new
//! one after the exchange, and only then is the old run removed. What cardinal wrote is what
//! a finished run records in `.cardinal-written.json`; a run without the record (killed
//! before it finished, or from an earlier version) is judged by the exact names cardinal
//! gives.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checkpoint::{CONFIG_FILE, META_FILE, SAVE_JOURNAL, WEIGHTS_FILE};
use crate::error::{CheckpointProblem, Error, Result};

use super::checkpoints::LATEST_FILE;
use super::{DATA_FILE, EVAL_FILE, LOCK_FILE, METRICS_FILE, RUN_FILE};

/// The sibling folder a replacement of `target` is written into.
pub(super) fn staging_path(target: &Path) -> PathBuf {
    crate::checkpoint::hidden_sibling(target, ".cardinal-replacement")
}

/// The file in a finished run folder that records the entries cardinal wrote there (in the
/// folder and in its `checkpoints/`): when the run is replaced, exactly those go with it, and
/// everything else, whatever its name, is the user's and stays.
pub(crate) const WRITTEN_FILE: &str = ".cardinal-written.json";

/// What [`WRITTEN_FILE`] records.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    /// Entries of the run folder.
    files: Vec<String>,
    /// Entries of its `checkpoints/` folder.
    checkpoints: Vec<String>,
}

/// Records in the run folder `dir`, as it is made the run, the entries cardinal wrote there:
/// those with the names it gives (written while the folder was held by its lock, and, for a
/// replacement, into a folder of its own).
pub(super) fn record_written(dir: &Path) -> Result<()> {
    let ours = |d: &Path, by: fn(&str) -> bool| -> Result<Vec<String>> {
        let mut names: Vec<String> = match std::fs::read_dir(d) {
            Ok(entries) => entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| by(n) && !transient(n) && !checkpoint_transient(n))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(d, e)),
        };
        names.sort();
        Ok(names)
    };
    let written = Written {
        files: ours(dir, written_by_cardinal)?,
        checkpoints: ours(&dir.join("checkpoints"), checkpoint_by_cardinal)?,
    };
    let json = serde_json::to_string_pretty(&written).expect("serialisable");
    Ok(crate::checkpoint::write_atomic(
        &dir.join(WRITTEN_FILE),
        json.as_bytes(),
    )?)
}

/// What the run folder `dir` records cardinal wrote there; `None` for a run without the
/// record (unfinished, or from an earlier version) or with one that cannot be read.
fn read_written(dir: &Path) -> Option<Written> {
    let path = dir.join(WRITTEN_FILE);
    let bytes = crate::checkpoint::read_model_file_if_any(&path).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// Whether the folder entry `name` is one cardinal writes into a run folder, by its name
/// alone (for runs without [`WRITTEN_FILE`]).
fn written_by_cardinal(name: &str) -> bool {
    name == "checkpoints" || (RUN_FILES.contains(&name) && name != WRITTEN_FILE) || transient(name)
}

/// The files cardinal writes into a run folder, by name.
const RUN_FILES: [&str; 9] = [
    CONFIG_FILE,
    META_FILE,
    WEIGHTS_FILE,
    RUN_FILE,
    DATA_FILE,
    METRICS_FILE,
    EVAL_FILE,
    SAVE_JOURNAL,
    WRITTEN_FILE,
];

/// Whether the run folder's entry `name` is one cardinal writes only for a while: the lock
/// and its staged copies `.cardinal.lock.PID.N.new`, the record of what it wrote, and staged
/// writes `.NAME.tmp-PID` of its files. Exactly the names cardinal gives: a user's
/// `.env.tmp-keep` or `.cardinal.lock.backup` merely looks like them.
fn transient(name: &str) -> bool {
    let staged_file = name
        .strip_prefix('.')
        .and_then(|n| n.rsplit_once(".tmp-"))
        .is_some_and(|(file, pid)| digits(pid) && RUN_FILES.contains(&file));
    let staged_lock = name
        .strip_prefix(LOCK_FILE)
        .and_then(|n| n.strip_prefix('.'))
        .and_then(|n| n.strip_suffix(".new"))
        .and_then(|n| n.split_once('.'))
        .is_some_and(|(pid, n)| digits(pid) && digits(n));
    name == LOCK_FILE || name == WRITTEN_FILE || staged_file || staged_lock
}

/// Whether `s` is a number: ASCII digits, at least one.
fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the entry `name` of a run's `checkpoints/` folder is one cardinal writes: a
/// checkpoint `epoch-NNNN`, `LATEST`, and their temporary names while being written.
fn checkpoint_by_cardinal(name: &str) -> bool {
    name == LATEST_FILE || epoch(name) || checkpoint_transient(name)
}

/// Whether `name` is a checkpoint's name, `epoch-NNNN`.
fn epoch(name: &str) -> bool {
    name.strip_prefix("epoch-")
        .is_some_and(|d| d.len() >= 4 && digits(d))
}

/// Whether the `checkpoints/` entry `name` is a checkpoint or `LATEST` being written.
fn checkpoint_transient(name: &str) -> bool {
    name.strip_prefix(".tmp-")
        .and_then(|n| n.rsplit_once('-'))
        .is_some_and(|(e, pid)| epoch(e) && digits(pid))
        || name
            .strip_prefix(&format!(".{LATEST_FILE}.tmp-"))
            .is_some_and(digits)
}

/// The entries of `dir` that cardinal did not write.
fn foreign_entries(dir: &Path) -> Result<Vec<std::ffi::OsString>> {
    foreign_entries_by(dir, &written_by_cardinal)
}

/// The entries of `dir` that `ours` does not recognise as cardinal's.
fn foreign_entries_by(dir: &Path, ours: &dyn Fn(&str) -> bool) -> Result<Vec<std::ffi::OsString>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let name = entry.map_err(|e| Error::io(dir, e))?.file_name();
        if !name.to_str().is_some_and(ours) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// A fresh, empty staging folder for replacing `target`. What an interrupted replacement left
/// there is removed, unless it holds files cardinal did not write (then it is refused, named).
pub(super) fn fresh_staging(target: &Path) -> Result<PathBuf> {
    refuse_mount_point(target)?;
    let staging = staging_path(target);
    match std::fs::symlink_metadata(&staging) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&staging, e)),
        Ok(meta) if meta.is_dir() => {
            let foreign = foreign_entries(&staging)?;
            if !foreign.is_empty() {
                let names: Vec<String> = foreign
                    .iter()
                    .take(5)
                    .map(|n| n.to_string_lossy().into_owned())
                    .collect();
                return Err(Error::Checkpoint {
                    path: staging,
                    problem: Box::new(CheckpointProblem::StagingHoldsForeign {
                        target: target.to_path_buf(),
                        files: names,
                    }),
                });
            }
            std::fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
        }
        Ok(_) => {
            return Err(Error::Checkpoint {
                path: staging,
                problem: Box::new(CheckpointProblem::StagingInTheWay {
                    target: target.to_path_buf(),
                }),
            })
        }
    }
    std::fs::create_dir(&staging).map_err(|e| cannot_stage(target, &staging, e))?;
    Ok(staging)
}

/// Why the staging folder for replacing `target` could not be created, said with what to do
/// where the cause is a folder that cannot be written.
fn cannot_stage(target: &Path, staging: &Path, e: std::io::Error) -> Error {
    use std::io::ErrorKind::{PermissionDenied, ReadOnlyFilesystem};
    if !matches!(e.kind(), PermissionDenied | ReadOnlyFilesystem) {
        return Error::io(staging, e);
    }
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Error::Checkpoint {
        path: target.to_path_buf(),
        problem: Box::new(CheckpointProblem::CannotStage {
            parent: parent.to_path_buf(),
            source: e,
        }),
    }
}

/// Refuses, before anything trains, a `target` that is a mount point: the exchange of two
/// folders works within one filesystem, and a mount point's folder cannot be exchanged (the
/// usual container volume), so the finished run would be left beside it.
fn refuse_mount_point(target: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let (Ok(t), Ok(p)) = (std::fs::metadata(target), std::fs::metadata(parent)) else {
        return Ok(());
    };
    if t.dev() != p.dev() {
        return Err(Error::Checkpoint {
            path: target.to_path_buf(),
            problem: Box::new(CheckpointProblem::MountPoint),
        });
    }
    Ok(())
}

/// Moves the entries of `from` that `ours` does not recognise into `to` (created if needed),
/// never over an entry there.
fn move_foreign(
    from: &Path,
    to: &Path,
    ours: &dyn Fn(&str) -> bool,
) -> std::result::Result<(), String> {
    let foreign = foreign_entries_by(from, ours).map_err(|e| e.to_string())?;
    if !foreign.is_empty() {
        std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    for name in foreign {
        let (src, dest) = (from.join(&name), to.join(&name));
        let moved = match dest.exists() {
            true => Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists)),
            false => std::fs::rename(&src, &dest),
        };
        moved.map_err(|e| {
            format!(
                "could not move {} into {}: {e}",
                src.display(),
                to.display()
            )
        })?;
    }
    Ok(())
}

/// Flushes a folder's entries to disk (a no-op where folders cannot be opened).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Exchanges the folders `a` and `b` in one step.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
        Ok(()) => Ok(()),
        // A filesystem without the exchange (some network and FUSE ones).
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            exchange_in_two_renames(a, b)
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    exchange_in_two_renames(a, b)
}

/// The exchange where the system has none: `b` aside, `a` into its place, `b` to `a`'s name.
/// Between the first two renames `b`'s name is free; a crash there leaves both runs whole,
/// the old one under `.NAME.cardinal-previous`.
fn exchange_in_two_renames(a: &Path, b: &Path) -> std::io::Result<()> {
    let aside = crate::checkpoint::hidden_sibling(b, ".cardinal-previous");
    std::fs::rename(b, &aside)?;
    if let Err(e) = std::fs::rename(a, b) {
        let _ = std::fs::rename(&aside, b);
        return Err(e);
    }
    std::fs::rename(&aside, a)
}

/// Whether an entry's name is one cardinal wrote.
type Ours<'a> = dyn Fn(&str) -> bool + 'a;

/// Makes the whole run in `staging` the run `target`, in one step (see the module docs), and
/// calls `swapped` right after it; the old run, then at `staging`, is removed once the files
/// cardinal did not write are moved over.
pub(super) fn swap_in(staging: &Path, target: &Path, swapped: &mut dyn FnMut()) -> Result<()> {
    sync_dir(staging);
    exchange(staging, target).map_err(|e| Error::io(target, e))?;
    swapped();
    if let Some(parent) = target.parent() {
        sync_dir(parent);
    }
    // From here on the new run is in place: what follows only tidies up. The user's files
    // go over, in the run folder and in its `checkpoints/`: all but those the old run records
    // cardinal wrote, or, without the record, all but those with the names cardinal gives.
    let written = read_written(staging);
    let (top, checkpoints): (Box<Ours>, Box<Ours>) = match &written {
        Some(w) => (
            Box::new(|n: &str| w.files.iter().any(|f| f == n) || transient(n)),
            Box::new(|n: &str| w.checkpoints.iter().any(|f| f == n) || checkpoint_transient(n)),
        ),
        None => (
            Box::new(written_by_cardinal),
            Box::new(checkpoint_by_cardinal),
        ),
    };
    let old_checkpoints = staging.join("checkpoints");
    let user_files =
        move_foreign(staging, target, &*top).and_then(|()| match old_checkpoints.is_dir() {
            true => move_foreign(&old_checkpoints, &target.join("checkpoints"), &*checkpoints),
            false => Ok(()),
        });
    if let Err(why) = user_files {
        tracing::warn!("the replaced run is left in {}: {why}", staging.display());
        return Ok(());
    }
    if let Err(e) = std::fs::remove_dir_all(staging) {
        tracing::warn!("the replaced run is left in {}: {e}", staging.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_dir::{prepare, Existing};

    /// A folder that cannot be written is said as such, with what to do; other errors stay
    /// the system's, with their path. (The end-to-end check runs only as a user that
    /// permissions apply to: `replace.rs`.)
    #[test]
    fn a_parent_that_cannot_be_written_is_said_with_what_to_do() {
        use std::io::{Error as IoError, ErrorKind};
        let (target, staging) = (
            Path::new("runs/m"),
            Path::new("runs/.m.cardinal-replacement"),
        );
        for kind in [ErrorKind::PermissionDenied, ErrorKind::ReadOnlyFilesystem] {
            let e = cannot_stage(target, staging, IoError::from(kind)).to_string();
            assert!(
                e.starts_with("runs/m: cannot be replaced")
                    && e.contains("in runs, which cannot be written")
                    && e.contains("make that folder writable"),
                "{e}"
            );
        }
        let e = cannot_stage(target, staging, IoError::from(ErrorKind::StorageFull)).to_string();
        assert!(e.starts_with("runs/.m.cardinal-replacement: "), "{e}");
    }

    /// A finished run records what cardinal wrote: a replacement removes exactly that, and
    /// keeps what the user added afterwards even under the names cardinal gives.
    #[test]
    fn a_replacement_removes_what_the_run_records_and_keeps_the_rest() {
        let d = std::env::temp_dir().join(format!("cardinal-swap-rec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let run = prepare(&d, Existing::Refuse).unwrap();
        std::fs::write(run.path().join(RUN_FILE), br#"{"dataset": "bibtex", "train": null, "test": null, "labels": null, "data_dir": null, "train_fraction": 0.8}"#).unwrap();
        std::fs::write(run.path().join(CONFIG_FILE), b"old").unwrap();
        run.commit().unwrap();
        let written: Written =
            serde_json::from_slice(&std::fs::read(d.join(WRITTEN_FILE)).unwrap()).unwrap();
        assert_eq!(written.files, [CONFIG_FILE, RUN_FILE]);
        // Added by the user after the run finished, under names cardinal gives.
        let users = ["checkpoints/epoch-0042", DATA_FILE, METRICS_FILE];
        std::fs::create_dir(d.join("checkpoints")).unwrap();
        for f in users {
            std::fs::write(d.join(f), f).unwrap();
        }
        let run = prepare(&d, Existing::Replace).unwrap();
        std::fs::write(run.path().join(RUN_FILE), b"{}").unwrap();
        run.commit().unwrap();
        for f in users {
            assert_eq!(std::fs::read_to_string(d.join(f)).unwrap(), f, "{f}");
        }
        assert!(!d.join(CONFIG_FILE).exists(), "the old run's file stayed");
        assert_eq!(std::fs::read(d.join(RUN_FILE)).unwrap(), b"{}");
        assert!(!staging_path(&d).exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Files that merely look like cardinal's are the user's: a replacement keeps them, in
    /// the run folder and in its `checkpoints/`; cardinal's own go with the old run.
    #[test]
    fn a_replacement_keeps_files_that_only_look_like_cardinals() {
        let d = std::env::temp_dir().join(format!("cardinal-swap-look-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("checkpoints/epoch-0001")).unwrap();
        std::fs::write(d.join(RUN_FILE), br#"{"dataset": "bibtex", "train": null, "test": null, "labels": null, "data_dir": null, "train_fraction": 0.8}"#).unwrap();
        let users = [
            ".env.tmp-keep",
            ".cardinal.lock.backup",
            ".model.safetensors.tmp-mine",
            "checkpoints/my-notes.txt",
        ];
        for f in users {
            std::fs::write(d.join(f), f).unwrap();
        }
        let ours = [
            ".meta.json.tmp-12",
            "checkpoints/LATEST",
            "checkpoints/.tmp-epoch-0002-7",
        ];
        for f in ours {
            std::fs::write(d.join(f), b"old").unwrap();
        }
        let run = prepare(&d, Existing::Replace).unwrap();
        std::fs::write(run.path().join(RUN_FILE), b"{}").unwrap();
        run.commit().unwrap();
        for f in users {
            assert_eq!(std::fs::read_to_string(d.join(f)).unwrap(), f);
        }
        for f in ours {
            assert!(!d.join(f).exists(), "{f}");
        }
        assert!(!d.join("checkpoints/epoch-0001").exists());
        assert!(!staging_path(&d).exists());
        std::fs::remove_dir_all(&d).unwrap();
        for name in [
            ".cardinal.lock",
            ".cardinal.lock.12.0.new",
            ".eval.json.tmp-3",
        ] {
            assert!(written_by_cardinal(name), "{name}");
        }
    }
}
