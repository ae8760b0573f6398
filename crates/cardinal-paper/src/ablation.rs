//! The ablation (`cardinal reproduce ablation`): what each part of Predict and Constrain
//! contributes, as the test example-F1 of P&C's default configuration with one part taken out
//! or replaced (see [`variants`]).
//!
//! Every variant is trained with [`Engine::fit`] on a dataset's training part and evaluated on
//! its test part; `fixed-z` reads a model trained as `full` another way and costs no training.
//! A cell (one variant, dataset and seed) is cached, by the front end, under
//! [`crate::cell_key::suite_cell_key`] of its configuration, as the suite's are.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use cardinal::config::{Config, ConfigRequest, CountRange};
use cardinal::data::{Dataset, TrainTest};
use cardinal::engine::{dev_split, Engine, Fitted};
use cardinal::eval::{evaluate_outputs, EvalReport};
use cardinal::proj::Method;
use cardinal::{Error, Result};

use crate::suite::{mean_sd, mean_sd_text};

/// The variants, in the order of the table's columns.
pub const VARIANTS: [&str; 8] = [
    "full",
    "fixed-z",
    "no-projection",
    "no-energy",
    "t0",
    "f1-count",
    "paper",
    "paper-fixed-z",
];

/// How a variant's labels are read off its trained model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decode {
    /// The model's own inference, with its predicted count `z`.
    Predicted,
    /// Every test row's count set to one constant `k`: the count of the model's range whose
    /// example-F1 is best on the model's own dev split ([`best_fixed_count`]).
    FixedCount,
}

/// One column of the ablation: a name, what it trains and how it is read.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The name in the table (one of [`VARIANTS`]).
    pub name: &'static str,
    /// What it trains (the seed is set per cell).
    pub config: Config,
    /// How its labels are read off the trained model.
    pub decode: Decode,
    /// What it measures, for the table's legend.
    pub about: &'static str,
}

/// The variants of the ablation on the training file `train`, each configuration read from
/// its preset (`predict` or `paper`) with the JSON `overrides` read over it (for quick
/// checks; `None` in the ablation proper), then changed as its [`Variant::about`] says:
///
/// - `full`: `Config::predict()` with the search off, so that P&C itself is measured;
/// - `fixed-z`: `full`'s model, every test row's count the constant best on dev;
/// - `no-projection`: the ascent without `C(z)`: the box only (`clip`) in training and at
///   test, no final projection, the threshold chosen on dev;
/// - `no-energy`: no global energy term (`model.energy_hidden = 0`);
/// - `t0`: no ascent, the unary alone (`y_0 = σ(u)`): `inference.steps = 0`, no final
///   projection, the threshold chosen on dev;
/// - `f1-count`: the count decoded for the expected example-F1
///   (`inference.expected_f1_count`) where `full` takes the count network's expectation;
/// - `paper`: `Config::paper()`, its count predicted;
/// - `paper-fixed-z`: `paper` with the count range one constant, the training mean count
///   rounded (at least 1): the §5.1 claim that a predicted count beats a fixed one.
///
/// Every configuration is validated and looked up in the registry ([`crate::systems()`]), so
/// that none sets a field its system does not read.
pub fn variants(train: &Dataset, overrides: Option<&str>) -> Result<Vec<Variant>> {
    let preset = |name: &str| {
        ConfigRequest {
            preset: Some(name),
            overrides,
            search: Some(false),
            ..ConfigRequest::default()
        }
        .resolve()
    };
    let full = preset("predict")?;
    let paper = preset("paper")?;
    let on_dev = |mut c: Config| {
        c.train.tune_threshold = true;
        c.inference.final_projection = None;
        c
    };
    let no_projection = {
        let mut c = on_dev(full.clone());
        c.inference.train_projection = Method::Clip;
        c.inference.test_projection = Method::Clip;
        c
    };
    let no_energy = {
        let mut c = full.clone();
        c.model.energy_hidden = 0;
        c
    };
    let t0 = {
        let mut c = on_dev(full.clone());
        c.inference.steps = 0;
        c
    };
    let f1_count = {
        let mut c = full.clone();
        c.inference.expected_f1_count = true;
        c
    };
    let paper_fixed = {
        let mut c = paper.clone();
        let k = mean_count_constant(train);
        c.model.counts = CountRange::Fixed { min: k, max: k };
        c
    };
    use Decode::{FixedCount, Predicted};
    let all = vec![
        (
            "full",
            full.clone(),
            Predicted,
            "`predict` with the search off: P&C's default, count by the expectation of h(x)",
        ),
        (
            "fixed-z",
            full,
            FixedCount,
            "full's model, every test row's count the constant of its range best on dev",
        ),
        (
            "no-projection",
            no_projection,
            Predicted,
            "the ascent on the box only (clip), no C(z), no final projection; dev threshold",
        ),
        (
            "no-energy",
            no_energy,
            Predicted,
            "no global energy term (model.energy_hidden = 0)",
        ),
        (
            "t0",
            t0,
            Predicted,
            "no ascent, the unary alone: y = σ(u) (steps 0, no final projection); dev threshold",
        ),
        (
            "f1-count",
            f1_count,
            Predicted,
            "the count decoded for the expected example-F1 (inference.expected_f1_count)",
        ),
        (
            "paper",
            paper,
            Predicted,
            "`paper` (the released code's configuration), its count predicted",
        ),
        (
            "paper-fixed-z",
            paper_fixed,
            Predicted,
            "`paper` with the count range one constant: the training mean count, rounded",
        ),
    ];
    let registry = crate::systems();
    all.into_iter()
        .map(|(name, config, decode, about)| {
            config.validate()?;
            registry.for_config(&config)?;
            Ok(Variant {
                name,
                config,
                decode,
                about,
            })
        })
        .collect()
}

/// The constant count of `paper-fixed-z`: the mean label count of `train`, rounded, at least 1
/// and at most the number of labels.
pub fn mean_count_constant(train: &Dataset) -> usize {
    let n = train.n_rows().max(1) as f64;
    let mean = (0..train.n_rows())
        .map(|r| train.labels.count(r))
        .sum::<usize>() as f64
        / n;
    (mean.round() as usize).max(1).min(train.n_labels().max(1))
}

/// What one variant measured on one dataset with one seed (example-F1 in %).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// The seed.
    pub seed: u64,
    /// Test example-F1, an empty prediction for an empty gold set scored 0 (the paper's).
    pub f1: f64,
    /// Test example-F1, an empty prediction for an empty gold set scored 1.
    pub f1_empty_one: f64,
    /// The threshold the labels were read at (0.5, or the one chosen on dev).
    pub threshold: f64,
    /// The constant count every test row was given ([`Decode::FixedCount`]).
    pub fixed_count: Option<usize>,
    /// The mean count `z` of the outputs on the test rows: the constant of `fixed-z`; for the
    /// variants without `C(z)` (`no-projection`, `t0`), the count network's, which their
    /// labels do not follow.
    pub mean_count: f64,
    /// Wall time of the training the cell read (shared by the variants of one model), s.
    pub train_seconds: f64,
    /// Epochs run.
    pub epochs: usize,
    /// The configuration the model was saved with.
    pub config: Config,
}

/// Trains `cfg` (its seed set) on `data.train` once and reads one [`Cell`] off the model for
/// each of `decodes`, in order, on `data.test`.
pub fn run_cells(
    engine: &Engine,
    data: &TrainTest,
    cfg: &Config,
    decodes: &[Decode],
) -> Result<Vec<Cell>> {
    let start = Instant::now();
    let trained = engine.fit(&data.train, cfg.clone(), &mut |_| {})?;
    let train_seconds = start.elapsed().as_secs_f64();
    let model = trained.model;
    let test = &data.test;
    decodes
        .iter()
        .map(|decode| {
            let (out, fixed_count) = match decode {
                Decode::Predicted => (engine.predict(&model, &test.features)?, None),
                Decode::FixedCount => {
                    let (k, _) = best_fixed_count(engine, &model, &data.train)?;
                    let counts = vec![k as f32; test.n_rows()];
                    (with_counts(engine, &model, test, counts)?, Some(k))
                }
            };
            let report: EvalReport = evaluate_outputs(&model, &out, &test.labels);
            Ok(Cell {
                seed: cfg.seed,
                f1: 100.0 * report.at_threshold.example_f1,
                f1_empty_one: 100.0 * report.at_threshold.example_f1_other_empty,
                threshold: model.config().threshold,
                fixed_count,
                mean_count: out.z.iter().map(|&z| z as f64).sum::<f64>()
                    / out.z.len().max(1) as f64,
                train_seconds,
                epochs: trained.history.len(),
                config: model.config().clone(),
            })
        })
        .collect()
}

/// Inference of `model` on `data` with the given counts, refused for systems without one.
fn with_counts(
    engine: &Engine,
    model: &Fitted,
    data: &Dataset,
    counts: Vec<f32>,
) -> Result<cardinal::engine::Outputs<f32>> {
    engine
        .predict_with_counts(model, &data.features, counts)?
        .ok_or_else(|| Error::Unsupported {
            system: model.config().system.clone(),
            what: "inference with given counts".into(),
        })
}

/// The count `k` of `model`'s range whose example-F1 (at the model's threshold, empty = 0) is
/// best on the model's dev split of `train` ([`dev_split`]) when every row's count is `k`,
/// with that F1 (ties go to the smaller count). Refused without dev rows.
pub fn best_fixed_count(engine: &Engine, model: &Fitted, train: &Dataset) -> Result<(usize, f64)> {
    let dev = dev_split(train, model.config()).ok_or_else(|| Error::Empty {
        data: train.name.clone(),
        what: "dev rows (to choose the fixed count on)",
    })?;
    let mut best: Option<(usize, f64)> = None;
    for k in model.counts() {
        let out = with_counts(engine, model, &dev, vec![k; dev.n_rows()])?;
        let f1 = evaluate_outputs(model, &out, &dev.labels)
            .at_threshold
            .example_f1;
        if best.is_none_or(|(_, b)| f1 > b) {
            best = Some((k.round() as usize, f1));
        }
    }
    best.ok_or_else(|| Error::Empty {
        data: train.name.clone(),
        what: "counts in the model's range",
    })
}

/// The differences `other − base` of example-F1 (empty = 0) over the seeds both have, in seed
/// order.
pub fn paired_differences(base: &[Cell], other: &[Cell]) -> Vec<f64> {
    let by_seed: BTreeMap<u64, f64> = base.iter().map(|c| (c.seed, c.f1)).collect();
    let mut diffs: Vec<(u64, f64)> = other
        .iter()
        .filter_map(|c| by_seed.get(&c.seed).map(|b| (c.seed, c.f1 - b)))
        .collect();
    diffs.sort_by_key(|d| d.0);
    diffs.into_iter().map(|d| d.1).collect()
}

/// The cells of one dataset, for [`tables`].
#[derive(Debug, Clone, Serialize)]
pub struct DatasetCells {
    /// The dataset's name.
    pub dataset: String,
    /// Whether its test part has rows without labels, where the empty = 1 convention differs
    /// from the paper's empty = 0 (and the table shows both).
    pub empty_rows: bool,
    /// Each variant's cells (by name), in seed order.
    pub cells: BTreeMap<String, Vec<Cell>>,
}

/// The ablation as markdown: test example-F1 (mean ± sd over seeds) per dataset and variant,
/// the differences against `full` paired by seed, and the legend of `variants`.
pub fn tables(rows: &[DatasetCells], variants: &[(&str, &str)]) -> String {
    let names: Vec<&str> = variants.iter().map(|v| v.0).collect();
    let header = |first: &str, cols: &[String]| {
        format!(
            "| {first} | {} |\n| --- |{}\n",
            cols.join(" | "),
            " ---: |".repeat(cols.len())
        )
    };
    let cols: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    let mut md = String::from(
        "Test example-F1 (%, an empty prediction for an empty gold set scored 0; where the \
         test part has rows without labels, also with it scored 1, as `e=1`), mean ± sd over \
         seeds.\n\n",
    );
    md.push_str(&header(
        "dataset",
        &[cols.clone(), vec!["seeds".into()]].concat(),
    ));
    for row in rows {
        let mut line = format!("| {} |", row.dataset);
        for name in &names {
            let cells = row.cells.get(*name).map_or(&[][..], Vec::as_slice);
            line.push_str(&format!(" {} |", f1_text(cells, row.empty_rows)));
        }
        let seeds: Vec<String> = row
            .cells
            .get("full")
            .map(|c| c.iter().map(|c| c.seed.to_string()).collect())
            .unwrap_or_default();
        line.push_str(&format!(" {} |\n", or_dash(seeds.join(","))));
        md.push_str(&line);
    }
    let others: Vec<&str> = names.iter().copied().filter(|n| *n != "full").collect();
    md.push_str("\nDifference against `full` (percentage points, paired by seed, mean ± sd).\n\n");
    let diff_cols: Vec<String> = others.iter().map(|n| format!("`{n}` − `full`")).collect();
    md.push_str(&header("dataset", &diff_cols));
    for row in rows {
        let base = row.cells.get("full").map_or(&[][..], Vec::as_slice);
        let mut line = format!("| {} |", row.dataset);
        for name in &others {
            let other = row.cells.get(*name).map_or(&[][..], Vec::as_slice);
            let d = paired_differences(base, other);
            line.push_str(&format!(" {} |", or_dash(signed_text(&d))));
        }
        md.push_str(&line);
        md.push('\n');
    }
    md.push_str("\nVariants:\n");
    for (name, about) in variants {
        md.push_str(&format!("- `{name}`: {about}\n"));
    }
    md
}

/// A cell of the first table: example-F1 over the seeds, and with empty = 1 where asked.
fn f1_text(cells: &[Cell], empty_one: bool) -> String {
    if cells.is_empty() {
        return "not run".into();
    }
    let f1: Vec<f64> = cells.iter().map(|c| c.f1).collect();
    let mut text = mean_sd_text(&f1);
    if empty_one {
        let e1: Vec<f64> = cells.iter().map(|c| c.f1_empty_one).collect();
        text.push_str(&format!(" (e=1: {})", mean_sd_text(&e1)));
    }
    text
}

/// `+m ± s` (or `+m` for one value); empty for none.
fn signed_text(xs: &[f64]) -> String {
    if xs.is_empty() {
        return String::new();
    }
    let (m, s) = mean_sd(xs);
    if xs.len() > 1 {
        format!("{m:+.2} ± {s:.2}")
    } else {
        format!("{m:+.2}")
    }
}

fn or_dash(s: String) -> String {
    if s.is_empty() {
        "–".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
