//! Replacing a run with `--force` is all or nothing: a replacement that fails, or is killed at
//! any rename, sync or removal, leaves the run folder either the old run, whole, or the new
//! one, whole. Never the old weights under the new run's description.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{arg, tmpdir, Scratch};

/// A quick model (a few hundred milliseconds on the small file).
const QUICK: &str = r#"{"model": {"hidden": 8, "card_hidden": 4, "energy_hidden": 4}, "inference": {"steps": 2}, "train": {"epochs": 2, "full_epochs": 1}}"#;

/// The same, diverging at once.
const DIVERGING: &str = r#"{"model": {"hidden": 8, "card_hidden": 4, "energy_hidden": 4}, "inference": {"steps": 2}, "train": {"epochs": 2, "full_epochs": 1, "lr": 1e300}}"#;

/// The files that describe a run and its model; `metrics.jsonl` and `eval.json` hold times, so
/// of those only their presence is compared with an uninterrupted run's.
const EXACT: [&str; 5] = [
    "config.json",
    "meta.json",
    "model.safetensors",
    "run.json",
    "data.json",
];

struct Fixture {
    dir: Scratch,
    data: PathBuf,
    quick: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Self {
        let dir = tmpdir(name);
        let data = dir.join("small.svm");
        let rows: String = (0..60)
            .map(|r| format!("{} {}:1 {}:2\n", r % 3, r % 5 + 1, r % 7 + 6))
            .collect();
        std::fs::write(&data, rows).unwrap();
        let quick = dir.join("quick.json");
        std::fs::write(&quick, QUICK).unwrap();
        Fixture { dir, data, quick }
    }

    /// `cardinal train` on the small file into `out` with `cfg`, `extra` appended.
    fn train(&self, cfg: &Path, out: &Path, extra: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cardinal"));
        c.args(["--threads", "1", "train", "--quiet", "--dataset"])
            .args([arg(&self.data), "--config", arg(cfg), "--out", arg(out)])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    }
}

/// The content of every file of `dir` that [`EXACT`] names, and which of the others exist.
fn snapshot(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    for f in EXACT {
        out.insert(f.to_string(), std::fs::read(dir.join(f)).ok());
    }
    for f in ["metrics.jsonl", "eval.json"] {
        out.insert(f.to_string(), dir.join(f).is_file().then(Vec::new));
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A replacement that fails (the new configuration diverges) leaves the old run as it was:
/// its model, its description, its metrics; and no half-written folder beside it.
#[test]
fn a_failed_replacement_leaves_the_old_run_whole() {
    let fx = Fixture::new("replace-failed");
    let m = fx.dir.join("m");
    let o = fx.train(&fx.quick, &m, &[]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(m.join("notes.txt"), b"mine").unwrap();
    let before = snapshot(&m);
    let diverging = fx.dir.join("diverging.json");
    std::fs::write(&diverging, DIVERGING).unwrap();
    let o = fx
        .train(&diverging, &m, &["--force", "--train-fraction", "0.5"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(snapshot(&m), before);
    assert_eq!(std::fs::read(m.join("notes.txt")).unwrap(), b"mine");
    let names: Vec<String> = std::fs::read_dir(&fx.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains("cardinal-replacement")),
        "{names:?}"
    );
    // A replacement that succeeds replaces the run, and keeps the user's file.
    let o = fx
        .train(&fx.quick, &m, &["--force", "--seed", "4"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_ne!(snapshot(&m), before);
    assert_eq!(std::fs::read(m.join("notes.txt")).unwrap(), b"mine");
    assert!(!m.join(".cardinal.lock").exists());
    let _ = std::fs::remove_dir_all(&fx.dir);
}

/// Whether the folder `m` is `old` or `new`, whole.
fn one_whole_run(
    m: &Path,
    old: &BTreeMap<String, Option<Vec<u8>>>,
    new: &BTreeMap<String, Option<Vec<u8>>>,
) -> bool {
    let now = snapshot(m);
    &now == old || &now == new
}

/// The replacement, killed (SIGKILL) at the `n`-th call of any of `syscalls` by `strace`'s fault
/// injection; whether the process was killed.
fn killed_at(fx: &Fixture, m: &Path, syscalls: &str, n: usize) -> bool {
    let cmd = fx.train(&fx.quick, m, &["--force", "--seed", "4"]);
    let inner: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let o = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("trace={syscalls}"))
        .arg("-e")
        .arg(format!("inject={syscalls}:signal=SIGKILL:when={n}"))
        .args(&inner)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("strace runs");
    !o.status.success()
}

/// The replacement killed at every rename, every sync and every removal it makes (with
/// `strace`'s fault injection, where `strace` is installed; else at a spread of moments):
/// the folder is always one whole run, the old or the new.
#[test]
fn a_replacement_killed_at_any_step_leaves_one_whole_run() {
    let fx = Fixture::new("replace-killed");
    let (m, reference, old_copy) = (fx.dir.join("m"), fx.dir.join("ref"), fx.dir.join("old"));
    let o = fx.train(&fx.quick, &old_copy, &[]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fx
        .train(&fx.quick, &reference, &["--seed", "4"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (old, new) = (snapshot(&old_copy), snapshot(&reference));
    assert_ne!(old, new);
    let reset = || {
        let _ = std::fs::remove_dir_all(&m);
        copy_dir(&old_copy, &m);
    };
    // Installed, and allowed to trace here (containers may forbid `ptrace`).
    let have_strace = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut trials = 0;
    if have_strace {
        for syscalls in [
            "rename,renameat,renameat2",
            "fsync,fdatasync",
            "unlink,unlinkat,rmdir",
        ] {
            for n in 1.. {
                reset();
                let killed = killed_at(&fx, &m, syscalls, n);
                assert!(
                    one_whole_run(&m, &old, &new),
                    "killed at {syscalls} #{n}: the folder is neither run"
                );
                trials += 1;
                if !killed {
                    eprintln!("{syscalls}: killed at each of the first {} calls", n - 1);
                    assert_eq!(snapshot(&m), new, "{syscalls} #{n}");
                    break;
                }
                assert!(n < 200, "{syscalls}: still killed at #{n}");
            }
        }
    } else {
        for delay_ms in (0..400).step_by(20) {
            reset();
            let mut child = fx
                .train(&fx.quick, &m, &["--force", "--seed", "4"])
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(delay_ms));
            let _ = child.kill();
            let _ = child.wait();
            assert!(
                one_whole_run(&m, &old, &new),
                "killed after {delay_ms} ms: the folder is neither run"
            );
            trials += 1;
        }
    }
    assert!(trials >= 10, "{trials} trials");
    // What a killed replacement left beside the run does not stop the next one.
    reset();
    let o = fx
        .train(&fx.quick, &m, &["--force", "--seed", "4"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(snapshot(&m), new);
    let _ = std::fs::remove_dir_all(&fx.dir);
}

/// A run folder whose name is near the filesystem's limit (255 bytes) is replaced like any
/// other: the folder the new run is written into first takes a shortened name.
#[test]
fn a_run_with_a_name_near_the_limit_is_replaced() {
    let fx = Fixture::new("replace-long");
    for len in [233, 240, 255] {
        let m = fx.dir.join("r".repeat(len));
        let o = fx.train(&fx.quick, &m, &[]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = fx
            .train(&fx.quick, &m, &["--force", "--seed", "4"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{len}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let cfg = std::fs::read_to_string(m.join("config.json")).unwrap();
        assert!(
            cfg.contains("\"seed\": 4"),
            "{len}: the old run is still there"
        );
        let left: Vec<_> = std::fs::read_dir(&fx.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{len}: left beside the run: {left:?}");
    }
}

/// A run in a folder that cannot be written is refused before training, saying where cardinal
/// needed to write and what to do (root writes anywhere: checked as another user only).
#[test]
fn a_run_in_a_read_only_folder_is_refused_before_training_saying_why() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new("replace-readonly");
    let parent = fx.dir.join("ro");
    let m = parent.join("m");
    let o = fx.train(&fx.quick, &m, &[]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(parent.join("probe"), b"").is_ok() {
        // Root: permissions do not apply.
        std::fs::remove_file(parent.join("probe")).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).unwrap();
        return;
    }
    let before = snapshot(&m);
    let o = fx
        .train(&fx.quick, &m, &["--force", "--seed", "4"])
        .output()
        .unwrap();
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot be replaced") && err.contains("make that folder writable"),
        "{err}"
    );
    assert!(!err.contains("epoch"), "trained before refusing: {err}");
    assert_eq!(snapshot(&m), before);
}
