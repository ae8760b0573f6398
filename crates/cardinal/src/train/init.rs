//! A fresh model for a training set: label-count range, memory guard, seeded initial weights.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::config::{resolve_counts, Config};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::model::{Params, Standardizer};
use crate::pipeline::{count_values, Model};

/// Bytes of unrolled inference and projection tape per row, label and step while training
/// (the memory guard's estimate; measured with the `paper` preset in
/// docs/results/reliability.md).
const TAPE_BYTES: f64 = 84.0;

/// A freshly initialised model for `train` under `cfg`.
pub fn init_model(train: &Dataset, cfg: &Config) -> Result<Model<f32>> {
    cfg.validate()?;
    let counts: Vec<usize> = (0..train.n_rows()).map(|r| train.labels.count(r)).collect();
    let (kmin, kmax) = resolve_counts(&cfg.model.counts, &counts, train.n_labels());
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
    let m = &cfg.model;
    // Memory guard: refuse sizes whose training state cannot fit, before allocating any of it.
    // Estimate: f32 parameters x4 (weights, gradient, Adagrad, best epoch) plus the unrolled
    // inference and projection tapes of one batch, at `TAPE_BYTES` per row, label and step
    // (measured in docs/results/reliability.md). Budget: env
    // CARDINAL_MEMORY_BUDGET in bytes with an optional K/M/G/T suffix (binary), `0` = no limit;
    // default 16G.
    {
        let (d, l) = (train.n_features() as f64, train.n_labels() as f64);
        let (h, e, hc) = (
            m.hidden as f64,
            m.energy_hidden as f64,
            m.card_hidden as f64,
        );
        let k = (kmax - kmin + 1) as f64;
        let n_params = d * h + h + h * l + l + l * e + e + d * hc + hc + hc * k + k + 1.0;
        let tapes =
            cfg.train.batch_size as f64 * (cfg.inference.steps as f64 + 1.0) * l * TAPE_BYTES;
        let need = 16.0 * n_params + tapes;
        let var = std::env::var("CARDINAL_MEMORY_BUDGET").ok();
        let budget = match var.as_deref().map(str::trim) {
            None | Some("") => Some(16.0 * (1u64 << 30) as f64),
            Some(v) => {
                let (num, mult) = match v.char_indices().last() {
                    Some((i, c)) if c.is_ascii_alphabetic() => {
                        let p = match c.to_ascii_uppercase() {
                            'K' => 1,
                            'M' => 2,
                            'G' => 3,
                            'T' => 4,
                            _ => 99,
                        };
                        (&v[..i], if p == 99 { f64::NAN } else { 1024f64.powi(p) })
                    }
                    _ => (v, 1.0),
                };
                match num.trim().parse::<f64>() {
                    Ok(x) if x >= 0.0 && (x * mult).is_finite() => (x > 0.0).then_some(x * mult),
                    _ => {
                        return Err(Error::OutOfRange {
                            field: "CARDINAL_MEMORY_BUDGET".into(),
                            value: format!("`{v}`"),
                            allowed: "bytes with an optional K/M/G/T suffix (e.g. 32G), or 0 \
                                      for no limit"
                                .into(),
                        })
                    }
                }
            }
        };
        if let Some(budget) = budget.filter(|&b| need > b) {
            let gib = |x: f64| x / (1u64 << 30) as f64;
            return Err(Error::TooLarge {
                shape: format!(
                    "{} features, {} labels, hidden {}, energy_hidden {}, card_hidden {}, {} \
                     counts, batch_size {} and {} inference steps",
                    train.n_features(),
                    train.n_labels(),
                    m.hidden,
                    m.energy_hidden,
                    m.card_hidden,
                    kmax - kmin + 1,
                    cfg.train.batch_size,
                    cfg.inference.steps,
                ),
                params: n_params,
                need_gib: gib(need),
                state_gib: gib(16.0 * n_params),
                tapes_gib: gib(tapes),
                budget_gib: gib(budget),
            });
        }
    }
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
}
