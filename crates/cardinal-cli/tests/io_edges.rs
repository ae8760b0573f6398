//! Where files meet the rest of the system: outputs that are devices, FIFOs, links or `-`,
//! configuration files without end, readers overlapping a `train --force`, and runs refused
//! before training. Each ends in the right bytes in the right place or a clear message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{arg, text, tmpdir, Scratch};

/// A quick model; `HIDDEN` differs between the two the replacement test alternates.
const QUICK: &str = r#"{"model": {"hidden": HIDDEN, "card_hidden": 4, "energy_hidden": 4}, "inference": {"steps": 2}, "train": {"epochs": 1, "full_epochs": 0}}"#;

/// A folder with the small data file and two quick configurations (8 and 12 hidden units).
fn fixture(name: &str) -> (Scratch, PathBuf, [PathBuf; 2]) {
    let dir = tmpdir(name);
    let data = dir.join("small.svm");
    let rows: String = (0..60)
        .map(|r| format!("{} {}:1 {}:2\n", r % 3, r % 5 + 1, r % 7 + 6))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let cfgs = [8, 12].map(|h| {
        let p = dir.join(format!("quick{h}.json"));
        std::fs::write(&p, QUICK.replace("HIDDEN", &h.to_string())).unwrap();
        p
    });
    (dir, data, cfgs)
}

/// `cardinal --threads 1 ARGS` run in `cwd`.
fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .current_dir(cwd)
        .args(["--threads", "1"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("runs")
}

fn train(dir: &Path, data: &Path, cfg: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["train", "--quiet", "--no-checkpoints", "--dataset"];
    args.extend([arg(data), "--config", arg(cfg), "--out", arg(out)]);
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

/// `-` is standard output; a device is written in place (and `/dev/full` is an error); a
/// link to a file replaces the file and keeps the link; a folder is refused.
#[test]
fn outputs_go_where_they_are_pointed() {
    let (dir, data, cfgs) = fixture("io-outputs");
    let m = dir.join("m");
    let o = train(&dir, &data, &cfgs[0], &m, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let predict = |out: &str| {
        run_in(
            &dir,
            &[
                "predict",
                "--model",
                arg(&m),
                "--data",
                arg(&data),
                "--out",
                out,
            ],
        )
    };
    let to_stdout = run_in(&dir, &["predict", "--model", arg(&m), "--data", arg(&data)]);
    assert!(to_stdout.status.success(), "{}", text(&to_stdout));
    let dash = predict("-");
    assert!(dash.status.success(), "{}", text(&dash));
    assert_eq!(dash.stdout, to_stdout.stdout);
    assert!(!dir.join("-").exists(), "`--out -` wrote a file named `-`");
    let full = predict("/dev/full");
    assert_eq!(full.status.code(), Some(1), "{}", text(&full));
    assert!(text(&full).contains("No space left"), "{}", text(&full));
    assert!(!std::fs::metadata("/dev/full").unwrap().is_file());
    let null = predict("/dev/null");
    assert!(null.status.success(), "{}", text(&null));
    let file = dir.join("rows.jsonl");
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let linked = predict(arg(&link));
    assert!(linked.status.success(), "{}", text(&linked));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(std::fs::read(&file).unwrap(), to_stdout.stdout);
    std::fs::create_dir(dir.join("sub")).unwrap();
    let e = predict(arg(&dir.join("sub")));
    assert_eq!(e.status.code(), Some(1));
    assert!(text(&e).contains("is a folder"), "{}", text(&e));
    let json = run_in(&dir, &["eval", "--model", arg(&m), "--json", "/dev/full"]);
    assert_eq!(json.status.code(), Some(1), "{}", text(&json));
    assert!(text(&json).contains("No space left"), "{}", text(&json));
}

/// `--config /dev/zero` (a file without end) is refused, naming it and the limit, promptly.
#[test]
fn a_configuration_without_end_is_refused() {
    let (dir, data, _) = fixture("io-config");
    let start = std::time::Instant::now();
    let o = train(&dir, &data, Path::new("/dev/zero"), &dir.join("m"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("/dev/zero") && text(&o).contains("bytes"),
        "{}",
        text(&o)
    );
    assert!(start.elapsed().as_secs() < 60);
    assert!(!dir.join("m").exists());
}

/// A run refused before training (over the memory budget) leaves nothing: the retry needs
/// no `--force`.
#[test]
fn a_run_refused_before_training_leaves_nothing() {
    let (dir, data, cfgs) = fixture("io-refused");
    let m = dir.join("m");
    let mut args = vec!["train", "--quiet", "--no-checkpoints", "--dataset"];
    args.extend([arg(&data), "--config", arg(&cfgs[0]), "--out", arg(&m)]);
    let refused = Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .env("CARDINAL_MEMORY_BUDGET", "1K")
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("memory budget"),
        "{}",
        text(&refused)
    );
    assert!(
        !m.exists(),
        "{:?}",
        std::fs::read_dir(&m).map(|d| d.count())
    );
    let o = train(&dir, &data, &cfgs[0], &m, &[]);
    assert!(o.status.success(), "{}", text(&o));
    // Replaced from inside (`--out .`): the new run holds no lock once it is done.
    let mut args = vec!["train", "--quiet", "--no-checkpoints", "--dataset"];
    args.extend([
        arg(&data),
        "--config",
        arg(&cfgs[1]),
        "--out",
        ".",
        "--force",
    ]);
    let o = run_in(&m, &args);
    assert!(o.status.success(), "{}", text(&o));
    assert!(m.join("model.safetensors").is_file());
    assert!(!m.join(".cardinal.lock").exists());
}

/// Readers overlapping a loop of `train --force` that alternates two model sizes get one
/// whole model each time: never the old meta data with the new weights (which, of another
/// size, is a shape error; of the same size, a wrong answer).
#[test]
fn readers_overlapping_a_replacement_see_one_whole_model() {
    let (dir, data, cfgs) = fixture("io-overlap");
    let m = dir.join("m");
    let o = train(&dir, &data, &cfgs[0], &m, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut ok, mut failures) = (0, Vec::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            for k in 0..12 {
                let o = train(&dir, &data, &cfgs[(k + 1) % 2], &m, &["--force"]);
                assert!(o.status.success(), "{}", text(&o));
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let o = run_in(&dir, &["predict", "--model", arg(&m), "--data", arg(&data)]);
            match o.status.success() {
                true => ok += 1,
                false => failures.push(text(&o)),
            }
        }
    });
    // A reader may be told to try again (the folder kept changing); never a mix.
    for f in &failures {
        assert!(f.contains("while it was being read"), "{f}");
    }
    assert!(ok > 0, "{failures:?}");
}
