//! The whiteboard rule: the front ends (the CLI, the Python binding, the report) reach the
//! library through `cardinal::engine` and the data crate, never through its internals
//! (`train`, `checkpoint`, `batch`, `pipeline`).

use std::path::Path;

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn front_ends_import_no_internals() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for front in ["cardinal-cli/src", "cardinal-py/src", "cardinal-report/src"] {
        sources(&crates.join(front), &mut files);
    }
    assert!(files.len() > 10, "{} files", files.len());
    let internals = ["train", "checkpoint", "batch", "pipeline"];
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            for m in internals {
                if line.contains(&format!("cardinal::{m}::"))
                    || line.contains(&format!("cardinal::{m};"))
                    || line.contains(&format!("cardinal::{{{m}"))
                {
                    found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "internals imported:\n{}",
        found.join("\n")
    );
}
