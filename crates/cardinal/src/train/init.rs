//! A fresh model for a training set: label-count range, memory guard, seeded initial weights.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::config::{resolve_counts, Config};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::model::{Params, Standardizer};
use crate::pipeline::{count_values, Model};
use crate::runtime::MemoryBudget;

/// Bytes of unrolled inference and projection tape per row, label and step while training
/// (the memory guard's estimate; measured with the `paper` preset in
/// docs/results/reliability.md).
const TAPE_BYTES: f64 = 84.0;

/// A freshly initialised model for `train` under `cfg`, within the default memory budget
/// ([`MemoryBudget::default`]); [`init_model_within`] takes the budget.
#[cfg(test)]
pub(crate) fn init_model(train: &Dataset, cfg: &Config) -> Result<Model<f32>> {
    init_model_within(train, cfg, MemoryBudget::default())
}

/// A freshly initialised model for `train` under `cfg`: the configuration checked, the range
/// of label counts resolved, the training memory checked against `budget` before any of it
/// is allocated, and the weights drawn from `cfg.seed`.
pub fn init_model_within(
    train: &Dataset,
    cfg: &Config,
    budget: MemoryBudget,
) -> Result<Model<f32>> {
    cfg.validate()?;
    let counts: Vec<usize> = (0..train.n_rows()).map(|r| train.labels.count(r)).collect();
    let (kmin, kmax) = count_range(train, cfg, &counts)?;
    check_memory(train, cfg, kmax - kmin + 1, budget)?;
    let m = &cfg.model;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let params = Params::glorot(
        train.n_features(),
        m.hidden,
        train.n_labels(),
        m.energy_hidden,
        m.card_hidden,
        kmax - kmin + 1,
        cfg.inference.eta,
        &mut rng,
    );
    Ok(Model {
        config: cfg.clone(),
        params,
        standardizer: Standardizer::fit(&train.features),
        counts: count_values(kmin, kmax),
        train_mean_cardinality: counts.iter().sum::<usize>() as f64 / counts.len().max(1) as f64,
        forest: None,
        search: None,
    })
}

/// The range `kmin..=kmax` of label counts the count network scores, from `cfg.model.counts`
/// and the training rows' `counts`; refused when it is empty.
fn count_range(train: &Dataset, cfg: &Config, counts: &[usize]) -> Result<(usize, usize)> {
    let (kmin, kmax) = resolve_counts(&cfg.model.counts, counts, train.n_labels());
    if kmin > kmax {
        return Err(Error::OutOfRange {
            field: "model.counts.min".into(),
            value: kmin.to_string(),
            allowed: format!(
                "at most the number of labels ({}), or no count is possible",
                train.n_labels()
            ),
        });
    }
    Ok((kmin, kmax))
}

/// The memory guard: refuses sizes whose training state cannot fit `budget`, before any of it
/// is allocated. Estimate: f32 parameters x4 (weights, gradient, Adagrad, best epoch) plus the
/// unrolled inference and projection tapes of one batch, at `TAPE_BYTES` per row, label and
/// step (measured in docs/results/reliability.md).
fn check_memory(
    train: &Dataset,
    cfg: &Config,
    n_counts: usize,
    budget: MemoryBudget,
) -> Result<()> {
    let m = &cfg.model;
    let (d, l) = (train.n_features() as f64, train.n_labels() as f64);
    let (h, e, hc) = (
        m.hidden as f64,
        m.energy_hidden as f64,
        m.card_hidden as f64,
    );
    let k = n_counts as f64;
    let n_params = d * h + h + h * l + l + l * e + e + d * hc + hc + hc * k + k + 1.0;
    let tapes = cfg.train.batch_size as f64 * (cfg.inference.steps as f64 + 1.0) * l * TAPE_BYTES;
    let need = 16.0 * n_params + tapes;
    let Some(budget) = budget.limit().map(|b| b as f64).filter(|&b| need > b) else {
        return Ok(());
    };
    let gib = |x: f64| x / (1u64 << 30) as f64;
    Err(Error::TooLarge {
        shape: format!(
            "{} features, {} labels, hidden {}, energy_hidden {}, card_hidden {}, {} counts, \
             batch_size {} and {} inference steps",
            train.n_features(),
            train.n_labels(),
            m.hidden,
            m.energy_hidden,
            m.card_hidden,
            n_counts,
            cfg.train.batch_size,
            cfg.inference.steps,
        ),
        params: n_params,
        need_gib: gib(need),
        state_gib: gib(16.0 * n_params),
        tapes_gib: gib(tapes),
        budget_gib: gib(budget),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, LabelSets};

    fn data(labels_per_row: u32) -> Dataset {
        let mut x = CsrMatrix::new(3);
        let mut y = LabelSets::new(8);
        for r in 0..10u32 {
            x.push_row(&[r % 3], &[1.0]);
            y.push_row(&(0..labels_per_row).collect::<Vec<_>>());
        }
        Dataset {
            name: "d".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        }
    }

    #[test]
    fn decay_scales_down_with_the_label_count_and_never_up() {
        let mut cfg = Config::predict();
        cfg.train.weight_decay = 0.001;
        cfg.train.decay_reference_cardinality = Some(2.4);
        let m = init_model(&data(6), &cfg).unwrap();
        assert!((m.weight_decay() - 0.001 * 2.4 / 6.0).abs() < 1e-15);
        let m = init_model(&data(1), &cfg).unwrap();
        assert_eq!(m.weight_decay(), 0.001);
        cfg.train.decay_reference_cardinality = None;
        let m = init_model(&data(6), &cfg).unwrap();
        assert_eq!(m.weight_decay(), 0.001);
        cfg.train.decay_reference_cardinality = Some(0.0);
        assert!(cfg.validate().is_err());
    }

    /// The budget is the one passed in: the same model is refused under a small budget, by
    /// its estimate and the budget, and built under no limit.
    #[test]
    fn the_memory_budget_passed_in_is_the_one_checked() {
        let cfg = Config::predict();
        let small = MemoryBudget::bytes(1000);
        match init_model_within(&data(2), &cfg, small) {
            Err(Error::TooLarge { budget_gib, .. }) => {
                assert_eq!(budget_gib, 1000.0 / (1u64 << 30) as f64);
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        assert!(init_model_within(&data(2), &cfg, MemoryBudget::UNLIMITED).is_ok());
        assert!(init_model(&data(2), &cfg).is_ok());
    }
}
