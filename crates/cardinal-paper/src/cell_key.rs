//! The key under which a reproduced result is cached: a hash of everything that decides it.

use sha2::{Digest, Sha256};

use cardinal::config::Config;
use cardinal::data::TrainTest;

use crate::reproduce::Protocol;

/// A SHA-256 (hex) over the data (every feature value, label and name of train and test, in
/// order), the complete configuration (seed included) and the protocol. A cached result is
/// reused only under the same key: a different file, a toy subset of a dataset, another
/// configuration or another seed all miss the cache, whatever they are called.
pub fn cell_key(data: &TrainTest, cfg: &Config, protocol: Protocol) -> String {
    let mut h = Sha256::new();
    for ds in [&data.train, &data.test] {
        cardinal::engine::hash_dataset(&mut h, ds);
    }
    h.update(serde_json::to_vec(cfg).expect("serialisable"));
    h.update(serde_json::to_vec(&protocol).expect("serialisable"));
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The key of a development-suite cell, which holds every seed of one system on one dataset:
/// the data (as [`cell_key`]), the configuration without its seed and, where the default's
/// search applies to the training file, its candidates (also without seed), so that a change
/// to the rule's candidates misses the cache even though the configuration reads the same.
pub fn suite_cell_key(data: &TrainTest, cfg: &Config) -> String {
    let unseeded = |c: &Config| {
        let mut c = c.clone();
        c.seed = 0;
        serde_json::to_vec(&c).expect("serialisable")
    };
    let mut h = Sha256::new();
    for ds in [&data.train, &data.test] {
        cardinal::engine::hash_dataset(&mut h, ds);
    }
    h.update(unseeded(cfg));
    let n = data.train.n_rows();
    if cfg.search.applies(n) {
        let weighted = data.train.labels.weights.is_some();
        let (rule, candidates) = cardinal::search::rule_and_candidates(cfg, n, weighted);
        h.update(rule.as_bytes());
        for candidate in candidates {
            h.update(unseeded(&candidate));
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cardinal::data::synthetic::{synthetic, SyntheticShape};

    fn data(rows: usize) -> TrainTest {
        synthetic(&SyntheticShape {
            train_rows: rows,
            test_rows: 10,
            features: 8,
            labels: 4,
            density: 0.3,
            seed: 3,
        })
    }

    #[test]
    fn the_key_changes_with_data_configuration_seed_and_protocol() {
        let d = data(30);
        let cfg = Config::predict();
        let k = cell_key(&d, &cfg, Protocol::Fixed);
        assert_eq!(k.len(), 64);
        assert_eq!(k, cell_key(&d.clone(), &cfg, Protocol::Fixed));
        // A subset of the same data (a toy copy under the same name) is another cell.
        let mut small = d.clone();
        small.train = d.train.select_rows(&(0..20).collect::<Vec<_>>());
        assert_ne!(k, cell_key(&small, &cfg, Protocol::Fixed));
        let mut one_value = d.clone();
        one_value.train.features.values[0] += 1.0;
        assert_ne!(k, cell_key(&one_value, &cfg, Protocol::Fixed));
        let mut seeded = cfg.clone();
        seeded.seed += 1;
        assert_ne!(k, cell_key(&d, &seeded, Protocol::Fixed));
        assert_ne!(k, cell_key(&d, &cfg, Protocol::ThresholdGrid));
        let mut renamed = d.clone();
        renamed.train.label_names = vec!["a".into(); 4];
        assert_ne!(k, cell_key(&renamed, &cfg, Protocol::Fixed));
    }

    /// A suite cell holds every seed: its key ignores the seed, follows the data and the
    /// configuration, and follows the search's candidates only where the search applies.
    #[test]
    fn the_suite_key_follows_data_configuration_and_candidates_not_the_seed() {
        let d = data(30);
        let cfg = Config::predict();
        let k = suite_cell_key(&d, &cfg);
        let mut seeded = cfg.clone();
        seeded.seed = 4;
        assert_eq!(k, suite_cell_key(&d, &seeded));
        let mut changed = cfg.clone();
        changed.train.lr = 0.2;
        assert_ne!(k, suite_cell_key(&d, &changed));
        assert_ne!(k, suite_cell_key(&data(31), &cfg));
        let mut renamed = d.clone();
        renamed.train.name = "elsewhere".into();
        assert_eq!(k, suite_cell_key(&renamed, &cfg));
        // The candidates enter the key: without the search (or above its size) it differs.
        let mut off = cfg.clone();
        off.search.max_rows = 0;
        let mut above = cfg.clone();
        above.search.max_rows = 29;
        assert!(cfg.search.applies(30) && !above.search.applies(30));
        let (k_off, k_above) = (suite_cell_key(&d, &off), suite_cell_key(&d, &above));
        assert_ne!(k, k_off);
        assert_ne!(k_off, k_above);
    }
}
