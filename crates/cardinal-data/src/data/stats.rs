//! Summary statistics of multi-label datasets (as in MULAN's tables).

use std::collections::HashSet;

use serde::Serialize;

use super::Dataset;

/// Statistics of one dataset or of several concatenated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetStats {
    /// Number of instances (examples).
    pub instances: usize,
    /// Number of features.
    pub features: usize,
    /// Number of labels.
    pub labels: usize,
    /// Mean number of positive labels per instance.
    pub cardinality: f64,
    /// Cardinality divided by the number of labels.
    pub density: f64,
    /// Number of different label sets (the empty set counts as one).
    pub distinct_label_sets: usize,
    /// Instances with no positive label.
    pub instances_without_labels: usize,
    /// Mean number of stored (non-zero) features per instance.
    pub mean_nonzero_features: f64,
}

impl DatasetStats {
    /// Statistics of one dataset.
    pub fn of(ds: &Dataset) -> Self {
        Self::of_all(&[ds])
    }

    /// Statistics of the concatenation of `parts` (dimensions taken from the first).
    pub fn of_all(parts: &[&Dataset]) -> Self {
        let mut sets: HashSet<&[u32]> = HashSet::new();
        let (mut n, mut pos, mut empty, mut nnz) = (0usize, 0usize, 0usize, 0usize);
        for ds in parts {
            n += ds.n_rows();
            pos += ds.labels.indices.len();
            nnz += ds.features.nnz();
            for r in 0..ds.n_rows() {
                let row = ds.labels.row(r);
                empty += usize::from(row.is_empty());
                sets.insert(row);
            }
        }
        let (features, labels) = parts
            .first()
            .map_or((0, 0), |d| (d.n_features(), d.n_labels()));
        let div = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let cardinality = div(pos, n);
        Self {
            instances: n,
            features,
            labels,
            cardinality,
            density: if labels == 0 {
                0.0
            } else {
                cardinality / labels as f64
            },
            distinct_label_sets: sets.len(),
            instances_without_labels: empty,
            mean_nonzero_features: div(nnz, n),
        }
    }
}
