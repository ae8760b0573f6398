//! The forest against independent routes: the split against brute force over every
//! threshold, the decisions' constraint and determinism, and the saved tensors.

use super::tree::{grow, Columns, Growth, LEAF};
use super::*;
use cardinal_data::data::{CsrMatrix, LabelSets};
use cardinal_testkit::{toy, Lcg, Toy};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub(super) fn shape(rows: usize, seed: u64) -> Toy {
    Toy::forest(rows, seed)
}

/// Summed Gini impurity times the weight of a group of rows, by its definition.
fn impurity(rows: &[(usize, f64)], labels: &LabelSets) -> f64 {
    let w: f64 = rows.iter().map(|r| r.1).sum();
    if w == 0.0 {
        return 0.0;
    }
    (0..labels.n_labels as u32)
        .map(|i| {
            let c: f64 = rows
                .iter()
                .filter(|(r, _)| {
                    labels.indices[labels.indptr[*r]..labels.indptr[*r + 1]].contains(&i)
                })
                .map(|r| r.1)
                .sum();
            let p = c / w;
            w * 2.0 * p * (1.0 - p)
        })
        .sum()
}

#[test]
fn the_root_split_is_the_best_of_every_threshold_of_every_feature() {
    for seed in 0..20 {
        let data = toy(&shape(40, seed));
        root_split_is_the_best(&data.features, &data.labels, seed);
    }
}

/// The same where values are negative, zero and positive, with ties among them: the split
/// search sweeps the negatives up and the positives down around the zeros it never visits.
#[test]
fn the_root_split_is_the_best_with_negative_zero_and_positive_values() {
    for seed in 0..30 {
        let data = toy(&shape(40, seed));
        let x = &data.features;
        let mut rng = Lcg::new(seed + 100);
        // Each feature's values: rounded to a few levels, half of the features signed, and
        // some stored zeros (a CSR entry of 0 is a 0).
        let mut values = x.values.clone();
        for (v, &j) in values.iter_mut().zip(&x.indices) {
            let level = (rng.uniform() * 5.0).floor() as f32 - 2.0;
            *v = if j % 2 == 0 { level } else { level.abs() * *v };
        }
        let mixed = CsrMatrix {
            values,
            ..x.clone()
        };
        root_split_is_the_best(&mixed, &data.labels, seed);
    }
}

fn root_split_is_the_best(x: &CsrMatrix, labels: &LabelSets, seed: u64) {
    {
        let (tree, _) = grow(
            &Columns::new(x),
            labels,
            Growth {
                mtry: x.n_cols,
                min_leaf: 1,
            },
            seed,
        );
        // The bootstrap weights, drawn as `grow` draws them.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut weight = vec![0.0; x.n_rows];
        for _ in 0..x.n_rows {
            weight[rng.random_range(0..x.n_rows)] += 1.0;
        }
        let value = |r: usize, f: u32| {
            let (idx, val) = x.row(r);
            idx.iter().position(|&j| j == f).map_or(0.0, |p| val[p])
        };
        let bag: Vec<(usize, f64)> = (0..x.n_rows)
            .filter(|&r| weight[r] > 0.0)
            .map(|r| (r, weight[r]))
            .collect();
        let split_cost = |f: u32, t: f32| {
            let (l, r): (Vec<_>, Vec<_>) = bag.iter().partition(|(row, _)| value(*row, f) <= t);
            impurity(&l, labels) + impurity(&r, labels)
        };
        let mut best = f64::INFINITY;
        for f in 0..x.n_cols as u32 {
            for &(r, _) in &bag {
                let t = value(r, f);
                if bag.iter().any(|(q, _)| value(*q, f) > t) {
                    best = best.min(split_cost(f, t));
                }
            }
        }
        let root = tree.nodes[0];
        assert_ne!(root.feature, LEAF, "seed {seed}: the root was not split");
        let got = split_cost(root.feature, root.threshold);
        assert!(
            (got - best).abs() < 1e-9,
            "seed {seed}: {got} against the best {best}"
        );
    }
}

#[test]
fn decisions_hold_the_constraint_and_do_not_depend_on_threads() {
    let train = toy(&shape(60, 3));
    let test = toy(&shape(25, 4));
    let cfg = GrowSettings {
        trees: 20,
        min_leaf: 1,
    };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let f = Forest::fit_for_tests(&train, &cfg, 11).unwrap();
            (f.clone(), f.decide(&test.features, None, None))
        })
    };
    let (f1, a) = run(1);
    let (f2, b) = run(2);
    assert_eq!(f1, f2);
    assert_eq!(a.y, b.y);
    let l = train.n_labels();
    for r in 0..test.n_rows() {
        let y = &a.y[r * l..(r + 1) * l];
        assert!(y.iter().all(|&v| v == 0.0 || v == 1.0));
        assert_eq!(y.iter().sum::<f32>(), a.z[r]);
        let m: f32 = a.marginal[r * l..(r + 1) * l].iter().sum();
        assert!(m >= 0.0 && m <= l as f32 + 1e-4);
    }
    // A fixed count is kept on every row.
    let counts: Vec<f32> = (0..test.n_rows()).map(|r| (r % 4) as f32).collect();
    let fixed = f1.decide(&test.features, Some(&counts), None);
    assert_eq!(fixed.z, counts);
}

#[test]
fn a_training_row_alone_in_its_leaves_gets_its_own_labels() {
    // Distinct feature values and no bootstrap duplicates left out: with many trees, a
    // training row's own label set dominates its neighbourhood.
    let mut g = Lcg::new(5);
    let mut x = CsrMatrix::new(1);
    let mut y = LabelSets::new(3);
    for r in 0..30 {
        x.push_row(&[0], &[r as f32 + 0.5 * g.uniform() as f32]);
        y.push_row(if r < 15 { &[0, 1] } else { &[2] });
    }
    let train = cardinal_data::data::arrays::dataset_from_arrays("steps", x.clone(), y).unwrap();
    let f = Forest::fit_for_tests(
        &train,
        &GrowSettings {
            trees: 50,
            min_leaf: 1,
        },
        1,
    )
    .unwrap();
    let out = f.decide(&x, None, None);
    for r in 0..30 {
        let want: &[f32] = if r < 15 {
            &[1.0, 1.0, 0.0]
        } else {
            &[0.0, 0.0, 1.0]
        };
        assert_eq!(&out.y[r * 3..r * 3 + 3], want, "row {r}");
    }
}

#[test]
fn saved_tensors_read_back_whole_and_damage_is_refused() {
    let train = toy(&shape(40, 8));
    let f = Forest::fit_for_tests(
        &train,
        &GrowSettings {
            trees: 5,
            min_leaf: 2,
        },
        2,
    )
    .unwrap();
    let tensors = f.tensors();
    let read = |t: &[saved::Tensor]| {
        let get = |name: &str| {
            t.iter()
                .find(|x| x.0 == name)
                .map(|x| (x.1.clone(), x.2.clone()))
                .ok_or_else(|| cardinal_store::TensorProblem::Missing { name: name.into() })
        };
        Forest::from_tensors(&get, train.n_features(), train.n_labels())
    };
    assert_eq!(read(&tensors).unwrap(), f);
    let damage = |name: &str, at: usize, v: f32| {
        let mut t = tensors.clone();
        t.iter_mut().find(|x| x.0 == name).unwrap().2[at] = v;
        read(&t).unwrap_err().to_string()
    };
    // A child pointing back at the root (a loop), a feature past the inputs, a leaf past the
    // tree's leaves, a label past the labels, a fractional index: each refused, named.
    let root = &tensors[0].2;
    assert_ne!(root[0], -1.0, "the root is a split");
    assert!(damage("forest.nodes", 2, 0.0).contains("forest.nodes"));
    assert!(damage("forest.nodes", 0, 1e6).contains("forest.nodes"));
    assert!(damage("forest.leaf_of_row", 0, 1e6).contains("forest.leaf_of_row"));
    assert!(damage("forest.label_indices", 0, 99.0).contains("forest.label_indices"));
    assert!(damage("forest.bag", 0, 1e6).contains("forest.bag"));
    assert!(damage("forest.label_indptr", 1, 0.5).contains("forest.label_indptr"));
    let mut missing = tensors.clone();
    missing.retain(|t| t.0 != "forest.tree_offsets");
    assert_eq!(
        read(&missing).unwrap_err(),
        cardinal_store::TensorProblem::Missing {
            name: "forest.tree_offsets".into()
        }
    );
}

/// A size a forest cannot index is refused by what is too large, not by the row count.
#[test]
fn too_many_features_are_named_as_features() {
    let mut data = toy(&shape(10, 1));
    data.features.n_cols = MAX_INDEX;
    let e = Forest::fit_for_tests(&data, &GrowSettings::default(), 0).unwrap_err();
    assert_eq!(
        e,
        ForestError::TooLarge {
            what: "features",
            size: MAX_INDEX
        }
    );
    assert!(
        e.to_string().starts_with(&format!("{MAX_INDEX} features")),
        "{e}"
    );
}
