//! The forest's prior against independent routes: its marginals against the decision's, the
//! out-of-bag marginals against a brute force over the trees, and a model with the prior
//! trained, on `C(z)`, and read back the same.

use super::super::tests::{shape, small_predict};
use super::*;
use crate::config::{Config, ForestConfig, ForestPriorConfig};
use crate::engine::Engine;
use cardinal_testkit::toy;

fn forest(rows: usize, seed: u64, trees: usize) -> (crate::data::Dataset, Forest) {
    let data = toy(&shape(rows, seed));
    let cfg = ForestConfig {
        trees,
        min_leaf: 1,
        networks: 0.0,
    };
    let f = Forest::fit_for_tests(&data, &cfg, seed).unwrap();
    (data, f)
}

#[test]
fn marginals_are_the_decisions_marginals() {
    for seed in 0..4 {
        let (train, f) = forest(50, seed, 20);
        let test = toy(&shape(25, seed + 10));
        for x in [&train.features, &test.features] {
            let want = f.decide(x, None, None).marginal;
            let got = f.marginals(x);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() < 1e-6, "seed {seed} entry {i}: {g} vs {w}");
            }
        }
    }
}

/// Row `j`'s out-of-bag marginal by its definition: over the trees that did not draw `j`, the
/// share of `j`'s leaf's bootstrap sample (each row as often as drawn) that has the label,
/// the leaf found again by walking the tree, its members by scanning every row.
#[test]
fn out_of_bag_marginals_are_those_of_the_trees_that_left_the_row_out() {
    for seed in 0..4 {
        let (train, f) = forest(40, seed, 25);
        let (n, l) = (train.n_rows(), train.labels.n_labels);
        let got = f.oob_marginals();
        let x = &train.features;
        for j in 0..n {
            let mut want = vec![0.0f64; l];
            let mut trees = 0;
            for (t, tree) in f.trees.iter().enumerate() {
                if f.bag[t][j] > 0 {
                    continue;
                }
                let leaf_of = |r: usize| {
                    let span = x.indptr[r]..x.indptr[r + 1];
                    tree.leaf(&x.indices[span.clone()], &x.values[span])
                };
                let leaf = leaf_of(j);
                let members: Vec<usize> = (0..n)
                    .filter(|&r| f.bag[t][r] > 0 && leaf_of(r) == leaf)
                    .collect();
                let mass: u32 = members.iter().map(|&r| f.bag[t][r]).sum();
                if mass == 0 {
                    continue;
                }
                trees += 1;
                for &r in &members {
                    let labels =
                        &train.labels.indices[train.labels.indptr[r]..train.labels.indptr[r + 1]];
                    for &i in labels {
                        want[i as usize] += f.bag[t][r] as f64 / mass as f64;
                    }
                }
            }
            assert!(trees > 0, "seed {seed} row {j}: in every bag of 25 trees");
            for i in 0..l {
                let w = want[i] / trees as f64;
                let g = got[j * l + i] as f64;
                assert!(
                    (g - w).abs() < 1e-6,
                    "seed {seed} row {j} label {i}: {g} vs {w}"
                );
            }
        }
    }
}

#[test]
fn log_odds_are_clipped_and_scaled() {
    let got = log_odds(&[0.0, 0.5, 1.0, 0.9], 2.0, 0.05);
    let logit = |q: f64| (q / (1.0 - q)).ln();
    let want = [2.0 * logit(0.05), 0.0, 2.0 * logit(0.95), 2.0 * logit(0.9)];
    for (g, w) in got.iter().zip(want) {
        assert!((*g as f64 - w).abs() < 1e-5, "{g} vs {w}");
    }
}

/// The forest tests' small `predict`, holding out a fifth of the rows as dev data.
fn small() -> Config {
    let mut cfg = small_predict();
    cfg.train.dev_fraction = 0.2;
    cfg
}

/// A model with the prior: its unary scores are the network's plus the forest's log-odds
/// (recomputed here from a copy without the prior), its outputs are on `C(z)`, it records
/// system `pnc`, and it is read back whole.
#[test]
fn a_model_with_a_forest_prior_adds_the_forests_log_odds_and_reads_back_the_same() {
    let train = toy(&shape(90, 5));
    let test = toy(&shape(30, 6));
    let mut cfg = small();
    cfg.model.forest_prior = Some(ForestPriorConfig {
        trees: 15,
        clip: 0.05,
        ..ForestPriorConfig::default()
    });
    let engine = Engine::default();
    let model = engine.fit(&train, cfg, &mut |_| {}).unwrap().model;
    assert_eq!(model.config.system, "pnc");
    let f = model.forest.as_ref().expect("the prior's forest");
    // Grown on every row of the training file (each row's prior in training is out of bag).
    assert_eq!(f.label_indptr.len() - 1, train.n_rows());
    let out = engine.predict(&model, &test.features).unwrap();
    let l = model.n_labels();
    for (r, (y, &z)) in out.y.chunks(l).zip(&out.z).enumerate() {
        assert!(
            y.iter().all(|&v| (-1e-6..=1.0 + 1e-6).contains(&v)),
            "row {r}: {y:?}"
        );
        assert!(
            (y.iter().sum::<f32>() - z).abs() <= 0.01,
            "row {r}: sum {} z {z}",
            y.iter().sum::<f32>()
        );
    }
    let mut bare = model.clone();
    bare.config.model.forest_prior = None;
    bare.forest = None;
    let without = engine.predict(&bare, &test.features).unwrap();
    let prior = log_odds(&f.marginals(&test.features), 1.0, 0.05);
    for (i, ((&u, &v), &p)) in out.unary.iter().zip(&without.unary).zip(&prior).enumerate() {
        assert!((u - (v + p)).abs() < 1e-4, "entry {i}: {u} vs {v} + {p}");
    }
    let dir = std::env::temp_dir().join(format!("cardinal-prior-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let on = crate::engine::TrainedOn {
        dataset: "toy".into(),
        ..Default::default()
    };
    engine.save_model(&model, &dir, &on, false).unwrap();
    let loaded = engine.load(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let (loaded, _) = loaded.unwrap();
    assert_eq!(loaded.config, model.config);
    let again = engine.predict(&loaded, &test.features).unwrap();
    assert_eq!((again.y, again.z, again.unary), (out.y, out.z, out.unary));
}

/// The prior is Predict and Constrain's: a forest system or another system given one is
/// refused, naming the field.
#[test]
fn a_forest_prior_is_refused_where_it_would_not_be_read() {
    let train = toy(&shape(40, 1));
    let engine = Engine::default();
    let mut both = Config::predict().forest();
    both.model.forest_prior = Some(ForestPriorConfig::default());
    let e = engine
        .fit(&train, both, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.forest_prior"), "{e}");
    let mut bad = small();
    bad.model.forest_prior = Some(ForestPriorConfig {
        clip: 0.5,
        ..ForestPriorConfig::default()
    });
    let e = engine
        .fit(&train, bad, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.forest_prior.clip"), "{e}");
}
