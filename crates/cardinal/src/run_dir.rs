//! Run directories that never lose a model: an existing directory is only reused when the
//! caller says so, one process at a time writes into it (a lock file, with stale locks of
//! killed processes detected), and a replaced run's state is cleared while its model stays
//! until the new one is saved over it.

use std::path::{Path, PathBuf};

use crate::checkpoint::WEIGHTS_FILE;
use crate::error::{Error, Result};

/// The lock file of a run directory (it holds the owner's process id).
pub const LOCK_FILE: &str = ".cardinal.lock";

/// What [`prepare`] does with a directory that already holds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse it (the default: never overwrite a model without being asked).
    Refuse,
    /// Replace the run: its checkpoints, metrics and evaluation are removed now, its model
    /// only when the new one is saved over it.
    Replace,
    /// Continue it (`--resume`).
    Continue,
}

/// Held while a process writes into a run directory; removes the lock file when dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether a process with this id is running (Linux: `/proc/PID`; elsewhere every lock is
/// taken to be live, and a stale one must be removed by hand).
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

/// Takes the lock of the run directory `dir`, or says which process holds it.
pub fn lock(dir: &Path) -> Result<RunLock> {
    let path = dir.join(LOCK_FILE);
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                use std::io::Write;
                write!(f, "{}", std::process::id()).map_err(|e| Error::io(&path, e))?;
                return Ok(RunLock { path });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let owner = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| t.trim().parse::<u32>().ok());
                match owner {
                    Some(pid) if pid != std::process::id() && process_alive(pid) => {
                        return Err(Error::RunBusy {
                            path: dir.to_path_buf(),
                            pid,
                        })
                    }
                    // Stale (its process is gone, or unreadable): take it over.
                    _ => {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    Err(Error::RunBusy {
        path: dir.to_path_buf(),
        pid: 0,
    })
}

/// Whether `dir` holds anything but a lock file.
fn holds_anything(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries.flatten().any(|e| e.file_name() != LOCK_FILE)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// Creates (or reuses, as `existing` allows) the run directory `dir` and locks it. The files
/// that only describe a run (`files`, and `checkpoints/`) of a replaced run are removed; its
/// model files stay until the new model replaces them.
pub fn prepare(dir: &Path, existing: Existing, files: &[&str]) -> Result<RunLock> {
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
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lock = lock(dir)?;
    if occupied && existing == Existing::Replace {
        for name in files {
            let p = dir.join(name);
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&p, e)),
            }
        }
        let ckpt = dir.join("checkpoints");
        if ckpt.is_dir() {
            std::fs::remove_dir_all(&ckpt).map_err(|e| Error::io(&ckpt, e))?;
        }
    }
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cardinal-rundir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn an_existing_run_is_refused_unless_replaced_and_its_model_stays() {
        let d = tmp("existing");
        std::fs::create_dir_all(d.join("checkpoints/epoch-0001")).unwrap();
        std::fs::write(d.join(WEIGHTS_FILE), b"old weights").unwrap();
        std::fs::write(d.join("metrics.jsonl"), b"{}").unwrap();
        std::fs::write(d.join("notes.txt"), b"mine").unwrap();
        let err = prepare(&d, Existing::Refuse, &["metrics.jsonl"]).unwrap_err();
        assert!(err.to_string().contains("holds a model"), "{err}");
        let lock = prepare(&d, Existing::Replace, &["metrics.jsonl"]).unwrap();
        assert!(!d.join("metrics.jsonl").exists() && !d.join("checkpoints").exists());
        assert_eq!(std::fs::read(d.join(WEIGHTS_FILE)).unwrap(), b"old weights");
        assert_eq!(std::fs::read(d.join("notes.txt")).unwrap(), b"mine");
        drop(lock);
        assert!(!d.join(LOCK_FILE).exists());
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
}
