//! Training the Section 6 model: Adam on mini-batches of images, seeded, deterministic for any
//! thread count (per-image gradients are summed in batch order).

use super::model::{Grads, Mode, SegModel};
use crate::data::multi_target::MultiTargetDataset;
use crate::error::{Error, Result};
use cardinal_proj::matrix::AnyMatrixProjector;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

/// What [`fit`] trains.
#[derive(Debug, Clone, Copy)]
pub struct SegConfig {
    /// Which model.
    pub mode: Mode,
    /// The projection of the unroll.
    pub proj: AnyMatrixProjector,
    /// Unrolled steps `T`.
    pub steps: usize,
    /// Step size `η`.
    pub eta: f64,
    /// Count loss weight `λ`.
    pub count_weight: f64,
    /// Passes over the training images.
    pub epochs: usize,
    /// Images per Adam step.
    pub batch: usize,
    /// Adam's learning rate.
    pub lr: f64,
    /// Seed of the initialisation and the shuffles.
    pub seed: u64,
}

/// The image's features in `f64`.
pub(crate) fn image(ds: &MultiTargetDataset, i: usize) -> Vec<f64> {
    ds.row_features(i).iter().map(|&x| f64::from(x)).collect()
}

/// Features per position, or an error if they do not split evenly over the positions.
pub(crate) fn channels(ds: &MultiTargetDataset) -> Result<usize> {
    let (d, l) = (ds.n_features(), ds.positions());
    if l == 0 || d == 0 || d % l != 0 {
        return Err(Error::Config(format!(
            "{}: {d} features do not split into {l} positions (expected C features per position)",
            ds.name
        )));
    }
    Ok(d / l)
}

/// Trains a model on `train`.
pub fn fit(train: &MultiTargetDataset, cfg: &SegConfig) -> Result<SegModel> {
    let c = channels(train)?;
    let m = train.classes();
    let mut model = SegModel::new(c, m, cfg.mode, cfg.proj);
    model.steps = cfg.steps;
    model.eta = cfg.eta;
    model.count_weight = cfg.count_weight;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let init = Normal::new(0.0, 0.1).expect("a valid normal");
    for p in model.w.iter_mut().chain(model.v.iter_mut()) {
        *p = init.sample(&mut rng);
    }
    let n_params = 2 * c * m + 2 * m;
    let (mut m1, mut m2) = (vec![0.0; n_params], vec![0.0; n_params]);
    let mut order: Vec<usize> = (0..train.n_rows()).collect();
    let mut t = 0;
    for _ in 0..cfg.epochs {
        order.shuffle(&mut rng);
        for chunk in order.chunks(cfg.batch.max(1)) {
            let per_image: Vec<Result<Grads>> = chunk
                .par_iter()
                .map(|&i| {
                    let mut g = model.zero_grads();
                    model
                        .loss_and_grad(&image(train, i), train.row_targets(i), &mut g)
                        .map_err(|e| Error::Config(format!("image {i}: {e}")))?;
                    Ok(g)
                })
                .collect();
            let mut flat = vec![0.0; n_params];
            for g in per_image {
                let g = g?;
                let all = g.w.iter().chain(&g.b).chain(&g.v).chain(&g.c);
                flat.iter_mut()
                    .zip(all)
                    .for_each(|(f, x)| *f += x / chunk.len() as f64);
            }
            t += 1;
            let (b1, b2) = (0.9f64, 0.999f64);
            let params = model
                .w
                .iter_mut()
                .chain(model.b.iter_mut())
                .chain(model.v.iter_mut())
                .chain(model.c.iter_mut());
            for (((p, g), a), s) in params.zip(&flat).zip(m1.iter_mut()).zip(m2.iter_mut()) {
                *a = b1 * *a + (1.0 - b1) * g;
                *s = b2 * *s + (1.0 - b2) * g * g;
                let ah = *a / (1.0 - b1.powi(t));
                let sh = *s / (1.0 - b2.powi(t));
                *p -= cfg.lr * ah / (sh.sqrt() + 1e-8);
            }
        }
    }
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synth_seg::{synth_seg, SynthSegSpec};
    use crate::segment::evaluate;
    use cardinal_proj::matrix::MatrixMethod;

    #[test]
    fn training_beats_the_initial_model_and_is_deterministic() {
        let spec = SynthSegSpec {
            size: 8,
            classes: 3,
            noise: 0.7,
            train: 60,
            test: 30,
            seed: 4,
        };
        let (train, test) = synth_seg(&spec).unwrap();
        for mode in [Mode::Unary, Mode::Predicted, Mode::Gold] {
            let mut cfg = SegConfig {
                mode,
                proj: AnyMatrixProjector::new(MatrixMethod::Exact, 2),
                steps: 3,
                eta: 1.0,
                count_weight: 1.0,
                epochs: 0,
                batch: 8,
                lr: 0.05,
                seed: 1,
            };
            let before = evaluate(&fit(&train, &cfg).unwrap(), &test).unwrap();
            cfg.epochs = 5;
            let model = fit(&train, &cfg).unwrap();
            let after = evaluate(&model, &test).unwrap();
            assert!(
                after.mean_iou > before.mean_iou + 0.05,
                "{mode:?}: {} -> {}",
                before.mean_iou,
                after.mean_iou
            );
            let again = fit(&train, &cfg).unwrap();
            assert_eq!(again.w, model.w);
            assert_eq!(again.v, model.v);
        }
    }

    #[test]
    fn features_that_do_not_split_over_positions_are_refused() {
        let spec = SynthSegSpec {
            size: 3,
            train: 2,
            test: 1,
            ..Default::default()
        };
        let (mut train, _) = synth_seg(&spec).unwrap();
        train.feature_names.pop();
        let cfg = SegConfig {
            mode: Mode::Unary,
            proj: AnyMatrixProjector::new(MatrixMethod::Exact, 2),
            steps: 1,
            eta: 1.0,
            count_weight: 1.0,
            epochs: 1,
            batch: 1,
            lr: 0.1,
            seed: 0,
        };
        let e = fit(&train, &cfg).unwrap_err().to_string();
        assert!(
            e.contains("35 features do not split into 9 positions"),
            "{e}"
        );
    }
}
