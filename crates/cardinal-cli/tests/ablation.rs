//! `cardinal reproduce ablation` end to end on a tiny file: every variant's column holds a
//! number, and a re-run reads its cells back instead of training (a cell cut short trains
//! again).

mod common;
use cardinal_paper::ablation::VARIANTS;
use common::{arg, cardinal, text, tmpdir, write_config, write_svm};

/// A small model trained briefly, read over both presets.
const QUICK: &str = r#"{"model": {"hidden": 16, "card_hidden": 8, "energy_hidden": 4}, "inference": {"steps": 3}, "train": {"epochs": 2, "full_epochs": 1, "patience": 0}}"#;

#[test]
fn every_variant_has_a_number_and_a_rerun_reads_the_cache() {
    let dir = tmpdir("ablation");
    let data = write_svm(&dir, "tiny.svm", 60);
    let cfg = write_config(&dir, QUICK);
    let md = dir.join("out").join("ablation.md");
    let cache = dir.join("cache");
    let args = [
        "reproduce",
        "ablation",
        "--datasets",
        arg(&data),
        "--seeds",
        "1",
        "--config",
        arg(&cfg),
        "--out",
        arg(&md),
        "--cache",
        arg(&cache),
    ];
    let first = cardinal(&args);
    assert!(first.status.success(), "{}", text(&first));
    let stdout = String::from_utf8(first.stdout.clone()).unwrap();
    assert_eq!(std::fs::read_to_string(&md).unwrap(), stdout);
    // `full` and `fixed-z` share one training: seven trainings for eight variants.
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(err.matches("training ").count(), 7, "{err}");
    assert!(
        err.contains("training full + fixed-z on tiny.svm (seed 0)"),
        "{err}"
    );

    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines.iter().find(|l| l.starts_with("| dataset |")).unwrap();
    for v in VARIANTS {
        assert!(header.contains(&format!("| `{v}` |")), "{header}");
    }
    let row: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("| tiny.svm |"))
        .unwrap()
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(row.len(), 1 + VARIANTS.len() + 1, "{row:?}");
    for (v, cell) in VARIANTS.iter().zip(&row[1..]) {
        let f1: f64 = cell.parse().unwrap_or_else(|_| panic!("{v}: `{cell}`"));
        assert!((0.0..=100.0).contains(&f1), "{v}: {f1}");
    }
    assert_eq!(row.last(), Some(&"0"), "the seeds");
    // The differences against `full`: one per other variant, `fixed-z` among them.
    let diffs = lines
        .iter()
        .filter(|l| l.starts_with("| tiny.svm |"))
        .nth(1)
        .unwrap();
    assert_eq!(diffs.matches('|').count(), VARIANTS.len() + 1, "{diffs}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(md.with_extension("json")).unwrap()).unwrap();
    let fixed = &json[0]["cells"]["fixed-z"][0];
    assert!(fixed["fixed_count"].as_u64().is_some(), "{fixed}");

    // A re-run trains nothing and prints the same tables.
    let again = cardinal(&args);
    assert!(again.status.success(), "{}", text(&again));
    assert!(!String::from_utf8_lossy(&again.stderr).contains("training"));
    assert_eq!(again.stdout, first.stdout);

    // A cell cut short is a miss: its variant alone trains again, never read as a result.
    let cut = cache.join("tiny.svm").join("no-energy");
    let key = std::fs::read_dir(&cut)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(key.join("seed0.json"), b"{\"seed\": 0, ").unwrap();
    let third = cardinal(&args);
    assert!(third.status.success(), "{}", text(&third));
    let err = String::from_utf8_lossy(&third.stderr);
    assert_eq!(err.matches("training ").count(), 1, "{err}");
    assert!(err.contains("training no-energy on tiny.svm"), "{err}");
}
