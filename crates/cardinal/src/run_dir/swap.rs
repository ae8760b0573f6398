//! Replacing a run as one step. The new run is written into a fresh sibling folder
//! (`.NAME.cardinal-replacement`); when it is whole, the two folders are exchanged in a single
//! `renameat2(RENAME_EXCHANGE)`, which is the commit. A crash before it leaves the old run
//! whole under its name; one after it, the new run. Readers never see a mix of the two.
//!
//! Files in the old folder that cardinal did not write (a user's notes) are moved into the new
//! one after the exchange, and only then is the old run removed.

use std::path::{Path, PathBuf};

use crate::checkpoint::{CONFIG_FILE, META_FILE, SAVE_JOURNAL, WEIGHTS_FILE};
use crate::error::{Error, Result};

use super::{DATA_FILE, EVAL_FILE, LOCK_FILE, METRICS_FILE, RUN_FILE};

/// The sibling folder a replacement of `target` is written into.
pub(super) fn staging_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    target.with_file_name(format!(".{name}.cardinal-replacement"))
}

/// Whether the folder entry `name` is one cardinal writes into a run folder.
fn written_by_cardinal(name: &str) -> bool {
    const FILES: [&str; 9] = [
        CONFIG_FILE,
        META_FILE,
        WEIGHTS_FILE,
        RUN_FILE,
        DATA_FILE,
        METRICS_FILE,
        EVAL_FILE,
        SAVE_JOURNAL,
        "checkpoints",
    ];
    // Staged writes are `.NAME.tmp-PID`; lock files `.cardinal.lock` and its staged copies.
    FILES.contains(&name)
        || name.starts_with(LOCK_FILE)
        || (name.starts_with('.') && name.contains(".tmp-"))
}

/// The entries of `dir` that cardinal did not write.
fn foreign_entries(dir: &Path) -> Result<Vec<std::ffi::OsString>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let name = entry.map_err(|e| Error::io(dir, e))?.file_name();
        if !name.to_str().is_some_and(written_by_cardinal) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// A fresh, empty staging folder for replacing `target`. What an interrupted replacement left
/// there is removed, unless it holds files cardinal did not write (then it is refused, named).
pub(super) fn fresh_staging(target: &Path) -> Result<PathBuf> {
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
                    message: format!(
                        "is what an interrupted replacement of {} left, and it holds files \
                         cardinal did not write ({}); move them out and remove the folder",
                        target.display(),
                        names.join(", ")
                    ),
                });
            }
            std::fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
        }
        Ok(_) => {
            return Err(Error::Checkpoint {
                path: staging,
                message: format!(
                    "is in the way of replacing {} (cardinal writes the new run there first); \
                     remove it",
                    target.display()
                ),
            })
        }
    }
    std::fs::create_dir(&staging).map_err(|e| Error::io(&staging, e))?;
    Ok(staging)
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
    let name = b.file_name().map(|n| n.to_string_lossy().into_owned());
    let aside = b.with_file_name(format!(".{}.cardinal-previous", name.unwrap_or_default()));
    std::fs::rename(b, &aside)?;
    if let Err(e) = std::fs::rename(a, b) {
        let _ = std::fs::rename(&aside, b);
        return Err(e);
    }
    std::fs::rename(&aside, a)
}

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
    // From here on the new run is in place: what follows only tidies up.
    match foreign_entries(staging) {
        Ok(foreign) => {
            for name in foreign {
                let (from, to) = (staging.join(&name), target.join(&name));
                let moved = match to.exists() {
                    true => Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists)),
                    false => std::fs::rename(&from, &to),
                };
                if let Err(e) = moved {
                    tracing::warn!(
                        "could not move {} into {}: {e}",
                        from.display(),
                        target.display()
                    );
                    return Ok(());
                }
            }
        }
        Err(e) => {
            tracing::warn!("the replaced run is left in {}: {e}", staging.display());
            return Ok(());
        }
    }
    if let Err(e) = std::fs::remove_dir_all(staging) {
        tracing::warn!("the replaced run is left in {}: {e}", staging.display());
    }
    Ok(())
}
