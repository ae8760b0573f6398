//! The default's data-dependent rule. On a training file of at most `search.max_rows` rows,
//! the `predict` preset trains whichever of a few fixed candidate configurations scores the
//! best mean example-F1 (at its threshold) in a `search.folds`-fold cross-validation on the
//! training file itself; larger files train the configuration as given. The score counts an
//! empty prediction for an empty gold set as a success (1): "no labels" is a prediction, and
//! a candidate that makes it where the data has it must not lose to one that never does (on
//! data without empty label sets the two conventions agree). The candidates are
//! the same for every dataset, the choice is made on training data only (never on test), and
//! it is deterministic for a given seed. The time it costs is that of `folds` trainings of
//! each candidate on `(folds − 1)/folds` of the file, on files small enough for that to take
//! seconds (measured in docs/RESULTS.md §4.1); three candidates (`predict`, the forest and
//! their blend) share one training per fold, the blend's, which holds the other two.

use crate::config::{Config, ForestConfig, SearchScope, SearchScoring, FOREST};
use crate::cv::Decoding;
use crate::data::CsrMatrix;
use crate::data::Dataset;
use crate::error::Result;
use crate::eval::grid_threshold;
use crate::fitted::Fitted;
use crate::metrics::default_threshold_grid;
use crate::pipeline::{Model, Outputs};
use crate::system::{OutputKind, Reads, System, Systems};
use crate::train::{Event, Hooks, Start, Trained};
use cardinal_proj::Method;

mod tasks;

pub use crate::search_record::{summary, CandidateScore, SearchRecord};
pub use cardinal_forest::ForestCache;
pub(crate) use tasks::Plan;
pub use tasks::{SearchTask, SearchTaskResult};

/// The part of the rule in words that both scorings share.
macro_rules! rule_tail {
    () => {
        "threshold by one paired standard error; predict counts by expected F1; predict \
         over a forest's log-odds; forest candidate; forest blended with predict's networks; the folds run within 3000 \
         training rows per candidate"
    };
}

/// How `choose` scores and decides: changed whenever the same candidates could be chosen or
/// decoded differently.
const RULE: &str = concat!("cv example-F1, empty=1; ", rule_tail!());

/// [`RULE`] under scikit-learn's `f1_samples` scoring.
const RULE_F1_SAMPLES: &str = concat!("cv example-F1, empty=0; ", rule_tail!());

/// The rule in words for a scoring.
fn rule(scoring: SearchScoring) -> &'static str {
    match scoring {
        SearchScoring::ExampleF1 => RULE,
        SearchScoring::F1Samples => RULE_F1_SAMPLES,
    }
}

/// Fewest dev rows worth early stopping on: a 5 % dev split of a small training file (7 rows
/// of Flags' 129) decides by one or two rows, so small files hold out up to a fifth instead.
const MIN_DEV_ROWS: f64 = 100.0;

/// The dev fraction for a training file of `n` rows: `configured`, raised to hold out at least
/// 100 rows but never more than a fifth of the file (beyond 2000 rows: `configured`, 5 %).
pub fn scaled_dev_fraction(configured: f64, n: usize) -> f64 {
    let wanted = (MIN_DEV_ROWS / n.max(1) as f64).min(0.2);
    configured.max(wanted)
}

/// The candidates for `cfg` on a training file of `n` rows, in order of preference (the first
/// wins a tie): `cfg` itself, with the count at inference chosen for the expected example-F1
/// (`inference.expected_f1_count`) where its count network is supervised (the count
/// distribution is then a prediction of the count, which the unsupervised `paper` count is
/// not; measured in docs/journal/2026-11-27-decoding.md); the authors' configuration with the exact projection in every
/// step (`paper-projected`; the authors' soft Dykstra steps leave `y_T` off `C(z)`, so that
/// every candidate's output holds `Σy = z` and `y ∈ [0, 1]` exactly, as `cfg`'s does); and
/// that with 500 hidden units and dropout 0.3 (`paper-wide`); and, unless the rows are
/// weighted, a random forest decoded for the expected F1 (`forest`, see `crate::forest`),
/// whose sets are on `C(z)` by construction, and, where `cfg`'s count network is supervised,
/// that forest blended with `cfg`'s own networks, trained as in the first candidate
/// (`forest-blend`: a quarter of the joint distribution theirs). Each has the search off,
/// `cfg`'s seed and split seed, and the dev fraction scaled to the file. With
/// `search.scope = pnc` (`--system pnc`) the forests are left out: every candidate then runs
/// Predict and Constrain's energy, unrolled ascent and projection.
pub(crate) fn candidates(cfg: &Config, n: usize, weighted: bool) -> Vec<Config> {
    let plain = cfg.as_candidate();
    let mut paper = Config::paper();
    paper.preset = "paper-projected".into();
    paper.seed = cfg.seed;
    paper.train.split_seed = cfg.train.split_seed;
    paper.train.dev_fraction = cfg.train.dev_fraction;
    paper.inference.train_projection = Method::Exact;
    paper.inference.test_projection = Method::Exact;
    // The same with a wider unary net held back by dropout.
    let mut wide = paper.clone();
    wide.preset = "paper-wide".into();
    wide.model.hidden = 500;
    wide.model.dropout = 0.3;
    // The blend reads the count network's distribution as a prediction of the count, which
    // only a supervised count network makes.
    let count_supervised = plain.loss.cardinality_weight > 0.0;
    let forests = cfg.search.scope == SearchScope::All && !weighted;
    let mut out = vec![plain, paper, wide];
    if !weighted {
        // Predict and Constrain over a forest's log-odds: the forest grows on unweighted rows.
        out.push(cfg.forest_prior());
    }
    if forests {
        // A random forest's neighbourhoods, decided for the expected F1 (`crate::forest`).
        out.push(cfg.forest());
        if count_supervised {
            // The forest's joint mixed with the count-supervised networks' (a quarter theirs).
            out.push(cfg.forest_blend());
        }
    }
    for c in &mut out {
        c.train.dev_fraction = scaled_dev_fraction(c.train.dev_fraction, n);
    }
    out
}

/// What the search's choice for `cfg` on a training file of `n` rows (`weighted` if its rows
/// carry weights) depends on besides the rows, for caches keyed by it (the suite's cells):
/// how it scores and decides, in words, and the candidate configurations in order of preference.
pub fn rule_and_candidates(cfg: &Config, n: usize, weighted: bool) -> (&'static str, Vec<Config>) {
    (rule(cfg.search.scoring), candidates(cfg, n, weighted))
}

/// The decision threshold from `grid` by the one-standard-error rule over `folds` (each a
/// row of example-F1 scores in grid order): the grid point nearest 0.5 whose mean falls
/// short of the best mean by no more than the standard error of that shortfall over the
/// folds (paired, fold by fold), with its mean. The folds' models never saw the rows they are
/// scored on, so the rule is chosen on training data only, from every row of the file; the
/// standard error keeps it at 0.5 unless the folds agree that another point is better (a
/// plain arg-max over 19 thresholds of a few folds chases noise).
pub(crate) fn best_threshold(grid: &[f32], folds: &[Vec<f64>]) -> (f64, f64) {
    let k = folds.len().max(1) as f64;
    let mean = |j: usize| folds.iter().map(|f| f[j]).sum::<f64>() / k;
    let means: Vec<f64> = (0..grid.len()).map(mean).collect();
    let dist = |j: usize| (grid[j] as f64 - 0.5).abs();
    // The best mean, nearest 0.5 among ties.
    let top = (0..grid.len())
        .min_by(|&a, &b| {
            means[b]
                .total_cmp(&means[a])
                .then(dist(a).total_cmp(&dist(b)))
        })
        .expect("a non-empty grid");
    let within = |j: usize| {
        let d: Vec<f64> = folds.iter().map(|f| f[top] - f[j]).collect();
        let m = d.iter().sum::<f64>() / k;
        let se = if d.len() > 1 {
            (d.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (k - 1.0) / k).sqrt()
        } else {
            0.0
        };
        m <= se + 1e-9
    };
    let j = (0..grid.len())
        .filter(|&j| within(j))
        .min_by(|&a, &b| {
            dist(a)
                .total_cmp(&dist(b))
                .then(grid[a].total_cmp(&grid[b]))
        })
        .expect("the best point is within");
    (grid_threshold(grid[j]), means[j])
}

/// The configuration `system` trains on `train` under `cfg`'s rule: `cfg` unchanged when the
/// rule does not apply, else the candidate with the best cross-validated example-F1, with its
/// decision threshold set to the one where that candidate's cross-validated example-F1 is
/// best (an F1 decoding chosen on the training file, as GFM and BOOMER's F1 predictor decode
/// for F1; recorded in the saved configuration like every other choice). The chosen
/// configuration names the system it is (`config.system`: `forest` or `forest-blend` for the
/// forests), and the search's record comes with it (`None` when the rule did not apply). The
/// folds are trained here, task after task, unless `hooks.search_results` holds the results
/// of every task of the plan ([`Plan::tasks`]), computed elsewhere (another process or
/// machine: [`crate::engine::Engine::run_search_task`]).
pub(crate) fn choose(
    system: &dyn System,
    train: &Dataset,
    cfg: Config,
    hooks: &mut Hooks,
    search_results: Option<&[SearchTaskResult]>,
) -> Result<(Config, Option<SearchRecord>)> {
    if !cfg.search.applies(train.n_rows()) {
        return Ok((cfg, None));
    }
    let plan = Plan::new(&cfg, train)?;
    let (folds, folds_run) = (plan.folds, plan.folds_run);
    let grid = default_threshold_grid();
    let mut scores: Vec<CandidateScore> = Vec::new();
    let mut best: Option<(f64, Config)> = None;
    let reports = match search_results {
        // Trained elsewhere, where the progress was told.
        Some(results) => plan.reports(results)?,
        None => {
            (hooks.on_event)(Event::Searching {
                candidates: plan.all.len(),
                folds,
                folds_run,
                rows: train.n_rows(),
            });
            let mut results = Vec::new();
            // The trainings of a fold that grow the same forest grow it once.
            let forests = ForestCache::default();
            for task in plan.tasks() {
                let started = std::time::Instant::now();
                let result = plan.run(
                    system,
                    train,
                    task,
                    hooks.wait,
                    hooks.memory_budget,
                    hooks.cancel,
                    Some(&forests),
                    &mut |_| {},
                )?;
                (hooks.on_event)(Event::SearchFold {
                    candidates: &result.candidates,
                    fold: task.fold + 1,
                    folds_run,
                    seconds: started.elapsed().as_secs_f64(),
                });
                results.push(result);
            }
            plan.reports(&results)?
        }
    };
    for (mut candidate, report) in plan.all.into_iter().zip(reports) {
        let by_fold: Vec<Vec<f64>> = report
            .folds
            .iter()
            .map(|f| f.example_f1_by_threshold.clone())
            .collect();
        // A count chosen for the expected F1 already decides the label set (`y_T` on `C(z)`
        // for an integer `z`): its threshold stays at 0.5, not tuned a second time.
        let (threshold, score) =
            if candidate.inference.expected_f1_count || candidate.model.forest.is_some() {
                let half = (0..grid.len())
                    .min_by(|&a, &b| (grid[a] - 0.5).abs().total_cmp(&(grid[b] - 0.5).abs()))
                    .expect("a non-empty grid");
                let at: Vec<Vec<f64>> = by_fold.iter().map(|f| vec![f[half]]).collect();
                best_threshold(&grid[half..=half], &at)
            } else {
                best_threshold(&grid, &by_fold)
            };
        tracing::info!(
            "search: {} scores {score:.2} at threshold {threshold} in {}",
            candidate.preset,
            crate::config::cv_words(folds, folds_run)
        );
        scores.push(CandidateScore {
            preset: candidate.preset.clone(),
            system: candidate.system.clone(),
            example_f1: score,
            threshold,
        });
        candidate.threshold = threshold;
        if best.as_ref().is_none_or(|(best, _)| score > *best) {
            best = Some((score, candidate));
        }
    }
    let (scope, scoring) = (cfg.search.scope, cfg.search.scoring);
    let chosen = best.map_or(cfg, |(_, c)| c);
    let record = SearchRecord {
        rule: rule(scoring).into(),
        folds,
        folds_run: Some(folds_run),
        rows: train.n_rows(),
        scope,
        scoring,
        scores,
        chosen: chosen.preset.clone(),
    };
    (hooks.on_event)(Event::Searched { record: &record });
    Ok((chosen, Some(record)))
}

/// A system with the default's search above it, as the engine trains it: a fresh training of
/// a system that is searched ([`System::searched`]) first chooses its configuration
/// ([`choose`]) and then trains the chosen candidate with the chosen candidate's own system
/// (`config.system`: a forest may win), the search's record handed to it in
/// [`Hooks::search`]. Everything else is the system's own. Cross-validation of a searched
/// configuration runs the search within each fold, on that fold's training rows.
pub(crate) struct Searched<'a> {
    /// The system the configuration names.
    pub(crate) system: &'a dyn System,
    /// The systems a chosen candidate may be.
    pub(crate) systems: &'a Systems,
    /// The folds' results, computed elsewhere (`None`: trained here).
    pub(crate) results: Option<&'a [SearchTaskResult]>,
}

impl System for Searched<'_> {
    fn name(&self) -> &'static str {
        self.system.name()
    }
    fn reads(&self) -> Reads {
        self.system.reads()
    }
    fn validate(&self, cfg: &Config) -> Result<()> {
        self.system.validate(cfg)
    }
    fn about(&self) -> &'static str {
        self.system.about()
    }
    fn outputs(&self) -> OutputKind {
        self.system.outputs()
    }
    fn resumable(&self) -> bool {
        self.system.resumable()
    }
    fn searched(&self) -> bool {
        self.system.searched()
    }
    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained> {
        let cfg = match start {
            Start::Fresh(cfg) if self.system.searched() => cfg,
            start => return self.system.fit(train, start, hooks),
        };
        crate::system::check(self.system, &cfg)?;
        let (cfg, record) = choose(self.system, train, cfg, hooks, self.results)?;
        let chosen = match record {
            Some(_) => self.systems.get(&cfg.system)?,
            None => self.system,
        };
        hooks.search = record;
        chosen.fit(train, Start::Fresh(cfg), hooks)
    }
    fn predict(&self, model: &Fitted, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>> {
        self.system.predict(model, x, batch)
    }
    fn predict_networks(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        batch: usize,
    ) -> Result<Outputs<f32>> {
        self.system.predict_networks(model, x, batch)
    }
    fn predict_with_counts(
        &self,
        model: &Fitted,
        x: &CsrMatrix,
        counts: Vec<f32>,
        batch: usize,
    ) -> Result<Option<Outputs<f32>>> {
        self.system.predict_with_counts(model, x, counts, batch)
    }
}

/// How candidate `c` is scored from the models trained for `blend` (the blended forest
/// candidate), if it can be: the blend itself, its networks alone (the first candidate: the
/// same configuration without the forest, so the same networks, trained the same way), or its
/// forest alone (the forest candidate: the same trees from the same rows and seed, split into
/// the same folds, whose decisions read neither networks nor a threshold).
fn decoding_from(c: &Config, blend: &Config) -> Option<Decoding> {
    let forest = blend.model.forest.as_ref()?;
    let mut networks = blend.clone();
    networks.model.forest = None;
    networks.preset.clone_from(&c.preset);
    networks.system.clone_from(&c.system);
    let alone = ForestConfig {
        networks: 0.0,
        ..forest.clone()
    };
    if c == blend {
        Some(Decoding::AsTrained)
    } else if *c == networks {
        Some(Decoding::NetworksOnly)
    } else if c.preset == FOREST
        && c.model.forest.as_ref() == Some(&alone)
        && (c.seed, &c.train, &c.model.counts) == (blend.seed, &blend.train, &blend.model.counts)
    {
        Some(Decoding::ForestShare(0.0))
    } else {
        None
    }
}

/// One fold of the search done, in one line, as the front ends print it: `search: fold 1 of
/// 1 of forest-blend (also scoring predict, forest) in 12.3 s`.
pub fn fold_line(candidates: &[String], fold: usize, folds_run: usize, seconds: f64) -> String {
    let (first, rest) = candidates
        .split_first()
        .map_or(("", &[][..]), |(f, r)| (f.as_str(), r));
    let also = if rest.is_empty() {
        String::new()
    } else {
        format!(" (also scoring {})", rest.join(", "))
    };
    format!("search: fold {fold} of {folds_run} of {first}{also} in {seconds:.1} s")
}

#[cfg(test)]
mod tests;
