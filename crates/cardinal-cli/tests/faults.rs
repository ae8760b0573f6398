//! Faults a hostile or unlucky user meets: output streams that fail, runaway resource
//! requests, locks and folders in the way. Each must end in a clear message or be survived,
//! never in a panic or a lost run.

use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{arg, tmpdir, train_args, write_config};

/// A small model, two epochs in the first phase and one on all of train.
const QUICK: &str = r#"{"model": {"hidden": 16, "card_hidden": 8}, "inference": {"steps": 3}, "train": {"epochs": 2, "full_epochs": 1}}"#;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The binary with `args`, standard error sent to `err`.
fn cardinal_with_stderr(args: &[&str], err: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .args(args)
        .stderr(err)
        .output()
        .expect("runs")
}

/// Whether `dir` holds a whole saved model.
fn saved(dir: &Path) -> bool {
    ["config.json", "meta.json", "model.safetensors", "eval.json"]
        .iter()
        .all(|f| dir.join(f).is_file())
}

/// `train … 2>/dev/full`: every progress line fails to write; the run still finishes and
/// is saved, with exit 0.
#[test]
fn a_full_stderr_does_not_lose_the_run() {
    let dir = tmpdir("full-stderr");
    let cfg = write_config(&dir, QUICK);
    let out = dir.join("m");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let o = cardinal_with_stderr(&train_args(&cfg, &out, &["-v"]), Stdio::from(full));
    assert!(o.status.success(), "exit {:?}", o.status.code());
    assert!(saved(&out));
}

/// `train … 2>&1 | head -2`: standard error is a pipe whose reader has gone.
#[test]
fn a_closed_stderr_pipe_does_not_lose_the_run() {
    let dir = tmpdir("closed-stderr");
    let cfg = write_config(&dir, QUICK);
    let out = dir.join("m");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .args(train_args(&cfg, &out, &["-v"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    // The reader goes away before the first line.
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit {:?}", status.code());
    assert!(saved(&out));
    // An error message that cannot be written does not panic either.
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = cardinal_with_stderr(
        &["eval", "--model", arg(&dir.join("none"))],
        Stdio::from(full),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// `--threads 100000` is refused at once, with the bound, instead of starting that many.
#[test]
fn a_runaway_thread_count_is_refused() {
    for sub in ["predict", "eval"] {
        let o = common::cardinal(&[
            sub,
            "--model",
            "none",
            "--data",
            "none",
            "--threads",
            "100000",
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o)
                .contains("threads = 100000 is out of range: expected at least 1 and at most"),
            "{}",
            stderr(&o)
        );
    }
}

/// `--force` replaces a cardinal run only: a project folder with its own `checkpoints/` and
/// `metrics.jsonl` is refused, named, and left as it was.
#[test]
fn force_replaces_only_a_run() {
    let dir = tmpdir("force-not-a-run");
    let cfg = write_config(&dir, QUICK);
    let proj = dir.join("proj");
    std::fs::create_dir_all(proj.join("checkpoints/resnet")).unwrap();
    std::fs::write(proj.join("checkpoints/resnet/weights.pt"), b"theirs").unwrap();
    std::fs::write(proj.join("metrics.jsonl"), b"{}\n").unwrap();
    let o = common::cardinal(&train_args(&cfg, &proj, &["--force", "--quiet"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("is not a cardinal run") && err.contains("checkpoints/"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(proj.join("checkpoints/resnet/weights.pt")).unwrap(),
        b"theirs"
    );
    assert!(proj.join("metrics.jsonl").exists());
    // A run is replaced.
    let run = dir.join("run");
    for extra in [&["--quiet"][..], &["--quiet", "--force", "--seed", "3"]] {
        let o = common::cardinal(&train_args(
            &cfg,
            &run,
            &[&["--no-checkpoints"], extra].concat(),
        ));
        assert!(o.status.success(), "{}", stderr(&o));
    }
}

/// Four runs started at once into one fresh folder: one writes its model, the others are
/// refused (busy, or the folder already holds a run).
#[test]
fn concurrent_runs_into_one_folder_have_one_winner() {
    let dir = tmpdir("concurrent");
    let cfg = write_config(&dir, QUICK);
    let out = dir.join("y");
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_cardinal"))
                .args(train_args(
                    &cfg,
                    &out,
                    &["--quiet", "--no-checkpoints", "--threads", "1"],
                ))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("runs")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let written = outputs
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stdout).contains("model written to"))
        .count();
    let all: Vec<String> = outputs.iter().map(stderr).collect();
    assert_eq!(written, 1, "{all:?}");
    for o in outputs.iter().filter(|o| !o.status.success()) {
        let e = stderr(o);
        assert!(
            e.contains("in use by another run")
                || e.contains("is not empty")
                || e.contains("holds a "),
            "{e}"
        );
    }
    assert!(saved(&out));
}

/// `predict --out`, `eval --json` and `report --out` never write into the model folder being
/// read, nor onto its files: refused, and the model stays whole.
#[test]
fn outputs_never_land_in_the_model_being_read() {
    let dir = tmpdir("out-in-model");
    let cfg = write_config(&dir, QUICK);
    let m = dir.join("m");
    let o = common::cardinal(&train_args(&cfg, &m, &["--quiet", "--no-checkpoints"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let before: Vec<Vec<u8>> = ["model.safetensors", "meta.json", "config.json"]
        .iter()
        .map(|f| std::fs::read(m.join(f)).unwrap())
        .collect();
    let weights = m.join("model.safetensors");
    let meta = m.join("meta.json");
    let page = m.join("r.html");
    let attempts: [Vec<&str>; 4] = [
        vec![
            "predict",
            "--model",
            arg(&m),
            "--data",
            "bibtex",
            "--out",
            arg(&weights),
        ],
        vec![
            "predict",
            "--model",
            arg(&m),
            "--data",
            "bibtex",
            "--format",
            "npy",
            "--out",
            arg(&m),
        ],
        vec!["eval", "--model", arg(&m), "--json", arg(&meta)],
        vec!["report", "--model", arg(&m), "--out", arg(&page)],
    ];
    for args in attempts {
        let o = common::cardinal(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("into the model folder"),
            "{}",
            stderr(&o)
        );
    }
    let after: Vec<Vec<u8>> = ["model.safetensors", "meta.json", "config.json"]
        .iter()
        .map(|f| std::fs::read(m.join(f)).unwrap())
        .collect();
    assert!(before == after && !page.exists());
}

/// Configuration values that would train or predict nonsense are refused, naming the field:
/// an unknown preset, a threshold outside (0, 1), a `--labels-by` threshold that is not a
/// score, a dev split that leaves no training rows.
#[test]
fn nonsense_settings_are_refused_by_name() {
    let dir = tmpdir("nonsense");
    let data = dir.join("small.svm");
    let rows: String = (0..10)
        .map(|r| format!("{} {}:1\n", r % 3, r % 5 + 1))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let out = dir.join("m");
    for (json, expected) in [
        (
            r#"{"preset": "bogus"}"#,
            r#"preset = "bogus" is not a preset"#,
        ),
        (r#"{"threshold": 2}"#, "threshold = 2 is out of range"),
        (
            r#"{"train": {"dev_fraction": 0.999}}"#,
            "train.dev_fraction = 0.999 holds out 8 of the 8 training rows",
        ),
        // A Table 1 setting does nothing for P&C: refused, not ignored.
        (
            r#"{"baseline": {"optimizer": "adam"}}"#,
            "baseline.optimizer is set, but system `pnc` does not read it",
        ),
    ] {
        let cfg = write_config(&dir, json);
        let o = common::cardinal(&train_args(&cfg, &out, &["--dataset", arg(&data)]));
        assert_eq!(o.status.code(), Some(1), "{json}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{json}: {}", stderr(&o));
        assert!(!out.join("meta.json").exists());
    }
    for rule in ["threshold=nan", "threshold=inf", "nan"] {
        let o = common::cardinal(&[
            "predict",
            "--model",
            "m",
            "--data",
            "d",
            "--labels-by",
            rule,
        ]);
        assert_eq!(o.status.code(), Some(2), "{rule}: {}", stderr(&o));
        assert!(stderr(&o).contains("--labels-by"), "{}", stderr(&o));
    }
}

/// Runs the binary with `args`; fails the test if it has not finished within a minute.
fn cardinal_within_a_minute(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{args:?} hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A tampered model folder: `config.json` a link to a FIFO, `meta.json` a link to
/// `/dev/zero` or to a JSON file elsewhere. Each is refused at once, naming the file, and the
/// foreign file's content is never echoed.
#[cfg(unix)]
#[test]
fn a_model_folders_links_are_refused_not_followed() {
    let dir = tmpdir("tampered");
    let cfg = write_config(&dir, QUICK);
    let m = dir.join("m");
    let o = common::cardinal(&train_args(&cfg, &m, &["--quiet", "--no-checkpoints"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let secret = dir.join("secret.json");
    std::fs::write(&secret, r#"{"secret_token_1234": "x"}"#).unwrap();
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for (file, target) in [
        ("config.json", fifo.as_path()),
        ("meta.json", Path::new("/dev/zero")),
        ("meta.json", secret.as_path()),
    ] {
        let original = std::fs::read(m.join(file)).unwrap();
        std::fs::remove_file(m.join(file)).unwrap();
        std::os::unix::fs::symlink(target, m.join(file)).unwrap();
        for args in [
            vec!["predict", "--model", arg(&m), "--data", "bibtex"],
            vec!["eval", "--model", arg(&m)],
        ] {
            let o = cardinal_within_a_minute(&args);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(err.contains(file) && err.contains("symbolic link"), "{err}");
            assert!(!err.contains("secret_token"), "{err}");
        }
        std::fs::remove_file(m.join(file)).unwrap();
        std::fs::write(m.join(file), original).unwrap();
    }
}

/// The data a run trained on is recorded (`data.json`: a SHA-256 of its content): `eval`
/// without `--data` and `--resume` refuse other data found under the same name (an edited
/// file), naming both.
#[test]
fn other_data_under_the_runs_name_is_refused() {
    let dir = tmpdir("identity");
    let data = dir.join("small.svm");
    let rows = |k: usize| -> String {
        (0..40)
            .map(|r| format!("{} {}:1 {}:2\n", r % 3, (r + k) % 5 + 1, r % 7 + 6))
            .collect()
    };
    std::fs::write(&data, rows(0)).unwrap();
    let cfg = write_config(&dir, QUICK);
    let m = dir.join("m");
    let o = common::cardinal(&train_args(
        &cfg,
        &m,
        &[
            "--dataset",
            arg(&data),
            "--quiet",
            "--checkpoint-every",
            "0",
        ],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(m.join("data.json").is_file());
    let o = common::cardinal(&["eval", "--model", arg(&m)]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&data, rows(1)).unwrap();
    for args in [
        vec!["eval", "--model", arg(&m)],
        vec!["train", "--resume", arg(&m), "--quiet"],
    ] {
        let o = common::cardinal(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("is not the data the run") && err.matches("SHA-256").count() == 2,
            "{err}"
        );
    }
}
