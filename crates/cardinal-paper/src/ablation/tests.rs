//! The ablation's variants differ from `full` exactly where they say, and its tables.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use cardinal::data::synthetic::{synthetic, SyntheticShape};

fn train() -> Dataset {
    synthetic(&SyntheticShape {
        train_rows: 40,
        test_rows: 10,
        features: 8,
        labels: 6,
        density: 0.3,
        seed: 3,
    })
    .train
}

/// Every leaf of a configuration's JSON by its dotted path (a field left out when at its
/// default, `inference.expected_f1_count`, is simply absent).
fn leaves(cfg: &Config) -> BTreeMap<String, serde_json::Value> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, serde_json::Value>) {
        match v {
            serde_json::Value::Object(o) => {
                for (k, v) in o {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&path, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.clone());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", &serde_json::to_value(cfg).unwrap(), &mut out);
    out
}

/// The dotted paths where `a` and `b` differ.
fn changed(a: &Config, b: &Config) -> BTreeSet<String> {
    let (a, b) = (leaves(a), leaves(b));
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

fn set(fields: &[&str]) -> BTreeSet<String> {
    fields.iter().map(|s| s.to_string()).collect()
}

/// Each variant differs from `full` (or `paper-fixed-z` from `paper`) in exactly the fields it
/// names, so that none can silently equal what it is compared with.
#[test]
fn each_variant_differs_from_full_exactly_where_it_says() {
    let vs = variants(&train(), None).unwrap();
    let names: Vec<&str> = vs.iter().map(|v| v.name).collect();
    assert_eq!(names, VARIANTS);
    let get = |n: &str| vs.iter().find(|v| v.name == n).unwrap();
    let full = &get("full").config;
    // `full` is `predict` itself, the search off: never a forest.
    let mut predict = Config::predict();
    predict.search = cardinal::config::SearchConfig::default();
    assert_eq!(full, &predict);
    assert_eq!(full.search, cardinal::config::SearchConfig::default());
    assert_eq!(full.system, "pnc");
    let expected: [(&str, &[&str]); 5] = [
        ("fixed-z", &[]),
        (
            "no-projection",
            &[
                "inference.train_projection",
                "inference.test_projection",
                "inference.final_projection",
                "train.tune_threshold",
            ],
        ),
        ("no-energy", &["model.energy_hidden"]),
        (
            "t0",
            &[
                "inference.steps",
                "inference.final_projection",
                "train.tune_threshold",
            ],
        ),
        ("f1-count", &["inference.expected_f1_count"]),
    ];
    for (name, fields) in expected {
        assert_eq!(changed(full, &get(name).config), set(fields), "{name}");
    }
    // `fixed-z` trains what `full` trains and differs in how it is read.
    assert_eq!(get("fixed-z").decode, Decode::FixedCount);
    assert!(vs
        .iter()
        .filter(|v| v.name != "fixed-z")
        .all(|v| v.decode == Decode::Predicted));
    assert_eq!(get("paper").config, Config::paper());
    assert_eq!(
        changed(&get("paper").config, &get("paper-fixed-z").config),
        set(&[
            "model.counts.kind",
            "model.counts.min",
            "model.counts.max",
            "model.counts.coverage"
        ])
    );
    let k = mean_count_constant(&train());
    assert!(k >= 1);
    assert_eq!(
        get("paper-fixed-z").config.model.counts,
        CountRange::Fixed { min: k, max: k }
    );
    let t0 = &get("t0").config.inference;
    assert_eq!((t0.steps, t0.final_projection), (0, None));
}

/// Overrides are read over each preset before the variant's own change, which they cannot
/// undo; every variant still validates and is a system of the registry.
#[test]
fn overrides_apply_under_every_variant() {
    let quick = r#"{"model": {"hidden": 8, "energy_hidden": 4}, "inference": {"steps": 3}}"#;
    let vs = variants(&train(), Some(quick)).unwrap();
    for v in &vs {
        assert_eq!(v.config.model.hidden, 8, "{}", v.name);
        assert_eq!(
            v.config.search,
            cardinal::config::SearchConfig::default(),
            "{}",
            v.name
        );
    }
    let get = |n: &str| &vs.iter().find(|v| v.name == n).unwrap().config;
    assert_eq!(get("full").inference.steps, 3);
    assert_eq!(get("t0").inference.steps, 0);
    assert_eq!(get("no-energy").model.energy_hidden, 0);
    assert_eq!(get("full").model.energy_hidden, 4);
    assert!(variants(&train(), Some(r#"{"model": {"hidden": 0}}"#)).is_err());
}

fn cell(seed: u64, f1: f64) -> Cell {
    Cell {
        seed,
        f1,
        f1_empty_one: f1 + 10.0,
        threshold: 0.5,
        fixed_count: None,
        mean_count: 1.0,
        train_seconds: 0.0,
        epochs: 1,
        config: Config::predict(),
    }
}

#[test]
fn differences_are_paired_by_seed_and_tables_show_every_variant() {
    let full = vec![cell(0, 50.0), cell(1, 60.0), cell(2, 70.0)];
    let other = vec![cell(2, 71.0), cell(0, 48.0)];
    assert_eq!(paired_differences(&full, &other), vec![-2.0, 1.0]);
    let mut cells = BTreeMap::new();
    cells.insert("full".to_string(), full);
    cells.insert("t0".to_string(), other);
    let rows = [DatasetCells {
        dataset: "birds".into(),
        empty_rows: true,
        cells,
    }];
    let md = tables(&rows, &[("full", "a"), ("t0", "b"), ("no-energy", "c")]);
    assert!(md.contains("| birds | 60.00 ± 10.00 (e=1: 70.00 ± 10.00) | 59.50 ± 16.26 (e=1: 69.50 ± 16.26) | not run | 0,1,2 |"), "{md}");
    assert!(md.contains("| birds | -0.50 ± 2.12 | – |"), "{md}");
    assert!(md.contains("- `no-energy`: c"), "{md}");
}
