//! The lock of a run directory: one process at a time writes into it. The lock file holds its
//! owner's process id and its owner's `flock`; a lock whose `flock` is free is stale (its
//! process is gone, whatever process now has its id) and is taken over.

use std::path::{Path, PathBuf};

use crate::{Problem, Result, StoreError};

/// The lock file of a run directory (it holds the owner's process id).
pub const LOCK_FILE: &str = ".cardinal.lock";

/// Held while a process writes into a run directory; removes the lock file when dropped.
///
/// The lock file is created whole: the owner's process id is written to a private file, which
/// is locked (`flock`) and then hard-linked into place, so a lock file is never seen without
/// its owner. The owner's `flock` lasts as long as the process: a lock whose `flock` is free
/// belongs to a process that is gone, and is taken over.
#[derive(Debug)]
pub struct RunLock {
    /// The lock file (swapped with the staging folder's when a replacement is committed).
    path: PathBuf,
    /// The lock file, held locked (and, after a take-over, the stale file replaced, held so
    /// that no other process can lock it and take over again).
    _held: Vec<std::fs::File>,
}

impl RunLock {
    /// Follows the lock file to its new name after its folder was renamed (a replaced run
    /// swapped in: the lock file moved with its folder), so that dropping the lock removes
    /// the file where it now is.
    pub fn moved_to(&mut self, path: PathBuf) {
        self.path = path;
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed before the files (and their locks) are closed: a process that opened this
        // file meanwhile sees, once it gets the lock, that it is no longer the lock file.
        let _ = std::fs::remove_file(&self.path);
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
        .map_err(|e| StoreError::io(&path, e))?;
    let mut staged = Staged { path, file: None };
    file.write_all(pid.to_string().as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| StoreError::io(&staged.path, e))?;
    file.try_lock()
        .map_err(|e| StoreError::io(&staged.path, e.into()))?;
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
        Err(e) => return Err(StoreError::io(path, e)),
    };
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a folder"
        } else {
            "not a plain file"
        };
        return Err(StoreError::refused(
            path,
            Problem::NotALockFile {
                what,
                dir: dir.to_path_buf(),
            },
        ));
    }
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(InTheWay::Changed),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let owner = std::io::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok());
    match file.try_lock() {
        Err(TryLockError::WouldBlock) => return Ok(InTheWay::Busy(owner.unwrap_or(0))),
        Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        Ok(()) => {}
    }
    // Its lock is free. Still the lock file (not removed or replaced meanwhile)?
    if !same_file(&file, path) {
        return Ok(InTheWay::Changed);
    }
    match owner {
        // Every lock file this version writes names its owner: one that does not is someone
        // else's, or a version's that wrote the id after creating the file. Never stale.
        None => Err(StoreError::refused(
            path,
            Problem::LockOfNoProcess {
                dir: dir.to_path_buf(),
            },
        )),
        // The `flock` is the lock: a process id alone proves nothing (a zombie's, or one
        // reused by an unrelated process, would keep the folder "in use" for ever).
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
            Err(e) => return Err(StoreError::io(&path, e)),
        }
        match inspect(dir, &path)? {
            InTheWay::Busy(pid) => {
                return Err(StoreError::RunBusy {
                    path: dir.to_path_buf(),
                    pid,
                })
            }
            InTheWay::Changed => {}
            InTheWay::Stale(stale) => {
                // Holding the stale file's lock, no other process can take it over; renaming
                // the staged file over it replaces it in one step.
                std::fs::rename(&staged.path, &path).map_err(|e| StoreError::io(&path, e))?;
                let held = vec![staged.file.take().expect("staged"), stale];
                return Ok(RunLock { path, _held: held });
            }
        }
        owner = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(owner);
    }
    Err(StoreError::RunBusy {
        path: dir.to_path_buf(),
        pid: owner,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("cardinal-runlock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// A lock whose `flock` is held refuses; one whose `flock` is free is stale, whatever
    /// process its id names now (pid 1 always runs: a reused id, or a zombie's).
    #[test]
    fn a_live_lock_refuses_and_a_stale_one_is_taken_over() {
        let d = tmp("lock");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(LOCK_FILE), b"1").unwrap();
        let holder = std::fs::File::open(d.join(LOCK_FILE)).unwrap();
        holder.lock().unwrap();
        let err = lock(&d).unwrap_err().to_string();
        assert!(err.contains("process 1"), "{err}");
        drop(holder);
        for stale in [1, u32::MAX] {
            std::fs::write(d.join(LOCK_FILE), stale.to_string()).unwrap();
            let held = lock(&d).unwrap();
            assert_eq!(
                std::fs::read_to_string(d.join(LOCK_FILE)).unwrap(),
                std::process::id().to_string()
            );
            drop(held);
        }
        std::fs::remove_dir_all(&d).unwrap();
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
