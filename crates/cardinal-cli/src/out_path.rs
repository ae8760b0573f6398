//! Where a command may write: never into a model folder it reads, nor onto one of its files
//! (`predict --out m/model.safetensors` would destroy the model it is reading).

use std::path::{Component, Path, PathBuf};

use anyhow::bail;

/// `path` made absolute with every symbolic link resolved, also where its last parts do not
/// exist yet (they are appended to the longest existing ancestor, resolved).
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut head = abs.as_path();
    loop {
        if let Ok(p) = std::fs::canonicalize(head) {
            let mut out = p;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (head.parent(), head.components().next_back()) {
            (Some(parent), Some(Component::Normal(name))) => {
                rest.push(name.to_os_string());
                head = parent;
            }
            _ => return abs,
        }
    }
}

/// The (device, inode) of every file in `dir` and in its folders, a few levels deep.
#[cfg(unix)]
fn file_ids(dir: &Path, depth: usize, ids: &mut Vec<(u64, u64)>) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten().take(10_000) {
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if m.is_dir() && depth > 0 {
            file_ids(&e.path(), depth - 1, ids);
        } else if m.is_file() {
            ids.push((m.dev(), m.ino()));
        }
    }
}

/// Refuses `out` (given as `flag`) when it lies inside the model folder `model`, is that
/// folder, or is (a link to) one of its files.
pub(crate) fn refuse_inside_model(out: &Path, flag: &str, model: &Path) -> anyhow::Result<()> {
    let Ok(model_real) = std::fs::canonicalize(model) else {
        // No such folder: reading it fails with its own message.
        return Ok(());
    };
    let out_real = resolved(out);
    let inside = out_real.starts_with(&model_real);
    #[cfg(unix)]
    let inside = inside || {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(out) {
            Ok(m) if m.is_file() => {
                let mut ids = Vec::new();
                file_ids(&model_real, 3, &mut ids);
                ids.contains(&(m.dev(), m.ino()))
            }
            _ => false,
        }
    };
    if inside {
        bail!(
            "{flag} {}: it would write into the model folder {} that this command reads; \
             choose a path outside it",
            out.display(),
            model.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_the_model_or_linked_to_its_files_are_refused() {
        let tmp = std::env::temp_dir().join(format!("cardinal-outpath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let model = tmp.join("m");
        std::fs::create_dir_all(model.join("checkpoints")).unwrap();
        std::fs::write(model.join("meta.json"), b"{}").unwrap();
        let refused = |p: &Path| refuse_inside_model(p, "--out", &model).is_err();
        assert!(refused(&model.join("meta.json")));
        assert!(refused(&model.join("new.jsonl")));
        assert!(refused(&model));
        assert!(refused(&model.join("checkpoints/../x/y.json")));
        assert!(refused(&tmp.join("m/./z")));
        let link = tmp.join("link");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&model, &link).unwrap();
            assert!(refused(&link.join("model.safetensors")));
            std::fs::hard_link(model.join("meta.json"), tmp.join("hard")).unwrap();
            assert!(refused(&tmp.join("hard")));
        }
        assert!(!refused(&tmp.join("out.jsonl")));
        assert!(!refused(&tmp.join("m2/out.jsonl")));
        let e = refuse_inside_model(&model.join("meta.json"), "--json", &model)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--json ") && e.contains("model folder"),
            "{e}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
