//! Synthetic multi-label data of a given shape, for timing (`cardinal bench --synthetic-labels`):
//! binary features at a given density and a few labels per row, drawn from a seeded generator.
//! The labels are a function of the features (each feature votes for a few labels), so that a
//! model has something to learn, but only the shape matters for timing.

use super::split::SplitMix64;
use super::{CsrMatrix, Dataset, LabelSets, TrainTest};

/// The crate's splitmix64 stream, drawn in `0..n` by a modulo (not [`SplitMix64::below`]'s
/// multiply-shift): the draw this data has always been made with.
struct Rng(SplitMix64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }
}

/// Shape of a synthetic dataset.
#[derive(Debug, Clone, Copy)]
pub struct SyntheticShape {
    /// Rows of the training set.
    pub train_rows: usize,
    /// Rows of the test set.
    pub test_rows: usize,
    /// Number of features (at least 1 is used).
    pub features: usize,
    /// Number of labels (at least 1 is used).
    pub labels: usize,
    /// Expected fraction of features present in a row (Bibtex: 0.037).
    pub density: f64,
    /// Seed of the generator: the same shape and seed give the same data.
    pub seed: u64,
}

/// A train/test pair of the given shape: every row has `round(density·features)` (at least 1)
/// distinct features of value 1 and 1 to 4 labels (mean 2.5, Bibtex's 2.4).
pub fn synthetic(shape: &SyntheticShape) -> TrainTest {
    let mut rng = Rng(SplitMix64::new(shape.seed ^ 0x5EED_DA7A));
    let (d, l) = (shape.features.max(1), shape.labels.max(1));
    let nnz = ((shape.density * d as f64).round() as usize).clamp(1, d);
    let mut make = |rows: usize, name: &str| {
        let mut x = CsrMatrix::new(d);
        let mut y = LabelSets::new(l);
        let mut idx = Vec::with_capacity(nnz);
        for _ in 0..rows {
            idx.clear();
            while idx.len() < nnz {
                let f = rng.below(d) as u32;
                if !idx.contains(&f) {
                    idx.push(f);
                }
            }
            idx.sort_unstable();
            x.push_row(&idx, &vec![1.0; nnz]);
            let k = 1 + rng.below(4);
            let mut lab: Vec<u32> = (0..k)
                .map(|j| ((idx[j % nnz] as usize * 7 + rng.below(3)) % l) as u32)
                .collect();
            lab.sort_unstable();
            lab.dedup();
            y.push_row(&lab);
        }
        Dataset {
            name: name.into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        }
    };
    let name = format!("synthetic-L{l}-D{d}");
    let train = make(shape.train_rows, &name);
    let test = make(shape.test_rows, &name);
    TrainTest { train, test }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_data_has_the_requested_shape_and_is_seeded() {
        let shape = SyntheticShape {
            train_rows: 50,
            test_rows: 20,
            features: 200,
            labels: 30,
            density: 0.05,
            seed: 3,
        };
        let a = synthetic(&shape);
        assert_eq!(a.train.n_rows(), 50);
        assert_eq!(a.test.n_rows(), 20);
        assert_eq!(a.train.n_features(), 200);
        assert_eq!(a.train.n_labels(), 30);
        for r in 0..50 {
            assert_eq!(a.train.features.row(r).0.len(), 10);
            let k = a.train.labels.count(r);
            assert!((1..=4).contains(&k), "{k}");
        }
        let b = synthetic(&shape);
        assert_eq!(a.train.features.row(7), b.train.features.row(7));
        let c = synthetic(&SyntheticShape { seed: 4, ..shape });
        assert_ne!(a.train.features.row(7), c.train.features.row(7));
    }
}
