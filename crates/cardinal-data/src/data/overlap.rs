//! Rows one dataset shares with another: what `eval --data` checks against the rows a model
//! trained on, so that training rows are never scored unknowingly.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::Dataset;

/// One row's content: its feature entries (column, value bits) and its labels.
fn row_key(d: &Dataset, r: usize) -> (Vec<(u32, u32)>, &[u32]) {
    let (idx, val) = d.features.row(r);
    let mut entries: Vec<(u32, u32)> = idx
        .iter()
        .zip(val)
        .filter(|(_, v)| **v != 0.0)
        .map(|(&j, v)| (j, v.to_bits()))
        .collect();
    entries.sort_unstable();
    let labels = &d.labels.indices[d.labels.indptr[r]..d.labels.indptr[r + 1]];
    (entries, labels)
}

fn digest(key: &(Vec<(u32, u32)>, &[u32])) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// How many rows of `rows` are also rows of `seen`: the same features (stored zeros aside)
/// and the same labels, both in the same columns (a model's, as data read for it has them).
///
/// ```
/// use cardinal_data::data::{overlap::shared_rows, synthetic::{synthetic, SyntheticShape}};
/// let shape = SyntheticShape {
///     train_rows: 20, test_rows: 5, features: 30, labels: 4, density: 0.2, seed: 1,
/// };
/// let d = synthetic(&shape).train;
/// assert_eq!(shared_rows(&d, &d), 20);
/// ```
pub fn shared_rows(rows: &Dataset, seen: &Dataset) -> usize {
    contained(rows, seen).into_iter().filter(|&c| c).count()
}

/// For each row of `rows`, whether it is also a row of `seen` (as [`shared_rows`] counts).
pub fn contained(rows: &Dataset, seen: &Dataset) -> Vec<bool> {
    let mut by_digest: HashMap<u64, Vec<usize>> = HashMap::with_capacity(seen.n_rows());
    for r in 0..seen.n_rows() {
        by_digest
            .entry(digest(&row_key(seen, r)))
            .or_default()
            .push(r);
    }
    (0..rows.n_rows())
        .map(|r| {
            let key = row_key(rows, r);
            by_digest
                .get(&digest(&key))
                .is_some_and(|cands| cands.iter().any(|&s| row_key(seen, s) == key))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic::{synthetic, SyntheticShape};

    /// Every row of a dataset is in it; the rows of a split's two parts are told apart, and
    /// a row with one label changed or one value changed is another row.
    #[test]
    fn shared_rows_are_exactly_the_identical_ones() {
        let d = synthetic(&SyntheticShape {
            train_rows: 60,
            test_rows: 1,
            features: 40,
            labels: 5,
            density: 0.2,
            seed: 3,
        })
        .train;
        assert_eq!(shared_rows(&d, &d), 60);
        let first = d.select_rows(&(0..30).collect::<Vec<_>>());
        let last = d.select_rows(&(30..60).collect::<Vec<_>>());
        let dupes_across = shared_rows(&last, &first);
        assert_eq!(shared_rows(&d, &first), 30 + dupes_across);
        let mut changed = first.clone();
        let p = changed.features.indptr[0];
        changed.features.values[p] += 1.0;
        assert_eq!(
            shared_rows(&changed, &first),
            29 + shared_rows(&changed.select_rows(&[0]), &first)
        );
    }
}
