use super::*;
use crate::config::Config;
use crate::data::{CsrMatrix, LabelSets};
use crate::train::fixtures::{small, tiny};

/// The default preset at [`small`] size, trained `epochs` epochs (batches of 5, no early
/// stopping) on `data`.
fn small_default_trained(data: &Dataset, epochs: usize) -> crate::pipeline::Model<f32> {
    let mut cfg = small(Config::predict());
    cfg.train.epochs = epochs;
    cfg.train.batch_size = 5;
    cfg.train.patience = 0;
    train(data, &cfg, &mut |_| {}).unwrap().model
}

/// The default preset's promise (issue 8): after training, every row's last iterate lies
/// in `C(z)`, `Σ y_T = z` and `0 ≤ y_T ≤ 1`, with `z` the predicted count. Fails if the
/// default loses its final feasible projection.
#[test]
fn the_default_satisfies_the_constraint() {
    let data = tiny();
    let model = small_default_trained(&data, 3);
    let out = crate::eval::predict(&model, &data.features, 7).unwrap();
    let l = data.labels.n_labels;
    for (y, &z) in out.y.chunks_exact(l).zip(&out.z) {
        let sum: f32 = y.iter().sum();
        assert!((sum - z).abs() <= 1e-3, "sum {sum} vs z {z}");
        assert!(y.iter().all(|&v| (0.0..=1.0).contains(&v)), "{y:?}");
    }
}

/// A count override replaces `h(x)` on both inference kernels (lockstep blocks, and the
/// per-row reference): the outputs sum to the given counts, which differ from the model's
/// own, and the gold-count report is filled in.
#[test]
fn count_override_reaches_every_inference_path() {
    let data = tiny();
    let model = small_default_trained(&data, 2);
    let (n, l) = (data.labels.n_rows, data.labels.n_labels);
    let counts: Vec<f32> = (0..n).map(|r| 1.0 + (r % 3) as f32).collect();
    let own = crate::eval::predict(&model, &data.features, 7).unwrap();
    for kernel in [None, Some(crate::inference::Kernel::Row)] {
        let mut ws = Workspace::default();
        ws.kernel = kernel;
        ws.count_override = Some(counts.clone());
        let mut out = crate::pipeline::Outputs::default();
        let rows: Vec<usize> = (0..n).collect();
        model
            .forward_batched(&data.features, &rows, 7, &mut ws, &mut out)
            .unwrap();
        assert_eq!(out.z, counts, "{kernel:?}");
        assert_ne!(own.z, counts);
        for (y, &z) in out.y.chunks_exact(l).zip(&counts) {
            let sum: f32 = y.iter().sum();
            assert!((sum - z).abs() <= 1e-3, "{kernel:?}: sum {sum} vs z {z}");
        }
    }
    let mut report = crate::eval::evaluate_outputs(
        &model,
        &crate::eval::predict(&model, &data.features, 7).unwrap(),
        &data.labels,
    );
    let at_gold = crate::eval::predict_with_counts(
        &model,
        &data.features,
        crate::eval::gold_counts(&data.labels),
        7,
    )
    .unwrap();
    let fitted = model.clone().into();
    crate::eval::add_gold_count(&fitted, &mut report, &at_gold, &data.labels).unwrap();
    assert!(report.at_gold_count.is_some());
    // An override of the wrong length is an error, not a panic.
    let mut ws = Workspace::default();
    ws.count_override = Some(vec![1.0; n - 1]);
    let rows: Vec<usize> = (0..n).collect();
    let mut out = crate::pipeline::Outputs::default();
    assert!(model
        .forward_batched(&data.features, &rows, 7, &mut ws, &mut out)
        .is_err());
    // So is it when `forward` is called directly (it would index out of range).
    assert!(model
        .forward(&data.features, &rows[..7], &mut ws, &mut out)
        .is_err());
}

/// Whichever kernel runs the unroll, the units of `forward_batched` give every row the numbers
/// `forward` gives it batch by batch, bit for bit (the row kernel's units run its rows in one
/// thread, the lockstep kernel's its blocks).
#[test]
fn batched_inference_equals_batch_by_batch_for_each_kernel() {
    let data = tiny();
    let model = small_default_trained(&data, 2);
    let rows: Vec<usize> = (0..data.labels.n_rows).collect();
    for kernel in [None, Some(crate::inference::Kernel::Row)] {
        let mut ws = Workspace::default();
        ws.kernel = kernel;
        let mut direct = crate::pipeline::Outputs::default();
        for chunk in rows.chunks(7) {
            model
                .forward(&data.features, chunk, &mut ws, &mut direct)
                .unwrap();
        }
        let mut units = crate::pipeline::Outputs::default();
        model
            .forward_batched(&data.features, &rows, 7, &mut ws, &mut units)
            .unwrap();
        assert_eq!(direct.y, units.y, "{kernel:?}");
        assert_eq!(direct.ranking, units.ranking, "{kernel:?}");
        assert_eq!(direct.unary, units.unary, "{kernel:?}");
        assert_eq!(direct.z, units.z, "{kernel:?}");
    }
}

/// Every inference path (lockstep units, lockstep blocks inside `forward`, and the
/// per-row reference kernel) returns ranking scores: the last ascent point
/// before its projection, which differs from `y_T` and orders the labels as it does; the
/// two lockstep paths agree.
#[test]
fn ranking_scores_come_from_every_inference_path() {
    let data = tiny();
    let model = small_default_trained(&data, 2);
    let (n, l) = (data.labels.n_rows, data.labels.n_labels);
    let rows: Vec<usize> = (0..n).collect();
    let mut direct = crate::pipeline::Outputs::default();
    let mut ws = Workspace::default();
    for chunk in rows.chunks(7) {
        model
            .forward(&data.features, chunk, &mut ws, &mut direct)
            .unwrap();
    }
    let units = crate::eval::predict(&model, &data.features, 7).unwrap();
    let mut reference = crate::pipeline::Outputs::default();
    let mut ws = Workspace::default();
    ws.kernel = Some(crate::inference::Kernel::Row);
    model
        .forward_batched(&data.features, &rows, 7, &mut ws, &mut reference)
        .unwrap();
    for (what, out) in [
        ("direct", &direct),
        ("units", &units),
        ("row kernel", &reference),
    ] {
        assert_eq!(out.ranking.len(), n * l, "{what}");
        assert_ne!(
            out.ranking, out.y,
            "{what}: the final projection changes y_T"
        );
        for (rank, y) in out.ranking.chunks_exact(l).zip(out.y.chunks_exact(l)) {
            for i in 0..l {
                for j in 0..l {
                    // The soft Dykstra steps preserve order only approximately.
                    assert!(
                        rank[i] <= rank[j] || y[i] >= y[j] - 1e-5,
                        "{what}: ranking {} > {} but y_T {} < {}",
                        rank[i],
                        rank[j],
                        y[i],
                        y[j]
                    );
                }
            }
        }
    }
    for (a, b) in direct.ranking.iter().zip(&units.ranking) {
        assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
    }
}

/// Divergence: stopping with where and what, or skipping the batch.
mod divergence {
    use super::*;

    fn data() -> Dataset {
        let mut x = CsrMatrix::new(4);
        let mut y = LabelSets::new(3);
        for r in 0..12u32 {
            x.push_row(&[r % 4], &[1.0]);
            y.push_row(&[r % 3]);
        }
        Dataset {
            name: "d".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        }
    }

    fn exploding() -> Config {
        let mut cfg = Config::paper();
        cfg.model.hidden = 4;
        cfg.model.card_hidden = 3;
        cfg.inference.steps = 2;
        cfg.train.epochs = 2;
        cfg.train.full_epochs = 0;
        cfg.train.batch_size = 4;
        cfg.train.dev_fraction = 0.0;
        // Large enough that the first update overflows f32.
        cfg.train.lr = 1e38;
        cfg
    }

    #[test]
    fn divergence_stops_training_naming_batch_and_quantity() {
        let err = train(&data(), &exploding(), &mut |_| {})
            .unwrap_err()
            .to_string();
        // The update of batch 0 blows the weights up; the next batch's inference meets a NaN
        // count: caught within one batch, saying where and what.
        assert!(
            err.contains("phase 1, epoch 1, batch 1") && err.contains("not finite"),
            "{err}"
        );
        assert!(
            err.contains("inference input") && err.contains("NaN"),
            "{err}"
        );
    }

    #[test]
    fn non_finite_batches_can_be_skipped_without_corrupting_the_model() {
        let mut cfg = exploding();
        cfg.train.skip_nonfinite_batches = true;
        let trained = train(&data(), &cfg, &mut |_| {}).unwrap();
        assert!(trained.model.params.first_nonfinite().is_none());
        assert_eq!(trained.history.len(), 2);
    }
}

/// The threshold chosen on dev.
mod threshold {
    use super::*;
    use crate::eval::predict;
    use crate::metrics::{binarize, evaluate, Binarize};

    #[test]
    fn tuned_threshold_is_the_best_of_the_grid_on_dev() {
        // Noisy labels so that the F1 differs across thresholds.
        let mut x = CsrMatrix::new(6);
        let mut y = LabelSets::new(4);
        for r in 0..120u32 {
            // Two distinct features per row, in increasing order (as `push_row` requires).
            let (a, b) = (r % 6, (r % 6 + 1 + r / 6 % 5) % 6);
            let (lo, hi) = (a.min(b), a.max(b));
            let vals = if a < b { [1.0, 0.5] } else { [0.5, 1.0] };
            x.push_row(&[lo, hi], &vals);
            let mut labels = vec![r % 4];
            if r % 3 == 0 {
                labels.push((r / 3 + 1) % 4);
            }
            labels.sort_unstable();
            labels.dedup();
            y.push_row(&labels);
        }
        let data = Dataset {
            name: "t".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        };
        let mut cfg = Config::paper();
        cfg.model.hidden = 5;
        cfg.model.card_hidden = 3;
        cfg.inference.steps = 3;
        cfg.train.epochs = 3;
        cfg.train.full_epochs = 0;
        cfg.train.batch_size = 10;
        cfg.train.dev_fraction = 0.25;
        cfg.train.tune_threshold = true;
        let model = train(&data, &cfg, &mut |_| {}).unwrap().model;
        let thr = model.config.threshold;
        let grid = default_threshold_grid();
        // The threshold may be the decimal the f32 grid point stands for (0.65, not
        // 0.6499999762): within 1e-6 of it, still far closer than the 0.05 spacing.
        assert!(grid.iter().any(|&g| (g as f64 - thr).abs() < 1e-6), "{thr}");
        // Recompute every grid point's dev F1 independently: none beats the chosen one.
        let (_, dev_idx) = cfg.train.dev_split(data.n_rows());
        let dev = data.select_rows(&dev_idx);
        let out = predict(&model, &dev.features, 7).unwrap();
        let opts = MetricOptions::default();
        let f1_at = |t: f32| {
            let pred = binarize(&out.y, 4, &Binarize::Threshold(t), None).unwrap();
            evaluate(&pred, &dev.labels, &opts).example_f1
        };
        let chosen = f1_at(thr as f32);
        for &g in &grid {
            assert!(f1_at(g) <= chosen + 1e-12, "{g} beats the chosen {thr}");
        }
    }
}

/// An extreme input that makes a row's count non-finite is an error that names the row, on
/// both inference kernels (and not a bare "z = NaN").
#[test]
fn a_non_finite_row_is_named() {
    let data = tiny();
    let model = small_default_trained(&data, 2);
    let mut x = data.features.clone();
    let bad = 5;
    let at = x.indptr[bad];
    assert!(x.indptr[bad + 1] > at, "row {bad} has an entry");
    x.values[at] = f32::MAX;
    let rows: Vec<usize> = (0..x.n_rows).collect();
    for kernel in [None, Some(crate::inference::Kernel::Row)] {
        let mut ws = Workspace::default();
        ws.kernel = kernel;
        let mut out = crate::pipeline::Outputs::default();
        let err = model
            .forward_batched(&x, &rows, 7, &mut ws, &mut out)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("row {bad} ")), "{kernel:?}: {err}");
    }
}
