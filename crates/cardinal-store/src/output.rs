//! Writing a command's output file (`predict --out`, `eval --json`, `report --out`). A new or
//! regular file is replaced atomically, as every file cardinal writes; anything else at the
//! path is the user's choice of destination and is written in place: a device (`/dev/null`,
//! `/dev/full`, a terminal), a FIFO. Renaming over those would put a regular file where the
//! device was. A symbolic link is followed and its target treated by the same rules.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{write_atomic, Problem, Result, StoreError};

/// How many symbolic links are followed to a link's missing target (the system's own bound).
const MAX_LINKS: usize = 40;

/// Writes `bytes` as the output file `path`: replaced atomically where it is a regular file
/// or absent, written in place where it is a device or FIFO, refused where it is a folder;
/// a symbolic link is followed to its target, which the same rules apply to.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(StoreError::refused(path, Problem::OutputIsAFolder)),
        Ok(meta) if meta.is_file() => {
            // Through links, the file itself is replaced and the links kept.
            let real = std::fs::canonicalize(path).map_err(|e| StoreError::io(path, e))?;
            write_atomic(&real, bytes)
        }
        Ok(_) => write_in_place(path, bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_atomic(&link_target(path)?, bytes)
        }
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// A device or FIFO, written as it is: no temporary file, no rename, no truncation.
fn write_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| StoreError::io(path, e))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| StoreError::io(path, e))
}

/// Where a write to the missing `path` creates its file: `path` itself, or where the chain
/// of symbolic links at `path` ends.
fn link_target(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::read_link(&at) {
            Ok(target) => {
                at = match at.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                }
            }
            // Not a link (or nothing at all): this is where the file goes.
            Err(_) => return Ok(at),
        }
    }
    Err(StoreError::io(
        path,
        std::io::Error::other(format!("more than {MAX_LINKS} symbolic links")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cardinal-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn files_are_replaced_and_links_followed() {
        let d = scratch("files");
        let file = d.join("out.csv");
        write_output(&file, b"one").unwrap();
        write_output(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        // A link to a file: the file gets the output, the link stays a link.
        let link = d.join("link.csv");
        symlink(&file, &link).unwrap();
        write_output(&link, b"three").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&file).unwrap(), b"three");
        // A dangling link: its target is created.
        let dangling = d.join("dangling.csv");
        symlink("made.csv", &dangling).unwrap();
        write_output(&dangling, b"four").unwrap();
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_symlink());
        assert_eq!(std::fs::read(d.join("made.csv")).unwrap(), b"four");
        // A folder is refused, untouched.
        let e = write_output(&d, b"x").unwrap_err().to_string();
        assert!(e.contains("is a folder"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_and_fifos_are_written_in_place() {
        let d = scratch("devices");
        write_output(Path::new("/dev/null"), b"gone").unwrap();
        let null = std::fs::metadata("/dev/null").unwrap();
        assert!(!null.is_file());
        if Path::new("/dev/full").exists() {
            let e = write_output(Path::new("/dev/full"), b"x").unwrap_err();
            assert!(e.to_string().contains("No space left"), "{e}");
            assert!(!std::fs::metadata("/dev/full").unwrap().is_file());
        }
        // A link to a device: the device is written, the link stays.
        let link = d.join("null-link");
        symlink("/dev/null", &link).unwrap();
        write_output(&link, b"gone").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A FIFO (and a link to it): its reader gets the bytes, and it stays a FIFO.
        let fifo = d.join("fifo");
        if std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            let fifo_link = d.join("fifo-link");
            symlink(&fifo, &fifo_link).unwrap();
            for target in [&fifo, &fifo_link] {
                let f = fifo.clone();
                let reader = std::thread::spawn(move || std::fs::read(f).unwrap());
                write_output(target, b"through the fifo").unwrap();
                assert_eq!(reader.join().unwrap(), b"through the fifo");
                assert!(!std::fs::metadata(&fifo).unwrap().is_file());
            }
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
