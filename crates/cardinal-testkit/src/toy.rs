//! A small random multi-label dataset for tests that need one of a given shape.

use cardinal_data::data::arrays::dataset_from_arrays;
use cardinal_data::data::{CsrMatrix, Dataset, LabelSets};

use crate::rng::Lcg;

/// The shape of a [`toy`] dataset.
#[derive(Debug, Clone)]
pub struct Toy {
    /// The dataset's name.
    pub name: &'static str,
    /// Rows.
    pub rows: usize,
    /// Feature columns; each is present in a row with probability 0.4, valued in `[0.5, 1.5)`.
    pub features: usize,
    /// Label columns; each is on in a row with probability 0.35.
    pub labels: usize,
    /// At most this many labels a row (the first ones drawn).
    pub max_labels: usize,
    /// The label a row gets when none was drawn.
    pub fallback_label: u32,
    /// The seed of the [`Lcg`] stream the dataset is drawn from.
    pub seed: u64,
}

impl Toy {
    /// The forest tests' shape: `rows` rows of 6 features and 5 labels, from `seed`.
    pub fn forest(rows: usize, seed: u64) -> Self {
        Self {
            name: "forest",
            rows,
            features: 6,
            labels: 5,
            max_labels: 5,
            fallback_label: 0,
            seed,
        }
    }
}

/// The dataset of `shape`: the same for the same shape, every row with at least one label
/// (and possibly no feature).
pub fn toy(shape: &Toy) -> Dataset {
    let mut g = Lcg::new(shape.seed);
    let mut x = CsrMatrix::new(shape.features);
    let mut y = LabelSets::new(shape.labels);
    for _ in 0..shape.rows {
        let idx: Vec<u32> = (0..shape.features as u32)
            .filter(|_| g.uniform() < 0.4)
            .collect();
        let val: Vec<f32> = idx.iter().map(|_| (0.5 + g.uniform()) as f32).collect();
        x.push_row(&idx, &val);
        let mut lab: Vec<u32> = (0..shape.labels as u32)
            .filter(|_| g.uniform() < 0.35)
            .collect();
        lab.truncate(shape.max_labels);
        if lab.is_empty() {
            lab.push(shape.fallback_label);
        }
        y.push_row(&lab);
    }
    dataset_from_arrays(shape.name, x, y).expect("a toy shape has features and labels")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_is_kept_and_seeded() {
        let shape = Toy {
            name: "t",
            rows: 9,
            features: 5,
            labels: 4,
            max_labels: 2,
            fallback_label: 1,
            seed: 3,
        };
        let d = toy(&shape);
        assert_eq!((d.n_rows(), d.n_features(), d.n_labels()), (9, 5, 4));
        assert!((0..9).all(|r| (1..=2).contains(&d.labels.row(r).len())));
        assert_eq!(d, toy(&shape));
        assert_ne!(d, toy(&Toy { seed: 4, ..shape }));
    }
}
