//! Reading a model folder's files. A model folder is untrusted input: a file in it is read
//! only when it is a plain file of the folder (not a symbolic link, which may lead to a FIFO
//! that never ends, `/dev/zero`, or someone else's file whose content an error would echo),
//! and only up to a size limit.

use std::io::Read;
use std::path::Path;

use super::ckpt_err;
use crate::error::{Error, Result};

/// The largest JSON file (`meta.json`, `config.json`, `run.json`, progress records) read from
/// a model folder: 256 MiB, far above the label names of the largest XMC datasets.
pub(crate) const MAX_JSON_BYTES: u64 = 256 << 20;

/// The largest tensor file (`*.safetensors`) read from a model folder: 64 GiB.
pub(crate) const MAX_TENSOR_BYTES: u64 = 64 << 30;

/// The bytes of the model folder file `path`, refused (naming it, never quoting it) unless it
/// is a plain file within the size limit of its kind (`MAX_TENSOR_BYTES` for
/// `.safetensors`, `MAX_JSON_BYTES` for the rest). A missing file is an
/// [`Error::Io`] of kind `NotFound`.
pub(crate) fn read_model_file(path: &Path) -> Result<Vec<u8>> {
    let limit = match path.extension().and_then(|e| e.to_str()) {
        Some("safetensors") => MAX_TENSOR_BYTES,
        _ => MAX_JSON_BYTES,
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(ckpt_err(
            path,
            "is a symbolic link: a model folder's files are read only when they are plain files \
             in it",
        ));
    }
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a folder"
        } else {
            "a FIFO, socket or device"
        };
        return Err(ckpt_err(
            path,
            format!("is {what}, not a plain file: a model folder's files are read only when they are plain files"),
        ));
    }
    let too_big = |size: u64| {
        ckpt_err(
            path,
            format!("is {size} bytes or more: a model folder's file may have at most {limit}"),
        )
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow after it was measured: read at most one byte beyond the limit.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(limit + 1));
    }
    Ok(bytes)
}

/// The bytes of the model folder file `path`, or `None` where it does not exist; refused
/// (naming it, never quoting it) unless it is a plain file within the size limit of its kind
/// (`.safetensors` or JSON).
pub fn read_model_file_if_any(path: &Path) -> Result<Option<Vec<u8>>> {
    match read_model_file(path) {
        Ok(b) => Ok(Some(b)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// What is wrong with a model folder's JSON file, in words that never quote it (the file may
/// be someone else's, and its keys and values are not echoed): which kind of problem, and
/// where. A missing field is named, since the name is this library's.
pub(crate) fn json_problem(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let text = e.to_string();
    let what = match e.classify() {
        Category::Io => "it cannot be read",
        Category::Syntax => "it is not valid JSON",
        Category::Eof => "it ends early",
        Category::Data if text.starts_with("missing field") => {
            return text;
        }
        Category::Data => "a field is not one this version writes, or has the wrong type or value",
    };
    format!("{what} (line {}, column {})", e.line(), e.column())
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
}
