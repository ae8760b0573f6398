//! The forest's prior against independent routes: its marginals against the decision's, and
//! the out-of-bag marginals against a brute force over the trees (a model trained with the
//! prior is tested in `cardinal`).

use super::super::tests::shape;
use super::*;
use crate::GrowSettings;
use cardinal_data::data::Dataset;
use cardinal_testkit::toy;

fn forest(rows: usize, seed: u64, trees: usize) -> (Dataset, Forest) {
    let data = toy(&shape(rows, seed));
    let cfg = GrowSettings { trees, min_leaf: 1 };
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
