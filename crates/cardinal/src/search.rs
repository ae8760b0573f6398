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

use crate::config::{Config, ForestConfig, SearchScope, FOREST, FOREST_BLEND};
use crate::cv::{cross_validate, cross_validate_decodings, CvReport, Decoding};
use crate::data::Dataset;
use crate::error::Result;
use crate::eval::grid_threshold;
use crate::metrics::default_threshold_grid;
use crate::runtime::{MemoryBudget, WaitPolicy};
use crate::system::System;
use crate::train::Event;
use cardinal_proj::Method;
use serde::{Deserialize, Serialize};

/// How `choose` scores and decides: changed whenever the same candidates could be chosen or
/// decoded differently.
const RULE: &str = "cv example-F1, empty=1; threshold by one paired standard error; \
                        predict counts by expected F1; forest candidate; forest blended \
                        with predict's networks";

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
    (RULE, candidates(cfg, n, weighted))
}

/// One candidate's cross-validated result: its mean example-F1 over the folds at every
/// threshold of the grid, and the threshold where that mean is best.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateScore {
    /// The candidate's preset name.
    pub preset: String,
    /// The system it is (`pnc`, `forest`, `forest-blend`; empty in records that predate it).
    #[serde(default)]
    pub system: String,
    /// Mean example-F1 (%) over the folds at `threshold`, an empty prediction for an empty
    /// gold set scored 1.
    pub example_f1: f64,
    /// The decision threshold on `y_T` with the best mean (the grid point nearest 0.5 among
    /// ties).
    pub threshold: f64,
}

/// What the default's search did for a model: which candidates it scored, how, and which
/// it chose (saved with the model, in `meta.json`, and reported by `eval` and `info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRecord {
    /// How it scored and decided, in words.
    pub rule: String,
    /// Folds of the cross-validation.
    pub folds: usize,
    /// Rows of the training file it cross-validated on.
    pub rows: usize,
    /// Which systems the candidates could be.
    pub scope: SearchScope,
    /// Every candidate's score, in order of preference.
    pub scores: Vec<CandidateScore>,
    /// The preset name of the candidate chosen and trained.
    pub chosen: String,
}

impl SearchRecord {
    /// The chosen candidate's score.
    pub fn chosen_score(&self) -> Option<&CandidateScore> {
        self.scores.iter().find(|s| s.preset == self.chosen)
    }

    /// The record in one line, as the front ends print it ([`summary`]).
    pub fn summary(&self) -> String {
        summary(&self.scores, self.folds, &self.chosen)
    }
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
/// forests), and the search's record comes with it (`None` when the rule did not apply).
pub(crate) fn choose(
    system: &dyn System,
    train: &Dataset,
    cfg: Config,
    wait: WaitPolicy,
    memory_budget: MemoryBudget,
    on_event: &mut dyn FnMut(Event),
) -> Result<(Config, Option<SearchRecord>)> {
    if !cfg.search.applies(train.n_rows()) {
        return Ok((cfg, None));
    }
    let folds = cfg.search.folds;
    let grid = default_threshold_grid();
    let mut scores: Vec<CandidateScore> = Vec::new();
    let mut best: Option<(f64, Config)> = None;
    let all = candidates(&cfg, train.n_rows(), train.labels.weights.is_some());
    on_event(Event::Searching {
        candidates: all.len(),
        folds,
        rows: train.n_rows(),
    });
    let reports = candidate_reports(system, train, &all, folds, wait, memory_budget)?;
    for (mut candidate, report) in all.into_iter().zip(reports) {
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
            "search: {} scores {score:.2} at threshold {threshold} in {}-fold cross-validation",
            candidate.preset,
            cfg.search.folds
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
    let scope = cfg.search.scope;
    let rows = train.n_rows();
    let chosen = best.map_or(cfg, |(_, c)| c);
    on_event(Event::Searched {
        scores: &scores,
        folds,
        chosen: &chosen.preset,
    });
    let record = SearchRecord {
        rule: RULE.into(),
        folds,
        rows,
        scope,
        scores,
        chosen: chosen.preset.clone(),
    };
    Ok((chosen, Some(record)))
}

/// How candidate `c` is scored from the models trained for `blend` (the blended forest
/// candidate), if it can be: the blend itself, its networks alone (the first candidate: the
/// same configuration without the forest, so the same networks, trained the same way), or its
/// forest alone (the forest candidate: the same trees from the same rows and seed, split into
/// the same folds, whose decisions read neither its untrained networks nor its threshold).
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

/// Every candidate's cross-validation report, in the candidates' order. Those that are
/// decodings of the blended forest's models ([`decoding_from`]) share its trainings: one per
/// fold for the three, each scored as if trained alone.
fn candidate_reports(
    system: &dyn System,
    train: &Dataset,
    all: &[Config],
    folds: usize,
    wait: WaitPolicy,
    memory_budget: MemoryBudget,
) -> Result<Vec<CvReport>> {
    let mut reports: Vec<Option<CvReport>> = vec![None; all.len()];
    if let Some(blend) = all.iter().find(|c| c.preset == FOREST_BLEND) {
        let shared: Vec<(usize, Decoding)> = all
            .iter()
            .enumerate()
            .filter_map(|(i, c)| decoding_from(c, blend).map(|d| (i, d)))
            .collect();
        let decodings: Vec<Decoding> = shared.iter().map(|&(_, d)| d).collect();
        let scored = cross_validate_decodings(
            system,
            train,
            blend,
            &decodings,
            folds,
            wait,
            memory_budget,
            &mut |_, _| {},
            &mut |_, _| {},
        )?;
        for ((i, _), report) in shared.into_iter().zip(scored) {
            reports[i] = Some(report);
        }
    }
    all.iter()
        .zip(reports)
        .map(|(c, report)| match report {
            Some(r) => Ok(r),
            None => cross_validate(
                system,
                train,
                c,
                folds,
                wait,
                memory_budget,
                &mut |_, _| {},
                &mut |_| {},
            ),
        })
        .collect()
}

/// The search's choice in one line, as the front ends print it: `search: 5-fold CV
/// example-F1 (empty for empty scores 1) predict 63.10 at 0.5, paper-projected 66.02 at 0.35,
/// ...; training paper-projected at 0.35`.
pub fn summary(scores: &[CandidateScore], folds: usize, chosen: &str) -> String {
    let all: Vec<String> = scores
        .iter()
        .map(|s| format!("{} {:.2} at {}", s.preset, s.example_f1, s.threshold))
        .collect();
    let at = scores
        .iter()
        .find(|s| s.preset == chosen)
        .map_or(String::new(), |s| format!(" at {}", s.threshold));
    format!(
        "search: {folds}-fold CV example-F1 (empty for empty scores 1) {}; training {chosen}{at}",
        all.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::Pnc;

    #[test]
    fn small_files_hold_out_more_dev_rows() {
        assert_eq!(scaled_dev_fraction(0.05, 129), 0.2);
        assert!((scaled_dev_fraction(0.05, 1000) - 0.1).abs() < 1e-12);
        assert_eq!(scaled_dev_fraction(0.05, 4880), 0.05);
        assert_eq!(scaled_dev_fraction(0.3, 129), 0.3);
    }

    /// The default searches on small files only; `paper` never does. Every candidate is
    /// valid, searches no further and ends on `C(z)` (a final projection, or exact steps),
    /// so that whichever is chosen holds `Σy = z` and `y ∈ [0, 1]`.
    #[test]
    fn the_rule_applies_to_small_files_and_every_candidate_projects() {
        let predict = Config::predict();
        assert!(predict.search.applies(129) && predict.search.applies(2000));
        assert!(!predict.search.applies(4880) && !predict.search.applies(12920));
        assert!(!Config::paper().search.applies(129));
        let all = candidates(&predict, 400, false);
        assert_eq!(all.len(), 5);
        // Weighted rows: no forest, which counts every row once.
        assert_eq!(candidates(&predict, 400, true).len(), 3);
        // An unsupervised count network predicts no count to blend.
        let mut unsupervised = predict.clone();
        unsupervised.loss.cardinality_weight = 0.0;
        let names: Vec<String> = candidates(&unsupervised, 400, false)
            .into_iter()
            .map(|c| c.preset)
            .collect();
        assert_eq!(names, ["predict", "paper-projected", "paper-wide", FOREST]);
        // The count-supervised candidate counts for the expected F1; the `paper` ones do not,
        // and the forests decide their sets themselves.
        let f1: Vec<bool> = all.iter().map(|c| c.inference.expected_f1_count).collect();
        assert_eq!(f1, [true, false, false, false, true]);
        assert!(all[3].model.forest.is_some() && all[3].preset == FOREST);
        // The blend: `predict`'s networks, trained, and a quarter of the joint theirs.
        let blend = &all[4];
        assert_eq!(blend.preset, FOREST_BLEND);
        assert_eq!(blend.model.forest.as_ref().map(|f| f.networks), Some(0.25));
        let mut networks_only = blend.clone();
        networks_only.model.forest = None;
        networks_only.preset = all[0].preset.clone();
        networks_only.system = all[0].system.clone();
        assert_eq!(networks_only, all[0]);
        assert!(!predict.inference.expected_f1_count);
        assert!(predict.inference.final_projection.is_some());
        for c in all {
            c.validate().unwrap();
            assert!(c.search.is_off());
            assert_eq!(c.train.dev_fraction, 0.2);
            let exact_steps = c.inference.test_projection == Method::Exact;
            let decided = c.model.forest.is_some();
            assert!(exact_steps || decided || c.inference.final_projection.is_some());
            // A saved candidate configuration reads back as itself.
            let text = serde_json::to_string(&c).unwrap();
            assert_eq!(Config::resolve(None, Some(&text), None).unwrap(), c);
        }
    }

    /// The candidates scored from the blended forest's trainings get the reports they would
    /// get trained alone: the networks alone are `predict`'s, the forest alone the forest
    /// candidate's, fold by fold; the `paper` ones train on their own.
    #[test]
    fn shared_trainings_score_each_candidate_as_if_trained_alone() {
        let data = toy(60);
        let cfg = quick_predict();
        let mut all = candidates(&cfg, 60, false);
        for c in &mut all {
            if let Some(f) = &mut c.model.forest {
                f.trees = 10;
            }
            c.model.hidden = c.model.hidden.min(16);
            c.train.epochs = 3;
        }
        let decodings: Vec<Option<Decoding>> =
            all.iter().map(|c| decoding_from(c, &all[4])).collect();
        assert_eq!(
            decodings,
            [
                Some(Decoding::NetworksOnly),
                None,
                None,
                Some(Decoding::ForestShare(0.0)),
                Some(Decoding::AsTrained)
            ]
        );
        let (wait, budget) = (WaitPolicy::Active, MemoryBudget::default());
        let shared = candidate_reports(&Pnc, &data, &all, 3, wait, budget).unwrap();
        for (c, report) in all.iter().zip(&shared) {
            let alone =
                cross_validate(&Pnc, &data, c, 3, wait, budget, &mut |_, _| {}, &mut |_| {})
                    .unwrap();
            assert_eq!(*report, alone, "{}", c.preset);
        }
    }

    /// The threshold is the grid point nearest 0.5 within one paired standard error of the
    /// best mean over the folds, checked against hand-computed means and errors.
    #[test]
    fn the_threshold_is_nearest_one_half_within_a_standard_error_of_the_best() {
        let grid = [0.25f32, 0.5, 0.75];
        // Means 50, 55, 60. 0.75 beats 0.5 by 10 and 0 on the two folds: mean 5, paired
        // standard error 5, so 0.5 is within one error of the best and stays.
        let folds = vec![vec![40.0, 60.0, 70.0], vec![60.0, 50.0, 50.0]];
        assert_eq!(best_threshold(&grid, &folds), (0.5, 55.0));
        // When every fold agrees (0.75 better by 5 on each), the error is 0 and 0.75 is taken.
        let agree = vec![vec![40.0, 60.0, 65.0], vec![40.0, 50.0, 55.0]];
        assert_eq!(best_threshold(&grid, &agree), (0.75, 60.0));
        // Ties: 0.5 when it ties; else the point nearer 0.5, the lower of two equally near.
        let flat = vec![vec![50.0, 50.0, 50.0]];
        assert_eq!(best_threshold(&grid, &flat), (0.5, 50.0));
        let grid = default_threshold_grid();
        let mut one = vec![10.0; grid.len()];
        one[3] = 20.0; // 0.2
        one[16] = 20.0; // 0.85
        assert_eq!(best_threshold(&grid, &[one.clone()]), (0.2, 20.0));
        one[12] = 20.0; // 0.65: nearer 0.5
        assert_eq!(best_threshold(&grid, &[one]), (0.65, 20.0));
    }

    /// `predict` with networks and training small enough for a search in a test.
    fn quick_predict() -> Config {
        let mut cfg = Config::predict();
        cfg.model.hidden = 16;
        cfg.model.card_hidden = 8;
        cfg.model.energy_hidden = 4;
        cfg.train.epochs = 3;
        cfg.train.batch_size = 10;
        cfg
    }

    fn toy(n: usize) -> Dataset {
        cardinal_testkit::toy(&cardinal_testkit::Toy {
            name: "toy",
            rows: n,
            features: 10,
            labels: 5,
            max_labels: 3,
            fallback_label: 0,
            seed: 1,
        })
    }

    /// Off, or on a file above `max_rows`, the configuration comes back unchanged; on a small
    /// file one of the candidates does, the same one for the same seed.
    #[test]
    fn the_choice_is_a_candidate_and_deterministic() {
        let data = toy(60);
        let mut cfg = quick_predict();
        cfg.search = crate::config::SearchConfig::predict();
        let mut off = cfg.clone();
        off.search.max_rows = 0;
        assert_eq!(
            choose(
                &Pnc,
                &data,
                off.clone(),
                WaitPolicy::Active,
                MemoryBudget::default(),
                &mut |_| {}
            )
            .unwrap(),
            (off, None)
        );
        let mut above = cfg.clone();
        above.search.max_rows = 59;
        assert_eq!(
            choose(
                &Pnc,
                &data,
                above.clone(),
                WaitPolicy::Active,
                MemoryBudget::default(),
                &mut |_| {}
            )
            .unwrap(),
            (above, None)
        );
        let mut told = None;
        let (chosen, record) = choose(
            &Pnc,
            &data,
            cfg.clone(),
            WaitPolicy::Active,
            MemoryBudget::default(),
            &mut |e| {
                if let Event::Searched {
                    scores,
                    folds,
                    chosen,
                } = e
                {
                    told = Some((scores.to_vec(), folds, chosen.to_string()));
                }
            },
        )
        .unwrap();
        // The chosen configuration is a candidate with its decision threshold set.
        let (scores, folds, name) = told.expect("a Searched event");
        let picked = scores.iter().find(|s| s.preset == name).unwrap();
        assert_eq!(chosen.threshold, picked.threshold);
        let mut as_candidate = chosen.clone();
        as_candidate.threshold = Config::predict().threshold;
        assert!(candidates(&cfg, 60, false).contains(&as_candidate));
        // The event names every candidate's score and the one chosen, the best.
        assert_eq!((folds, name.as_str()), (5, chosen.preset.as_str()));
        let names: Vec<&str> = scores.iter().map(|s| s.preset.as_str()).collect();
        assert_eq!(
            names,
            [
                "predict",
                "paper-projected",
                "paper-wide",
                FOREST,
                FOREST_BLEND
            ]
        );
        let best = scores.iter().map(|s| s.example_f1).fold(f64::MIN, f64::max);
        assert_eq!(picked.example_f1, best);
        // The record holds what the event told, and the chosen configuration names its
        // system: a forest candidate is no longer `pnc`.
        let record = record.expect("a record of the search");
        assert_eq!(
            (&record.scores, &record.chosen, record.rows),
            (&scores, &name, 60)
        );
        assert_eq!(chosen.system, picked.system);
        let systems: Vec<&str> = scores.iter().map(|s| s.system.as_str()).collect();
        assert_eq!(systems, ["pnc", "pnc", "pnc", FOREST, FOREST_BLEND]);
        assert_eq!(
            choose(
                &Pnc,
                &data,
                cfg.clone(),
                WaitPolicy::Active,
                MemoryBudget::default(),
                &mut |_| {}
            )
            .unwrap()
            .0,
            chosen
        );
        // P&C alone (`--system pnc`): no forest among the candidates, and the choice runs
        // the unrolled ascent and the projection.
        let mut pnc_only = cfg;
        pnc_only.search.scope = SearchScope::Pnc;
        let (chosen, record) = choose(
            &Pnc,
            &data,
            pnc_only,
            WaitPolicy::Active,
            MemoryBudget::default(),
            &mut |_| {},
        )
        .unwrap();
        let record = record.unwrap();
        assert_eq!(record.scores.len(), 3);
        assert!(record.scores.iter().all(|s| s.system == "pnc"));
        assert!(chosen.model.forest.is_none() && chosen.system == "pnc");
    }
}
