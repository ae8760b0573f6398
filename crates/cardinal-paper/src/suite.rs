//! The development suite (`cardinal reproduce suite`): the default, the `paper` preset, the
//! tuned MLP and binary relevance with logistic regression on each dataset of
//! `../shared/data/SUITE.md`, over seeds, with the training time and the count analysis of
//! `eval` (the gold-count row and the count MAE).
//!
//! Every cell is cached under [`crate::cell_key::suite_cell_key`] (the data, the configuration
//! without its seed, and the search's candidates), so that a changed configuration, rule or
//! file never reads back a stale result.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use cardinal::config::Config;
use cardinal::data::TrainTest;
use cardinal::engine::Engine;
use cardinal::eval::evaluate_outputs;
use cardinal::Result;

use crate::systems::logistic::BR_LOGISTIC;
use crate::systems::tuned::MLP;

/// The datasets of the suite, in the order of its table.
pub const DATASETS: [&str; 8] = [
    "bibtex",
    "delicious",
    "emotions",
    "birds",
    "genbase",
    "flags",
    "cal500",
    "foodtruck",
];

/// One column of the suite table: a name and its configuration.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name in the table and in `--systems`.
    pub name: &'static str,
    /// What it trains (the seed is set per cell).
    pub config: Config,
    /// Whether its threshold is tuned on dev (the baselines), so that the table also shows
    /// F1 at that threshold.
    pub dev_threshold: bool,
}

/// The systems of the suite: the default (`predict`, with its data-dependent rule), `paper`,
/// the tuned MLP and BR-logistic.
pub fn entries() -> Vec<Entry> {
    // The suite's "default" column is `predict` with its rule (`--search`).
    let with_rule = |mut c: Config| {
        c.search = cardinal::config::SearchConfig::predict();
        c
    };
    let with_system = |name: &str| {
        let mut c = Config::paper();
        c.system = name.into();
        c
    };
    vec![
        Entry {
            name: "default",
            config: with_rule(Config::predict()),
            dev_threshold: false,
        },
        Entry {
            name: "paper",
            config: Config::paper(),
            dev_threshold: false,
        },
        Entry {
            name: "mlp",
            config: with_system(MLP),
            dev_threshold: true,
        },
        Entry {
            name: "br-logistic",
            config: with_system(BR_LOGISTIC),
            dev_threshold: true,
        },
    ]
}

/// What one training run of one system on one dataset measured (example-F1 in %).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// The seed.
    pub seed: u64,
    /// Test example-F1 at threshold 0.5.
    pub f1_at_half: f64,
    /// Test example-F1 at the threshold the system tuned on dev (the baselines); `None` for
    /// systems that keep 0.5.
    pub f1_at_dev_threshold: Option<f64>,
    /// The dev-tuned threshold.
    pub dev_threshold: Option<f64>,
    /// Test example-F1 with every row's count set to its gold count (systems with a count).
    pub f1_at_gold_count: Option<f64>,
    /// Mean absolute error of the predicted count `z`.
    pub count_mae: f64,
    /// The same for the constant training-mean count.
    pub constant_count_mae: f64,
    /// Share of test rows with `|Σy − z| ≤ 0.01` (the constraint held exactly).
    #[serde(default)]
    pub constraint_held: f64,
    /// Wall time of training (the search included), in seconds.
    pub train_seconds: f64,
    /// Epochs run (of the final training).
    pub epochs: usize,
    /// The configuration the model was saved with (after any search).
    pub config: Config,
}

/// Trains `cfg` (its seed set) on `data.train` with `engine` and evaluates it on `data.test`.
pub fn run_cell(engine: &Engine, data: &TrainTest, cfg: &Config) -> Result<Cell> {
    let start = Instant::now();
    let trained = engine.fit(&data.train, cfg.clone(), &mut |_| {})?;
    let train_seconds = start.elapsed().as_secs_f64();
    let model = trained.model;
    let (report, out) = engine.evaluate(&model, &data.test)?;
    let tuned = model.config().threshold != 0.5;
    let f1_at_half = if tuned {
        let mut at_half = model.clone();
        at_half.config_mut().threshold = 0.5;
        evaluate_outputs(&at_half, &out, &data.test.labels)
            .at_threshold
            .example_f1
    } else {
        report.at_threshold.example_f1
    };
    Ok(Cell {
        seed: cfg.seed,
        f1_at_half: 100.0 * f1_at_half,
        f1_at_dev_threshold: tuned.then_some(100.0 * report.at_threshold.example_f1),
        dev_threshold: tuned.then_some(model.config().threshold),
        f1_at_gold_count: report.at_gold_count.as_ref().map(|m| 100.0 * m.example_f1),
        count_mae: report.cardinality.mae,
        constant_count_mae: report.cardinality.baseline_mae,
        constraint_held: report.constraint.frac_sum_within_001,
        train_seconds,
        epochs: trained.history.len(),
        config: model.config().clone(),
    })
}

/// Mean and sample standard deviation.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len().max(1) as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v.sqrt())
}

/// `mean ± sd` of `xs` to two decimals, or the value alone for a single seed (whose sd is not
/// zero but unknown).
pub fn mean_sd_text(xs: &[f64]) -> String {
    let (m, s) = mean_sd(xs);
    if xs.len() > 1 {
        format!("{m:.2} ± {s:.2}")
    } else {
        format!("{m:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_a_valid_configuration_of_the_registry() {
        let systems = crate::systems();
        for e in entries() {
            e.config.validate().unwrap();
            systems.for_config(&e.config).unwrap();
        }
    }
}
