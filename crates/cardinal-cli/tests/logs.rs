//! What the binary says off a terminal: epoch lines on a piped standard error, JSON logs,
//! verbosity, the one F1 unit, completions, the man page and the report command.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::{arg, cardinal, train_args, write_config};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small model, three epochs in the first phase and one on all of train.
const QUICK: &str = r#"{"model": {"hidden": 16, "card_hidden": 8}, "inference": {"steps": 3}, "train": {"epochs": 3, "full_epochs": 1}}"#;

fn train(dir: &Path, name: &str, extra: &[&str]) -> (PathBuf, Output) {
    let cfg = write_config(dir, QUICK);
    let out = dir.join(name);
    let o = cardinal(&train_args(
        &cfg,
        &out,
        &[&["--no-checkpoints"], extra].concat(),
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    (out, o)
}

/// `cardinal report` with one `--model` per entry of `models`, written to `page` when given.
fn report(models: &[&Path], page: Option<&Path>) -> Output {
    let mut args = vec!["report"];
    for m in models {
        args.extend(["--model", arg(m)]);
    }
    if let Some(p) = page {
        args.extend(["--out", arg(p)]);
    }
    cardinal(&args)
}

#[test]
fn a_piped_train_prints_one_line_per_epoch() {
    let tmp = tempfile::tempdir().unwrap();
    let (model, o) = train(tmp.path(), "m", &[]);
    let err = stderr(&o);
    let epochs = std::fs::read_to_string(model.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .count();
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(" epoch ")).collect();
    assert_eq!(lines.len(), epochs, "{err}");
    assert!(lines[0].starts_with("phase 1 epoch   1: loss"), "{err}");
    assert!(lines.iter().all(|l| l.contains("ETA")), "{err}");
    // Phase 1 has a dev split: its lines carry the dev F1.
    assert!(lines[0].contains("dev F1"), "{err}");

    // --quiet: no progress at all.
    let (_, o) = train(tmp.path(), "q", &["--quiet"]);
    assert!(!stderr(&o).contains(" epoch "), "{}", stderr(&o));
}

#[test]
fn json_logs_are_one_object_per_line_and_verbosity_adds_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let (model, o) = train(tmp.path(), "m", &["--log-format", "json", "-v"]);
    let err = stderr(&o);
    let events: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let epochs = std::fs::read_to_string(model.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .count();
    let of_kind = |k: &str| events.iter().filter(|e| e["fields"]["event"] == k).count();
    assert_eq!(of_kind("epoch"), epochs, "{err}");
    assert_eq!(of_kind("phase"), 2, "{err}");
    let first = events
        .iter()
        .find(|e| e["fields"]["event"] == "epoch")
        .unwrap();
    assert_eq!(first["fields"]["phase"], 1);
    assert!(
        first["fields"]["dev_example_f1"].as_f64().unwrap() > 1.0,
        "percent: {first}"
    );
    // -v: the library's own steps.
    let message = |m: &str| events.iter().any(|e| e["fields"]["message"] == m);
    assert!(message("data loaded"), "{err}");
    assert!(message("training phase starts"), "{err}");
    assert!(message("model saved"), "{err}");

    // Without -v the library's info events stay out; progress stays in.
    let (_, o) = train(tmp.path(), "n", &["--log-format", "json"]);
    let err = stderr(&o);
    assert!(!err.contains("data loaded"), "{err}");
    assert!(err.contains("\"event\":\"epoch\""), "{err}");
}

#[test]
fn eval_json_is_in_percent_like_every_other_output() {
    let tmp = tempfile::tempdir().unwrap();
    let (model, _) = train(tmp.path(), "m", &["--quiet"]);
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("eval.json")).unwrap()).unwrap();
    assert_eq!(saved["unit"], "percent");
    let f1 = saved["at_threshold"]["example_f1"].as_f64().unwrap();
    let o = cardinal(&["eval", "--model", arg(&model)]);
    let printed: f64 = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("EXAMPLE_F1 ").map(|v| v.parse().unwrap()))
        .unwrap();
    assert!((printed - f1).abs() <= 0.005, "{printed} vs {f1}");
    assert!(f1 > 1.0, "a fraction would be below 1: {f1}");

    // An eval.json in the old unit (fractions, no tag) is still read as it was meant: the
    // report built from it shows the same percent.
    let mut old = saved.clone();
    old.as_object_mut().unwrap().remove("unit");
    old["at_threshold"]["example_f1"] = (f1 / 100.0).into();
    let cell = tmp.path().join("old-cell");
    std::fs::create_dir_all(&cell).unwrap();
    std::fs::write(cell.join("eval.json"), old.to_string()).unwrap();
    let page = tmp.path().join("old.html");
    let o = report(&[&cell], Some(&page));
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!(">{f1:.2}<")),
        "{f1:.2} not in the page"
    );
}

#[test]
fn report_writes_one_page_for_several_models() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _) = train(tmp.path(), "a", &["--quiet"]);
    let (b, _) = train(tmp.path(), "b", &["--quiet", "--seed", "1"]);
    let page = tmp.path().join("r.html");
    let o = report(&[&a, &b], Some(&page));
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    // The comparison (curves and thresholds of both) plus five figures per model.
    assert_eq!(html.matches("<svg").count(), 2 + 2 * 5);
    assert!(html.contains("<h2>comparison</h2>"));
    let o = report(&[&tmp.path().join("none")], None);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("none"), "{}", stderr(&o));
}

#[test]
fn completions_and_man_pages_come_from_the_flags() {
    let o = cardinal(&["completions", "bash"]);
    assert!(o.status.success());
    let script = String::from_utf8_lossy(&o.stdout);
    assert!(
        script.contains("--log-format") && script.contains("report"),
        "{script}"
    );
    let o = cardinal(&["man"]);
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && page.starts_with(".ie"), "{page}");
    assert!(page.contains("report"));
    let o = cardinal(&["man", "train"]);
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(
        page.contains("cardinal\\-train") && page.contains("\\-\\-wait"),
        "{page}"
    );
    let o = cardinal(&["man", "nope"]);
    assert!(!o.status.success());
}

#[test]
fn threads_are_accepted_before_and_after_the_subcommand_and_wait_only_where_it_trains() {
    let o = cardinal(&["--threads", "1", "data", "stats", "bibtex", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cardinal(&["data", "stats", "bibtex", "--wait", "passive"]);
    assert!(!o.status.success());
    let o = cardinal(&["eval", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.contains("--threads") && !help.contains("--wait"),
        "{help}"
    );
}

/// On a small training file the search says what it is doing and what it chose; `--no-search`
/// and `--quiet` silence it, and asking for both `--search` and `--no-search` is refused.
#[test]
fn the_search_reports_its_candidates_and_its_choice() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("small.svm");
    let mut text = String::new();
    for r in 0..60 {
        let (a, b) = (r % 10 + 1, (r * 7 + 3) % 10 + 1);
        let labels = format!("{},{}", a % 4, b % 4);
        text.push_str(&format!("{labels} {}:1 {}:1\n", a.min(b), a.max(b) + 10));
    }
    std::fs::write(&data, text).unwrap();
    let d = data.to_str().unwrap();
    let (model, o) = train(tmp.path(), "s", &["--dataset", d, "--search"]);
    let err = stderr(&o);
    assert!(
        err.contains("search: 6 candidate configurations, 5-fold CV on the 48 training rows"),
        "{err}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("search: 5-fold CV example-F1 (empty for empty scores 1) predict "))
        .unwrap_or_else(|| panic!("{err}"));
    // `; training NAME at THRESHOLD`: both are the saved configuration's.
    let chosen = line.rsplit("; training ").next().unwrap();
    let (chosen, threshold) = chosen.split_once(" at ").unwrap();
    let saved = std::fs::read_to_string(model.join("config.json")).unwrap();
    assert!(
        saved.contains(&format!("\"preset\": \"{chosen}\"")),
        "{line}\n{saved}"
    );
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(
        saved["threshold"].as_f64().unwrap(),
        threshold.parse::<f64>().unwrap(),
        "{line}"
    );
    // The plan is said before training: searched, and why.
    assert!(
        err.contains("search: on (48 training rows <= search.max_rows = 2000)"),
        "{err}"
    );
    // A configuration file that sets hyper-parameters turns the search off by itself, and
    // says so.
    let (_, o) = train(tmp.path(), "n", &["--dataset", d]);
    let err = stderr(&o);
    assert!(
        err.contains("search: off (the configuration trains as it is)")
            && !err.contains("search: 5"),
        "{err}"
    );
    // `--quiet` hides the search's progress, not what was trained.
    let (_, o) = train(tmp.path(), "q", &["--dataset", d, "--search", "--quiet"]);
    assert!(!stderr(&o).contains("search: 5"), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("chosen by the default's search") && out.contains("<- chosen"),
        "{out}"
    );
    let o = cardinal(&[
        "train",
        "--dataset",
        d,
        "--search",
        "--no-search",
        "--out",
        "x",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("--no-search"),
        "{}",
        stderr(&o)
    );
}

/// With `--log-format json` standard error holds JSON objects only: `predict`'s note of what
/// the model is arrives as a progress event, not as a line of text.
#[test]
fn notes_are_json_events_under_json_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let (model, _) = train(tmp.path(), "m", &["--quiet"]);
    let o = cardinal(&[
        "--log-format",
        "json",
        "predict",
        "--model",
        arg(&model),
        "--data",
        "bibtex",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let events: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        events.iter().any(|e| e["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("note: predicting with the model in"))),
        "{err}"
    );
}
