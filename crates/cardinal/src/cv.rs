//! K-fold cross-validation on the training file: a less noisy way to choose between
//! configurations than one small dev split, whose score moves from epoch to epoch by as much
//! as the differences being chosen (docs/journal).

use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use crate::config::FOREST;
use crate::config::{Config, DevFold};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::{evaluate_outputs, grid_threshold};
use crate::fitted::{Fitted, ForestModel};
use crate::metrics::{
    default_threshold_grid, example_f1_by_threshold, tune_threshold, EmptyF1, MetricOptions,
};
use crate::runtime::{MemoryBudget, WaitPolicy};
use crate::system::{ForestSystem, System};
use crate::train::Event;
use crate::train::{Hooks, Start};

/// One fold's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldResult {
    /// The fold's index, from 0.
    pub index: usize,
    /// Rows the fold's model trained on (the other folds).
    pub train_rows: usize,
    /// Rows of the held-out fold.
    pub dev_rows: usize,
    /// Example-F1 (%) of the held-out fold at the configuration's threshold.
    pub example_f1: f64,
    /// The same with an empty prediction for an empty gold set scored 1, not 0
    /// (`MetricReport::example_f1_other_empty`); 0 in reports written by older versions.
    #[serde(default)]
    pub example_f1_empty_one: f64,
    /// Example-F1 (%) of the held-out fold at each threshold of [`default_threshold_grid`], in
    /// grid order: what the default's search chooses its decision threshold from. An empty
    /// prediction for an empty gold set scores 1, or as the search's
    /// [`crate::config::SearchScoring`] says. Empty in reports written by older versions.
    #[serde(default)]
    pub example_f1_by_threshold: Vec<f64>,
    /// The grid threshold that is best on this fold, and its example-F1 (%): optimistic, the
    /// threshold being chosen on the rows it is scored on.
    pub best_threshold: f64,
    /// Example-F1 (%) at `best_threshold`.
    pub example_f1_at_best: f64,
    /// Mean absolute error of the predicted count `z` against the true count.
    pub count_mae: f64,
    /// precision@1 (%) of the ranking scores (`EvalReport::precision_at_k`); 0 in reports
    /// written by older versions.
    #[serde(default)]
    pub precision_at_1: f64,
}

/// Every fold, and the mean and sample standard deviation over folds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CvReport {
    /// Number of folds.
    pub k: usize,
    /// Each fold's result, in fold order.
    pub folds: Vec<FoldResult>,
    /// Mean example-F1 (%) over folds.
    pub mean_example_f1: f64,
    /// Sample standard deviation of the folds' example-F1.
    pub sd_example_f1: f64,
    /// Mean over folds of [`FoldResult::example_f1_empty_one`]: what the default's search
    /// ranks candidates by (equal to `mean_example_f1` on data without empty label sets).
    #[serde(default)]
    pub mean_example_f1_empty_one: f64,
    /// Mean of the folds' example-F1 at their own best threshold (optimistic).
    pub mean_example_f1_at_best: f64,
    /// Mean precision@1 (%) over folds.
    #[serde(default)]
    pub mean_precision_at_1: f64,
}

/// How a fold's model is read when it is scored: as trained, or as one of the models it holds
/// (a model with a forest blended with its networks holds the networks alone and the forest
/// alone, each trained exactly as a model of that kind alone would be).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Decoding {
    /// The model as trained.
    AsTrained,
    /// The networks alone, the forest left out.
    NetworksOnly,
    /// The forest blended with the networks at this share (0: the forest alone).
    ForestShare(f64),
}

impl Decoding {
    /// `model` read this way: a blend's forest at share 0 is a forest alone, of that kind.
    fn apply(self, model: &Fitted) -> Fitted {
        let Fitted::Networks(networks) = model else {
            return model.clone();
        };
        let mut m = networks.clone();
        match self {
            Decoding::AsTrained => {}
            Decoding::NetworksOnly => {
                m.forest = None;
                m.config.model.forest = None;
            }
            Decoding::ForestShare(share) => {
                if let Some(f) = &mut m.config.model.forest {
                    f.networks = share;
                }
                if let Some(forest) = m.forest.take_if(|_| share == 0.0) {
                    let mut config = m.config;
                    config.system = FOREST.into();
                    return ForestModel {
                        forest,
                        n_features: networks.n_features(),
                        n_labels: networks.n_labels(),
                        train_mean_cardinality: m.train_mean_cardinality,
                        search: m.search,
                        config,
                    }
                    .into();
                }
            }
        }
        m.into()
    }
}

/// Trains `cfg` `k` times on `train`, each time holding out one fold (seeded by
/// `train.split_seed`) and training on the rest exactly as `cardinal train` would train on a
/// file of those rows: its own dev split for early stopping, threshold tuning and the dev
/// curve, then the epochs on all of them. The held-out fold is never seen before it is scored
/// (were it the dev split, early stopping and a tuned threshold would be chosen on the rows
/// they are scored on). `on_fold` sees each result as it comes.
pub(crate) fn cross_validate(
    system: &dyn System,
    train: &Dataset,
    cfg: &Config,
    k: usize,
    wait: WaitPolicy,
    memory_budget: MemoryBudget,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(usize, Event),
    on_fold: &mut dyn FnMut(&FoldResult),
) -> Result<CvReport> {
    let mut reports = cross_validate_decodings(
        system,
        train,
        cfg,
        &[Decoding::AsTrained],
        k,
        k,
        wait,
        memory_budget,
        cancel,
        on_event,
        &mut |_, f| on_fold(f),
    )?;
    Ok(reports.remove(0))
}

/// [`cross_validate`] with each fold's one model scored once per entry of `decodings`: one
/// report per decoding, in their order (`on_fold` gets the decoding's index). Only the first
/// `run` folds of the `k`-fold partition are trained and scored (all of them at `run = k`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn cross_validate_decodings(
    system: &dyn System,
    train: &Dataset,
    cfg: &Config,
    decodings: &[Decoding],
    k: usize,
    run: usize,
    wait: WaitPolicy,
    memory_budget: MemoryBudget,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(usize, Event),
    on_fold: &mut dyn FnMut(usize, &FoldResult),
) -> Result<Vec<CvReport>> {
    check_folds(k, train.n_rows())?;
    let mut folds: Vec<Vec<FoldResult>> = vec![Vec::with_capacity(k); decodings.len()];
    for index in 0..run.clamp(1, k) {
        let fold = FoldRun {
            k,
            index,
            empty: EmptyF1::One,
            forests: None,
        };
        let scored = fold.train_and_score(
            system,
            train,
            cfg,
            decodings,
            wait,
            memory_budget,
            cancel,
            &mut |e| on_event(index, e),
        )?;
        for (j, result) in scored.into_iter().enumerate() {
            on_fold(j, &result);
            folds[j].push(result);
        }
    }
    Ok(folds.into_iter().map(|f| summarize(k, f)).collect())
}

/// Refuses a fold count that cannot partition `rows` rows.
pub(crate) fn check_folds(k: usize, rows: usize) -> Result<()> {
    if k < 2 || k > rows {
        return Err(Error::OutOfRange {
            field: "folds".into(),
            value: k.to_string(),
            allowed: format!("2..={rows} (the training rows)"),
        });
    }
    Ok(())
}

/// One fold of a `k`-fold cross-validation: which, and how its held-out rows are scored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FoldRun<'a> {
    /// Folds of the partition.
    pub k: usize,
    /// The fold held out, from 0.
    pub index: usize,
    /// What an empty prediction of an empty gold set scores in
    /// [`FoldResult::example_f1_by_threshold`].
    pub empty: EmptyF1,
    /// The forests its search has grown, shared with the fold's other trainings.
    pub forests: Option<&'a cardinal_forest::ForestCache>,
}

impl FoldRun<'_> {
    /// Trains `cfg` on every row of `train` but this fold's (seeded by `train.split_seed`, so
    /// the same fold wherever and whenever it runs) and scores the model on the fold once per
    /// entry of `decodings`, in their order. A fold depends on nothing but its arguments:
    /// folds may run in any order, in other processes or on other machines.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn train_and_score(
        self,
        system: &dyn System,
        train: &Dataset,
        cfg: &Config,
        decodings: &[Decoding],
        wait: WaitPolicy,
        memory_budget: MemoryBudget,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Vec<FoldResult>> {
        let mut split = cfg.train.clone();
        split.dev_fold = Some(DevFold {
            k: self.k,
            index: self.index,
        });
        let (train_idx, dev_idx) = split.dev_split(train.n_rows());
        let rest = train.select_rows(&train_idx);
        let mut hooks = Hooks {
            on_event,
            after_epoch: &mut |_| Ok(()),
            wait,
            memory_budget,
            cancel,
            search: None,
            forests: self.forests,
        };
        let trained = system
            .fit(&rest, Start::Fresh(cfg.clone()), &mut hooks)?
            .model;
        let dev = train.select_rows(&dev_idx);
        decodings
            .iter()
            .map(|decoding| {
                let model = match decoding {
                    Decoding::AsTrained => None,
                    d => Some(d.apply(&trained)),
                };
                let model = model.as_ref().unwrap_or(&trained);
                // A blend's forest read alone is a forest alone, which its own system decides.
                let scorer: &dyn System = match model {
                    Fitted::Forest(_) => &ForestSystem::FOREST,
                    Fitted::Networks(_) => system,
                };
                score_fold(scorer, model, &dev, self, train_idx.len())
            })
            .collect()
    }
}

/// Fold `index`'s result: `model`, trained on `train_rows` rows, scored on the held-out `dev`.
fn score_fold(
    system: &dyn System,
    model: &Fitted,
    dev: &Dataset,
    fold: FoldRun,
    train_rows: usize,
) -> Result<FoldResult> {
    let index = fold.index;
    let out = system.predict(model, &dev.features, 256)?;
    let report = evaluate_outputs(model, &out, &dev.labels);
    let by_threshold =
        example_f1_by_threshold(&out.y, &dev.labels, &default_threshold_grid(), fold.empty)?;
    let (best_threshold, at_best) = tune_threshold(
        &out.y,
        &dev.labels,
        &default_threshold_grid(),
        &MetricOptions::default(),
    )?;
    Ok(FoldResult {
        index,
        train_rows,
        dev_rows: dev.n_rows(),
        example_f1: 100.0 * report.at_threshold.example_f1,
        example_f1_empty_one: 100.0 * report.at_threshold.example_f1_other_empty,
        example_f1_by_threshold: by_threshold.iter().map(|f| 100.0 * f).collect(),
        best_threshold: grid_threshold(best_threshold),
        example_f1_at_best: 100.0 * at_best,
        count_mae: report.cardinality.mae,
        precision_at_1: report
            .precision_at_k
            .iter()
            .find(|p| p.k == 1)
            .map_or(0.0, |p| 100.0 * p.value),
    })
}

/// The report of `k` folds: the folds, their means and the example-F1's sample deviation.
pub(crate) fn summarize(k: usize, folds: Vec<FoldResult>) -> CvReport {
    // Means over the folds run (every one of the `k` but in the search's budget).
    let n = folds.len().max(1) as f64;
    let f1: Vec<f64> = folds.iter().map(|f| f.example_f1).collect();
    let mean = f1.iter().sum::<f64>() / n;
    let var = if folds.len() > 1 {
        f1.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    let mean_best = folds.iter().map(|f| f.example_f1_at_best).sum::<f64>() / n;
    let mean_p1 = folds.iter().map(|f| f.precision_at_1).sum::<f64>() / n;
    let mean_empty_one = folds.iter().map(|f| f.example_f1_empty_one).sum::<f64>() / n;
    CvReport {
        k,
        folds,
        mean_example_f1: mean,
        sd_example_f1: var.sqrt(),
        mean_example_f1_empty_one: mean_empty_one,
        mean_example_f1_at_best: mean_best,
        mean_precision_at_1: mean_p1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, LabelSets};
    use crate::eval::predict;
    use crate::metrics::{binarize, evaluate, Binarize};
    use crate::system::Pnc;

    fn data(n: usize) -> Dataset {
        let (d, l) = (10, 5);
        let mut x = CsrMatrix::new(d);
        let mut y = LabelSets::new(l);
        for r in 0..n {
            let k = r % 3;
            let idx: Vec<u32> = (0..=k as u32).chain([5 + (r % 5) as u32]).collect();
            x.push_row(&idx, &vec![1.0; idx.len()]);
            let labels: Vec<u32> = (0..=k as u32).collect();
            y.push_row(&labels);
        }
        Dataset {
            name: "cv".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        }
    }

    fn cfg() -> Config {
        let mut cfg = Config::predict();
        cfg.model.hidden = 6;
        cfg.model.card_hidden = 4;
        cfg.inference.steps = 3;
        cfg.train.epochs = 2;
        cfg.train.batch_size = 8;
        // The tests compare each fold with a model trained directly; the default's search on
        // small files is tested in `search`.
        cfg.search = crate::config::SearchConfig::default();
        cfg
    }

    /// The folds partition the rows, each fold's score is that of a model trained on the other
    /// folds only (re-trained here independently on those rows), and the summary is the mean of
    /// the folds.
    #[test]
    fn folds_partition_the_rows_and_each_score_is_its_models() {
        let data = data(37);
        let cfg = cfg();
        let report = cross_validate(
            &Pnc,
            &data,
            &cfg,
            3,
            WaitPolicy::Active,
            MemoryBudget::default(),
            &AtomicBool::new(false),
            &mut |_, _| {},
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(report.folds.len(), 3);
        let sizes: Vec<usize> = report.folds.iter().map(|f| f.dev_rows).collect();
        assert_eq!(sizes, vec![13, 12, 12]);
        let mut seen = [false; 37];
        for f in &report.folds {
            assert_eq!(f.train_rows + f.dev_rows, 37);
            let mut fc = cfg.clone();
            fc.train.dev_fold = Some(DevFold {
                k: 3,
                index: f.index,
            });
            let (train_idx, dev_idx) = fc.train.dev_split(37);
            assert!(train_idx.iter().all(|r| !dev_idx.contains(r)));
            for &r in &dev_idx {
                assert!(!seen[r], "row {r} in two folds");
                seen[r] = true;
            }
            // The fold's model is the one trained on the other folds alone.
            let rest = data.select_rows(&train_idx);
            let model = crate::train::train(&rest, &cfg, &mut |_| {}).unwrap().model;
            let dev = data.select_rows(&dev_idx);
            let out = predict(&model, &dev.features, 256).unwrap();
            let pred = binarize(&out.y, 5, &Binarize::Threshold(0.5), None).unwrap();
            let f1 = evaluate(&pred, &dev.labels, &MetricOptions::default()).example_f1;
            assert_eq!(f.example_f1, 100.0 * f1);
            // P@1 from the ranking scores, counted here directly: the top label is gold.
            let hits = (0..dev.n_rows())
                .filter(|&r| {
                    let row = &out.ranking_scores()[r * 5..(r + 1) * 5];
                    let top = (0..5).fold(0, |b, i| if row[i] > row[b] { i } else { b });
                    dev.labels.row(r).contains(&(top as u32))
                })
                .count();
            let p1 = 100.0 * hits as f64 / dev.n_rows() as f64;
            assert!(
                (f.precision_at_1 - p1).abs() < 1e-9,
                "{} vs {p1}",
                f.precision_at_1
            );
            assert!(f.example_f1_at_best >= f.example_f1 - 1e-9);
        }
        assert!(seen.iter().all(|&s| s));
        let mean = report.folds.iter().map(|f| f.example_f1).sum::<f64>() / 3.0;
        assert!((report.mean_example_f1 - mean).abs() < 1e-12);
        let mean_p1 = report.folds.iter().map(|f| f.precision_at_1).sum::<f64>() / 3.0;
        assert!((report.mean_precision_at_1 - mean_p1).abs() < 1e-12);
    }

    #[test]
    fn too_few_or_too_many_folds_are_refused() {
        let data = data(5);
        for k in [0, 1, 6] {
            let err = cross_validate(
                &Pnc,
                &data,
                &cfg(),
                k,
                WaitPolicy::Passive,
                MemoryBudget::default(),
                &AtomicBool::new(false),
                &mut |_, _| {},
                &mut |_| {},
            )
            .unwrap_err();
            assert!(err.to_string().contains("folds"), "{err}");
        }
    }
}
