//! Files written whole: under a temporary name beside the destination, synced, then renamed
//! into place.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Result, StoreError};

/// Writes `bytes` to `path` atomically (temp file in the same directory, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |tmp| std::fs::File::create(tmp)?.write_all(bytes))
}

/// Writes `path` atomically: `write` creates and fills a temporary file in the same
/// directory, which is then synced and renamed over `path`.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Result<()> {
    let staged = stage(path, write)?;
    staged.commit()
}

/// A file written and synced under a temporary name beside its destination, not yet renamed
/// into place (dropped uncommitted, the temporary file is removed).
#[derive(Debug)]
pub struct Staged {
    pub(crate) tmp: PathBuf,
    pub(crate) path: PathBuf,
    committed: bool,
}

/// Writes `path`'s content under a temporary name in the same directory and syncs it.
pub fn stage(path: &Path, write: impl FnOnce(&Path) -> std::io::Result<()>) -> Result<Staged> {
    let dir = parent_dir(path);
    let tmp = crate::hidden_sibling(
        &dir.join(path.file_name().unwrap_or("file".as_ref())),
        &format!(".tmp-{}", std::process::id()),
    );
    let staged = Staged {
        tmp,
        path: path.to_path_buf(),
        committed: false,
    };
    let result = (|| -> std::io::Result<()> {
        write(&staged.tmp)?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&staged.tmp)?
            .sync_all()
    })();
    result.map_err(|e| StoreError::io(path, e))?;
    Ok(staged)
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

impl Staged {
    /// Renames the file into place and makes the rename durable.
    pub fn commit(mut self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.path).map_err(|e| StoreError::io(&self.path, e))?;
        self.committed = true;
        if let Ok(d) = std::fs::File::open(parent_dir(&self.path)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
