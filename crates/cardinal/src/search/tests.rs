//! The search against its promises: the rule's reach, the candidates, shared trainings,
//! the threshold rule and a deterministic choice.

use super::*;
use crate::config::{FOREST_BLEND, PREDICT_FOREST_PRIOR};
use crate::cv::cross_validate;
use crate::runtime::{MemoryBudget, WaitPolicy};
use crate::system::Pnc;
use std::sync::atomic::AtomicBool;

/// [`choose`] with hooks that train every fold here.
fn run_choose(
    data: &Dataset,
    cfg: Config,
    on_event: &mut dyn FnMut(Event),
) -> Result<(Config, Option<SearchRecord>)> {
    let mut hooks = Hooks {
        on_event,
        after_epoch: &mut |_| Ok(()),
        wait: WaitPolicy::Active,
        memory_budget: MemoryBudget::default(),
        cancel: &AtomicBool::new(false),
        search: None,
        forests: None,
    };
    choose(&Pnc, data, cfg, &mut hooks, None)
}

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
    assert_eq!(all.len(), 6);
    // Weighted rows: no forest, which counts every row once.
    assert_eq!(candidates(&predict, 400, true).len(), 3);
    // An unsupervised count network predicts no count to blend.
    let mut unsupervised = predict.clone();
    unsupervised.loss.cardinality_weight = 0.0;
    let names: Vec<String> = candidates(&unsupervised, 400, false)
        .into_iter()
        .map(|c| c.preset)
        .collect();
    assert_eq!(
        names,
        [
            "predict",
            "paper-projected",
            "paper-wide",
            PREDICT_FOREST_PRIOR,
            FOREST
        ]
    );
    // The count-supervised candidate counts for the expected F1; the `paper` ones do not,
    // and the forests decide their sets themselves.
    let f1: Vec<bool> = all.iter().map(|c| c.inference.expected_f1_count).collect();
    assert_eq!(f1, [true, false, false, true, false, true]);
    // Predict and Constrain over a forest's prior: `predict`'s candidate with the prior and
    // a stronger decay, system `pnc`.
    let prior = &all[3];
    assert!(prior.model.forest_prior.is_some() && prior.model.forest.is_none());
    assert_eq!(
        (prior.system.as_str(), prior.train.weight_decay),
        ("pnc", 0.01)
    );
    let mut unprimed = prior.clone();
    unprimed.model.forest_prior = None;
    unprimed.train.weight_decay = all[0].train.weight_decay;
    unprimed.preset = all[0].preset.clone();
    assert_eq!(unprimed, all[0]);
    assert!(all[4].model.forest.is_some() && all[4].preset == FOREST);
    // The blend: `predict`'s networks, trained, and a quarter of the joint theirs.
    let blend = &all[5];
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
        if let Some(f) = &mut c.model.forest_prior {
            f.trees = 10;
        }
        c.model.hidden = c.model.hidden.min(16);
        c.train.epochs = 3;
    }
    let decodings: Vec<Option<Decoding>> = all.iter().map(|c| decoding_from(c, &all[5])).collect();
    assert_eq!(
        decodings,
        [
            Some(Decoding::NetworksOnly),
            None,
            None,
            None,
            Some(Decoding::ForestShare(0.0)),
            Some(Decoding::AsTrained)
        ]
    );
    let (wait, budget) = (WaitPolicy::Active, MemoryBudget::default());
    let never = AtomicBool::new(false);
    let plan = Plan::of_candidates(all.clone(), 3, 3, SearchScoring::ExampleF1);
    // Four trainings of three folds: the blend's (scoring three candidates), the two
    // `paper` ones and the forest prior's.
    assert_eq!(plan.tasks().len(), 12);
    // The tasks share their forests, as the search's do: each fold's forest is grown once, by
    // the blend's training, and the forest prior's training gets it. The reports must be
    // those of every candidate cross-validated alone (below), which grows its own.
    let forests = ForestCache::default();
    let mut results: Vec<SearchTaskResult> = plan
        .tasks()
        .into_iter()
        .map(|t| {
            plan.run(
                &Pnc,
                &data,
                t,
                wait,
                budget,
                &never,
                Some(&forests),
                &mut |_| {},
            )
            .unwrap()
        })
        .collect();
    assert_eq!(forests.len(), 3, "one forest a fold");
    let shared = plan.reports(&results).unwrap();
    // Tasks run in any order give the same reports; results that are not the plan's are
    // refused.
    results.reverse();
    assert_eq!(plan.reports(&results).unwrap(), shared);
    let last = results.pop().unwrap();
    let missing = plan.reports(&results).unwrap_err().to_string();
    assert!(missing.contains("11 results"), "{missing}");
    results.push(results[0].clone());
    assert!(plan.reports(&results).is_err());
    results.pop();
    let mut other_fold = last.clone();
    other_fold.folds[0].index = 2;
    results.push(other_fold);
    assert!(plan.reports(&results).is_err());
    assert!(plan
        .run(
            &Pnc,
            &data,
            SearchTask {
                training: 0,
                fold: 3
            },
            wait,
            budget,
            &never,
            None,
            &mut |_| {}
        )
        .is_err());
    for (c, report) in all.iter().zip(&shared) {
        let alone = cross_validate(
            &Pnc,
            &data,
            c,
            3,
            wait,
            budget,
            &never,
            &mut |_, _| {},
            &mut |_| {},
        )
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
        run_choose(&data, off.clone(), &mut |_| {}).unwrap(),
        (off, None)
    );
    let mut above = cfg.clone();
    above.search.max_rows = 59;
    assert_eq!(
        run_choose(&data, above.clone(), &mut |_| {}).unwrap(),
        (above, None)
    );
    let mut told = None;
    let (chosen, record) = run_choose(&data, cfg.clone(), &mut |e| {
        if let Event::Searched { record } = e {
            told = Some((record.scores.clone(), record.folds, record.chosen.clone()));
        }
    })
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
            PREDICT_FOREST_PRIOR,
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
    assert_eq!(systems, ["pnc", "pnc", "pnc", "pnc", FOREST, FOREST_BLEND]);
    assert_eq!(
        run_choose(&data, cfg.clone(), &mut |_| {}).unwrap().0,
        chosen
    );
    // P&C alone (`--system pnc`): no forest among the candidates, and the choice runs
    // the unrolled ascent and the projection.
    let mut pnc_only = cfg;
    pnc_only.search.scope = SearchScope::Pnc;
    let (chosen, record) = run_choose(&data, pnc_only, &mut |_| {}).unwrap();
    let record = record.unwrap();
    assert_eq!(record.scores.len(), 4);
    assert!(record.scores.iter().all(|s| s.system == "pnc"));
    assert!(chosen.model.forest.is_none() && chosen.system == "pnc");
}

/// `search.scoring = f1-samples` scores an empty prediction for an empty gold set 0, as
/// scikit-learn's `f1_samples`: on a fold with empty gold sets, every threshold's score is at
/// most the default's (1 for those rows), and below it where the model predicts nothing
/// for one of them; the record and its summary say which scoring ranked the candidates.
#[test]
fn f1_samples_scoring_counts_an_empty_prediction_of_nothing_as_zero() {
    let full = toy(60);
    let mut labels = crate::data::LabelSets::new(full.n_labels());
    for r in 0..full.n_rows() {
        let row: Vec<u32> = if r % 4 == 0 {
            Vec::new()
        } else {
            full.labels.row(r).to_vec()
        };
        labels.push_row(&row);
    }
    let data = Dataset { labels, ..full };
    let cfg = quick_predict();
    let all = vec![candidates(&cfg, 60, false).remove(1)];
    let (wait, budget, never) = (
        WaitPolicy::Active,
        MemoryBudget::default(),
        AtomicBool::new(false),
    );
    let task = SearchTask {
        training: 0,
        fold: 0,
    };
    let score = |scoring| {
        let plan = Plan::of_candidates(all.clone(), 3, 1, scoring);
        let r = plan
            .run(&Pnc, &data, task, wait, budget, &never, None, &mut |_| {})
            .unwrap();
        r.folds[0].example_f1_by_threshold.clone()
    };
    let (one, zero) = (
        score(SearchScoring::ExampleF1),
        score(SearchScoring::F1Samples),
    );
    assert_eq!(one.len(), zero.len());
    assert!(
        one.iter().zip(&zero).all(|(a, b)| b <= a),
        "{one:?} {zero:?}"
    );
    // At the highest threshold the model predicts nothing for some empty gold set.
    assert!(zero.last() < one.last(), "{one:?} {zero:?}");
    let mut samples = cfg.clone();
    samples.search = crate::config::SearchConfig::predict();
    samples.search.folds = 3;
    samples.search.scoring = SearchScoring::F1Samples;
    let (_, record) = run_choose(&data, samples, &mut |_| {}).unwrap();
    let record = record.unwrap();
    assert_eq!(record.scoring, SearchScoring::F1Samples);
    assert!(record.rule.contains("empty=0"), "{}", record.rule);
    assert!(
        record.summary().contains("scores 0"),
        "{}",
        record.summary()
    );
}
