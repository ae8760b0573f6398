//! What a report shows of one run directory, computed through the engine: the model is loaded,
//! its recorded data read (`Engine::run_data`), and inference run on the test split and on the
//! dev split its configuration held out.

use std::path::{Path, PathBuf};

use cardinal::data::LabelSets;
use cardinal::engine::EpochRecord;
use cardinal::engine::Outputs;
use cardinal::engine::WEIGHTS_FILE;
use cardinal::engine::{check_labels, read_eval, read_history, read_names, Engine, METRICS_FILE};
use cardinal::eval::EvalReport;
use cardinal::metrics::{
    binarize, example_f1_by_threshold, round_cardinality, Binarize, Confusion, MetricOptions,
};

use crate::{Error, Result};

/// Counts above this are pooled into the last row and column of a [`CountMatrix`].
pub const COUNT_CAP: usize = 15;
/// Equal-width bins of `y_T` in a reliability diagram.
pub const RELIABILITY_BINS: usize = 10;

/// Everything drawn for one run directory. Parts that cannot be computed (no model, no
/// recorded data, no dev split) are `None` or empty, with the reason in `notes`.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The directory as the user named it.
    pub dir: PathBuf,
    /// A short name for legends and table headers (unique within one report).
    pub name: String,
    /// The dataset the model was trained on, as recorded.
    pub dataset: String,
    /// The system (`pnc`, `forest`, a baseline, ...) from the configuration.
    pub system: String,
    /// What the model is, in a few lines: its system, preset, what that system does and why
    /// it was trained (the search's choice); empty where no model could be read.
    pub identity: Vec<String>,
    /// The model's whole configuration (its `config.json`, as the model was loaded), pretty
    /// JSON; `None` where no model could be read.
    pub config: Option<String>,
    /// `metrics.jsonl`: one record per epoch, in order.
    pub history: Vec<EpochRecord>,
    /// Every metric on the test split (recomputed from the model, else read from `eval.json`).
    pub metrics: Option<EvalReport>,
    /// Gold count against predicted `round(z)` on the test split.
    pub counts: Option<CountMatrix>,
    /// Per-label F1 on test against the label's frequency in train.
    pub labels: Vec<LabelPoint>,
    /// The reliability diagram of `y_T` on test.
    pub reliability: Vec<ReliabilityBin>,
    /// Example-F1 against the threshold on `y_T`.
    pub thresholds: Option<ThresholdCurve>,
    /// What could not be shown, and why.
    pub notes: Vec<String>,
}

/// `cells[g][p]`: test rows with gold count `g` and predicted `round(z) = p`, both capped at
/// `cap` (the last row and column hold every count `>= cap`).
#[derive(Debug, Clone, PartialEq)]
pub struct CountMatrix {
    /// The largest count shown; larger counts are pooled into it.
    pub cap: usize,
    /// Row = gold count, column = predicted count.
    pub cells: Vec<Vec<usize>>,
}

/// One label: how often it occurs in train and how well it is predicted on test.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelPoint {
    /// The label's name (its index, where the data names none).
    pub name: String,
    /// Training rows carrying the label.
    pub train_count: usize,
    /// Test rows carrying the label.
    pub test_count: usize,
    /// The label's F1 (%) on test at the model's threshold.
    pub f1: f64,
}

/// One bin of the reliability diagram: the entries of `y_T` in `[lo, hi)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReliabilityBin {
    /// Lower edge.
    pub lo: f64,
    /// Upper edge (the last bin includes it).
    pub hi: f64,
    /// Entries in the bin.
    pub n: usize,
    /// Mean `y_T` of those entries.
    pub mean_y: f64,
    /// Fraction of them that are gold labels.
    pub frac_gold: f64,
}

/// Example-F1 (%) at each threshold of `grid`, on dev (when the configuration holds one out)
/// and on test, and the threshold the model uses.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdCurve {
    /// Thresholds on `y_T`.
    pub grid: Vec<f64>,
    /// Example-F1 (%) on the dev split at each threshold.
    pub dev: Option<Vec<f64>>,
    /// Example-F1 (%) on the test split at each threshold.
    pub test: Vec<f64>,
    /// The model's threshold (the dev-tuned one when the configuration tuned it).
    pub chosen: f64,
}

/// The thresholds of [`ThresholdCurve::grid`]: 0.02, 0.04, ..., 0.98.
pub fn threshold_grid() -> Vec<f32> {
    (1..=49).map(|i| i as f32 / 50.0).collect()
}

/// The index in `history` of the phase-1 epoch with the best dev F1 (the first of equals, as
/// early stopping keeps it); `None` without dev scores.
pub fn best_epoch(history: &[EpochRecord]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, r) in history.iter().enumerate() {
        if let (1, Some(f1)) = (r.phase, r.dev_example_f1) {
            if best.is_none_or(|(_, b)| f1 > b) {
                best = Some((i, f1));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// Gathers what the report shows of the run directory `dir`, named `name` in the page.
///
/// A directory with a model and a recorded data source gets every figure; one with only
/// `eval.json` and/or `metrics.jsonl` (a `reproduce table1` cell) gets what those hold.
pub fn gather(
    engine: &Engine,
    dir: &Path,
    name: String,
    data_dir: Option<&Path>,
) -> Result<RunView> {
    let history = read_history(dir)?;
    let (system, dataset) = read_names(dir);
    let (system, dataset) = (
        system.unwrap_or_else(|| "?".into()),
        dataset.unwrap_or_else(|| "?".into()),
    );
    let mut view = RunView {
        dir: dir.to_path_buf(),
        name,
        dataset,
        system,
        identity: Vec::new(),
        config: None,
        history,
        metrics: None,
        counts: None,
        labels: Vec::new(),
        reliability: Vec::new(),
        thresholds: None,
        notes: Vec::new(),
    };
    if view.history.is_empty() {
        view.notes
            .push(format!("no {METRICS_FILE}: no training curves"));
    }
    if !dir.join(WEIGHTS_FILE).exists() {
        view.metrics = read_eval(dir)?;
        if view.metrics.is_none() && view.history.is_empty() {
            return Err(Error::NothingToReport {
                path: dir.to_path_buf(),
            });
        }
        view.notes.push(format!(
            "no model ({WEIGHTS_FILE}): only the recorded metrics are shown"
        ));
        return Ok(view);
    }
    // The model and its run's record of its data, from one version of the folder.
    let (model, meta, record) = engine.load_run(dir)?;
    view.system = model.config().system.clone();
    view.dataset = meta.dataset.clone();
    let kind = engine.output_kind(&model)?;
    view.config = serde_json::to_string_pretty(model.config()).ok();
    view.identity = vec![
        format!(
            "system {} (preset {}): {}",
            model.config().system,
            model.config().preset,
            engine.about(&model)?
        ),
        match &model.search() {
            Some(s) => s.summary(),
            None => "trained as configured (no search ran)".into(),
        },
    ];
    let Some(tt) = record
        .map(|r| engine.recorded_data_in(&r, data_dir))
        .transpose()?
    else {
        view.metrics = read_eval(dir)?;
        view.notes.push(
            "no run.json: the data the model trained on is not recorded, so nothing is \
             recomputed"
                .into(),
        );
        return Ok(view);
    };
    check_labels(&meta, &tt.test, dir)?;
    let (report, out) = engine.evaluate(&model, &tt.test)?;
    let l = model.n_labels();
    let thr = model.config().threshold;
    let pred = binarize(&out.y, l, &Binarize::Threshold(thr as f32), None)?;
    view.counts = Some(count_matrix(&out.z, &tt.test.labels));
    view.labels = label_points(&pred, &tt.test.labels, &tt.train.labels, &meta.label_names)?;
    // A decided set's graded scores are its marginal probabilities; a threshold does not
    // apply to it, so it has no threshold curve.
    view.reliability = reliability(kind.graded(&out), &tt.test.labels);
    if !kind.accepts_threshold() {
        view.notes.push(format!(
            "system {} decides each row's label set for the expected F1: no threshold applies, \
             so there is no threshold curve; the calibration figure shows its labels' marginal \
             probabilities",
            model.config().system
        ));
        view.metrics = Some(report);
        return Ok(view);
    }
    let dev = match cardinal::engine::dev_split(&tt.train, model.config()) {
        None => {
            view.notes
                .push("the configuration holds out no dev split: no dev threshold curve".into());
            None
        }
        Some(dev) => {
            let dev_out = engine.predict(&model, &dev.features)?;
            Some(f1_curve(&dev_out, &dev.labels)?)
        }
    };
    view.thresholds = Some(ThresholdCurve {
        grid: threshold_grid()
            .into_iter()
            .map(cardinal::eval::grid_threshold)
            .collect(),
        dev,
        test: f1_curve(&out, &tt.test.labels)?,
        chosen: thr,
    });
    view.metrics = Some(report);
    Ok(view)
}

/// Example-F1 (%) of `out.y` at every threshold of [`threshold_grid`].
fn f1_curve(out: &Outputs<f32>, gold: &LabelSets) -> Result<Vec<f64>> {
    let empty = MetricOptions::default().empty_f1;
    let f1 = example_f1_by_threshold(&out.y, gold, &threshold_grid(), empty)?;
    Ok(f1.into_iter().map(|f| 100.0 * f).collect())
}

/// Gold count against `round(z)`, both capped at [`COUNT_CAP`] (or the largest count seen).
pub fn count_matrix(z: &[f32], gold: &LabelSets) -> CountMatrix {
    let pred: Vec<usize> = z
        .iter()
        .map(|&z| round_cardinality(z, gold.n_labels))
        .collect();
    let largest = (0..gold.n_rows)
        .map(|r| gold.count(r))
        .chain(pred.iter().copied())
        .max()
        .unwrap_or(0);
    let cap = largest.min(COUNT_CAP);
    let mut cells = vec![vec![0usize; cap + 1]; cap + 1];
    for (r, &p) in pred.iter().enumerate() {
        cells[gold.count(r).min(cap)][p.min(cap)] += 1;
    }
    CountMatrix { cap, cells }
}

/// Per-label F1 (%) of `pred` on test, for the labels that occur in test, with their train
/// frequency.
fn label_points(
    pred: &LabelSets,
    gold: &LabelSets,
    train: &LabelSets,
    names: &[String],
) -> Result<Vec<LabelPoint>> {
    let confusion = Confusion::new(pred, gold)?;
    let mut train_count = vec![0usize; train.n_labels];
    for r in 0..train.n_rows {
        for &l in train.row(r) {
            train_count[l as usize] += 1;
        }
    }
    Ok(confusion
        .labels
        .iter()
        .enumerate()
        .filter(|(_, c)| c.tp + c.fneg > 0)
        .map(|(l, c)| LabelPoint {
            name: names.get(l).cloned().unwrap_or_else(|| l.to_string()),
            train_count: train_count.get(l).copied().unwrap_or(0),
            test_count: (c.tp + c.fneg) as usize,
            f1: 100.0 * c.f1(),
        })
        .collect())
}

/// The reliability diagram of every entry of `y` (`n × L`, row-major) against `gold`:
/// [`RELIABILITY_BINS`] equal bins over `[0, 1]`, values outside it in the end bins. Empty
/// bins are left out.
pub fn reliability(y: &[f32], gold: &LabelSets) -> Vec<ReliabilityBin> {
    let k = RELIABILITY_BINS;
    let (mut n, mut sum_y, mut hits) = (vec![0usize; k], vec![0f64; k], vec![0usize; k]);
    let mut dense = vec![0u8; gold.n_labels];
    for (r, row) in y.chunks_exact(gold.n_labels.max(1)).enumerate() {
        gold.write_dense(r, &mut dense);
        for (&v, &g) in row.iter().zip(&dense) {
            let b = ((v as f64 * k as f64).floor().max(0.0) as usize).min(k - 1);
            n[b] += 1;
            sum_y[b] += v as f64;
            hits[b] += usize::from(g != 0);
        }
    }
    (0..k)
        .filter(|&b| n[b] > 0)
        .map(|b| ReliabilityBin {
            lo: b as f64 / k as f64,
            hi: (b + 1) as f64 / k as f64,
            n: n[b],
            mean_y: sum_y[b] / n[b] as f64,
            frac_gold: hits[b] as f64 / n[b] as f64,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(n_labels: usize, rows: &[&[u32]]) -> LabelSets {
        let mut s = LabelSets::new(n_labels);
        for r in rows {
            s.push_row(r);
        }
        s
    }

    fn record(phase: u8, epoch: usize, dev: Option<f64>) -> EpochRecord {
        EpochRecord {
            phase,
            epoch,
            loss: 1.0,
            dev_example_f1: dev,
            dev_mean_z: None,
            seconds: 0.1,
        }
    }

    #[test]
    fn best_epoch_is_the_first_best_of_phase_one() {
        let h = [
            record(1, 1, Some(30.0)),
            record(1, 2, Some(40.0)),
            record(1, 3, Some(40.0)),
            record(1, 4, Some(35.0)),
            record(2, 1, None),
        ];
        assert_eq!(best_epoch(&h), Some(1));
        assert_eq!(best_epoch(&h[4..]), None);
    }

    #[test]
    fn count_matrix_counts_every_row_once_and_pools_large_counts() {
        let mut rows: Vec<Vec<u32>> = vec![vec![0], vec![0, 1], vec![]];
        rows.push((0..20).collect());
        let refs: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
        let gold = sets(30, &refs);
        let m = count_matrix(&[1.2, 0.6, 0.4, 25.0], &gold);
        assert_eq!(m.cap, COUNT_CAP);
        assert_eq!(m.cells[1][1], 1);
        assert_eq!(m.cells[2][1], 1);
        assert_eq!(m.cells[0][0], 1);
        assert_eq!(m.cells[COUNT_CAP][COUNT_CAP], 1);
        assert_eq!(m.cells.iter().flatten().sum::<usize>(), 4);
    }

    #[test]
    fn reliability_matches_a_direct_count() {
        // Two rows, three labels; gold {0}, {1, 2}.
        let gold = sets(3, &[&[0], &[1, 2]]);
        let y = [0.95f32, 0.05, 0.5, 0.15, 0.92, 1.0];
        let bins = reliability(&y, &gold);
        let total: usize = bins.iter().map(|b| b.n).sum();
        assert_eq!(total, 6);
        // 0.95, 0.92 and 1.0 share the last bin; 0.95 (row 0, label 0), 0.92 and 1.0 (row 1,
        // labels 1, 2) are all gold.
        let last = bins.last().unwrap();
        assert_eq!((last.n, last.frac_gold), (3, 1.0));
        assert!((last.mean_y - (0.95 + 0.92 + 1.0) / 3.0).abs() < 1e-6);
        // 0.05 (label 1 of row 0) is not gold.
        assert_eq!(bins[0].frac_gold, 0.0);
    }

    #[test]
    fn label_points_skip_labels_absent_from_test() {
        let gold = sets(3, &[&[0], &[0, 1]]);
        let pred = sets(3, &[&[0], &[2]]);
        let train = sets(3, &[&[0], &[0], &[1]]);
        let pts = label_points(&pred, &gold, &train, &["a".into()]).unwrap();
        assert_eq!(pts.len(), 2);
        // label 0: tp 1, fn 1 → F1 2/3; label 1: tp 0 → 0.
        assert!((pts[0].f1 - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!((pts[0].train_count, pts[0].test_count), (2, 2));
        assert_eq!((pts[1].f1, pts[1].train_count), (0.0, 1));
        // Named where the data names the label, else by its index.
        assert_eq!((pts[0].name.as_str(), pts[1].name.as_str()), ("a", "1"));
    }
}
