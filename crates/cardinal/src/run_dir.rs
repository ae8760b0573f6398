//! Run directories that never lose a model: an existing directory is only reused when the
//! caller says so, one process at a time writes into it (a lock file, with stale locks of
//! killed processes detected), and a replaced run stays whole until the new one is whole:
//! the new run is written beside it and swapped in with one rename ([`RunDir::commit`]).

use std::path::{Path, PathBuf};

use crate::checkpoint::{META_FILE, WEIGHTS_FILE};
use crate::engine::RUN_FILE;
use crate::error::{Error, Result};

mod swap;

/// The lock file of a run directory (it holds the owner's process id).
pub const LOCK_FILE: &str = ".cardinal.lock";

/// What [`prepare`] does with a directory that already holds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse it (the default: never overwrite a model without being asked).
    Refuse,
    /// Replace the run: the new run is written into a fresh sibling folder and swapped in
    /// whole by [`RunDir::commit`]; until then the old run stays as it was.
    Replace,
    /// Continue it (`--resume`).
    Continue,
}

/// Held while a process writes into a run directory; removes the lock file when dropped.
///
/// The lock file is created whole: the owner's process id is written to a private file, which
/// is locked (`flock`) and then hard-linked into place, so a lock file is never seen without
/// its owner. The owner's `flock` lasts as long as the process: a lock whose `flock` is free
/// belongs to a process that is gone, and is taken over.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    /// The lock file, held locked (and, after a take-over, the stale file replaced, held so
    /// that no other process can lock it and take over again).
    _held: Vec<std::fs::File>,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed before the files (and their locks) are closed: a process that opened this
        // file meanwhile sees, once it gets the lock, that it is no longer the lock file.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether a process with this id is running (Linux: `/proc/PID`; elsewhere every process is
/// taken to be running).
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

/// A private file holding this process's id, locked, ready to be linked into place as the lock
/// file (removed when dropped).
struct Staged {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes this process's id to a fresh private file beside the lock file, and locks it.
fn stage(dir: &Path) -> Result<Staged> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let path = dir.join(format!(
        "{LOCK_FILE}.{pid}.{}.new",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let mut staged = Staged { path, file: None };
    file.write_all(pid.to_string().as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(&staged.path, e))?;
    file.try_lock()
        .map_err(|e| Error::io(&staged.path, e.into()))?;
    staged.file = Some(file);
    Ok(staged)
}

/// What the lock file in the way says.
enum InTheWay {
    /// A live run holds it.
    Busy(u32),
    /// Its process is gone: the open, locked stale file, to be replaced.
    Stale(std::fs::File),
    /// It changed while it was looked at: look again.
    Changed,
}

/// Looks at the existing lock file `path` of `dir`.
fn inspect(dir: &Path, path: &Path) -> Result<InTheWay> {
    use std::fs::TryLockError;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(InTheWay::Changed),
        Err(e) => return Err(Error::io(path, e)),
    };
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a folder"
        } else {
            "not a plain file"
        };
        return Err(Error::Checkpoint {
            path: path.to_path_buf(),
            message: format!(
                "is {what}, not cardinal's lock file; remove it if no run is writing into {}",
                dir.display()
            ),
        });
    }
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(InTheWay::Changed),
        Err(e) => return Err(Error::io(path, e)),
    };
    let owner = std::io::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok());
    match file.try_lock() {
        Err(TryLockError::WouldBlock) => return Ok(InTheWay::Busy(owner.unwrap_or(0))),
        Err(TryLockError::Error(e)) => return Err(Error::io(path, e)),
        Ok(()) => {}
    }
    // Its lock is free. Still the lock file (not removed or replaced meanwhile)?
    if !same_file(&file, path) {
        return Ok(InTheWay::Changed);
    }
    match owner {
        // Every lock file this version writes names its owner: one that does not is someone
        // else's, or a version's that wrote the id after creating the file. Never stale.
        None => Err(Error::Checkpoint {
            path: path.to_path_buf(),
            message: format!(
                "names no process; remove it if no run is writing into {}",
                dir.display()
            ),
        }),
        // A live process that holds no `flock`: a run of an earlier version.
        Some(pid) if pid != std::process::id() && process_alive(pid) => Ok(InTheWay::Busy(pid)),
        Some(_) => Ok(InTheWay::Stale(file)),
    }
}

/// Whether `path` is the open `file` (same device and inode).
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.is_file()
    }
}

/// Takes the lock of the run directory `dir`, or says which process holds it.
pub fn lock(dir: &Path) -> Result<RunLock> {
    let path = dir.join(LOCK_FILE);
    let mut staged = stage(dir)?;
    let mut owner = 0;
    for _ in 0..8 {
        match std::fs::hard_link(&staged.path, &path) {
            Ok(()) => {
                let held = vec![staged.file.take().expect("staged")];
                return Ok(RunLock { path, _held: held });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
        match inspect(dir, &path)? {
            InTheWay::Busy(pid) => {
                return Err(Error::RunBusy {
                    path: dir.to_path_buf(),
                    pid,
                })
            }
            InTheWay::Changed => {}
            InTheWay::Stale(stale) => {
                // Holding the stale file's lock, no other process can take it over; renaming
                // the staged file over it replaces it in one step.
                std::fs::rename(&staged.path, &path).map_err(|e| Error::io(&path, e))?;
                let held = vec![staged.file.take().expect("staged"), stale];
                return Ok(RunLock { path, _held: held });
            }
        }
        owner = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(owner);
    }
    Err(Error::RunBusy {
        path: dir.to_path_buf(),
        pid: owner,
    })
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
pub struct RunDir {
    target: PathBuf,
    lock: RunLock,
    /// When replacing a run: the sibling folder the new run is written into, and its lock.
    staging: Option<(PathBuf, RunLock)>,
}

impl RunDir {
    /// Where the run's files are written: the run directory itself, or, while an existing run
    /// is being replaced, the sibling folder that becomes it at [`RunDir::commit`].
    pub fn path(&self) -> &Path {
        match &self.staging {
            Some((staging, _)) => staging,
            None => &self.target,
        }
    }

    /// Makes what was written the run: a replacement is swapped in with one rename (the old
    /// run is then removed, keeping any files cardinal did not write); otherwise nothing is
    /// left to do. Dropped without it, a replacement is abandoned and the old run stays whole.
    pub fn commit(mut self) -> Result<()> {
        if let Some((staging, mut staging_lock)) = self.staging.take() {
            let lock = &mut self.lock;
            swap::swap_in(&staging, &self.target, &mut || {
                // The two folders changed names: so did their lock files.
                std::mem::swap(&mut lock.path, &mut staging_lock.path);
            })?;
        }
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
    }
}

/// Creates (or reuses, as `existing` allows) the run directory `dir` and locks it. Replacing
/// an existing run writes the new one into a fresh sibling folder (see [`RunDir`]), so that
/// the old run stays whole until [`RunDir::commit`].
pub fn prepare(dir: &Path, existing: Existing) -> Result<RunDir> {
    // Looked at before locking (a run in the way is refused without touching its folder),
    // and again once locked: another run may have finished there meanwhile.
    refuse_unless_allowed(dir, existing)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lock = lock(dir)?;
    let occupied = refuse_unless_allowed(dir, existing)?;
    if occupied && existing == Existing::Replace {
        if let Some(why) = not_a_run(dir) {
            return Err(Error::NotARun {
                path: dir.to_path_buf(),
                why,
            });
        }
        // The folder itself, where `dir` is a link to it: that is what gets replaced.
        let real = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
        let path = swap::fresh_staging(&real)?;
        let staging_lock = self::lock(&path)?;
        return Ok(RunDir {
            target: real,
            lock,
            staging: Some((path, staging_lock)),
        });
    }
    Ok(RunDir {
        target: dir.to_path_buf(),
        lock,
        staging: None,
    })
}

/// Why the occupied folder `dir` is not a run that may be replaced, if it is not: a
/// filesystem root or the home folder never is; a run holds `run.json` or `meta.json` as this
/// library writes them.
fn not_a_run(dir: &Path) -> Option<String> {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if real.parent().is_none() {
        return Some("is a filesystem root".into());
    }
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    if home.is_some_and(|h| h == real) {
        return Some("is the home folder".into());
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
        .is_some_and(|v| serde_json::from_value::<crate::engine::DataSpec>(v).is_ok());
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
    let mut held = names.join(", ");
    if more > 0 {
        held.push_str(&format!(" and {more} more"));
    }
    Some(format!(
        "is not a cardinal run (no {RUN_FILE} or {META_FILE} written by cardinal); it holds {held}"
    ))
}

/// Whether `dir` holds anything, refusing what `existing` does not allow.
fn refuse_unless_allowed(dir: &Path, existing: Existing) -> Result<bool> {
    let occupied = holds_anything(dir)?;
    if occupied && existing == Existing::Refuse {
        let what = if dir.join(WEIGHTS_FILE).exists() {
            "holds a model"
        } else {
            "is not empty"
        };
        return Err(Error::RunExists {
            path: dir.to_path_buf(),
            what: what.into(),
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
        assert!(err.to_string().contains("holds a model"), "{err}");
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
        assert_eq!(
            files(&d),
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

    #[test]
    fn a_live_lock_refuses_and_a_stale_one_is_taken_over() {
        let d = tmp("lock");
        std::fs::create_dir_all(&d).unwrap();
        // pid 1 is always alive on Linux.
        std::fs::write(d.join(LOCK_FILE), b"1").unwrap();
        if cfg!(target_os = "linux") {
            let err = lock(&d).unwrap_err().to_string();
            assert!(err.contains("process 1"), "{err}");
            // A process id that cannot exist: the lock is stale.
            std::fs::write(d.join(LOCK_FILE), format!("{}", u32::MAX)).unwrap();
            let held = lock(&d).unwrap();
            assert_eq!(
                std::fs::read_to_string(d.join(LOCK_FILE)).unwrap(),
                std::process::id().to_string()
            );
            drop(held);
        }
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
        assert!(!d.join("metrics.jsonl").exists() && !d.join("checkpoints").exists());
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(
            not_a_run(Path::new("/")).as_deref(),
            Some("is a filesystem root")
        );
        if let Some(home) = std::env::var_os("HOME").filter(|h| Path::new(h).is_dir()) {
            assert_eq!(
                not_a_run(Path::new(&home)).as_deref(),
                Some("is the home folder")
            );
        }
    }

    /// A lock file that names no process yet (what a racing run of an earlier version left
    /// between creating the file and writing its id) is never taken for stale; one that is a
    /// folder is named as such (not "process 0").
    #[test]
    fn a_lock_without_an_owner_or_a_folder_is_never_taken_over() {
        let d = tmp("ownerless");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(LOCK_FILE), b"").unwrap();
        let err = lock(&d).unwrap_err().to_string();
        assert!(err.contains("names no process"), "{err}");
        assert!(std::fs::read(d.join(LOCK_FILE)).unwrap().is_empty());
        std::fs::remove_file(d.join(LOCK_FILE)).unwrap();
        std::fs::create_dir(d.join(LOCK_FILE)).unwrap();
        let err = lock(&d).unwrap_err().to_string();
        assert!(
            err.contains("is a folder") && !err.contains("process 0"),
            "{err}"
        );
        // The staged files are gone either way.
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A run whose lock file has just appeared holds it already: the lock is linked into
    /// place with its owner's id and `flock`, so a second run that finds it is refused.
    #[test]
    fn a_lock_that_just_appeared_is_held_by_its_owner() {
        let d = tmp("appeared");
        std::fs::create_dir_all(&d).unwrap();
        // The first run's steps, one at a time: staged, not yet in place...
        let mut first = stage(&d).unwrap();
        let second = lock(&d).unwrap();
        // ...then linked: too late, and the second run's lock is live.
        assert!(std::fs::hard_link(&first.path, d.join(LOCK_FILE)).is_err());
        match inspect(&d, &d.join(LOCK_FILE)).unwrap() {
            InTheWay::Busy(pid) => assert_eq!(pid, std::process::id()),
            _ => panic!("the second run's fresh lock was not seen as held"),
        }
        drop(first.file.take());
        drop(first);
        drop(second);
        assert!(lock(&d).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Eight runs race for one folder, fresh or with a stale lock in it: exactly one wins
    /// each time.
    #[test]
    fn racing_runs_get_the_lock_one_at_a_time() {
        let d = tmp("race");
        std::fs::create_dir_all(&d).unwrap();
        for round in 0..40 {
            if round % 2 == 1 && cfg!(target_os = "linux") {
                std::fs::write(d.join(LOCK_FILE), format!("{}", u32::MAX)).unwrap();
            }
            let start = std::sync::Barrier::new(8);
            let done = std::sync::Barrier::new(8);
            let winners = std::sync::atomic::AtomicUsize::new(0);
            std::thread::scope(|s| {
                for _ in 0..8 {
                    s.spawn(|| {
                        start.wait();
                        let held = lock(&d);
                        if held.is_ok() {
                            winners.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        done.wait();
                    });
                }
            });
            assert_eq!(winners.into_inner(), 1, "round {round}");
            assert!(!d.join(LOCK_FILE).exists(), "round {round}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
