//! Reading a model folder's files. A model folder is untrusted input: a file in it is read
//! only when it is a plain file of the folder (not a symbolic link, which may lead to a FIFO
//! that never ends, `/dev/zero`, or someone else's file whose content an error would echo),
//! and only up to a size limit.

use std::io::Read;
use std::path::Path;

use crate::{JsonProblem, JsonProblemKind, Problem, Result, StoreError, TensorHeader};

/// The largest JSON file (`meta.json`, `config.json`, `run.json`, progress records) read from
/// a model folder: 256 MiB, far above the label names of the largest XMC datasets.
pub const MAX_JSON_BYTES: u64 = 256 << 20;

/// The largest tensor file (`*.safetensors`) read from a model folder: 64 GiB.
pub const MAX_TENSOR_BYTES: u64 = 64 << 30;

/// The bytes of the model folder file `path`, refused (naming it, never quoting it) unless it
/// is a plain file within the size limit of its kind (`MAX_TENSOR_BYTES` for
/// `.safetensors`, `MAX_JSON_BYTES` for the rest). A missing file is an
/// [`StoreError::Io`] of kind `NotFound`.
pub fn read_model_file(path: &Path) -> Result<Vec<u8>> {
    let limit = limit_of(path);
    let meta = std::fs::symlink_metadata(path).map_err(|e| StoreError::io(path, e))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(not_plain(path, kind.is_symlink(), kind.is_dir()));
    }
    let file = std::fs::File::open(path).map_err(|e| StoreError::io(path, e))?;
    read_opened(file, meta.len(), path, limit)
}

/// Why the model folder entry `path`, not a plain file, is not read.
pub fn not_plain(path: &Path, symlink: bool, dir: bool) -> StoreError {
    if symlink {
        return StoreError::refused(path, Problem::SymbolicLink);
    }
    let what = if dir {
        "a folder"
    } else {
        "a FIFO, socket or device"
    };
    StoreError::refused(path, Problem::NotPlain { what })
}

/// The size limit of the model folder file `path`, by its kind.
pub fn limit_of(path: &Path) -> u64 {
    match path.extension().and_then(|e| e.to_str()) {
        Some("safetensors") => MAX_TENSOR_BYTES,
        _ => MAX_JSON_BYTES,
    }
}

/// The bytes of the plain file `file` (at `path`, measured at `size` bytes), refused beyond
/// `limit`. A tensor file's header is read and checked first: a file whose size disagrees
/// with what its header describes (a sparse file of gigabytes behind a small header) is
/// refused before the rest is read.
pub fn read_opened(file: std::fs::File, size: u64, path: &Path, limit: u64) -> Result<Vec<u8>> {
    let too_big = |size: u64| StoreError::refused(path, Problem::TooLarge { size, limit });
    if size > limit {
        return Err(too_big(size));
    }
    let mut file = file;
    let mut bytes = Vec::new();
    if limit == MAX_TENSOR_BYTES {
        bytes = tensor_header(&mut file, size, path)?;
    }
    bytes.reserve(size.saturating_sub(bytes.len() as u64) as usize);
    // The file may grow after it was measured: read at most one byte beyond the limit.
    file.take(limit + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(limit + 1));
    }
    Ok(bytes)
}

/// The largest safetensors header read (the format's own limit is 100 MB).
const MAX_TENSOR_HEADER: u64 = 100_000_000;

/// The first bytes of the safetensors file `file` of `size` bytes: its header's length and
/// the header, which must describe a file of exactly `size` bytes.
fn tensor_header(file: &mut std::fs::File, size: u64, path: &Path) -> Result<Vec<u8>> {
    let bad = |why: TensorHeader| StoreError::refused(path, Problem::NotSafetensors(why));
    let mut len = [0u8; 8];
    if size < 8 {
        return Err(bad(TensorHeader::Short { size }));
    }
    file.read_exact(&mut len)
        .map_err(|e| StoreError::io(path, e))?;
    let n = u64::from_le_bytes(len);
    if n > MAX_TENSOR_HEADER || n > size - 8 {
        return Err(bad(TensorHeader::Length {
            claimed: n,
            size,
            max: MAX_TENSOR_HEADER,
        }));
    }
    let mut bytes = len.to_vec();
    (&mut *file)
        .take(n)
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::io(path, e))?;
    if bytes.len() as u64 != 8 + n {
        return Err(bad(TensorHeader::EndsInHeader));
    }
    let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes[8..])
        .map_err(|e| bad(TensorHeader::NotAnObject(json_problem(&e))))?;
    let mut data_end = 0u64;
    for (name, info) in &header {
        if name == "__metadata__" {
            continue;
        }
        let end = info
            .get("data_offsets")
            .and_then(|o| o.get(1))
            .and_then(|e| e.as_u64())
            .ok_or_else(|| {
                bad(TensorHeader::NoOffsets {
                    tensor: name.clone(),
                })
            })?;
        data_end = data_end.max(end);
    }
    let expected = (8 + n).checked_add(data_end);
    if expected != Some(size) {
        return Err(bad(TensorHeader::Size {
            size,
            described: expected,
        }));
    }
    Ok(bytes)
}

/// The bytes of the model folder file `path`, or `None` where it does not exist; refused
/// (naming it, never quoting it) unless it is a plain file within the size limit of its kind
/// (`.safetensors` or JSON).
pub fn read_model_file_if_any(path: &Path) -> Result<Option<Vec<u8>>> {
    match read_model_file(path) {
        Ok(b) => Ok(Some(b)),
        Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// What is wrong with a model folder's JSON file, in words that never quote it (the file may
/// be someone else's, and its keys and values are not echoed): which kind of problem, and
/// where. serde_json's words are never read: they quote the file.
pub fn json_problem(e: &serde_json::Error) -> JsonProblem {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Io => JsonProblemKind::Unreadable,
        Category::Syntax => JsonProblemKind::Syntax,
        Category::Eof => JsonProblemKind::Eof,
        Category::Data => JsonProblemKind::Data,
    };
    JsonProblem {
        what,
        line: e.line(),
        column: e.column(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn only_plain_files_within_the_limit_are_read() {
        let d = std::env::temp_dir().join(format!("cardinal-read-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let outside = d.join("secret.json");
        std::fs::write(&outside, br#"{"secret_key": 1}"#).unwrap();
        std::fs::write(d.join("meta.json"), b"{}").unwrap();
        assert_eq!(read_model_file(&d.join("meta.json")).unwrap(), b"{}");
        assert!(read_model_file_if_any(&d.join("none.json"))
            .unwrap()
            .is_none());
        for (name, target) in [
            ("zero.json", Path::new("/dev/zero")),
            ("foreign.json", outside.as_path()),
        ] {
            std::os::unix::fs::symlink(target, d.join(name)).unwrap();
            let e = read_model_file(&d.join(name)).unwrap_err().to_string();
            assert!(
                e.contains("is a symbolic link") && !e.contains("secret"),
                "{e}"
            );
        }
        std::fs::create_dir(d.join("dir.json")).unwrap();
        let e = read_model_file(&d.join("dir.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a folder"), "{e}");
        let fifo = d.join("fifo.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = read_model_file(&fifo).unwrap_err().to_string();
            assert!(e.contains("FIFO"), "{e}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A weights file whose size disagrees with its header is refused from the header alone:
    /// a sparse file of gigabytes is not read.
    #[test]
    fn weights_are_checked_against_their_header_first() {
        let d = std::env::temp_dir().join(format!("cardinal-header-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("model.safetensors");
        let header = br#"{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header);
        file.extend_from_slice(&[0u8; 8]);
        std::fs::write(&p, &file).unwrap();
        assert_eq!(read_model_file(&p).unwrap(), file);
        let sparse = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        sparse.set_len(3 << 30).unwrap();
        let start = std::time::Instant::now();
        let e = read_model_file(&p).unwrap_err().to_string();
        assert!(e.contains("its header describes"), "{e}");
        assert!(start.elapsed().as_secs() < 2, "read the sparse file");
        sparse.set_len(file.len() as u64 - 1).unwrap();
        let e = read_model_file(&p).unwrap_err().to_string();
        assert!(e.contains("its header describes"), "{e}");
        std::fs::write(&p, u64::MAX.to_le_bytes()).unwrap();
        let e = read_model_file(&p).unwrap_err().to_string();
        assert!(e.contains("header claims"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
