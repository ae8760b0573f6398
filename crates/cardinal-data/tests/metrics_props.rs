//! Property tests of the metrics against naive dense computations.

use cardinal_data::data::LabelSets;
use cardinal_data::metrics::{
    binarize, evaluate, example_f1_by_threshold, precision_at_k, top_k_labels, Binarize, EmptyF1,
    MetricOptions, MetricReport,
};
use proptest::prelude::*;

/// `n × l` dense 0/1 matrix as label sets.
fn from_dense(bits: &[bool], l: usize) -> LabelSets {
    let mut s = LabelSets::new(l);
    for row in bits.chunks(l) {
        let r: Vec<u32> = (0..l as u32).filter(|&j| row[j as usize]).collect();
        s.push_row(&r);
    }
    s
}

/// Pred and gold of the same shape; rows may be empty or full.
fn pair() -> impl Strategy<Value = (usize, Vec<bool>, Vec<bool>)> {
    (1usize..14, 0usize..25).prop_flat_map(|(l, n)| {
        (
            Just(l),
            prop::collection::vec(any::<bool>(), n * l),
            prop::collection::vec(any::<bool>(), n * l),
        )
    })
}

fn all_metrics(r: &MetricReport) -> Vec<(&'static str, f64)> {
    let mut v = vec![
        ("example_f1", r.example_f1),
        ("example_f1_other_empty", r.example_f1_other_empty),
        ("example_precision", r.example_precision),
        ("example_recall", r.example_recall),
        ("example_jaccard", r.example_jaccard),
        ("macro_f1", r.macro_f1),
        ("micro_f1", r.micro_f1),
        ("micro_precision", r.micro_precision),
        ("micro_recall", r.micro_recall),
        ("hamming_loss", r.hamming_loss),
        ("subset_accuracy", r.subset_accuracy),
    ];
    v.extend(r.precision_at_k.iter().map(|p| ("precision@k", p.value)));
    v
}

fn opts(e: EmptyF1) -> MetricOptions {
    MetricOptions {
        empty_f1: e,
        ..Default::default()
    }
}

fn empties() -> impl Strategy<Value = EmptyF1> {
    prop_oneof![Just(EmptyF1::Zero), Just(EmptyF1::One)]
}

proptest! {
    #[test]
    fn metrics_lie_in_unit_interval((l, p, g) in pair(), e in empties()) {
        let r = evaluate(&from_dense(&p, l), &from_dense(&g, l), &opts(e));
        for (name, v) in all_metrics(&r) {
            prop_assert!((0.0..=1.0).contains(&v), "{name} = {v}");
        }
    }

    /// The two empty-set conventions differ by exactly the share of both-empty rows, in the
    /// direction the report's own convention says.
    #[test]
    fn the_other_convention_moves_by_the_both_empty_rows((l, p, g) in pair(), e in empties()) {
        let r = evaluate(&from_dense(&p, l), &from_dense(&g, l), &opts(e));
        prop_assume!(r.n_examples > 0);
        let share = r.n_both_empty as f64 / r.n_examples as f64;
        let sign = if e == EmptyF1::Zero { 1.0 } else { -1.0 };
        prop_assert!((r.example_f1_other_empty - r.example_f1 - sign * share).abs() < 1e-12);
    }

    #[test]
    fn perfect_prediction_scores_one((l, _p, g) in pair()) {
        let gold = from_dense(&g, l);
        // With no examples every mean is 0 by convention.
        prop_assume!(gold.n_rows > 0);
        let r = evaluate(&gold, &gold, &opts(EmptyF1::One));
        prop_assert_eq!(r.example_f1, 1.0);
        prop_assert_eq!(r.example_jaccard, 1.0);
        prop_assert_eq!(r.example_precision, 1.0);
        prop_assert_eq!(r.example_recall, 1.0);
        prop_assert_eq!(r.hamming_loss, 0.0);
        prop_assert_eq!(r.subset_accuracy, 1.0);
        // Under Zero, both-empty rows score 0; every other row scores 1.
        let z = evaluate(&gold, &gold, &opts(EmptyF1::Zero));
        let non_empty = (0..gold.n_rows).filter(|&i| gold.count(i) > 0).count();
        prop_assert!((z.example_f1 - non_empty as f64 / gold.n_rows as f64).abs() < 1e-12);
        // Macro-F1 is the fraction of labels that occur (absent labels count 0).
        let seen = (0..l).filter(|&j| (0..gold.n_rows).any(|i| g[i * l + j])).count();
        prop_assert!((r.macro_f1 - seen as f64 / l as f64).abs() < 1e-12);
        prop_assert_eq!(r.micro_f1, if seen > 0 { 1.0 } else { 0.0 });
    }

    #[test]
    fn invariant_to_label_permutation(
        (l, p, g) in pair(),
        e in empties(),
        seed in any::<u64>(),
    ) {
        // A permutation from a seeded Fisher-Yates shuffle.
        let mut perm: Vec<usize> = (0..l).collect();
        let mut s = seed | 1;
        for i in (1..l).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            perm.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let permute = |bits: &[bool]| {
            let mut out = vec![false; bits.len()];
            for (i, row) in bits.chunks(l).enumerate() {
                for j in 0..l {
                    out[i * l + perm[j]] = row[j];
                }
            }
            out
        };
        let a = evaluate(&from_dense(&p, l), &from_dense(&g, l), &opts(e));
        let b = evaluate(&from_dense(&permute(&p), l), &from_dense(&permute(&g), l), &opts(e));
        for ((name, x), (_, y)) in all_metrics(&a).into_iter().zip(all_metrics(&b)) {
            prop_assert!((x - y).abs() < 1e-12, "{name}: {x} vs {y}");
        }
    }

    #[test]
    fn example_f1_is_mean_of_naive_row_f1((l, p, g) in pair(), e in empties()) {
        let r = evaluate(&from_dense(&p, l), &from_dense(&g, l), &opts(e));
        let n = p.len() / l;
        let mut sum = 0.0;
        for i in 0..n {
            let (pr, gr) = (&p[i * l..(i + 1) * l], &g[i * l..(i + 1) * l]);
            let tp = (0..l).filter(|&j| pr[j] && gr[j]).count() as f64;
            let np = pr.iter().filter(|&&b| b).count() as f64;
            let ng = gr.iter().filter(|&&b| b).count() as f64;
            sum += if np + ng == 0.0 { e.value() } else { 2.0 * tp / (np + ng) };
        }
        let naive = if n == 0 { 0.0 } else { sum / n as f64 };
        prop_assert!((r.example_f1 - naive).abs() < 1e-12, "{} vs {naive}", r.example_f1);
    }

    #[test]
    fn threshold_sweep_equals_binarise_then_evaluate(
        (l, _p, g) in pair(),
        raw in prop::collection::vec(0u8..=20, 25 * 14),
        grid_raw in prop::collection::vec(0u8..=20, 1..8),
        e in empties(),
    ) {
        // Scores and thresholds on a 0.05 lattice make ties and exact hits common.
        let gold = from_dense(&g, l);
        let scores: Vec<f32> = raw[..gold.n_rows * l].iter().map(|&v| v as f32 / 20.0).collect();
        let grid: Vec<f32> = grid_raw.iter().map(|&v| v as f32 / 20.0).collect();
        let fast = example_f1_by_threshold(&scores, &gold, &grid, e).unwrap();
        for (&t, &f) in grid.iter().zip(&fast) {
            let pred = binarize(&scores, l, &Binarize::Threshold(t), None).unwrap();
            let slow = evaluate(&pred, &gold, &opts(e)).example_f1;
            prop_assert!((f - slow).abs() < 1e-12, "t = {t}: {f} vs {slow}");
        }
    }

    #[test]
    fn top_k_and_precision_at_k_match_a_full_sort(
        (l, _p, g) in pair(),
        raw in prop::collection::vec(0u8..=6, 25 * 14),
        k in 1usize..16,
    ) {
        let gold = from_dense(&g, l);
        let scores: Vec<f32> = raw[..gold.n_rows * l].iter().map(|&v| v as f32).collect();
        let top = binarize(&scores, l, &Binarize::TopK(k), None).unwrap();
        let mut hits = 0usize;
        for i in 0..gold.n_rows {
            let row = &scores[i * l..(i + 1) * l];
            let mut idx: Vec<u32> = (0..l as u32).collect();
            // Stable sort by descending score keeps lower indices first among ties.
            idx.sort_by(|&a, &b| row[b as usize].partial_cmp(&row[a as usize]).unwrap());
            idx.truncate(k);
            hits += idx.iter().filter(|&&j| g[i * l + j as usize]).count();
            idx.sort_unstable();
            prop_assert_eq!(top.row(i), &idx[..]);
        }
        let p = precision_at_k(&scores, &gold, &[k]).unwrap()[0].value;
        let want = if gold.n_rows == 0 { 0.0 } else { hits as f64 / (k * gold.n_rows) as f64 };
        prop_assert!((p - want).abs() < 1e-12);
    }

    #[test]
    fn top_k_labels_both_paths_match_a_full_sort(
        raw in prop::collection::vec(0u8..=8, 1..90),
        k in 0usize..100,
    ) {
        // 8 stands for NaN, which must rank below every number.
        let row: Vec<f32> = raw.iter().map(|&v| if v == 8 { f32::NAN } else { v as f32 }).collect();
        let key = |s: f32| if s.is_nan() { -1.0 } else { s };
        let mut want: Vec<u32> = (0..row.len() as u32).collect();
        want.sort_by(|&a, &b| key(row[b as usize]).partial_cmp(&key(row[a as usize])).unwrap());
        want.truncate(k);
        let mut got = Vec::new();
        top_k_labels(&row, k, &mut got);
        prop_assert_eq!(got, want);
    }
}
