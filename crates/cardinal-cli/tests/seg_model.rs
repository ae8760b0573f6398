//! End to end: `cardinal seg --out DIR` writes a multi-target model directory, and
//! `cardinal eval` / `cardinal predict` dispatch on the label structure its `meta.json` records.

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
    let seg = stdout(&cardinal(&[
        "seg", "--data", data_s, "--epochs", "2", "--out", model_s,
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
