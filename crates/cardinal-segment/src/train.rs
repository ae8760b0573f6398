//! Training the Section 6 model: Adam on mini-batches of images, seeded, deterministic for any
//! thread count (per-image gradients are summed in batch order).

use super::energy::GlobalEnergy;
use super::grid_energy::GridEnergy;
use super::model::{Grads, Mode, SegModel};
use crate::{Result, SegError};
use cardinal_data::data::multi_target::MultiTargetDataset;
use cardinal_proj::matrix::{AnyMatrixProjector, MatrixMethod};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// What a Section 6 model trains with (`cardinal`'s `Engine::start_segmentation_run`).
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
    /// Terms `K` of the global energy over `Y` (0: none, the default).
    pub energy: usize,
    /// Whether to add the pairwise energy of an image grid (the positions must be a square
    /// grid, row-major; off by default).
    pub grid_energy: bool,
    /// Passes over the training images.
    pub epochs: usize,
    /// Images per Adam step.
    pub batch: usize,
    /// Adam's learning rate.
    pub lr: f64,
    /// Seed of the initialisation and the shuffles.
    pub seed: u64,
}

impl Default for SegConfig {
    /// P&C with predicted counts and the exact projection, `T = 5`, no energy, 10 epochs.
    fn default() -> Self {
        Self {
            mode: Mode::Predicted,
            proj: AnyMatrixProjector::new(MatrixMethod::Exact, 2).with_eps(0.1),
            steps: 5,
            eta: 1.0,
            count_weight: 1.0,
            energy: 0,
            grid_energy: false,
            epochs: 10,
            batch: 16,
            lr: 0.05,
            seed: 0,
        }
    }
}

/// One epoch of training, as `metrics.jsonl` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegEpoch {
    /// Epochs run so far (1-based).
    pub epoch: usize,
    /// Mean training loss over the epoch's images.
    pub loss: f64,
    /// Seconds the epoch took.
    pub seconds: f64,
}

/// Everything a run needs to continue bit-identically: the model, Adam's moments and step,
/// and the epochs run. The shuffles' random state is not kept: it is replayed from the seed.
#[derive(Debug, Clone)]
pub struct SegState {
    /// The model after the epochs run.
    pub model: SegModel,
    /// Adam's first moments, in the order of `SegModel::params_mut`.
    pub m1: Vec<f64>,
    /// Adam's second moments.
    pub m2: Vec<f64>,
    /// Adam steps taken.
    pub adam_steps: u64,
    /// One record per epoch run.
    pub history: Vec<SegEpoch>,
}

impl SegState {
    /// Epochs run.
    pub fn epochs_run(&self) -> usize {
        self.history.len()
    }
}

/// The image's features in `f64`.
pub(crate) fn image(ds: &MultiTargetDataset, i: usize) -> Vec<f64> {
    ds.row_features(i).iter().map(|&x| f64::from(x)).collect()
}

/// Features per position, or an error if they do not split evenly over the positions.
pub(crate) fn channels(ds: &MultiTargetDataset) -> Result<usize> {
    let (d, l) = (ds.n_features(), ds.positions());
    if l == 0 || d == 0 || d % l != 0 {
        return Err(SegError::Shape {
            what: ds.name.clone(),
            found: format!("{d} features, which do not split into {l} positions"),
            expected: "C features per position".into(),
        });
    }
    Ok(d / l)
}

/// The seed of the energy's own generator: the energy's initial `B` is drawn apart from the
/// other parameters, so that the shuffles and the other initial weights are those of the same
/// run without energy (and with `w = 0` the two start as the same function).
const ENERGY_SEED: u64 = 0x656e_6572_6779;

/// The initial model and the generator of the shuffles, after the initial draws.
fn initial(train: &MultiTargetDataset, cfg: &SegConfig) -> Result<(SegModel, Xoshiro256PlusPlus)> {
    let c = channels(train)?;
    let m = train.classes();
    let mut model = SegModel::new(c, m, cfg.mode, cfg.proj);
    model.steps = cfg.steps;
    model.eta = cfg.eta;
    model.count_weight = cfg.count_weight;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let init = Normal::new(0.0, 0.1).expect("a valid normal");
    for p in model.w.iter_mut().chain(model.v.iter_mut()) {
        *p = init.sample(&mut rng);
    }
    if cfg.energy > 0 {
        let len = train.positions() * m;
        model.energy = GlobalEnergy::zeros(cfg.energy, len);
        // ⟨B_k, Y⟩ of order 1 for rows of unit sum; w = 0: the energy starts switched off.
        let b_init =
            Normal::new(0.0, 1.0 / (train.positions() as f64).sqrt()).expect("a valid normal");
        let mut erng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ ENERGY_SEED);
        model
            .energy
            .b
            .iter_mut()
            .for_each(|b| *b = b_init.sample(&mut erng));
    }
    if cfg.grid_energy {
        // C = 0: the energy starts switched off, as the global one does.
        model.grid =
            Some(
                GridEnergy::zeros(train.positions(), m).ok_or_else(|| SegError::Conflict {
                    field: "multi_target.grid_energy".into(),
                    value: "true".into(),
                    with: crate::Conflict::NotAGrid {
                        data: train.name.clone(),
                        positions: train.positions(),
                    },
                })?,
            );
    }
    Ok((model, rng))
}

/// The state before the first epoch.
pub fn start(train: &MultiTargetDataset, cfg: &SegConfig) -> Result<SegState> {
    let (model, _) = initial(train, cfg)?;
    let n = model.n_params();
    Ok(SegState {
        model,
        m1: vec![0.0; n],
        m2: vec![0.0; n],
        adam_steps: 0,
        history: Vec::new(),
    })
}

/// Trains a model on `train` from scratch, every epoch of `cfg`.
pub fn fit(train: &MultiTargetDataset, cfg: &SegConfig) -> Result<SegModel> {
    let state = start(train, cfg)?;
    Ok(fit_from(train, cfg, state, &mut |_| Ok::<(), SegError>(()))?.model)
}

/// Trains `state` on `train` up to `cfg.epochs` epochs, calling `after_epoch` after each (to
/// write a checkpoint, or stop with an error). A state saved after epoch `k` continues exactly
/// as the uninterrupted run would: the shuffles of the first `k` epochs are replayed. An error
/// of `after_epoch` stops training and is returned; the model's own are [`SegError`]s.
pub fn fit_from<E: From<SegError>>(
    train: &MultiTargetDataset,
    cfg: &SegConfig,
    mut state: SegState,
    after_epoch: &mut dyn FnMut(&SegState) -> Result<(), E>,
) -> Result<SegState, E> {
    let (fresh, mut rng) = initial(train, cfg)?;
    let n_params = fresh.n_params();
    if state.model.n_params() != n_params
        || state.m1.len() != n_params
        || state.m2.len() != n_params
    {
        return Err(SegError::Shape {
            what: "the saved state".into(),
            found: format!("{} parameters", state.model.n_params()),
            expected: format!("the {n_params} the configuration makes on `{}`", train.name),
        }
        .into());
    }
    let mut order: Vec<usize> = (0..train.n_rows()).collect();
    for _ in 0..state.epochs_run() {
        order.shuffle(&mut rng);
    }
    while state.history.len() < cfg.epochs {
        let started = std::time::Instant::now();
        order.shuffle(&mut rng);
        let mut loss_sum = 0.0;
        for chunk in order.chunks(cfg.batch.max(1)) {
            let per_image: Vec<Result<(f64, Grads)>> = chunk
                .par_iter()
                .map(|&i| {
                    let mut g = state.model.zero_grads();
                    let loss = state
                        .model
                        .loss_and_grad(&image(train, i), train.row_targets(i), &mut g)
                        .map_err(|source| SegError::Image {
                            data: train.name.clone(),
                            image: i,
                            source,
                        })?;
                    Ok((loss, g))
                })
                .collect();
            let mut flat = vec![0.0; n_params];
            for r in per_image {
                let (loss, g) = r?;
                loss_sum += loss;
                flat.iter_mut()
                    .zip(g.flat())
                    .for_each(|(f, x)| *f += x / chunk.len() as f64);
            }
            state.adam_steps += 1;
            let t = i32::try_from(state.adam_steps).unwrap_or(i32::MAX);
            let (b1, b2) = (0.9f64, 0.999f64);
            let moments = state.m1.iter_mut().zip(state.m2.iter_mut());
            for ((p, g), (a, s)) in state.model.params_mut().zip(&flat).zip(moments) {
                *a = b1 * *a + (1.0 - b1) * g;
                *s = b2 * *s + (1.0 - b2) * g * g;
                let ah = *a / (1.0 - b1.powi(t));
                let sh = *s / (1.0 - b2.powi(t));
                *p -= cfg.lr * ah / (sh.sqrt() + 1e-8);
            }
        }
        state.history.push(SegEpoch {
            epoch: state.history.len() + 1,
            loss: loss_sum / train.n_rows().max(1) as f64,
            seconds: started.elapsed().as_secs_f64(),
        });
        after_epoch(&state)?;
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate;
    use cardinal_data::data::synth_seg::{synth_seg, SynthSegSpec};
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
        for mode in Mode::ALL {
            let mut cfg = SegConfig {
                mode,
                proj: AnyMatrixProjector::new(MatrixMethod::Exact, 2),
                steps: 3,
                eta: 1.0,
                count_weight: 1.0,
                energy: 0,
                grid_energy: false,
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
            energy: 0,
            grid_energy: false,
            epochs: 1,
            batch: 1,
            lr: 0.1,
            seed: 0,
        };
        let e = fit(&train, &cfg).unwrap_err().to_string();
        assert!(
            e.contains("35 features, which do not split into 9 positions"),
            "{e}"
        );
    }
}
