//! `cardinal-forest`: random forests of multi-label trees, and label sets decided for the
//! expected example-F1 under the joint distribution their neighbourhoods give, alone or blended
//! with a network's (`Networks`). `cardinal` builds two things on them: the forest systems
//! (`forest`, `forest-blend`) of the default's search, and the forest prior of Predict and
//! Constrain's unary scores (`model.forest_prior`, from [`Forest::marginals`],
//! [`Forest::oob_marginals`] and [`log_odds`]).
//!
//! A random forest of multi-label trees (`tree`) defines, for an input `x`, weights over the
//! training rows: each tree gives the rows of its bootstrap sample that share `x`'s leaf
//! their share of that leaf's sample (as the tree's own class frequencies would), and the
//! forest averages its trees. Those weights are a distribution over the training label sets,
//! so they estimate the joint `Δ_is` (label `i` on, `s` labels in all) and `P(∅)` that the
//! F1-optimal decision needs (`gfm`). The predicted count is the chosen set's size `z = k`,
//! and `y` is the indicator of the set: `Σ y = z` and `y ∈ {0, 1}` on every row. On a few
//! hundred rows this needs no gradient training and is hard to overfit, which is where the
//! networks lose to tree ensembles and F1 decoders (measured in docs/results/peers.md).
//!
//! # Example
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use cardinal_data::data::{arrays::dataset_from_arrays, CsrMatrix, LabelSets};
//! use cardinal_forest::{Forest, GrowSettings};
//!
//! // Label 0 below 5, labels 1 and 2 above.
//! let (mut x, mut y) = (CsrMatrix::new(1), LabelSets::new(3));
//! for r in 0..10 {
//!     x.push_row(&[0], &[r as f32]);
//!     y.push_row(if r < 5 { &[0] } else { &[1, 2] });
//! }
//! let train = dataset_from_arrays("example", x.clone(), y).unwrap();
//! let settings = GrowSettings { trees: 30, min_leaf: 1 };
//! let forest = Forest::fit(&train, &settings, 0, &AtomicBool::new(false)).unwrap();
//! let out = forest.decide(&x, None, None);
//! // Every row's set: its indicator `y` sums to its size `z`.
//! for r in 0..10 {
//!     assert_eq!(out.y[r * 3..r * 3 + 3].iter().sum::<f32>(), out.z[r]);
//! }
//! assert_eq!(&out.y[0..3], &[1.0, 0.0, 0.0]);
//! ```

#![warn(missing_docs)]

mod blend;
mod cache;
mod error;
mod gfm;
mod prior;
mod saved;
mod tree;

use rayon::prelude::*;

pub use blend::{tilted, Networks, MAX_NETWORK_COUNTS};
pub use cache::ForestCache;
use cardinal_data::data::{CsrMatrix, Dataset};
pub use error::ForestError;
use gfm::Joint;
pub use prior::log_odds;
pub use saved::{Lookup, Tensor};
use tree::{Columns, Growth, Tree};

/// The crate's `Result`, with [`ForestError`].
pub type Result<T, E = ForestError> = std::result::Result<T, E>;

/// How a forest is grown: how many trees, and the fewest rows a leaf may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GrowSettings {
    /// Number of trees.
    pub trees: usize,
    /// Fewest (bootstrap-weighted) training rows in a leaf.
    pub min_leaf: usize,
}

impl Default for GrowSettings {
    fn default() -> Self {
        Self {
            trees: 300,
            min_leaf: 1,
        }
    }
}

/// A fitted forest, with what its decisions read: every training row's leaf in every tree
/// and the training label sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Forest {
    trees: Vec<Tree>,
    /// Per tree, the leaf of every training row.
    leaf_of_row: Vec<Vec<u32>>,
    /// Per tree, how many times each training row was drawn into its bootstrap sample.
    bag: Vec<Vec<u32>>,
    /// The training label sets: row offsets and labels.
    label_indptr: Vec<usize>,
    label_indices: Vec<u32>,
    n_labels: usize,
    n_features: usize,
    /// Derived: per tree, the drawn rows of each leaf (offsets by leaf, then rows).
    leaf_rows: Vec<(Vec<u32>, Vec<u32>)>,
}

/// The forest's outputs for a batch of rows, row-major `n × L` where per label.
#[derive(Debug, Clone, Default)]
pub struct ForestOutputs {
    /// The chosen sets' indicators.
    pub y: Vec<f32>,
    /// The sets' sizes.
    pub z: Vec<f32>,
    /// Each label's marginal probability under the forest's weights.
    pub marginal: Vec<f32>,
    /// Each label's score `f_i(k)` at the chosen size (the ranking).
    pub ranking: Vec<f32>,
}

impl ForestOutputs {
    /// `other`'s rows after these.
    pub fn append(&mut self, other: ForestOutputs) {
        self.y.extend(other.y);
        self.z.extend(other.z);
        self.marginal.extend(other.marginal);
        self.ranking.extend(other.ranking);
    }
}

/// Largest index a forest stores: its tensors hold indices as `f32`, exact below `2^24`.
pub const MAX_INDEX: usize = 1 << 24;

impl Forest {
    /// [`Forest::fit`] never cancelled (the module's tests).
    #[cfg(test)]
    pub(crate) fn fit_for_tests(train: &Dataset, cfg: &GrowSettings, seed: u64) -> Result<Self> {
        Self::fit(train, cfg, seed, &std::sync::atomic::AtomicBool::new(false))
    }

    /// Grows `cfg.trees` trees on `train` from `seed` (tree `t` from its own stream, so the
    /// forest is the same for any number of threads). Setting `cancel` stops it between trees
    /// with [`ForestError::Cancelled`].
    pub fn fit(
        train: &Dataset,
        cfg: &GrowSettings,
        seed: u64,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Self> {
        let n = train.n_rows();
        let labels = &train.labels;
        if n == 0 {
            return Err(ForestError::NoRows {
                data: train.name.clone(),
            });
        }
        let sizes = [
            ("training rows", n),
            ("label entries", labels.indices.len()),
            ("features", train.n_features()),
        ];
        // Named by what is too large: the rows may be few where the features are many.
        if let Some((what, size)) = sizes.into_iter().find(|&(_, v)| v >= MAX_INDEX) {
            return Err(ForestError::TooLarge { what, size });
        }
        if labels.weights.is_some() {
            // The trees and the neighbourhoods count every row once: refused rather than
            // silently unweighted.
            return Err(ForestError::Weighted);
        }
        let cols = Columns::new(&train.features);
        let growth = Growth {
            mtry: (train.n_features() as f64).sqrt().floor().max(1.0) as usize,
            min_leaf: cfg.min_leaf,
        };
        let grown: Vec<(Tree, Vec<u32>)> = (0..cfg.trees as u64)
            .into_par_iter()
            .map(
                |t| match cancel.load(std::sync::atomic::Ordering::Relaxed) {
                    true => Err(ForestError::Cancelled),
                    false => Ok(tree::grow(&cols, labels, growth, mix(seed, t))),
                },
            )
            .collect::<Result<_>>()?;
        let (trees, bag): (Vec<Tree>, Vec<Vec<u32>>) = grown.into_iter().unzip();
        let x = &train.features;
        let leaf_of_row = trees
            .par_iter()
            .map(|tree| {
                (0..n)
                    .map(|r| {
                        let span = x.indptr[r]..x.indptr[r + 1];
                        tree.leaf(&x.indices[span.clone()], &x.values[span])
                    })
                    .collect()
            })
            .collect();
        Ok(Self::assemble(
            trees,
            leaf_of_row,
            bag,
            labels.indptr.clone(),
            labels.indices.clone(),
            labels.n_labels,
            train.n_features(),
        ))
    }

    fn assemble(
        trees: Vec<Tree>,
        leaf_of_row: Vec<Vec<u32>>,
        bag: Vec<Vec<u32>>,
        label_indptr: Vec<usize>,
        label_indices: Vec<u32>,
        n_labels: usize,
        n_features: usize,
    ) -> Self {
        let leaf_rows = trees
            .iter()
            .zip(leaf_of_row.iter().zip(&bag))
            .map(|(tree, (leaves, drawn))| {
                let mut offsets = vec![0u32; tree.n_leaves as usize + 1];
                let in_bag = || {
                    leaves
                        .iter()
                        .zip(drawn)
                        .enumerate()
                        .filter(|(_, (_, &c))| c > 0)
                };
                for (_, (&leaf, _)) in in_bag() {
                    offsets[leaf as usize + 1] += 1;
                }
                for i in 1..offsets.len() {
                    offsets[i] += offsets[i - 1];
                }
                let mut next = offsets.clone();
                let mut rows = vec![0u32; offsets[offsets.len() - 1] as usize];
                for (r, (&leaf, _)) in in_bag() {
                    rows[next[leaf as usize] as usize] = r as u32;
                    next[leaf as usize] += 1;
                }
                (offsets, rows)
            })
            .collect();
        Self {
            trees,
            leaf_of_row,
            bag,
            label_indptr,
            label_indices,
            n_labels,
            n_features,
            leaf_rows,
        }
    }

    /// How many training rows it grew on (its leaves' members are among them).
    pub fn n_train_rows(&self) -> usize {
        self.label_indptr.len() - 1
    }

    /// The decision for every row of `x`: with `counts`, the best set of exactly that many
    /// labels per row, else the set of highest expected example-F1; under the forest's joint
    /// distribution, or its blend with the networks' (`nets`, one entry per row of `x`).
    pub fn decide(
        &self,
        x: &CsrMatrix,
        counts: Option<&[f32]>,
        nets: Option<&Networks<'_>>,
    ) -> ForestOutputs {
        let l = self.n_labels;
        let n_train = self.label_indptr.len() - 1;
        let rows: Vec<_> = (0..x.n_rows)
            .into_par_iter()
            .map_init(
                || vec![0.0f64; n_train],
                |weight, r| {
                    let span = x.indptr[r]..x.indptr[r + 1];
                    let mut joint = self.joint(&x.indices[span.clone()], &x.values[span], weight);
                    if let Some(nets) = nets {
                        joint = nets.blend(r, joint);
                    }
                    let fixed = counts.map(|c| c[r].max(0.0).round() as usize);
                    let d = joint.decide(fixed);
                    let marginal: Vec<f32> = joint.marginals().map(|m| m as f32).collect();
                    (d, marginal)
                },
            )
            .collect();
        let mut out = ForestOutputs {
            y: vec![0.0; x.n_rows * l],
            z: Vec::with_capacity(x.n_rows),
            marginal: Vec::with_capacity(x.n_rows * l),
            ranking: Vec::with_capacity(x.n_rows * l),
        };
        for (r, (d, marginal)) in rows.into_iter().enumerate() {
            for &i in &d.labels {
                out.y[r * l + i as usize] = 1.0;
            }
            out.z.push(d.labels.len() as f32);
            out.marginal.extend(marginal);
            out.ranking.extend(d.scores.iter().map(|&s| s as f32));
        }
        out
    }

    /// The joint of the input row `(indices, values)`; `weight` is scratch of one entry per
    /// training row, all 0, and left so. Its pairs are those of the training rows in the
    /// row's leaves, a few of them, so it is small whatever the number of labels.
    fn joint(&self, indices: &[u32], values: &[f32], weight: &mut [f64]) -> Joint {
        let share = 1.0 / self.trees.len() as f64;
        for ((tree, (offsets, rows)), drawn) in
            self.trees.iter().zip(&self.leaf_rows).zip(&self.bag)
        {
            let leaf = tree.leaf(indices, values) as usize;
            let members = &rows[offsets[leaf] as usize..offsets[leaf + 1] as usize];
            // The tree's estimate: its leaf's bootstrap sample, each row as often as drawn
            // (the rows that grew the leaf; a damaged model may leave one empty).
            let mass: u32 = members.iter().map(|&m| drawn[m as usize]).sum();
            if mass == 0 {
                continue;
            }
            let w = share / mass as f64;
            for &m in members {
                weight[m as usize] += w * drawn[m as usize] as f64;
            }
        }
        // Every (label, size, weight) in the order of the training rows; sorted stably by
        // label and size, each pair's weights are summed in that order.
        let mut entries: Vec<(u32, u32, f64)> = Vec::new();
        let mut p_empty = 0.0;
        for (r, w) in weight.iter_mut().enumerate().filter(|(_, w)| **w > 0.0) {
            let w = std::mem::take(w);
            let labels = &self.label_indices[self.label_indptr[r]..self.label_indptr[r + 1]];
            if labels.is_empty() {
                p_empty += w;
            }
            entries.extend(labels.iter().map(|&i| (i, labels.len() as u32, w)));
        }
        entries.sort_by_key(|e| (e.0, e.1));
        let mut joint = Joint {
            offsets: vec![0; self.n_labels + 1],
            terms: Vec::new(),
            p_empty,
        };
        let mut last = None;
        for (i, s, w) in entries {
            if last == Some((i, s)) {
                if let Some(t) = joint.terms.last_mut() {
                    t.1 += w;
                }
            } else {
                joint.terms.push((s, 0.0 + w));
                joint.offsets[i as usize + 1] += 1;
                last = Some((i, s));
            }
        }
        for i in 0..self.n_labels {
            joint.offsets[i + 1] += joint.offsets[i];
        }
        joint
    }
}

/// Tree `t`'s seed: SplitMix64 over the forest's seed and the tree's number.
fn mix(seed: u64, t: u64) -> u64 {
    let mut z = seed ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
