//! Agreement with scikit-learn on the committed fixture written by `tools/gen_metrics_fixture.py`.

use cardinal_data::data::LabelSets;
use cardinal_data::metrics::{
    binarize, cardinality_report, default_threshold_grid, evaluate, evaluate_with_scores,
    example_f1_by_threshold, precision_at_k, tune_threshold, Binarize, EmptyF1, MetricOptions,
};
use serde_json::Value;

const TOL: f64 = 1e-6;

struct Fixture {
    v: Value,
    n_labels: usize,
    gold: LabelSets,
    pred: LabelSets,
    scores: Vec<f32>,
}

fn sets(v: &Value, n_labels: usize) -> LabelSets {
    let mut s = LabelSets::new(n_labels);
    for row in v.as_array().unwrap() {
        let r: Vec<u32> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        s.push_row(&r);
    }
    s
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn load() -> Fixture {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metrics/sklearn_small.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let n_labels = v["n_labels"].as_u64().unwrap() as usize;
    let gold = sets(&v["gold"], n_labels);
    let pred = sets(&v["pred"], n_labels);
    let scores = v["scores"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(f32s)
        .collect();
    Fixture {
        v,
        n_labels,
        gold,
        pred,
        scores,
    }
}

fn close(name: &str, got: f64, want: &Value) {
    let want = want
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: no expected value"));
    assert!(
        (got - want).abs() <= TOL,
        "{name}: got {got}, sklearn {want}"
    );
}

fn conv_key(e: EmptyF1) -> &'static str {
    match e {
        EmptyF1::Zero => "zero",
        EmptyF1::One => "one",
    }
}

#[test]
fn fixture_has_the_edge_rows() {
    let f = load();
    let both_empty = (0..f.gold.n_rows).filter(|&r| f.gold.count(r) == 0 && f.pred.count(r) == 0);
    assert!(both_empty.count() >= 2);
    assert!((0..f.gold.n_rows).any(|r| f.gold.count(r) == 0 && f.pred.count(r) > 0));
    assert!((0..f.gold.n_rows).any(|r| f.gold.count(r) > 0 && f.pred.count(r) == 0));
    assert!((0..f.gold.n_rows).any(|r| f.gold.count(r) == f.n_labels - 2));
}

#[test]
fn label_metrics_match_sklearn_for_both_conventions() {
    let f = load();
    for e in [EmptyF1::Zero, EmptyF1::One] {
        let opts = MetricOptions {
            empty_f1: e,
            ..Default::default()
        };
        let r = evaluate(&f.pred, &f.gold, &opts);
        let c = &f.v["expected"]["common"];
        close("macro_f1", r.macro_f1, &c["macro_f1"]);
        close("micro_f1", r.micro_f1, &c["micro_f1"]);
        close("micro_precision", r.micro_precision, &c["micro_precision"]);
        close("micro_recall", r.micro_recall, &c["micro_recall"]);
        close("hamming_loss", r.hamming_loss, &c["hamming_loss"]);
        close("subset_accuracy", r.subset_accuracy, &c["subset_accuracy"]);
        let x = &f.v["expected"][conv_key(e)];
        close("example_f1", r.example_f1, &x["example_f1"]);
        close(
            "example_precision",
            r.example_precision,
            &x["example_precision"],
        );
        close("example_recall", r.example_recall, &x["example_recall"]);
        close("example_jaccard", r.example_jaccard, &x["example_jaccard"]);
        assert_eq!(r.empty_f1, e);
        assert_eq!(
            r.labels_never_seen, 1,
            "label 11 is never predicted nor gold"
        );
    }
}

#[test]
fn precision_at_k_matches_numpy() {
    let f = load();
    let want = f.v["precision_at_k"].as_array().unwrap();
    let ks: Vec<usize> = want
        .iter()
        .map(|w| w["k"].as_u64().unwrap() as usize)
        .collect();
    let got = precision_at_k(&f.scores, &f.gold, &ks).unwrap();
    for (g, w) in got.iter().zip(want) {
        close(&format!("precision@{}", g.k), g.value, &w["value"]);
    }
    let opts = MetricOptions {
        precision_at: ks.clone(),
        ..Default::default()
    };
    let r = evaluate_with_scores(&f.pred, &f.gold, &f.scores, &opts).unwrap();
    assert_eq!(r.precision_at_k, got);
}

#[test]
fn thresholds_and_tuning_match_sklearn() {
    let f = load();
    let grid = f32s(&f.v["grid"]);
    let bits = |g: &[f32]| g.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&grid), bits(&default_threshold_grid()));
    for e in [EmptyF1::Zero, EmptyF1::One] {
        let want = f.v["f1_by_threshold"][conv_key(e)].as_array().unwrap();
        let fast = example_f1_by_threshold(&f.scores, &f.gold, &grid, e).unwrap();
        let opts = MetricOptions {
            empty_f1: e,
            ..Default::default()
        };
        for ((&t, w), &fa) in grid.iter().zip(want).zip(&fast) {
            close(&format!("fast F1 at {t}"), fa, w);
            let p = binarize(&f.scores, f.n_labels, &Binarize::Threshold(t), None).unwrap();
            close(
                &format!("F1 at {t}"),
                evaluate(&p, &f.gold, &opts).example_f1,
                w,
            );
        }
        let (t, v) = tune_threshold(&f.scores, &f.gold, &grid, &opts).unwrap();
        let tuned = &f.v["tuned"][conv_key(e)];
        assert_eq!(t, tuned["threshold"].as_f64().unwrap() as f32);
        close("tuned F1", v, &tuned["f1"]);
    }
}

#[test]
fn top_k_and_round_z_match_numpy() {
    let f = load();
    let k = f.v["top_k"]["k"].as_u64().unwrap() as usize;
    let want = sets(&f.v["top_k"]["sets"], f.n_labels);
    assert_eq!(
        binarize(&f.scores, f.n_labels, &Binarize::TopK(k), None).unwrap(),
        want
    );
    let z = f32s(&f.v["z"]);
    let want = sets(&f.v["top_round_z"], f.n_labels);
    assert_eq!(
        binarize(&f.scores, f.n_labels, &Binarize::TopRoundZ, Some(&z)).unwrap(),
        want
    );
}

#[test]
fn cardinality_report_matches_numpy() {
    let f = load();
    let z = f32s(&f.v["z"]);
    let c = &f.v["cardinality"];
    let r = cardinality_report(&z, &f.gold, c["train_mean"].as_f64().unwrap()).unwrap();
    close("mean_z", r.mean_z, &c["mean_z"]);
    close("mean_gold", r.mean_gold, &c["mean_gold"]);
    close("mae", r.mae, &c["mae"]);
    close("mse", r.mse, &c["mse"]);
    close("pearson", r.pearson.unwrap(), &c["pearson"]);
    close(
        "rounded_accuracy",
        r.rounded_accuracy,
        &c["rounded_accuracy"],
    );
    close("baseline_mae", r.baseline_mae, &c["baseline_mae"]);
    close("baseline_mse", r.baseline_mse, &c["baseline_mse"]);
    let hist = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect::<Vec<_>>()
    };
    assert_eq!(r.hist_round_z, hist(&c["hist_round_z"]));
    assert_eq!(r.hist_gold, hist(&c["hist_gold"]));
}
