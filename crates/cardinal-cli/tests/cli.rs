//! End-to-end tests of the `cardinal` binary on the vendored data and tiny files.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{arg, cardinal, dir_with_config, text, tmpdir, train_args, write_svm};

/// The quick configuration: one epoch per phase of a small model.
const QUICK: &str = r#"{"model": {"hidden": 16, "card_hidden": 8}, "inference": {"steps": 3}, "train": {"epochs": 1, "full_epochs": 1}}"#;

/// `cardinal train` with the quick configuration `cfg` into `out`, quietly, plus `extra`.
fn train_quick(cfg: &Path, out: &Path, extra: &[&str]) -> Output {
    cardinal(&train_args(cfg, out, &[&["--quiet"], extra].concat()))
}

/// `cardinal eval --model MODEL EXTRA --json -`, which must succeed, and its report.
fn eval_json(model: &Path, extra: &[&str]) -> (Output, serde_json::Value) {
    let out = cardinal(&[&["eval", "--model", arg(model)], extra, &["--json", "-"]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let report = serde_json::from_slice(&out.stdout).unwrap();
    (out, report)
}

/// `cardinal predict --model MODEL --data DATA`, which must succeed, and its standard output.
fn predict_ok(model: &Path, data: &str) -> String {
    let out = cardinal(&["predict", "--model", arg(model), "--data", data]);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn train_eval_predict_round_trip_on_vendored_bibtex() {
    let (dir, cfg) = dir_with_config("roundtrip", QUICK);
    let model = dir.join("model");
    let out = train_quick(&cfg, &model, &["--seed", "3"]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("EXAMPLE_F1"), "{t}");
    for f in [
        "model.safetensors",
        "config.json",
        "meta.json",
        "metrics.jsonl",
        "eval.json",
    ] {
        assert!(model.join(f).exists(), "{f} missing");
    }
    let lines = std::fs::read_to_string(model.join("metrics.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 2, "one record per epoch: {lines}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model.join("config.json")).unwrap()).unwrap();
    assert_eq!(saved["seed"], 3);

    // eval reproduces the numbers written at the end of training
    let (_, report) = eval_json(&model, &[]);
    let at_train: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model.join("eval.json")).unwrap()).unwrap();
    assert_eq!(
        report["at_threshold"]["example_f1"],
        at_train["at_threshold"]["example_f1"]
    );
    assert_eq!(report["at_threshold"]["n_examples"], 2515);

    // the dev split is the 5 % of train that the model's config held out, flagged as seen in
    // the epochs on all of train
    let (out, report) = eval_json(&model, &["--split", "dev"]);
    assert_eq!(report["at_threshold"]["n_examples"], 244);
    assert!(text(&out).contains("optimistic"), "{}", text(&out));

    // SPEN's protocol: the threshold chosen on those dev rows, applied to test
    let (_, report) = eval_json(&model, &["--dev-threshold"]);
    let thr = report["dev_threshold"].as_f64().unwrap();
    assert!((0.05..=0.95).contains(&thr) && (thr * 20.0 - (thr * 20.0).round()).abs() < 1e-9);
    assert_eq!(report["at_dev_threshold"]["n_examples"], 2515);

    let stdout = predict_ok(&model, "bibtex");
    assert_eq!(stdout.lines().count(), 2515);
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert!(first["z"].as_f64().unwrap() >= 1.0 && first["labels"].is_array());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn same_seed_gives_identical_weights_for_any_thread_count() {
    let (dir, cfg) = dir_with_config("determinism", QUICK);
    let mut weights = Vec::new();
    for (name, threads) in [("a", "1"), ("b", "2"), ("c", "2")] {
        let model = dir.join(name);
        let out = cardinal(
            &[
                &["--threads", threads],
                &train_args(&cfg, &model, &["--quiet"])[..],
            ]
            .concat(),
        );
        assert!(out.status.success(), "{}", text(&out));
        weights.push(std::fs::read(model.join("model.safetensors")).unwrap());
    }
    assert!(
        weights[0] == weights[1] && weights[1] == weights[2],
        "weights differ between runs"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_inputs_get_clear_errors() {
    let dir = tmpdir("errors");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"inference": {"steps": 1001}}"#).unwrap();
    let out = cardinal(&train_args(&bad, &dir.join("m"), &[]));
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("inference.steps") && t.contains("0..=1000"),
        "{t}"
    );

    let out = cardinal(&[
        "train",
        "--dataset",
        "no-such-dataset",
        "--out",
        dir.join("m").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("no-such-dataset"), "{}", text(&out));

    let out = cardinal(&["eval", "--model", dir.join("missing").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("meta.json"), "{}", text(&out));

    // A checkpoint of another format version is refused with both versions named.
    let model = dir.join("old");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("meta.json"), r#"{"format_version": 99, "cardinal_version": "9.9.9", "dataset": "bibtex", "n_features": 1, "n_labels": 1, "label_names": [], "train_mean_cardinality": 1.0, "count_min": 1, "count_max": 3}"#).unwrap();
    let out = cardinal(&["eval", "--model", model.to_str().unwrap()]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("format version 99") && t.contains("9.9.9"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn project_reads_stdin_and_rejects_bad_lines() {
    use std::io::Write;
    let run = |args: &[&str], input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cardinal"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(&["project", "--z", "2"], "0.2 0.9 0.4 1.5\n");
    assert!(out.status.success(), "{}", text(&out));
    let v: Vec<f64> = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(v.len(), 4);
    assert!(
        (v.iter().sum::<f64>() - 2.0).abs() < 1e-6 && v.iter().all(|&x| (0.0..=1.0).contains(&x))
    );
    let out = run(&["project", "--z", "1"], "0.5 0.5\n0.1 abc\n");
    assert!(!out.status.success());
    assert!(text(&out).contains("line 2"), "{}", text(&out));
}

#[test]
fn data_stats_on_vendored_bibtex() {
    let out = cardinal(&["data", "stats", "bibtex", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(
        t.contains("4880") && t.contains("2515") && t.contains("1836"),
        "{t}"
    );
}

#[test]
fn cv_reports_every_fold_and_the_mean() {
    let (dir, cfg) = dir_with_config("cv", QUICK);
    let json = dir.join("cv.json");
    let out = cardinal(&[
        "cv",
        "--config",
        cfg.to_str().unwrap(),
        "--folds",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("fold 1/2") && t.contains("fold 2/2") && t.contains("CV_EXAMPLE_F1"),
        "{t}"
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let folds = report["folds"].as_array().unwrap();
    let rows: u64 = folds.iter().map(|f| f["dev_rows"].as_u64().unwrap()).sum();
    assert_eq!(rows, 4880, "the folds cover the training file");
    let out = cardinal(&["cv", "--config", cfg.to_str().unwrap(), "--folds", "1"]);
    assert!(
        !out.status.success() && text(&out).contains("folds"),
        "{}",
        text(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A configuration file that names its preset is read over that preset (a saved `config.json`
/// trains again as it did); one that names none is read over `predict`; `--preset` wins.
#[test]
fn a_configuration_file_is_read_over_the_preset_it_names() {
    let dir = tmpdir("preset-base");
    let quick = r#""model": {"hidden": 8, "card_hidden": 4}, "inference": {"steps": 2}, "train": {"epochs": 1, "full_epochs": 0}"#;
    for (name, json, flag, averaged) in [
        (
            "named",
            format!(r#"{{"preset": "paper", {quick}}}"#),
            None,
            false,
        ),
        ("unnamed", format!("{{{quick}}}"), None, true),
        (
            "flag",
            format!(r#"{{"preset": "paper", {quick}}}"#),
            Some("predict"),
            true,
        ),
    ] {
        let cfg = dir.join(format!("{name}.json"));
        std::fs::write(&cfg, json).unwrap();
        let model = dir.join(name);
        let mut args = train_args(&cfg, &model, &["--quiet", "--no-checkpoints"]);
        if let Some(p) = flag {
            args.extend(["--preset", p]);
        }
        let out = cardinal(&args);
        assert!(out.status.success(), "{}", text(&out));
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(model.join("config.json")).unwrap())
                .unwrap();
        assert_eq!(
            !saved["train"]["average_epochs"].is_null(),
            averaged,
            "{name}: {saved}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An existing run is never overwritten without being asked: `train --out` into it is
/// refused and leaves its model as it was; `--force` replaces it; a second process cannot
/// write into a run directory whose lock is live.
#[test]
fn an_existing_model_is_refused_unless_forced() {
    let (dir, cfg) = dir_with_config("existing", QUICK);
    let model = dir.join("model");
    let train = |extra: &[&str]| {
        let mut args = vec!["--no-checkpoints"];
        args.extend_from_slice(extra);
        train_quick(&cfg, &model, &args)
    };
    let first = train(&["--seed", "1"]);
    assert!(first.status.success(), "{}", text(&first));
    let weights = std::fs::read(model.join("model.safetensors")).unwrap();
    let again = train(&["--seed", "2"]);
    assert!(!again.status.success());
    let t = text(&again);
    // A finished run is said to be one, and --resume (which cannot continue it) is not offered.
    assert!(
        t.contains("holds a finished run") && t.contains("--force") && !t.contains("--resume"),
        "{t}"
    );
    assert_eq!(
        std::fs::read(model.join("model.safetensors")).unwrap(),
        weights
    );
    // A live lock (its `flock` held, here by this test) refuses a second writer.
    std::fs::write(model.join(".cardinal.lock"), "1").unwrap();
    let held = std::fs::File::open(model.join(".cardinal.lock")).unwrap();
    held.lock().unwrap();
    let busy = train(&["--seed", "2", "--force"]);
    drop(held);
    assert!(!busy.status.success());
    assert!(
        text(&busy).contains("in use by another run"),
        "{}",
        text(&busy)
    );
    std::fs::remove_file(model.join(".cardinal.lock")).unwrap();
    let forced = train(&["--seed", "2", "--force"]);
    assert!(forced.status.success(), "{}", text(&forced));
    assert_ne!(
        std::fs::read(model.join("model.safetensors")).unwrap(),
        weights
    );
    assert!(!model.join(".cardinal.lock").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A model directory is untrusted: `checkpoints/LATEST` naming a path outside it is refused
/// by `--resume`, not followed.
#[test]
fn resume_refuses_a_latest_pointing_outside_the_run() {
    let (dir, cfg) = dir_with_config("latest", QUICK);
    let model = dir.join("model");
    let out = train_quick(&cfg, &model, &["--checkpoint-every", "0"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(model.join("checkpoints/LATEST"), "../../elsewhere").unwrap();
    let out = cardinal(&["train", "--resume", model.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("names no checkpoint of this directory"),
        "{}",
        text(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Standard output that fails is an error, never a panic: a full disk is one line on stderr
/// and exit code 1; a reader that closed the pipe (`| head`) ends the command quietly.
#[test]
fn a_full_or_closed_stdout_is_not_a_panic() {
    if cfg!(target_os = "linux") {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_cardinal"))
            .args(["data", "stats", "bibtex"])
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.starts_with("error: writing standard output") && err.lines().count() == 1,
            "{err}"
        );
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .args(["data", "stats", "bibtex"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `predict` on a single file scores every row of it, in file order, numbered as in the file
/// (no hidden split); `eval` scores exactly the split the model trained with, whatever
/// `--train-fraction` was.
#[test]
fn predict_scores_every_row_and_eval_uses_the_training_split() {
    let (dir, cfg) = dir_with_config("own-data", QUICK);
    let data = write_svm(&dir, "mine.svm", 60);
    let model = dir.join("model");
    let out = train_quick(
        &cfg,
        &model,
        &[
            "--dataset",
            data.to_str().unwrap(),
            "--train-fraction",
            "0.95",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let trained: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let test_rows = trained["at_threshold"]["n_examples"].as_u64().unwrap();
    assert_eq!(test_rows, 3, "5 % of 60 rows");
    let (_, again) = eval_json(&model, &[]);
    assert_eq!(again["at_threshold"], trained["at_threshold"]);
    let rows: Vec<u64> = predict_ok(&model, arg(&data))
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["row"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(rows, (0..60).collect::<Vec<u64>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A configuration file is read strictly: an array where an object belongs, or an unknown
/// field, is refused by its path and its line and column in the file itself.
#[test]
fn a_configuration_file_is_refused_at_its_own_line_and_column() {
    let dir = tmpdir("strict-config");
    for (name, json, want) in [
        (
            "array",
            "[]\n",
            "the top level must be an object, found an array at line 1, column 1",
        ),
        (
            "section",
            "{\n  \"preset\": \"paper\",\n  \"train\": [1, 2]\n}\n",
            "`train` must be an object, found an array at line 3, column 12",
        ),
        (
            "unknown",
            "{\n  \"model\": {\n    \"hidden\": 8,\n    \"eta\": 1\n  }\n}\n",
            "at `model.eta`: unknown field `eta`",
        ),
    ] {
        let cfg = dir.join(format!("{name}.json"));
        std::fs::write(&cfg, json).unwrap();
        let model = dir.join(name);
        let out = train_quick(&cfg, &model, &[]);
        let t = text(&out);
        assert!(!out.status.success() && t.contains(want), "{name}: {t}");
        if name == "unknown" {
            assert!(t.contains("at line 4, column 9"), "{t}");
        }
        assert!(!model.join("model.safetensors").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the readers decide on the user's behalf is said: an identifier attribute dropped from
/// an ARFF file is named on stderr (here by `data stats`; `train` prints the same notes).
#[test]
fn dropped_attributes_are_reported() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../cardinal-data/tests/fixtures/data/nominal");
    let out = cardinal(&["data", "stats", fixtures.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("note:") && err.contains("`id` dropped"),
        "{err}"
    );
}

/// `bench --preset predict` times the default and reports its epoch stage by stage: the
/// top-level stages are wall time within the epoch (bench/limit.py reads them).
#[test]
fn bench_reports_the_epoch_stage_by_stage() {
    let out = cardinal(&[
        "--threads",
        "1",
        "bench",
        "--preset",
        "predict",
        "--synthetic-labels",
        "7",
        "--synthetic-rows",
        "120",
        "--synthetic-features",
        "50",
        "--train-reps",
        "1",
        "--infer-reps",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let line: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(line["preset"], "predict");
    assert_eq!(line["hidden"], 2000);
    let stages = &line["stages_s"];
    let top: f64 = [
        "nets_forward",
        "unroll",
        "loss",
        "nets_backward",
        "optimizer",
        "average",
    ]
    .iter()
    .map(|k| stages[*k].as_f64().unwrap())
    .sum();
    let epoch = line["train_epoch_s"].as_f64().unwrap();
    assert!(top > 0.0 && top <= epoch, "{top} of {epoch}");
    assert!(stages["unroll_forward"].as_f64().unwrap() > 0.0);
}

/// Sizes are checked before anything is allocated: an absurd synthetic size is a clear error,
/// not an abort in the allocator.
#[test]
fn bench_refuses_absurd_sizes_before_allocating() {
    for args in [
        vec![
            "bench",
            "--synthetic-labels",
            "5",
            "--synthetic-features",
            "18446744073709551615",
        ],
        vec!["bench", "--synthetic-labels", "5", "--train-reps", "0"],
        vec![
            "bench",
            "--synthetic-labels",
            "5",
            "--synthetic-rows",
            "10000000",
            "--synthetic-features",
            "10000000",
        ],
    ] {
        let out = cardinal(&args);
        assert!(!out.status.success(), "{args:?}");
        let t = text(&out);
        assert!(
            (t.contains("error") || t.contains("invalid value"))
                && !t.contains("memory allocation"),
            "{args:?}: {t}"
        );
        assert!(
            matches!(out.status.code(), Some(1) | Some(2)),
            "{args:?}: {t}"
        );
    }
}

/// `--resume` continues a run exactly as it was configured: flags that would change the data,
/// configuration or seed are refused, not silently ignored.
#[test]
fn resume_refuses_flags_that_would_change_the_run() {
    for extra in [
        &["--seed", "3"][..],
        &["--preset", "paper"],
        &["--dataset", "bibtex"],
        &["--train-fraction", "0.5"],
        &["--data-dir", "."],
    ] {
        let mut args = vec!["train", "--resume", "somewhere"];
        args.extend_from_slice(extra);
        let out = cardinal(&args);
        assert!(!out.status.success(), "{extra:?} accepted");
        assert!(text(&out).contains("cannot be used with"), "{}", text(&out));
    }
}
