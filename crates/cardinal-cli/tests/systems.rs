//! Every model says what it is: the system that really runs is recorded (`config.json`), said
//! by `train` (also with `--quiet`), `eval` (and its JSON), `predict` and `info`, and each
//! system prints and accepts only what applies to it. A forest is not Predict and Constrain:
//! no `y_T`, no constraint line, no threshold, graded scores that are its marginals; the
//! P&C-only switch (`--system pnc`) trains P&C whatever the search prefers, and its models
//! hold the constraint on every row.

use std::path::Path;
use std::process::Output;

mod common;
use common::{arg, text, tmpdir};

fn cardinal(args: &[&str]) -> Output {
    common::cardinal(&[&["--threads", "2"], args].concat())
}

fn ok(args: &[&str]) -> String {
    let o = cardinal(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A small LIBSVM multi-label file (`rows` rows, 6 features, 4 labels that depend on the
/// features, so that every system learns something), written to `dir/small.svm`.
fn small_data(dir: &Path, rows: usize) -> std::path::PathBuf {
    let mut seed = 7u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as f64) / ((1u64 << 31) as f64)
    };
    let mut text = String::new();
    for _ in 0..rows {
        let x: Vec<f64> = (0..6).map(|_| next()).collect();
        let mut labels: Vec<String> = (0..4)
            .filter(|&j| x[j] + 0.3 * x[j + 2] + 0.2 * next() > 0.75)
            .map(|j| j.to_string())
            .collect();
        if labels.is_empty() {
            labels.push("0".into());
        }
        let feats: Vec<String> = x
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{}:{v:.4}", i + 1))
            .collect();
        text.push_str(&format!("{} {}\n", labels.join(","), feats.join(" ")));
    }
    let p = dir.join("small.svm");
    std::fs::write(&p, text).unwrap();
    p
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A forest model names the forest in `config.json`, `eval`, its JSON, `predict`'s header and
/// `info`; `eval` prints no `y_T` and no constraint line for it; a threshold is refused for
/// it; its graded scores are marginals, strictly between 0 and 1 somewhere; and a folder
/// saved before the forests were systems (`"system": "pnc"` with a forest) loads as the forest.
#[test]
fn a_forest_model_says_it_is_a_forest_and_refuses_a_threshold() {
    let dir = tmpdir("systems-forest");
    let data = small_data(&dir, 150);
    let out = dir.join("m");
    let trained = ok(&[
        "train",
        "--dataset",
        arg(&data),
        "--system",
        "forest",
        "--out",
        arg(&out),
        "--quiet",
    ]);
    // `--quiet` still says what was trained.
    assert!(
        trained.contains("system: forest (preset forest)"),
        "{trained}"
    );
    assert!(trained.contains("not Predict and Constrain"), "{trained}");
    let cfg = json(&std::fs::read_to_string(out.join("config.json")).unwrap());
    assert_eq!(cfg["system"], "forest");

    let eval = ok(&["eval", "--model", arg(&out)]);
    assert!(eval.contains("system: forest"), "{eval}");
    assert!(
        !eval.contains("y_T") && !eval.contains("constraint:"),
        "{eval}"
    );
    assert!(eval.contains("the decided set"), "{eval}");
    let report = json(&ok(&["eval", "--model", arg(&out), "--json", "-"]));
    assert_eq!(report["system"], "forest");
    assert_eq!(report["preset"], "forest");
    assert_eq!(report["outputs"], "decided");

    let refused = cardinal(&[
        "predict",
        "--model",
        arg(&out),
        "--data",
        arg(&data),
        "--labels-by",
        "threshold=0.3",
    ]);
    assert!(!refused.status.success());
    let msg = text(&refused);
    assert!(
        msg.contains("threshold=0.3") && msg.contains("`forest`"),
        "{msg}"
    );

    let p = cardinal(&[
        "predict",
        "--model",
        arg(&out),
        "--data",
        arg(&data),
        "--all-scores",
    ]);
    assert!(p.status.success(), "{}", text(&p));
    assert!(
        String::from_utf8_lossy(&p.stderr).contains("system forest"),
        "{}",
        text(&p)
    );
    let mut graded = Vec::new();
    for line in String::from_utf8_lossy(&p.stdout).lines() {
        let row = json(line);
        for v in row["scores"].as_object().unwrap().values() {
            graded.push(v.as_f64().unwrap());
        }
    }
    assert!(graded.iter().all(|v| (0.0..=1.0).contains(v)));
    assert!(
        graded.iter().any(|&v| v > 0.0 && v < 1.0),
        "a forest's scores are its marginals, not its 0/1 set"
    );

    let info = ok(&["info", arg(&out)]);
    assert!(info.contains("system: forest (preset forest)"), "{info}");
    assert!(info.contains("a threshold does not apply"), "{info}");

    // A folder of the time when a forest said `pnc` loads as what it is.
    let old = cfg
        .to_string()
        .replace("\"system\":\"forest\"", "\"system\":\"pnc\"");
    assert!(old.contains("\"system\":\"pnc\""));
    std::fs::write(out.join("config.json"), old).unwrap();
    let info = ok(&["info", arg(&out), "--json"]);
    assert_eq!(json(&info)["system"], "forest");
}

/// The P&C-only switch: the search (on, small data) scores Predict and Constrain's
/// candidates only and records it; the model is P&C, and `y_T` holds the constraint on every
/// test row. `train` names the search's plan and the chosen system; `eval --json` names the
/// system and the candidate.
#[test]
fn the_pnc_switch_trains_pnc_and_the_constraint_holds() {
    let dir = tmpdir("systems-pnc");
    let data = small_data(&dir, 120);
    let cfg = dir.join("small.json");
    // Small networks, few epochs: the candidates stay as the search makes them (paper's).
    std::fs::write(
        &cfg,
        r#"{"model": {"hidden": 16, "card_hidden": 8}, "train": {"epochs": 4}}"#,
    )
    .unwrap();
    let out = dir.join("m");
    let o = cardinal(&[
        "train",
        "--dataset",
        arg(&data),
        "--config",
        arg(&cfg),
        "--system",
        "pnc",
        "--search",
        "--out",
        arg(&out),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let all = text(&o);
    assert!(all.contains("search: on (96 training rows"), "{all}");
    assert!(
        all.contains("Predict and Constrain's candidates only"),
        "{all}"
    );
    // Progress off a terminal: a line per fold of each candidate, every fold on small data.
    for line in [
        "search: fold 1 of 5 of predict in",
        "search: fold 5 of 5 of paper-wide in",
        "search: fold 5 of 5 of predict-forest-prior in",
    ] {
        assert!(all.contains(line), "{line}: {all}");
    }
    let report = json(&ok(&["eval", "--model", arg(&out), "--json", "-"]));
    assert_eq!(report["system"], "pnc");
    let search = &report["search"];
    assert_eq!(search["scope"], "pnc");
    let scores = search["scores"].as_array().unwrap();
    assert_eq!(scores.len(), 4);
    assert_eq!(
        (&search["folds"], &search["folds_run"]),
        (&5.into(), &5.into())
    );
    assert!(scores.iter().all(|s| s["system"] == "pnc"), "{search}");
    assert_eq!(report["preset"], search["chosen"]);
    let c = &report["constraint"];
    assert_eq!(c["frac_sum_within_001"], 1.0, "{c}");
    assert_eq!(c["frac_in_box"], 1.0, "{c}");
    let eval = ok(&["eval", "--model", arg(&out)]);
    assert!(
        eval.contains("system: pnc") && eval.contains("<- chosen"),
        "{eval}"
    );
    assert!(
        eval.contains("constraint: |sum y - z| <= 0.01 on 100.0% of rows"),
        "{eval}"
    );
}
