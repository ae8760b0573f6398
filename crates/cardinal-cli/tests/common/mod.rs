//! Helpers shared by the binary's end-to-end tests.

// Each test binary includes this module and uses only some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `cardinal` binary with `args` (standard error piped: not a terminal).
pub(crate) fn cardinal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .args(args)
        .output()
        .expect("runs")
}

/// A fresh, empty temporary folder for test `name` of this process, removed when the test
/// ends (pass or fail), so that test runs leave nothing behind.
pub(crate) fn tmpdir(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("cardinal-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A temporary folder, removed on drop; it reads as its `Path`.
pub(crate) struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Standard output and standard error together, for messages.
pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A path as a command-line argument (the tests' temporary paths are UTF-8).
pub(crate) fn arg(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// Writes the configuration `json` as `quick.json` in `dir` and returns its path.
pub(crate) fn write_config(dir: &Path, json: &str) -> PathBuf {
    let p = dir.join("quick.json");
    std::fs::write(&p, json).unwrap();
    p
}

/// The arguments of `cardinal train --config CFG --out OUT` followed by `extra`.
pub(crate) fn train_args<'a>(cfg: &'a Path, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["train", "--config", arg(cfg), "--out", arg(out)];
    args.extend_from_slice(extra);
    args
}

/// A fresh temporary folder for test `name` holding the configuration `json` (as
/// [`write_config`]), and the configuration's path.
pub(crate) fn dir_with_config(name: &str, json: &str) -> (Scratch, PathBuf) {
    let dir = tmpdir(name);
    let cfg = write_config(&dir, json);
    (dir, cfg)
}

/// A LIBSVM file of `n` rows whose labels follow the features.
pub(crate) fn write_svm(dir: &Path, name: &str, n: usize) -> PathBuf {
    let mut text = String::new();
    for r in 0..n {
        let k = r % 4;
        let labels: Vec<String> = (0..=k.min(2)).map(|l| l.to_string()).collect();
        let feats: Vec<String> = (1..=k + 1).map(|f| format!("{f}:1")).collect();
        text.push_str(&format!(
            "{} {} {}:0.5\n",
            labels.join(","),
            feats.join(" "),
            6 + r % 3
        ));
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}
