//! End to end: `cardinal train` on multi-target data writes a Section 6 model directory (with
//! checkpoints, `--resume` and strict configuration, as for binary data), and `cardinal eval` /
//! `cardinal predict` dispatch on the label structure its `meta.json` records.

use std::process::Output;

mod common;
use common::{cardinal, tmpdir};

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_saved_multi_target_model_is_evaluated_and_predicted_through_eval_and_predict() {
    let dir = tmpdir("dispatch");
    let (data, model) = (dir.join("data"), dir.join("model"));
    let (data_s, model_s) = (data.to_str().unwrap(), model.to_str().unwrap());
    stdout(&cardinal(&[
        "data",
        "synth-seg",
        "--out",
        data_s,
        "--size",
        "4",
        "--classes",
        "3",
        "--train",
        "20",
        "--test",
        "7",
    ]));
    let cfg = dir.join("cfg.json");
    std::fs::write(&cfg, r#"{"multi_target": {"epochs": 2}}"#).unwrap();
    let seg = stdout(&cardinal(&[
        "train",
        "--dataset",
        data_s,
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        model_s,
        "--json",
    ]));
    let seg: serde_json::Value = serde_json::from_str(seg.trim()).unwrap();
    let meta = std::fs::read_to_string(model.join("meta.json")).unwrap();
    assert!(meta.contains("\"labels\": \"multi_target\""), "{meta}");

    // eval: the same mean IoU as the run that trained it.
    let test = data.join("test.arff");
    let test_s = test.to_str().unwrap();
    let eval = stdout(&cardinal(&[
        "eval", "--model", model_s, "--data", test_s, "--json", "-",
    ]));
    let eval: serde_json::Value = serde_json::from_str(&eval).unwrap();
    assert_eq!(eval["mean_iou"], seg["test"]["mean_iou"]);
    assert_eq!(eval["class_iou"], seg["test"]["class_iou"]);
    // report draws binary models only, and says so (it failed on the training log).
    let html = dir.join("r.html");
    let o = cardinal(&[
        "report",
        "--model",
        model_s,
        "--out",
        html.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && !html.exists());
    assert!(
        err.contains("is a multi-target (Section 6) model")
            && err.contains("cardinal eval --model")
            && !err.contains("epoch record"),
        "{err}"
    );
    // Without --data: the run's own test data, from its run.json.
    let own = stdout(&cardinal(&["eval", "--model", model_s, "--json", "-"]));
    let own: serde_json::Value = serde_json::from_str(&own).unwrap();
    assert_eq!(own["class_iou"], seg["test"]["class_iou"]);
    let o = cardinal(&["eval", "--model", model_s, "--split", "dev"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--split dev applies to binary"));

    // predict: one line per row, a class in 0..3 at each of the 16 positions, sizes summing
    // to 16.
    let lines = stdout(&cardinal(&[
        "predict", "--model", model_s, "--data", test_s,
    ]));
    let rows: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 7);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["row"], i);
        let classes = r["classes"].as_array().unwrap();
        assert_eq!(classes.len(), 16);
        assert!(classes.iter().all(|c| c.as_u64().unwrap() < 3));
        let z: f64 = r["z"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!((z - 16.0).abs() < 1e-9, "{z}");
    }

    // A folder where a file is expected is named as such.
    let o = cardinal(&["eval", "--model", model_s, "--data", data_s]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("is a folder: expected a multi-target ARFF file"),
        "{err}"
    );

    // A tampered meta.json is refused, naming the file and the field.
    let good = std::fs::read_to_string(model.join("meta.json")).unwrap();
    std::fs::write(
        model.join("meta.json"),
        good.replace("\"positions\": 16", "\"positions\": -1"),
    )
    .unwrap();
    let o = cardinal(&["predict", "--model", model_s, "--data", test_s]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("meta.json")
            && err.contains("`positions` is missing or not a positive integer"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a small multi-target benchmark into `dir/data` and returns its path.
fn small_benchmark(dir: &std::path::Path) -> String {
    let data = dir.join("data");
    stdout(&cardinal(&[
        "data",
        "synth-seg",
        "--out",
        data.to_str().unwrap(),
        "--size",
        "5",
        "--classes",
        "3",
        "--train",
        "40",
        "--test",
        "9",
        "--seed",
        "2",
    ]));
    data.to_str().unwrap().to_string()
}

/// A run resumed from the checkpoint written after epoch 2 ends bit-identical to an
/// uninterrupted run: the same weights (energy included), metrics and log.
#[test]
fn a_resumed_multi_target_run_is_bit_identical_to_an_uninterrupted_one() {
    let dir = tmpdir("seg-resume");
    let data = small_benchmark(&dir);
    let config = |epochs: usize| {
        let p = dir.join(format!("cfg{epochs}.json"));
        let text = format!(
            r#"{{"multi_target": {{"epochs": {epochs}, "energy": 3, "grid_energy": true, "batch": 7, "steps": 3}}}}"#
        );
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let train = |cfg: &str, out: &std::path::Path| {
        stdout(&cardinal(&[
            "train",
            "--quiet",
            "--dataset",
            &data,
            "--config",
            cfg,
            "--seed",
            "4",
            "--checkpoint-every",
            "0",
            "--out",
            out.to_str().unwrap(),
        ]))
    };
    let (whole, part) = (dir.join("whole"), dir.join("part"));
    train(&config(5), &whole);
    // The run of 5 epochs stopped after its second: the state after 2 epochs does not depend
    // on the number of epochs still to come, so a 2-epoch run's last checkpoint is that state,
    // once its configuration says 5.
    train(&config(2), &part);
    let ckpt = part.join("checkpoints/epoch-0002");
    let cfg_path = ckpt.join("config.json");
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    assert!(text.contains("\"epochs\": 2"), "{text}");
    std::fs::write(&cfg_path, text.replace("\"epochs\": 2", "\"epochs\": 5")).unwrap();
    let before = std::fs::read(part.join("model.safetensors")).unwrap();
    let o = cardinal(&["train", "--quiet", "--resume", part.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    stdout(&o);
    assert!(err.contains("after 2 epochs"), "{err}");
    let read = |d: &std::path::Path, f: &str| std::fs::read(d.join(f)).unwrap();
    let resumed = read(&part, "model.safetensors");
    assert_ne!(resumed, before, "the resumed run trained");
    assert_eq!(resumed, read(&whole, "model.safetensors"));
    let metrics = |d: &std::path::Path| {
        let mut v: serde_json::Value = serde_json::from_slice(&read(d, "eval.json")).unwrap();
        v.as_object_mut().unwrap().remove("seconds");
        v
    };
    assert_eq!(metrics(&part), metrics(&whole));
    assert_eq!(read(&part, "config.json"), read(&whole, "config.json"));
    let epochs_and_losses = |d: &std::path::Path| -> Vec<(u64, f64)> {
        String::from_utf8(read(d, "metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["epoch"].as_u64().unwrap(), v["loss"].as_f64().unwrap())
            })
            .collect()
    };
    assert_eq!(epochs_and_losses(&part), epochs_and_losses(&whole));
    assert_eq!(epochs_and_losses(&whole).len(), 5);

    // An existing run is never overwritten without --force.
    let o = cardinal(&[
        "train",
        "--dataset",
        &data,
        "--out",
        whole.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds a finished run"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bad configuration is refused before anything is written, naming the file and the field.
#[test]
fn a_bad_multi_target_configuration_is_refused_naming_the_field() {
    let dir = tmpdir("seg-config");
    let data = small_benchmark(&dir);
    let out = dir.join("out");
    let refused = |json: &str| {
        let p = dir.join("bad.json");
        std::fs::write(&p, json).unwrap();
        let o = cardinal(&[
            "train",
            "--dataset",
            &data,
            "--config",
            p.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{json}");
        assert!(!out.exists(), "{json}: nothing is written");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = refused(r#"{"multi_target": {"steps": 0}}"#);
    assert!(
        e.contains("bad.json")
            && e.contains("multi_target.steps = 0 is out of range: expected 1..=100"),
        "{e}"
    );
    let e = refused(r#"{"multi_target": {"lr": -1}}"#);
    assert!(e.contains("multi_target.lr = -1"), "{e}");
    let e = refused(r#"{"multi_target": {"energgy": 4}}"#);
    assert!(e.contains("unknown field `energgy`"), "{e}");
    // A binary model's configuration says what it is not.
    let e = refused(r#"{"train": {"epochs": 3}}"#);
    assert!(
        e.contains("unknown field `train`, expected `multi_target`"),
        "{e}"
    );
    let e = refused(r#"{"multi_target": {"mode": "unary", "energy": 2}}"#);
    assert!(e.contains("multi_target.energy = 2"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `cv` and `data stats` handle binary multi-label data only: on multi-target data each says
/// so and what to run instead, rather than "not found".
#[test]
fn cv_and_data_stats_refuse_multi_target_data_saying_what_is_supported() {
    let dir = tmpdir("seg-cv-stats");
    let data = small_benchmark(&dir);
    for args in [
        vec!["cv", "--dataset", data.as_str(), "--folds", "2"],
        vec!["data", "stats", data.as_str()],
    ] {
        let o = cardinal(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(
            err.contains("is multi-target (Section 6) data")
                && err.contains("binary multi-label data only")
                && err.contains("cardinal train --dataset")
                && !err.contains("not found"),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
