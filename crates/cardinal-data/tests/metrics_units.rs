//! Conventions, errors and edge cases of the metrics module.

use cardinal_data::data::LabelSets;
use cardinal_data::metrics::{
    binarize, cardinality_report, default_threshold_grid, evaluate, evaluate_with_scores,
    mean_cardinality, precision_at_k, round_cardinality, tune_threshold, Binarize, Confusion,
    EmptyF1, MetricOptions, MetricReport, MetricsError,
};

fn sets(n_labels: usize, rows: &[&[u32]]) -> LabelSets {
    let mut s = LabelSets::new(n_labels);
    for r in rows {
        s.push_row(r);
    }
    s
}

/// serde_json's default float parsing may be off in the last bit, so compare numbers loosely.
fn json_close(a: &serde_json::Value, b: &serde_json::Value) {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => {
            assert!(
                (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 1e-12,
                "{x} vs {y}"
            )
        }
        (Array(x), Array(y)) => {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).for_each(|(x, y)| json_close(x, y));
        }
        (Object(x), Object(y)) => {
            assert_eq!(x.len(), y.len());
            x.iter().for_each(|(k, v)| json_close(v, &y[k]));
        }
        _ => assert_eq!(a, b),
    }
}

#[test]
fn both_empty_row_follows_the_convention() {
    let gold = sets(4, &[&[], &[0, 1]]);
    let pred = sets(4, &[&[], &[0]]);
    let zero = evaluate(&pred, &gold, &MetricOptions::default());
    let one = evaluate(
        &pred,
        &gold,
        &MetricOptions {
            empty_f1: EmptyF1::One,
            ..Default::default()
        },
    );
    // Row 1: F1 = 2/3, Jaccard = 1/2, P = 1, R = 1/2.
    assert!((zero.example_f1 - (2.0 / 3.0) / 2.0).abs() < 1e-12);
    assert!((one.example_f1 - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
    // Every report also carries the other convention's example-F1, the same numbers swapped.
    assert_eq!(zero.example_f1_other_empty, one.example_f1);
    assert_eq!(one.example_f1_other_empty, zero.example_f1);
    assert!((zero.example_jaccard - 0.25).abs() < 1e-12);
    assert!((one.example_jaccard - 0.75).abs() < 1e-12);
    assert_eq!(zero.n_both_empty, 1);
    // Label metrics ignore the convention: labels 2, 3 never occur and count 0 in macro-F1.
    assert_eq!(zero.macro_f1, one.macro_f1);
    assert!((zero.macro_f1 - (1.0 + 0.0) / 4.0).abs() < 1e-12);
    assert_eq!(zero.labels_never_seen, 2);
    assert!((zero.hamming_loss - 1.0 / 8.0).abs() < 1e-12);
    assert_eq!(zero.subset_accuracy, 0.5);
}

#[test]
fn no_examples_gives_zeros() {
    let e = LabelSets::new(5);
    let r = evaluate(&e, &e, &MetricOptions::default());
    assert_eq!(
        (r.example_f1, r.macro_f1, r.micro_f1, r.hamming_loss),
        (0.0, 0.0, 0.0, 0.0)
    );
    assert_eq!(precision_at_k(&[], &e, &[1, 3]).unwrap()[1].value, 0.0);
}

#[test]
fn shape_errors() {
    let a = sets(3, &[&[0]]);
    let b = sets(4, &[&[0]]);
    assert!(matches!(
        Confusion::new(&a, &b),
        Err(MetricsError::LabelMismatch { .. })
    ));
    let c = sets(3, &[&[0], &[1]]);
    assert!(matches!(
        Confusion::new(&a, &c),
        Err(MetricsError::RowMismatch { .. })
    ));
    let mut bad = LabelSets::new(3);
    bad.n_rows = 1;
    bad.indptr.push(1);
    bad.indices.push(7);
    assert!(matches!(
        Confusion::new(&bad, &a),
        Err(MetricsError::LabelOutOfRange { label: 7, .. })
    ));
    assert_eq!(
        binarize(&[0.0; 5], 2, &Binarize::TopK(1), None),
        Err(MetricsError::ScoresShape {
            len: 5,
            n_labels: 2
        })
    );
    assert_eq!(
        binarize(&[], 0, &Binarize::TopK(1), None),
        Err(MetricsError::ZeroLabels)
    );
    assert_eq!(
        precision_at_k(&[0.0; 3], &a, &[0]),
        Err(MetricsError::ZeroK)
    );
    assert!(matches!(
        precision_at_k(&[0.0; 6], &a, &[1]),
        Err(MetricsError::RowMismatch { .. })
    ));
    assert_eq!(
        tune_threshold(&[0.0; 3], &a, &[], &MetricOptions::default()),
        Err(MetricsError::EmptyGrid)
    );
    assert!(matches!(
        tune_threshold(&[0.0; 3], &a, &[f32::NAN], &MetricOptions::default()),
        Err(MetricsError::NonFiniteThreshold { .. })
    ));
}

#[test]
#[should_panic(expected = "evaluate")]
fn evaluate_panics_on_mismatch() {
    evaluate(&sets(3, &[&[0]]), &sets(3, &[]), &MetricOptions::default());
}

#[test]
fn round_z_rule() {
    assert_eq!(round_cardinality(2.5, 10), 3);
    assert_eq!(round_cardinality(2.49, 10), 2);
    assert_eq!(round_cardinality(0.5, 10), 1);
    assert_eq!(round_cardinality(-0.7, 10), 0);
    assert_eq!(round_cardinality(11.6, 10), 10);
    assert_eq!(round_cardinality(f32::NAN, 10), 0);
    let s = [0.1, 0.9, 0.5, 0.7, 0.2, 0.3];
    let out = binarize(&s, 3, &Binarize::TopRoundZ, Some(&[1.6, 0.4])).unwrap();
    assert_eq!(out, sets(3, &[&[1, 2], &[]]));
    assert_eq!(
        binarize(&s, 3, &Binarize::TopRoundZ, None),
        Err(MetricsError::MissingZ)
    );
    assert_eq!(
        binarize(&s, 3, &Binarize::TopRoundZ, Some(&[1.0])),
        Err(MetricsError::ZLength { len: 1, rows: 2 })
    );
    assert!(matches!(
        binarize(&s, 3, &Binarize::TopRoundZ, Some(&[1.0, f32::INFINITY])),
        Err(MetricsError::NonFiniteZ { row: 1, .. })
    ));
    // z is ignored by the other rules.
    assert!(binarize(&s, 3, &Binarize::TopK(1), None).is_ok());
}

#[test]
fn ties_and_nan_in_ranking() {
    // Ties go to the lower index; NaN ranks last and never passes a threshold.
    let s = [0.5, f32::NAN, 0.5, 0.5];
    assert_eq!(
        binarize(&s, 4, &Binarize::TopK(2), None).unwrap(),
        sets(4, &[&[0, 2]])
    );
    assert_eq!(
        binarize(&s, 4, &Binarize::TopK(4), None).unwrap(),
        sets(4, &[&[0, 1, 2, 3]])
    );
    assert_eq!(
        binarize(&s, 4, &Binarize::TopK(9), None).unwrap(),
        sets(4, &[&[0, 1, 2, 3]])
    );
    assert_eq!(
        binarize(&s, 4, &Binarize::TopK(0), None).unwrap(),
        sets(4, &[&[]])
    );
    // Threshold is inclusive (score >= t), as in the authors' `y >= 0.5`.
    assert_eq!(
        binarize(&s, 4, &Binarize::Threshold(0.5), None).unwrap(),
        sets(4, &[&[0, 2, 3]])
    );
    let gold = sets(4, &[&[1, 3]]);
    let p = precision_at_k(&s, &gold, &[1, 3, 4, 8]).unwrap();
    let v: Vec<f64> = p.iter().map(|x| x.value).collect();
    assert_eq!(v, vec![0.0, 1.0 / 3.0, 0.5, 0.25]);
}

#[test]
fn tuning_tie_break_prefers_half_then_lower() {
    // One example, gold {0}; score 0.9 on label 0, 0.1 elsewhere: every t in (0.1, 0.9] is perfect.
    let gold = sets(3, &[&[0]]);
    let s = [0.9, 0.1, 0.1];
    let opts = MetricOptions::default();
    assert_eq!(
        tune_threshold(&s, &gold, &default_threshold_grid(), &opts).unwrap(),
        (0.5, 1.0)
    );
    assert_eq!(
        tune_threshold(&s, &gold, &[0.2, 0.8, 0.3], &opts).unwrap(),
        (0.3, 1.0)
    );
    // 0.4 and 0.6 are equidistant from 0.5: the lower wins.
    assert_eq!(
        tune_threshold(&s, &gold, &[0.6, 0.4], &opts).unwrap().0,
        0.4
    );
    // A unique best is taken even far from 0.5.
    let s = [0.95, 0.9, 0.1];
    let gold = sets(3, &[&[0, 1]]);
    let (t, f) = tune_threshold(&s, &gold, &[0.05, 0.5, 0.92, 0.95], &opts).unwrap();
    assert_eq!((t, f), (0.5, 1.0));
    let (t, _) = tune_threshold(&s, &gold, &[0.92, 0.95, 0.05], &opts).unwrap();
    assert_eq!(t, 0.05, "0.05 gives F1 0.8 > 2/3 at 0.92");
}

#[test]
fn cardinality_report_basics() {
    let gold = sets(5, &[&[0], &[0, 1, 2], &[]]);
    assert!((mean_cardinality(&gold) - 4.0 / 3.0).abs() < 1e-12);
    let r = cardinality_report(&[1.0, 2.6, 0.2], &gold, 1.0).unwrap();
    assert_eq!(r.hist_round_z, vec![1, 1, 0, 1]);
    assert_eq!(r.hist_gold, vec![1, 1, 0, 1]);
    assert!((r.mae - (0.0 + 0.4 + 0.2) / 3.0).abs() < 1e-6);
    assert!((r.baseline_mae - (0.0 + 2.0 + 1.0) / 3.0).abs() < 1e-12);
    assert_eq!(r.rounded_accuracy, 1.0);
    assert!(r.pearson.unwrap() > 0.9);
    let flat = cardinality_report(&[1.0, 1.0, 1.0], &gold, 1.0).unwrap();
    assert_eq!(flat.pearson, None);
    assert!(cardinality_report(&[1.0], &gold, 1.0).is_err());
    assert!(cardinality_report(&[1.0, f32::NAN, 1.0], &gold, 1.0).is_err());
    let text = r.to_string();
    assert!(text.contains("Pearson") && text.contains("round(z)"));
    let back: cardinal_data::metrics::CardinalityReport =
        serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    json_close(
        &serde_json::to_value(&back).unwrap(),
        &serde_json::to_value(&r).unwrap(),
    );
}

#[test]
fn report_serde_and_display() {
    let gold = sets(3, &[&[0], &[1, 2]]);
    let pred = sets(3, &[&[0], &[1]]);
    let r = evaluate_with_scores(
        &pred,
        &gold,
        &[0.9, 0.1, 0.0, 0.2, 0.8, 0.3],
        &MetricOptions::default(),
    )
    .unwrap();
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"empty_f1\":\"zero\""));
    let back: MetricReport = serde_json::from_str(&json).unwrap();
    json_close(
        &serde_json::to_value(&back).unwrap(),
        &serde_json::to_value(&r).unwrap(),
    );
    let text = r.to_string();
    for needle in [
        "example F1",
        "macro F1",
        "micro F1",
        "Hamming",
        "subset",
        "precision@1",
        "precision@5",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    let opts: MetricOptions = serde_json::from_str(r#"{"empty_f1":"one"}"#).unwrap();
    assert_eq!(opts.empty_f1, EmptyF1::One);
    assert_eq!(opts.precision_at, vec![1, 3, 5]);
}

#[test]
fn parse_rules() {
    for rule in [
        Binarize::Threshold(0.35),
        Binarize::TopK(4),
        Binarize::TopRoundZ,
    ] {
        assert_eq!(rule.to_string().parse::<Binarize>().unwrap(), rule);
    }
    assert_eq!("0.5".parse::<Binarize>().unwrap(), Binarize::Threshold(0.5));
    assert!("top-k=x".parse::<Binarize>().is_err());
    // Zero labels a row is no rule (every row would be empty): refused, saying why.
    let e = "top-k=0".parse::<Binarize>().unwrap_err().to_string();
    assert!(e.contains("K >= 1"), "{e}");
    assert_eq!("top-k=1".parse::<Binarize>().unwrap(), Binarize::TopK(1));
    // A threshold is a score in [0, 1]: NaN, infinities and values outside are refused.
    for bad in [
        "threshold=nan",
        "threshold=inf",
        "threshold=-0.1",
        "threshold=2",
        "NaN",
    ] {
        assert!(bad.parse::<Binarize>().is_err(), "{bad}");
    }
    assert_eq!("one".parse::<EmptyF1>().unwrap(), EmptyF1::One);
    assert_eq!("Zero".parse::<EmptyF1>().unwrap(), EmptyF1::Zero);
    assert!("half".parse::<EmptyF1>().is_err());
}

/// 20 000 × 1 000 with ~5 gold labels per row: each step must stay far from quadratic.
#[test]
fn large_inputs_are_handled() {
    let (n, l) = (20_000usize, 1_000usize);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let scores: Vec<f32> = (0..n * l)
        .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32)
        .collect();
    let mut gold = LabelSets::new(l);
    for _ in 0..n {
        let mut r: Vec<u32> = (0..5).map(|_| (next() % l as u64) as u32).collect();
        r.sort_unstable();
        r.dedup();
        gold.push_row(&r);
    }
    let opts = MetricOptions::default();
    // Correctness at scale only; speed belongs in benchmarks, not in timed tests.
    let pred = binarize(&scores, l, &Binarize::Threshold(0.99), None).unwrap();
    let r = evaluate_with_scores(&pred, &gold, &scores, &opts).unwrap();
    let (thr, _) = tune_threshold(&scores, &gold, &default_threshold_grid(), &opts).unwrap();
    assert!((0.05..=0.95).contains(&thr));
    let top = binarize(&scores, l, &Binarize::TopK(5), None).unwrap();
    assert_eq!(top.indices.len(), 5 * n);
    assert!(r.mean_pred_cardinality > 5.0);
}
