//! The forests one search grows, shared by its trainings: in a fold, the blended forest's
//! training and the forest prior's grow the same forest (the same rows, trees, leaf size and
//! seed), which is grown once.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use cardinal_data::data::Dataset;

use crate::{Forest, GrowSettings, Result};

/// The forests grown during one search (the default's, in one process), by what they were
/// grown from: a training that needs a forest already grown gets a copy of it, the same
/// forest it would grow (growth is deterministic for any thread count). Held only while the
/// search runs; tasks run elsewhere (Python's joblib tasks) grow their own.
#[derive(Debug, Default)]
pub struct ForestCache {
    grown: Mutex<Vec<(ForestKey, Forest)>>,
}

/// What a forest is grown from: its training rows' fingerprint and sizes, its settings and
/// its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ForestKey {
    rows: usize,
    entries: usize,
    fingerprint: u64,
    trees: usize,
    min_leaf: usize,
    seed: u64,
}

impl ForestKey {
    fn of(train: &Dataset, cfg: &GrowSettings, seed: u64) -> Self {
        let (x, y) = (&train.features, &train.labels);
        let mut h = DefaultHasher::new();
        (x.n_rows, x.n_cols, y.n_labels).hash(&mut h);
        x.indptr.hash(&mut h);
        x.indices.hash(&mut h);
        for v in &x.values {
            v.to_bits().hash(&mut h);
        }
        y.indptr.hash(&mut h);
        y.indices.hash(&mut h);
        Self {
            rows: x.n_rows,
            entries: x.indices.len() + y.indices.len(),
            fingerprint: h.finish(),
            trees: cfg.trees,
            min_leaf: cfg.min_leaf,
            seed,
        }
    }
}

impl ForestCache {
    /// The forest [`Forest::fit`] grows on `train` under `cfg` from `seed`: the one grown
    /// before from the same, or grown now and kept.
    pub fn grow(
        &self,
        train: &Dataset,
        cfg: &GrowSettings,
        seed: u64,
        cancel: &AtomicBool,
    ) -> Result<Forest> {
        let key = ForestKey::of(train, cfg, seed);
        let lock = || self.grown.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = lock().iter().find(|(k, _)| *k == key) {
            return Ok(f.clone());
        }
        let forest = Forest::fit(train, cfg, seed, cancel)?;
        lock().push((key, forest.clone()));
        Ok(forest)
    }

    /// How many forests it holds.
    pub fn len(&self) -> usize {
        self.grown.lock().map_or(0, |g| g.len())
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
