//! Prediction over a whole dataset and its evaluation: every metric at every binarisation rule,
//! how well the count is predicted, and whether the constraint holds.

use serde::{Deserialize, Serialize};

use crate::data::{CsrMatrix, LabelSets};
use crate::error::{Error, Result};
use crate::fitted::{Fitted, ForestModel, ModelFacts};
use crate::metrics::{
    binarize, cardinality_report, default_threshold_grid, evaluate, precision_at_k, ranking_report,
    tune_threshold, Binarize, CardinalityReport, MetricOptions, MetricReport, PrecisionAtK,
    RankingReport,
};
use crate::output_kind::OutputKind;
use crate::pipeline::{Model, Outputs, Workspace};
use crate::search_record::SearchRecord;
use cardinal_forest::{log_odds, Forest, ForestOutputs, Networks};

// The unit of a serialised [`EvalReport`]'s scores, with the report it describes.
pub use units::ScoreUnit;

mod units;

/// Predict and Constrain's inference on every row of `x`, `batch` rows at a time (rows in
/// parallel). Other systems predict their own way (`System::predict`).
pub(crate) fn predict(model: &Model<f32>, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>> {
    pnc_predict(model, x, batch, None)
}

/// [`predict`] with each row's count `z` taken from `counts` (one per row of `x`) instead of
/// `h(x)`.
pub(crate) fn predict_with_counts(
    model: &Model<f32>,
    x: &CsrMatrix,
    counts: Vec<f32>,
    batch: usize,
) -> Result<Outputs<f32>> {
    pnc_predict(model, x, batch, Some(counts))
}

fn pnc_predict(
    model: &Model<f32>,
    x: &CsrMatrix,
    batch: usize,
    count_override: Option<Vec<f32>>,
) -> Result<Outputs<f32>> {
    if let (Some(forest), Some(_)) = (&model.forest, &model.config.model.forest) {
        return forest_predict(model, forest, x, count_override.as_deref());
    }
    networks_predict(model, x, batch, count_override)
}

/// The prior of the unary scores on every row of `x` (`model.forest_prior`): the forest's
/// log-odds, `None` for a model without one.
pub(crate) fn unary_prior(model: &Model<f32>, x: &CsrMatrix) -> Option<Vec<f32>> {
    let (cfg, forest) = (
        model.config.model.forest_prior.as_ref()?,
        model.forest.as_ref()?,
    );
    Some(log_odds(&forest.marginals(x), cfg.weight, cfg.clip))
}

/// The prior of the unary scores on every row of the training file `x`, which the model's
/// forest grew on: each row's out of bag, from the trees whose bootstrap sample left it out,
/// so that no row's prior reads its own labels. A forest of another number of rows (a
/// checkpoint of other data) is refused.
pub(crate) fn training_prior(model: &Model<f32>, x: &CsrMatrix) -> Result<Option<Vec<f32>>> {
    let (Some(cfg), Some(forest)) = (&model.config.model.forest_prior, &model.forest) else {
        return Ok(None);
    };
    let l = model.n_labels();
    let oob = forest.oob_marginals();
    if oob.len() != x.n_rows * l {
        return Err(Error::Shape {
            what: "the forest prior's forest".into(),
            found: format!("a forest grown on {} rows", oob.len() / l.max(1)),
            expected: format!("one grown on the {} training rows", x.n_rows),
        });
    }
    Ok(Some(log_odds(&oob, cfg.weight, cfg.clip)))
}

/// The outputs of `model`, a forest alone (system `forest`): `y` the chosen sets, `z` their
/// sizes (or `counts`), `unary` the labels' marginal probabilities, `ranking` their F1 scores.
pub(crate) fn forest_alone_predict(
    model: &ForestModel,
    x: &CsrMatrix,
    counts: Option<&[f32]>,
) -> Result<Outputs<f32>> {
    check_forest_input(model.n_features, x, counts)?;
    Ok(forest_outputs(model.forest.decide(x, counts, None)))
}

/// `x` of `n_features` columns, `counts` (if given) one per row.
fn check_forest_input(n_features: usize, x: &CsrMatrix, counts: Option<&[f32]>) -> Result<()> {
    if x.n_cols != n_features {
        return Err(Error::Shape {
            what: "the input rows".into(),
            found: format!("{} features", x.n_cols),
            expected: format!("the model's {n_features} features"),
        });
    }
    if let Some(c) = counts {
        if c.len() != x.n_rows {
            return Err(Error::Shape {
                what: "the counts".into(),
                found: format!("{} counts", c.len()),
                expected: format!("one per row ({})", x.n_rows),
            });
        }
    }
    Ok(())
}

fn forest_outputs(out: ForestOutputs) -> Outputs<f32> {
    Outputs {
        y: out.y,
        z: out.z,
        unary: out.marginal,
        ranking: out.ranking,
    }
}

/// `model`'s outputs where its `forest` decides blended with the model's networks
/// (`model.forest.networks`, the networks' share of the joint; at 0 the forest alone): `y`
/// the chosen sets, `z` their sizes (or `counts`), `unary` the labels' marginal
/// probabilities, `ranking` their F1 scores.
fn forest_predict(
    model: &Model<f32>,
    forest: &Forest,
    x: &CsrMatrix,
    counts: Option<&[f32]>,
) -> Result<Outputs<f32>> {
    crate::model::check_dims(model, x.n_cols, model.n_labels(), "the input rows")?;
    check_forest_input(model.n_features(), x, counts)?;
    let share = model
        .config
        .model
        .forest
        .as_ref()
        .map_or(0.0, |f| f.networks);
    let out = if share > 0.0 {
        // Chunk by chunk, so the networks' outputs held at once stay bounded whatever the
        // number of rows.
        let counts_of: Vec<usize> = model.counts.iter().map(|&k| k as usize).collect();
        let mut out = ForestOutputs::default();
        for start in (0..x.n_rows).step_by(BLEND_CHUNK_ROWS) {
            let end = x.n_rows.min(start + BLEND_CHUNK_ROWS);
            // An input of one chunk is read in place; a longer one is copied a chunk at a time.
            let copied =
                (end - start < x.n_rows).then(|| x.select_rows(&(start..end).collect::<Vec<_>>()));
            let chunk = copied.as_ref().unwrap_or(x);
            let heads = model.heads(chunk);
            let nets = Networks {
                unary: &heads.unary,
                count_probs: &heads.count_probs,
                counts: &counts_of,
                share,
            };
            let chunk_counts = counts.map(|c| &c[start..end]);
            out.append(forest.decide(chunk, chunk_counts, Some(&nets)));
        }
        out
    } else {
        forest.decide(x, counts, None)
    };
    Ok(forest_outputs(out))
}

/// Rows whose network outputs a blended forest holds at once (a few in tests, so that their
/// inputs span several chunks).
const BLEND_CHUNK_ROWS: usize = if cfg!(test) { 7 } else { 4096 };

/// The networks' own prediction (the unrolled solver) on every row of `x`, a forest the model
/// has left out: what training measures on its dev rows, which a forest grown on the whole
/// training file has seen.
pub(crate) fn networks_predict(
    model: &Model<f32>,
    x: &CsrMatrix,
    batch: usize,
    count_override: Option<Vec<f32>>,
) -> Result<Outputs<f32>> {
    if model.config.model.forest_prior.is_some() {
        // Before the forest reads the rows.
        crate::model::check_dims(model, x.n_cols, model.n_labels(), "the input rows")?;
    }
    let prior = unary_prior(model, x);
    networks_predict_with_prior(model, x, batch, count_override, prior)
}

/// [`networks_predict`] with the unary prior `prior` (one row of `L` per row of `x`) instead
/// of the one the model's forest gives: the out-of-bag prior of training rows.
pub(crate) fn networks_predict_with_prior(
    model: &Model<f32>,
    x: &CsrMatrix,
    batch: usize,
    count_override: Option<Vec<f32>>,
    prior: Option<Vec<f32>>,
) -> Result<Outputs<f32>> {
    let mut ws = Workspace::default();
    ws.count_override = count_override;
    ws.unary_prior = prior;
    let mut out = Outputs::default();
    let rows: Vec<usize> = (0..x.n_rows).collect();
    model.forward_batched(x, &rows, batch, &mut ws, &mut out)?;
    Ok(out)
}

/// Does the last iterate satisfy `0 ≤ y ≤ 1, Σy = z`?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConstraintReport {
    /// Fraction of rows with `|Σ y_T − z| ≤ 0.01`.
    pub frac_sum_within_001: f64,
    /// Fraction of rows with every `y_T` entry in `[0, 1]` (to 1e-6).
    pub frac_in_box: f64,
    /// Mean `|Σ y_T − z|`.
    pub mean_abs_sum_gap: f64,
    /// Smallest entry of `y_T` over all rows.
    pub min_y: f64,
    /// Largest entry of `y_T` over all rows.
    pub max_y: f64,
}

/// Everything `cardinal eval` reports. Its scores are fractions here and percent in files
/// (`eval.json`, `--json`): its `Serialize` and `Deserialize` (in the crate's `eval_units`) tag
/// the unit ([`ScoreUnit`]) and also read files written in fractions. The derive below (`remote =
/// "Self"`) gives only the field-by-field form those implementations wrap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct EvalReport {
    /// The system that produced the outputs, as the model records it (`pnc`, `forest`,
    /// `forest-blend`, a Table 1 system; empty in reports written before it was recorded).
    #[serde(default)]
    pub system: String,
    /// The model's preset: the configuration it started from, or the search's candidate it
    /// is (`predict`, `paper-projected`, `forest`, ...).
    #[serde(default)]
    pub preset: String,
    /// What the system's outputs are ([`OutputKind`]), and so which of the diagnostics below
    /// apply; `None` where the report was made without the system's registry.
    #[serde(default)]
    pub outputs: Option<OutputKind>,
    /// What the default's search did before the model trained (`None` when it did not run).
    #[serde(default)]
    pub search: Option<SearchRecord>,
    /// The configured threshold (0.5 in the paper's protocol) on `y_T`.
    pub threshold: f64,
    /// Every metric with `y_T` binarised at `threshold`.
    pub at_threshold: MetricReport,
    /// The `round(z)` highest entries of `y_T`.
    pub at_top_round_z: MetricReport,
    /// A threshold chosen on dev data, when one was tuned.
    pub dev_threshold: Option<f64>,
    /// Every metric at `dev_threshold`.
    pub at_dev_threshold: Option<MetricReport>,
    /// How well the predicted count `z` matches the gold count.
    pub cardinality: CardinalityReport,
    /// The same model re-run with every row's `z` set to its gold count `|y*|` (at the
    /// threshold): what a perfect count predictor would give, so that the distance to
    /// `at_threshold` is what a better `h(x)` can still buy. Set by `add_gold_count` (P&C
    /// only; absent from reports written by older versions).
    #[serde(default)]
    pub at_gold_count: Option<MetricReport>,
    /// precision@1, 3, 5 of the ranking scores ([`Outputs::ranking_scores`]: the last ascent
    /// point before its projection, since `y_T`'s entries at 0 or 1 tie; `y_T` for the
    /// baseline systems). Empty in reports written by older versions.
    #[serde(default)]
    pub precision_at_k: Vec<PrecisionAtK>,
    /// Ranking loss, coverage, LRAP and the micro and macro ROC AUC of the same ranking
    /// scores (scikit-learn's definitions), set by `add_ranking` (`Engine::evaluate`). `None`
    /// in reports written by older versions and in the dev evaluations of training.
    #[serde(default)]
    pub ranking: Option<RankingReport>,
    /// Whether `y_T` satisfies the constraint.
    pub constraint: ConstraintReport,
}

/// Checks the constraint on the outputs.
pub(crate) fn constraint_report(out: &Outputs<f32>, n_labels: usize) -> ConstraintReport {
    let n = out.z.len().max(1) as f64;
    let (mut within, mut boxed, mut gap_sum) = (0usize, 0usize, 0.0f64);
    let (mut min_y, mut max_y) = (f64::INFINITY, f64::NEG_INFINITY);
    for (row, &z) in out.y.chunks_exact(n_labels).zip(&out.z) {
        let sum: f64 = row.iter().map(|&v| v as f64).sum();
        let gap = (sum - z as f64).abs();
        gap_sum += gap;
        within += usize::from(gap <= 0.01);
        let (lo, hi) = row
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v as f64), hi.max(v as f64))
            });
        boxed += usize::from(lo >= -1e-6 && hi <= 1.0 + 1e-6);
        min_y = min_y.min(lo);
        max_y = max_y.max(hi);
    }
    ConstraintReport {
        frac_sum_within_001: within as f64 / n,
        frac_in_box: boxed as f64 / n,
        mean_abs_sum_gap: gap_sum / n,
        min_y,
        max_y,
    }
}

/// Evaluates outputs against gold labels (threshold from the model's config).
pub fn evaluate_outputs(
    model: &(impl ModelFacts + ?Sized),
    out: &Outputs<f32>,
    gold: &LabelSets,
) -> EvalReport {
    let l = model.n_labels();
    let opts = MetricOptions::default();
    let thr = model.config().threshold;
    let pred =
        binarize(&out.y, l, &Binarize::Threshold(thr as f32), None).expect("well-formed outputs");
    let pred_z = binarize(&out.y, l, &Binarize::TopRoundZ, Some(&out.z)).expect("finite z");
    EvalReport {
        system: model.config().system.clone(),
        preset: model.config().preset.clone(),
        outputs: None,
        search: model.search().cloned(),
        threshold: thr,
        at_threshold: evaluate(&pred, gold, &opts),
        at_top_round_z: evaluate(&pred_z, gold, &opts),
        dev_threshold: None,
        at_dev_threshold: None,
        cardinality: cardinality_report(&out.z, gold, model.train_mean_cardinality())
            .expect("finite z"),
        at_gold_count: None,
        precision_at_k: precision_at_k(out.ranking_scores(), gold, &opts.precision_at)
            .expect("well-formed outputs"),
        ranking: None,
        constraint: constraint_report(out, l),
    }
}

/// Sets `report.ranking` from the ranking scores of `out` on `gold` (left out of
/// [`evaluate_outputs`]: the dev evaluation after every epoch has no use for it).
pub(crate) fn add_ranking(
    report: &mut EvalReport,
    out: &Outputs<f32>,
    gold: &LabelSets,
) -> Result<()> {
    report.ranking = Some(ranking_report(out.ranking_scores(), gold)?);
    Ok(())
}

/// Sets `report.at_gold_count` from `out`, the outputs of inference on the evaluated rows with
/// each row's count replaced by its gold count (`System::predict_with_counts`), binarised at
/// the model's threshold.
pub(crate) fn add_gold_count(
    model: &Fitted,
    report: &mut EvalReport,
    out: &Outputs<f32>,
    gold: &LabelSets,
) -> Result<()> {
    let pred = binarize(
        &out.y,
        model.n_labels(),
        &Binarize::Threshold(model.config().threshold as f32),
        None,
    )?;
    report.at_gold_count = Some(evaluate(&pred, gold, &MetricOptions::default()));
    Ok(())
}

/// Each row's gold count, as the counts to run inference with for [`add_gold_count`].
pub(crate) fn gold_counts(gold: &LabelSets) -> Vec<f32> {
    (0..gold.n_rows).map(|r| gold.count(r) as f32).collect()
}

/// A threshold of the (f32) grid as the f64 it stands for: 0.15, not 0.15000000596.
pub fn grid_threshold(t: f32) -> f64 {
    (t as f64 * 1e4).round() / 1e4
}

/// Adds the SPEN protocol to `report`: the threshold with the best example-F1 on `dev` (grid
/// 0.05, 0.10, …, 0.95; never the test set) applied to the test outputs `out`.
pub(crate) fn add_dev_threshold(
    model: &Fitted,
    report: &mut EvalReport,
    dev_out: &Outputs<f32>,
    dev_gold: &LabelSets,
    out: &Outputs<f32>,
    gold: &LabelSets,
) -> Result<()> {
    let opts = MetricOptions::default();
    let (thr, _) = tune_threshold(&dev_out.y, dev_gold, &default_threshold_grid(), &opts)?;
    let pred = binarize(&out.y, model.n_labels(), &Binarize::Threshold(thr), None)?;
    report.dev_threshold = Some(grid_threshold(thr));
    report.at_dev_threshold = Some(evaluate(&pred, gold, &opts));
    Ok(())
}
