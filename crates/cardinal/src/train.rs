//! Training: AdaGrad over the end-to-end loss, the two-phase schedule of the released code
//! (epochs on the train part of a seeded train/dev split, then epochs on all of train), dev
//! evaluation, early stopping, and divergence checks.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::config::{resolve_counts, Config};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::{evaluate_outputs, predict};
use crate::metrics::{default_threshold_grid, tune_threshold, MetricOptions};
use crate::model::{c, Decay, FirstLayerGrad, Float, Params, Standardizer};
use crate::pipeline::{count_values, decay_coefficient, dropout_key, Model, Workspace};
use crate::runtime::run_with_active_workers;
use crate::system::Hooks;
use ndarray::Array2;
use rayon::prelude::*;

/// AdaGrad, as TensorFlow's: `acc += g²; w −= lr·g/√acc`, `acc` starting at `init`.
#[derive(Debug, Clone, PartialEq)]
pub struct Adagrad<F: Float> {
    pub lr: F,
    pub acc: Params<F>,
}

impl<F: Float> Adagrad<F> {
    pub fn new(params: &Params<F>, lr: f64, init: f64) -> Self {
        let mut acc = params.zeros_like();
        acc.visit_mut(|_, a, _| a.fill(c(init)));
        Self { lr: c(lr), acc }
    }

    /// One update from a split-form gradient (see `Model::loss_and_sparse_grad`), with weight
    /// decay fused in (`grad.w1` and `grad.c1` are not read: the first layers' gradients are in
    /// `ws`). Returns the weight-decay loss before the step and the first tensor holding a
    /// non-finite value after.
    pub fn step_fused(
        &mut self,
        model: &mut Model<F>,
        grad: &mut Params<F>,
        ws: &Workspace<F>,
    ) -> (f64, Option<&'static str>) {
        let cfg = &model.config;
        let (wd, mult) = (model.weight_decay(), cfg.train.unary_weight_decay_mult);
        let lr = self.lr;
        let stdz = &model.standardizer;
        let Params {
            w1,
            b1,
            w2,
            b2,
            wp,
            we,
            c1,
            cb1,
            c2,
            cb2,
            eta,
        } = &mut model.params;
        let a = &mut self.acc;
        let first = [
            ("unary.w1", Decay::Unary, w1, &mut a.w1, &ws.grad_w1),
            ("card.w1", Decay::Other, c1, &mut a.c1, &ws.grad_c1),
        ];
        macro_rules! t {
            ($name:expr, $class:expr, $f:ident) => {
                (
                    $name,
                    $class,
                    $f.as_slice_mut().expect("contiguous"),
                    a.$f.as_slice_mut().expect("contiguous"),
                    grad.$f.as_slice().expect("contiguous"),
                )
            };
        }
        // In `Params::update_with`'s order.
        let others = [
            t!("unary.b1", Decay::None, b1),
            t!("unary.w2", Decay::Unary, w2),
            t!("unary.b2", Decay::None, b2),
            t!("energy.wp", Decay::Other, wp),
            t!("energy.we", Decay::Other, we),
            t!("card.b1", Decay::None, cb1),
            t!("card.w2", Decay::Other, c2),
            t!("card.b2", Decay::None, cb2),
            t!("inference.eta", Decay::None, eta),
        ];
        // The first layers (each split over threads) and the other tensors side by side; the
        // decay terms are then added in tensor order, as one pass would add them.
        let (first, others) = rayon::join(
            || {
                first.map(|(name, class, w, acc, aux)| {
                    let lambda = decay_coefficient(class, wd, mult);
                    let step = FusedStep {
                        lr,
                        lambda: c(lambda),
                        stdz,
                    };
                    let (sq, finite) = step.first_layer(w, acc, aux);
                    (name, lambda * sq, finite)
                })
            },
            || {
                let mut zeros: Vec<F> = Vec::new();
                others.map(|(name, class, w, acc, g)| {
                    if name == "inference.eta" {
                        // A fixed hyper-parameter, never trained.
                        return (name, None, true);
                    }
                    let lambda = decay_coefficient(class, wd, mult);
                    zeros.resize(zeros.len().max(w.len()), F::zero());
                    let (sq, finite) =
                        adagrad_dispatch(w, acc, g, F::zero(), &zeros[..w.len()], c(lambda), lr);
                    (
                        name,
                        Some(0.5 * lambda * sq.to_f64().unwrap_or(f64::NAN)),
                        finite,
                    )
                })
            },
        );
        let mut decay = 0.0;
        let mut bad = None;
        for (name, term, finite) in first
            .into_iter()
            .map(|(n, t, f)| (n, Some(t), f))
            .chain(others)
        {
            if let Some(t) = term {
                decay += t;
            }
            if !finite && bad.is_none() {
                bad = Some(name);
            }
        }
        (decay, bad)
    }

    /// One update of every tensor but `η` (a fixed hyper-parameter). Returns the name of the
    /// first tensor holding a non-finite value afterwards (a non-finite gradient always shows
    /// up here).
    pub fn step(&mut self, params: &mut Params<F>, grad: &Params<F>) -> Option<&'static str> {
        let lr = self.lr;
        let mut bad = None;
        params.update_with(&mut self.acc, grad, |name, w, acc, g, _| {
            if name == "inference.eta" {
                return;
            }
            let mut finite = true;
            for ((w, a), &g) in w.iter_mut().zip(acc.iter_mut()).zip(g) {
                *a += g * g;
                *w -= lr * g / a.sqrt();
                finite &= w.is_finite();
            }
            if !finite && bad.is_none() {
                bad = Some(name);
            }
        });
        bad
    }
}

/// Settings of one fused optimiser step.
struct FusedStep<'a, F> {
    lr: F,
    /// Weight-decay coefficient of the tensor.
    lambda: F,
    stdz: &'a Standardizer,
}

impl<F: Float> FusedStep<'_, F> {
    /// AdaGrad on a first layer `w` (`D × H`) whose gradient is in split form in `aux` (the
    /// touched rows, formed here row by row, and the rank-one shift term) with weight decay —
    /// one pass over `w`, rows in parallel. Returns `(½‖w‖² before the step, all finite after)`.
    fn first_layer(
        &self,
        w: &mut Array2<F>,
        acc: &mut Array2<F>,
        aux: &FirstLayerGrad<F>,
    ) -> (f64, bool) {
        let h = w.ncols();
        let (lr, lambda, colsum) = (self.lr, self.lambda, &aux.colsum[..]);
        let chunk = 64;
        let zeros = vec![F::zero(); h];
        let parts: Vec<(f64, bool)> = w
            .as_slice_mut()
            .expect("contiguous")
            .par_chunks_mut(chunk * h)
            .zip(
                acc.as_slice_mut()
                    .expect("contiguous")
                    .par_chunks_mut(chunk * h),
            )
            .enumerate()
            .map(|(ci, (w, acc))| {
                let mut sq = F::zero();
                let mut finite = true;
                let mut row = vec![F::zero(); h];
                for (ri, (w, acc)) in w
                    .chunks_exact_mut(h)
                    .zip(acc.chunks_exact_mut(h))
                    .enumerate()
                {
                    let d = ci * chunk + ri;
                    let ms: F = c((self.stdz.mean[d] * self.stdz.scale[d]) as f64);
                    let gr: &[F] = if aux.sparse_row(d, &mut row) {
                        &row
                    } else {
                        &zeros
                    };
                    let (rsq, rfinite) = adagrad_dispatch(w, acc, gr, ms, colsum, lambda, lr);
                    sq += rsq;
                    finite &= rfinite;
                }
                (0.5 * sq.to_f64().unwrap_or(f64::NAN), finite)
            })
            .collect();
        parts
            .iter()
            .fold((0.0, true), |(s, f), &(ps, pf)| (s + ps, f && pf))
    }
}

/// AdaGrad with weight decay on one contiguous slice: `g' = g − ms·colsum + λw`,
/// `acc += g'²`, `w −= lr·g'/√acc` (pass zeros for an absent `g` or shift). Written over
/// fixed-width lanes of zipped slices with no branch, so that it vectorises (a plain float sum
/// would pin the loop to scalar order). Returns `(Σw² before the step, all w finite after)`.
#[inline]
/// [`adagrad_lanes`] compiled for the widest vectors the CPU has (sqrt and division are exact
/// in every width and nothing is fused into FMA, so every variant computes the same numbers).
#[allow(unsafe_code)]
fn adagrad_dispatch<F: Float>(
    w: &mut [F],
    acc: &mut [F],
    g: &[F],
    ms: F,
    colsum: &[F],
    lambda: F,
    lr: F,
) -> (F, bool) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        fn avx512<F: Float>(
            w: &mut [F],
            acc: &mut [F],
            g: &[F],
            ms: F,
            colsum: &[F],
            lambda: F,
            lr: F,
        ) -> (F, bool) {
            adagrad_lanes(w, acc, g, ms, colsum, lambda, lr)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports the feature the function is compiled for.
            return unsafe { avx512(w, acc, g, ms, colsum, lambda, lr) };
        }
    }
    adagrad_lanes(w, acc, g, ms, colsum, lambda, lr)
}

#[inline(always)]
fn adagrad_lanes<F: Float>(
    w: &mut [F],
    acc: &mut [F],
    g: &[F],
    ms: F,
    colsum: &[F],
    lambda: F,
    lr: F,
) -> (F, bool) {
    const LANES: usize = 8;
    let n = w.len();
    assert!(acc.len() == n && g.len() == n && colsum.len() == n);
    let mut sq = [F::zero(); LANES];
    // x − x is 0 for finite x and NaN for ±inf or NaN: a branch-free finiteness check.
    let mut chk = [F::zero(); LANES];
    let full = n / LANES * LANES;
    let lane_step = |w: &mut F, a: &mut F, g: F, cs: F, sq: &mut F, chk: &mut F| {
        let wj = *w;
        let gj = g - ms * cs + lambda * wj;
        *sq += wj * wj;
        *a += gj * gj;
        let nw = wj - lr * gj / a.sqrt();
        #[allow(clippy::eq_op)] // deliberate: NaN for a non-finite value, 0 otherwise
        {
            *chk += nw - nw;
        }
        *w = nw;
    };
    for (((wc, ac), gc), cc) in w[..full]
        .chunks_exact_mut(LANES)
        .zip(acc[..full].chunks_exact_mut(LANES))
        .zip(g[..full].chunks_exact(LANES))
        .zip(colsum[..full].chunks_exact(LANES))
    {
        for k in 0..LANES {
            lane_step(
                &mut wc[k],
                &mut ac[k],
                gc[k],
                cc[k],
                &mut sq[k],
                &mut chk[k],
            );
        }
    }
    for j in full..n {
        lane_step(
            &mut w[j],
            &mut acc[j],
            g[j],
            colsum[j],
            &mut sq[0],
            &mut chk[0],
        );
    }
    let total = sq.iter().fold(F::zero(), |a, &b| a + b);
    let check = chk.iter().fold(F::zero(), |a, &b| a + b);
    (total, check == F::zero())
}

/// What happened during training, for progress display and `metrics.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochRecord {
    /// 1 = epochs on the train part of the split, 2 = epochs on all of train.
    pub phase: u8,
    /// Epoch number within its phase, from 1.
    pub epoch: usize,
    /// Mean total loss per batch.
    pub loss: f64,
    /// Dev example-F1 (%) at the configured threshold (phase 1 with a dev split only).
    pub dev_example_f1: Option<f64>,
    /// Mean predicted count on dev.
    pub dev_mean_z: Option<f64>,
    /// Wall-clock seconds of the epoch's training (without dev evaluation).
    pub seconds: f64,
}

/// Progress events.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    Start {
        phase: u8,
        epochs: usize,
        batches_per_epoch: usize,
    },
    Batch {
        phase: u8,
        epoch: usize,
        batch: usize,
        loss: f64,
    },
    Epoch(&'a EpochRecord),
}

/// A trained model with its history.
#[derive(Debug, Clone)]
pub struct Trained {
    pub model: Model<f32>,
    pub history: Vec<EpochRecord>,
}

/// Where a run stands between two epochs: with the model and optimiser, everything needed to
/// continue it bit-identically (batch order, generator state, early-stopping state).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Phase of the next epoch (1: train part of the split, 2: all of train, 3: finished).
    pub phase: u8,
    /// Epochs finished in the current phase.
    pub epochs_done: usize,
    /// The batch order, shuffled in place at the start of every epoch.
    pub order: Vec<usize>,
    pub rng: Xoshiro256PlusPlus,
    pub best_dev_f1: Option<f64>,
    pub since_best: usize,
    pub stopped_early: bool,
    pub history: Vec<EpochRecord>,
    /// Updates folded into the weight average so far (`train.average_epochs`).
    #[serde(default)]
    pub average_steps: u64,
}

/// A run in progress.
#[derive(Debug, Clone)]
pub struct TrainState {
    pub model: Model<f32>,
    pub optimizer: Adagrad<f32>,
    /// Parameters of the best dev epoch so far (early stopping only).
    pub best_params: Option<Params<f32>>,
    /// Moving average of the weights (`train.average_epochs`), `None` when not averaging.
    pub average: Option<Params<f32>>,
    pub progress: Progress,
}

impl TrainState {
    /// A fresh run of `cfg` on `train`.
    pub fn new(train: &Dataset, cfg: &Config) -> Result<Self> {
        let model = init_model(train, cfg)?;
        let optimizer = Adagrad::new(&model.params, cfg.train.lr, cfg.train.adagrad_init);
        // Batch order uses its own stream so that changing the split never changes the init.
        let rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x9E37_79B9_7F4A_7C15);
        let progress = Progress {
            phase: 1,
            epochs_done: 0,
            order: Vec::new(),
            rng,
            best_dev_f1: None,
            since_best: 0,
            stopped_early: false,
            history: Vec::new(),
            average_steps: 0,
        };
        let average = cfg.train.average_epochs.map(|_| model.params.clone());
        Ok(Self {
            model,
            optimizer,
            best_params: None,
            average,
            progress,
        })
    }

    /// Total epochs run so far, over both phases.
    pub fn epochs_run(&self) -> usize {
        self.progress.history.len()
    }
}

/// A freshly initialised model for `train` under `cfg`.
pub fn init_model(train: &Dataset, cfg: &Config) -> Result<Model<f32>> {
    cfg.validate()?;
    let counts: Vec<usize> = (0..train.n_rows()).map(|r| train.labels.count(r)).collect();
    let (kmin, kmax) = resolve_counts(&cfg.model.counts, &counts, train.n_labels());
    if kmin > kmax {
        return Err(Error::Config(format!(
            "model.counts.min = {kmin} is above the number of labels ({}): no count is possible",
            train.n_labels()
        )));
    }
    let m = &cfg.model;
    // Memory guard: refuse sizes whose training state cannot fit, before allocating any of it.
    // Estimate: f32 parameters x4 (weights, gradient, Adagrad, best epoch) plus the unrolled
    // inference and projection tapes of one batch, measured at about 84 bytes per row, label
    // and step with the paper preset (peak RSS 13.1 GB for L = 200000, batch 50, 15 steps;
    // docs/results/reliability.md). Budget: env
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
        let tapes = cfg.train.batch_size as f64 * (cfg.inference.steps as f64 + 1.0) * l * 84.0;
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
                        return Err(Error::Config(format!(
                            "CARDINAL_MEMORY_BUDGET = `{v}`: expected bytes with an optional \
                             K/M/G/T suffix (e.g. 32G), or 0 for no limit"
                        )))
                    }
                }
            }
        };
        if let Some(budget) = budget.filter(|&b| need > b) {
            let gib = |x: f64| x / (1u64 << 30) as f64;
            return Err(Error::Config(format!(
                "model too large for the memory budget: {} features, {} labels, hidden {}, \
                 energy_hidden {}, card_hidden {}, {} counts give {:.0} parameters and, with \
                 batch_size {} and {} inference steps, an estimated {:.1} GiB of training \
                 memory ({:.1} GiB parameter state + {:.1} GiB per-batch tapes), above the \
                 budget of {:.1} GiB (set CARDINAL_MEMORY_BUDGET, e.g. 64G, or 0 for no limit; \
                 or reduce model.hidden / train.batch_size)",
                train.n_features(),
                train.n_labels(),
                m.hidden,
                m.energy_hidden,
                m.card_hidden,
                kmax - kmin + 1,
                n_params,
                cfg.train.batch_size,
                cfg.inference.steps,
                gib(need),
                gib(16.0 * n_params),
                gib(tapes),
                gib(budget)
            )));
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

/// Trains a model on `train` (a dev part is held out as configured).
pub fn train(train: &Dataset, cfg: &Config, on_event: &mut dyn FnMut(Event)) -> Result<Trained> {
    let mut hooks = Hooks::silent();
    hooks.on_event = on_event;
    run(train, TrainState::new(train, cfg)?, &mut hooks)
}

/// Runs (or continues) `state` to the end. `hooks.after_epoch` is called with the state after
/// every epoch (e.g. to write a checkpoint); an error from it stops training.
pub fn run(train: &Dataset, mut state: TrainState, hooks: &mut Hooks) -> Result<Trained> {
    let on_event = &mut *hooks.on_event;
    let after_epoch = &mut *hooks.after_epoch;
    let wait = hooks.wait;
    let cfg = state.model.config.clone();
    let tc = &cfg.train;
    let (train_idx, dev_idx) = tc.dev_split(train.n_rows());
    let all_idx: Vec<usize> = (0..train.n_rows()).collect();
    let dev = (!dev_idx.is_empty()).then(|| train.select_rows(&dev_idx));
    let mut ws = Workspace::default();
    let mut grad = state.model.params.zeros_like();
    let mut announced = 0u8;
    // A resumed batch order must be a permutation of rows that exist (a corrupted or foreign
    // checkpoint must not index out of bounds).
    {
        let order = &state.progress.order;
        let expected = if state.progress.phase == 1 {
            train_idx.len()
        } else {
            all_idx.len()
        };
        if !order.is_empty()
            && (order.len() != expected || order.iter().any(|&r| r >= train.n_rows()))
        {
            return Err(Error::Mismatch(format!(
                "the checkpoint's batch order ({} rows) does not fit this training data ({} rows in phase {})",
                order.len(),
                expected,
                state.progress.phase
            )));
        }
    }

    while state.progress.phase <= 2 {
        let phase = state.progress.phase;
        let (epochs, rows) = if phase == 1 {
            (tc.epochs, &train_idx)
        } else {
            (tc.full_epochs, &all_idx)
        };
        let n_batches = rows.len().div_ceil(tc.batch_size);
        let ran_epoch = state.progress.epochs_done < epochs && !state.progress.stopped_early;
        if ran_epoch {
            if announced != phase {
                on_event(Event::Start {
                    phase,
                    epochs,
                    batches_per_epoch: n_batches,
                });
                announced = phase;
            }
            if state.progress.order.is_empty() {
                state.progress.order = rows.clone();
            }
            let epoch = state.progress.epochs_done + 1;
            let record = run_with_active_workers(wait, || {
                run_epoch(
                    train,
                    dev.as_ref(),
                    &mut state,
                    phase,
                    epoch,
                    &mut ws,
                    &mut grad,
                    on_event,
                )
            })?;
            on_event(Event::Epoch(&record));
            let p = &mut state.progress;
            p.epochs_done = epoch;
            if phase == 1 && tc.patience > 0 {
                let f1 = record.dev_example_f1.unwrap_or(0.0);
                if p.best_dev_f1.is_none_or(|b| f1 > b) {
                    p.best_dev_f1 = Some(f1);
                    p.since_best = 0;
                    state.best_params = Some(
                        state
                            .average
                            .as_ref()
                            .unwrap_or(&state.model.params)
                            .clone(),
                    );
                } else {
                    p.since_best += 1;
                    p.stopped_early = p.since_best >= tc.patience;
                }
            }
            state.progress.history.push(record);
        }
        if state.progress.epochs_done >= epochs || state.progress.stopped_early {
            // End of the phase: keep the best dev epoch's weights, move on.
            if let Some(best) = state.best_params.take() {
                if let Some(avg) = state.average.as_mut() {
                    avg.clone_from(&best);
                }
                state.model.params = best;
            }
            if phase == 1 && tc.tune_threshold {
                if let Some(dev) = dev.as_ref() {
                    let (thr, f1) = with_average(&mut state, |m| dev_threshold(m, dev))?;
                    tracing::info!(
                        threshold = thr,
                        dev_example_f1 = f1,
                        "threshold chosen on dev"
                    );
                    state.model.config.threshold = thr;
                }
            }
            let p = &mut state.progress;
            p.phase += 1;
            p.epochs_done = 0;
            p.order.clear();
            p.stopped_early = false;
        }
        if ran_epoch {
            after_epoch(&state)?;
        }
    }
    if let Some(avg) = state.average.take() {
        state.model.params = avg;
    }
    Ok(Trained {
        model: state.model,
        history: state.progress.history,
    })
}

/// Runs `f` on the model with the averaged weights in place (the model itself without
/// averaging).
fn with_average<T>(state: &mut TrainState, f: impl FnOnce(&Model<f32>) -> T) -> T {
    match state.average.as_mut() {
        Some(avg) => {
            std::mem::swap(&mut state.model.params, avg);
            let out = f(&state.model);
            std::mem::swap(&mut state.model.params, avg);
            out
        }
        None => f(&state.model),
    }
}

/// Folds the weights after update number `step` (from 0) into the moving average whose time
/// constant is `tau` updates.
fn fold_into_average(avg: &mut Params<f32>, params: &Params<f32>, step: u64, tau: f64) {
    let decay = (1.0 - 1.0 / tau.max(1.0)).min((1.0 + step as f64) / (10.0 + step as f64));
    let (d, e) = (decay as f32, (1.0 - decay) as f32);
    // A pass over every weight after every batch: split over threads, each chunk in the widest
    // vectors (elementwise, so the numbers do not depend on either).
    const CHUNK: usize = 1 << 14;
    avg.zip_mut(params, |_, a, w, _| {
        a.par_chunks_mut(CHUNK)
            .zip(w.par_chunks(CHUNK))
            .for_each(|(a, w)| average_dispatch(a, w, d, e));
    });
}

/// `a ← d·a + e·w` elementwise, compiled for the widest vectors the CPU has (no FMA
/// contraction, so every variant computes the same numbers).
#[allow(unsafe_code)]
fn average_dispatch(a: &mut [f32], w: &[f32], d: f32, e: f32) {
    #[inline(always)]
    fn body(a: &mut [f32], w: &[f32], d: f32, e: f32) {
        for (a, &w) in a.iter_mut().zip(w) {
            *a = d * *a + e * w;
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        fn avx512(a: &mut [f32], w: &[f32], d: f32, e: f32) {
            body(a, w, d, e)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports the feature the function is compiled for.
            return unsafe { avx512(a, w, d, e) };
        }
    }
    body(a, w, d, e)
}

/// The threshold of the default grid with the best example-F1 on `dev`, and that F1 (%).
fn dev_threshold(model: &Model<f32>, dev: &Dataset) -> Result<(f64, f64)> {
    let out = predict(model, &dev.features, 256)?;
    let grid = default_threshold_grid();
    let (thr, f1) = tune_threshold(&out.y, &dev.labels, &grid, &MetricOptions::default())?;
    Ok((crate::eval::grid_threshold(thr), f1 * 100.0))
}

fn run_epoch(
    train: &Dataset,
    dev: Option<&Dataset>,
    state: &mut TrainState,
    phase: u8,
    epoch: usize,
    ws: &mut Workspace<f32>,
    grad: &mut Params<f32>,
    on_event: &mut dyn FnMut(Event),
) -> Result<EpochRecord> {
    let tc = state.model.config.train.clone();
    let TrainState {
        model,
        optimizer,
        progress,
        average,
        ..
    } = state;
    progress.order.shuffle(&mut progress.rng);
    let start = std::time::Instant::now();
    let mut loss_sum = 0.0;
    let n_batches = progress.order.len().div_ceil(tc.batch_size);
    for (batch, rows) in progress.order.chunks(tc.batch_size).enumerate() {
        // Non-finite values reaching a projection (e.g. a NaN count) are divergence too.
        ws.dropout_key = dropout_key(model.config.seed, phase, epoch, batch);
        let mut loss = match model.loss_and_sparse_grad(
            &train.features,
            &train.labels,
            rows,
            ws,
            grad,
        ) {
            Ok(loss) => loss,
            Err(Error::Projection(e)) => {
                if tc.skip_nonfinite_batches {
                    tracing::warn!(phase, epoch, batch, %e, "skipping a batch whose inference failed");
                    continue;
                }
                return Err(Error::Diverged {
                    phase,
                    epoch,
                    batch,
                    quantity: format!("the inference input ({e})"),
                });
            }
            Err(e) => return Err(e),
        };
        if !loss.total().is_finite() {
            if tc.skip_nonfinite_batches {
                tracing::warn!(
                    phase,
                    epoch,
                    batch,
                    "skipping a batch with a non-finite loss"
                );
                continue;
            }
            return Err(Error::Diverged {
                phase,
                epoch,
                batch,
                quantity: "the loss".into(),
            });
        }
        let before = tc
            .skip_nonfinite_batches
            .then(|| (model.params.clone(), optimizer.clone()));
        let (decay, bad) = optimizer.step_fused(model, grad, ws);
        loss.decay_loss = decay;
        if let Some(name) = bad {
            match before {
                Some((params, opt)) => {
                    tracing::warn!(
                        phase,
                        epoch,
                        batch,
                        name,
                        "skipping a batch with non-finite gradients"
                    );
                    (model.params, *optimizer) = (params, opt);
                    continue;
                }
                None => {
                    return Err(Error::Diverged {
                        phase,
                        epoch,
                        batch,
                        quantity: format!("parameter {name} after the update"),
                    })
                }
            }
        }
        if let (Some(avg), Some(epochs)) = (average.as_mut(), tc.average_epochs) {
            fold_into_average(
                avg,
                &model.params,
                progress.average_steps,
                epochs * n_batches as f64,
            );
            progress.average_steps += 1;
        }
        loss_sum += loss.total();
        on_event(Event::Batch {
            phase,
            epoch,
            batch,
            loss: loss.total(),
        });
    }
    let seconds = start.elapsed().as_secs_f64();
    let (mut dev_f1, mut dev_z) = (None, None);
    if let (1, Some(dev)) = (phase, dev) {
        let report = with_average(state, |model| -> Result<_> {
            let out = predict(model, &dev.features, 256)?;
            Ok(evaluate_outputs(model, &out, &dev.labels))
        })?;
        dev_f1 = Some(report.at_threshold.example_f1 * 100.0);
        dev_z = Some(report.cardinality.mean_z);
    }
    Ok(EpochRecord {
        phase,
        epoch,
        loss: loss_sum / n_batches.max(1) as f64,
        dev_example_f1: dev_f1,
        dev_mean_z: dev_z,
        seconds,
    })
}

/// Runs one epoch over every row of `train` (no dev evaluation), for benchmarks. Returns the
/// mean loss per batch.
pub fn epoch_over_all(
    train: &Dataset,
    state: &mut TrainState,
    ws: &mut Workspace<f32>,
    grad: &mut Params<f32>,
    wait: crate::runtime::WaitPolicy,
) -> Result<f64> {
    if state.progress.order.len() != train.n_rows() {
        state.progress.order = (0..train.n_rows()).collect();
    }
    let record = run_with_active_workers(wait, || {
        run_epoch(train, None, state, 2, 1, ws, grad, &mut |_| {})
    })?;
    Ok(record.loss)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, LabelSets};

    /// `cfg` with networks and an unroll small enough for [`tiny`].
    pub(super) fn small(mut cfg: Config) -> Config {
        cfg.model.hidden = 6;
        cfg.model.card_hidden = 5;
        cfg.inference.steps = 3;
        cfg
    }

    pub(super) fn tiny() -> Dataset {
        let (n, d, l) = (20, 30, 9);
        let mut s = 7u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        let mut x = CsrMatrix::new(d);
        let mut y = LabelSets::new(l);
        for _ in 0..n {
            let mut idx: Vec<u32> = (0..5).map(|_| (next() % d) as u32).collect();
            idx.sort_unstable();
            idx.dedup();
            x.push_row(&idx, &vec![1.0; idx.len()]);
            let mut lab: Vec<u32> = (0..2).map(|_| (next() % l) as u32).collect();
            lab.sort_unstable();
            lab.dedup();
            y.push_row(&lab);
        }
        Dataset {
            name: "tiny".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        }
    }

    /// The default preset at [`small`] size, trained `epochs` epochs (batches of 5, no early
    /// stopping) on `data`.
    fn small_default_trained(data: &Dataset, epochs: usize) -> crate::pipeline::Model<f32> {
        let mut cfg = small(Config::predict());
        cfg.train.epochs = epochs;
        cfg.train.batch_size = 5;
        cfg.train.patience = 0;
        train(data, &cfg, &mut |_| {}).unwrap().model
    }

    /// The default preset's promise (issue 8): after training, every row's last iterate lies
    /// in `C(z)`, `Σ y_T = z` and `0 ≤ y_T ≤ 1`, with `z` the predicted count. Fails if the
    /// default loses its final feasible projection.
    #[test]
    fn the_default_satisfies_the_constraint() {
        let data = tiny();
        let model = small_default_trained(&data, 3);
        let out = crate::eval::predict(&model, &data.features, 7).unwrap();
        let l = data.labels.n_labels;
        for (y, &z) in out.y.chunks_exact(l).zip(&out.z) {
            let sum: f32 = y.iter().sum();
            assert!((sum - z).abs() <= 1e-3, "sum {sum} vs z {z}");
            assert!(y.iter().all(|&v| (0.0..=1.0).contains(&v)), "{y:?}");
        }
    }

    /// A count override replaces `h(x)` on both inference kernels (lockstep blocks, and the
    /// per-row reference): the outputs sum to the given counts, which differ from the model's
    /// own, and the gold-count report is filled in.
    #[test]
    fn count_override_reaches_every_inference_path() {
        let data = tiny();
        let model = small_default_trained(&data, 2);
        let (n, l) = (data.labels.n_rows, data.labels.n_labels);
        let counts: Vec<f32> = (0..n).map(|r| 1.0 + (r % 3) as f32).collect();
        let own = crate::eval::predict(&model, &data.features, 7).unwrap();
        for kernel in [None, Some(crate::inference::Kernel::Row)] {
            let mut ws = Workspace::default();
            ws.kernel = kernel;
            ws.count_override = Some(counts.clone());
            let mut out = crate::pipeline::Outputs::default();
            let rows: Vec<usize> = (0..n).collect();
            model
                .forward_batched(&data.features, &rows, 7, &mut ws, &mut out)
                .unwrap();
            assert_eq!(out.z, counts, "{kernel:?}");
            assert_ne!(own.z, counts);
            for (y, &z) in out.y.chunks_exact(l).zip(&counts) {
                let sum: f32 = y.iter().sum();
                assert!((sum - z).abs() <= 1e-3, "{kernel:?}: sum {sum} vs z {z}");
            }
        }
        let mut report = crate::eval::evaluate_outputs(
            &model,
            &crate::eval::predict(&model, &data.features, 7).unwrap(),
            &data.labels,
        );
        crate::eval::add_gold_count(
            &crate::system::Pnc,
            &model,
            &mut report,
            &data.features,
            &data.labels,
            7,
        )
        .unwrap();
        assert!(report.at_gold_count.is_some());
        // An override of the wrong length is an error, not a panic.
        let mut ws = Workspace::default();
        ws.count_override = Some(vec![1.0; n - 1]);
        let rows: Vec<usize> = (0..n).collect();
        let mut out = crate::pipeline::Outputs::default();
        assert!(model
            .forward_batched(&data.features, &rows, 7, &mut ws, &mut out)
            .is_err());
        // So is it when `forward` is called directly (it would index out of range).
        assert!(model
            .forward(&data.features, &rows[..7], &mut ws, &mut out)
            .is_err());
    }

    /// Every inference path (lockstep units, lockstep blocks inside `forward`, and the
    /// per-row reference kernel) returns ranking scores: the last ascent point
    /// before its projection, which differs from `y_T` and orders the labels as it does; the
    /// two lockstep paths agree.
    #[test]
    fn ranking_scores_come_from_every_inference_path() {
        let data = tiny();
        let model = small_default_trained(&data, 2);
        let (n, l) = (data.labels.n_rows, data.labels.n_labels);
        let rows: Vec<usize> = (0..n).collect();
        let mut direct = crate::pipeline::Outputs::default();
        let mut ws = Workspace::default();
        for chunk in rows.chunks(7) {
            model
                .forward(&data.features, chunk, &mut ws, &mut direct)
                .unwrap();
        }
        let units = crate::eval::predict(&model, &data.features, 7).unwrap();
        let mut reference = crate::pipeline::Outputs::default();
        let mut ws = Workspace::default();
        ws.kernel = Some(crate::inference::Kernel::Row);
        model
            .forward_batched(&data.features, &rows, 7, &mut ws, &mut reference)
            .unwrap();
        for (what, out) in [
            ("direct", &direct),
            ("units", &units),
            ("row kernel", &reference),
        ] {
            assert_eq!(out.ranking.len(), n * l, "{what}");
            assert_ne!(
                out.ranking, out.y,
                "{what}: the final projection changes y_T"
            );
            for (rank, y) in out.ranking.chunks_exact(l).zip(out.y.chunks_exact(l)) {
                for i in 0..l {
                    for j in 0..l {
                        // The soft Dykstra steps preserve order only approximately.
                        assert!(
                            rank[i] <= rank[j] || y[i] >= y[j] - 1e-5,
                            "{what}: ranking {} > {} but y_T {} < {}",
                            rank[i],
                            rank[j],
                            y[i],
                            y[j]
                        );
                    }
                }
            }
        }
        for (a, b) in direct.ranking.iter().zip(&units.ranking) {
            assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
        }
    }

    /// The fused optimiser step (split gradient, decay folded in) equals the plain step on the
    /// complete gradient.
    #[test]
    fn fused_step_equals_plain_step() {
        let data = tiny();
        let cfg = small(Config::paper());
        let mut a = init_model(&data, &cfg).unwrap();
        let mut b = a.clone();
        let mut opt_a = Adagrad::new(&a.params, 0.1, 0.1);
        let mut opt_b = opt_a.clone();
        let (mut ws_a, mut ws_b) = (Workspace::default(), Workspace::default());
        let (mut g_a, mut g_b) = (a.params.zeros_like(), b.params.zeros_like());
        for rows in [[0usize, 3, 5, 7], [1, 2, 8, 19], [4, 6, 10, 11]] {
            let la = a
                .loss_and_grad(&data.features, &data.labels, &rows, &mut ws_a, &mut g_a)
                .unwrap();
            assert!(opt_a.step(&mut a.params, &g_a).is_none());
            let mut lb = b
                .loss_and_sparse_grad(&data.features, &data.labels, &rows, &mut ws_b, &mut g_b)
                .unwrap();
            let (decay, bad) = opt_b.step_fused(&mut b, &mut g_b, &ws_b);
            assert!(bad.is_none());
            lb.decay_loss = decay;
            assert!((la.total() - lb.total()).abs() <= 1e-5 * la.total().abs().max(1.0));
            assert!(
                g_b.w1.iter().chain(g_b.c1.iter()).all(|&v| v == 0.0),
                "sparse buffers are left zeroed"
            );
        }
        let mut worst = 0f32;
        a.params.zip_mut(&b.params, |_, x, y, _| {
            for (p, q) in x.iter().zip(y) {
                worst = worst.max((p - q).abs());
            }
        });
        assert!(worst < 1e-6, "fused and plain steps differ by {worst}");
    }
}

#[cfg(test)]
mod average_tests {
    use super::*;

    fn cfg(average_epochs: Option<f64>) -> Config {
        let mut cfg = super::tests::small(Config::paper());
        cfg.train.epochs = 3;
        cfg.train.full_epochs = 1;
        cfg.train.batch_size = 4;
        cfg.train.dev_fraction = 0.25;
        cfg.train.average_epochs = average_epochs;
        cfg
    }

    /// An average without memory (decay 0) is the last iterate: same weights, same dev
    /// history, bit for bit, as a run without averaging.
    #[test]
    fn averaging_without_memory_is_the_last_iterate() {
        let data = tests::tiny();
        let plain = train(&data, &cfg(None), &mut |_| {}).unwrap();
        let memoryless = train(&data, &cfg(Some(1e-12)), &mut |_| {}).unwrap();
        assert_eq!(plain.model.params, memoryless.model.params);
        let dev = |t: &Trained| -> Vec<Option<f64>> {
            t.history.iter().map(|r| r.dev_example_f1).collect()
        };
        assert_eq!(dev(&plain), dev(&memoryless));
        // With memory, the saved model is no longer the last iterate.
        let averaged = train(&data, &cfg(Some(1.0)), &mut |_| {}).unwrap();
        assert_ne!(plain.model.params, averaged.model.params);
        assert!(averaged.model.params.first_nonfinite().is_none());
    }

    /// The fold is the exponential mean with warm-up: each iterate's weight is
    /// `(1 − d_k) ∏_{j>k} d_j`, computed here directly, and the weights sum to 1 with the
    /// initial average's.
    #[test]
    fn fold_is_the_warmed_up_exponential_mean() {
        let data = tests::tiny();
        let model = init_model(&data, &cfg(None)).unwrap();
        let mut avg = model.params.clone();
        avg.visit_mut(|_, a, _| a.fill(0.5));
        let (tau, n) = (7.0, 30u64);
        let iterate = |k: u64| (k as f64 * 0.37).sin();
        let mut p = model.params.clone();
        for k in 0..n {
            p.visit_mut(|_, a, _| a.fill(iterate(k) as f32));
            fold_into_average(&mut avg, &p, k, tau);
        }
        let d = |k: u64| (1.0 - 1.0 / tau).min((1.0 + k as f64) / (10.0 + k as f64));
        let tail = |k: u64| ((k + 1)..n).map(d).product::<f64>();
        let weights: Vec<f64> = (0..n).map(|k| (1.0 - d(k)) * tail(k)).collect();
        let w0 = tail(0) * d(0);
        assert!((weights.iter().sum::<f64>() + w0 - 1.0).abs() < 1e-12);
        let want = w0 * 0.5
            + (0..n)
                .map(|k| weights[k as usize] * iterate(k))
                .sum::<f64>();
        avg.visit(|name, a, _| {
            for &v in a {
                assert!((v as f64 - want).abs() < 1e-5, "{name}: {v} vs {want}");
            }
        });
    }
}

#[cfg(test)]
mod divergence_tests {
    use super::*;
    use crate::data::{CsrMatrix, LabelSets};

    fn data() -> Dataset {
        let mut x = CsrMatrix::new(4);
        let mut y = LabelSets::new(3);
        for r in 0..12u32 {
            x.push_row(&[r % 4], &[1.0]);
            y.push_row(&[r % 3]);
        }
        Dataset {
            name: "d".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        }
    }

    fn exploding() -> Config {
        let mut cfg = Config::paper();
        cfg.model.hidden = 4;
        cfg.model.card_hidden = 3;
        cfg.inference.steps = 2;
        cfg.train.epochs = 2;
        cfg.train.full_epochs = 0;
        cfg.train.batch_size = 4;
        cfg.train.dev_fraction = 0.0;
        // Large enough that the first update overflows f32.
        cfg.train.lr = 1e38;
        cfg
    }

    #[test]
    fn divergence_stops_training_naming_batch_and_quantity() {
        let err = train(&data(), &exploding(), &mut |_| {})
            .unwrap_err()
            .to_string();
        // The update of batch 0 blows the weights up; the next batch's inference meets a NaN
        // count: caught within one batch, saying where and what.
        assert!(
            err.contains("phase 1, epoch 1, batch 1") && err.contains("not finite"),
            "{err}"
        );
        assert!(
            err.contains("inference input") && err.contains("NaN"),
            "{err}"
        );
    }

    #[test]
    fn non_finite_batches_can_be_skipped_without_corrupting_the_model() {
        let mut cfg = exploding();
        cfg.train.skip_nonfinite_batches = true;
        let trained = train(&data(), &cfg, &mut |_| {}).unwrap();
        assert!(trained.model.params.first_nonfinite().is_none());
        assert_eq!(trained.history.len(), 2);
    }
}

#[cfg(test)]
mod threshold_tests {
    use super::*;
    use crate::data::{CsrMatrix, LabelSets};
    use crate::metrics::{binarize, evaluate, Binarize};

    #[test]
    fn tuned_threshold_is_the_best_of_the_grid_on_dev() {
        // Noisy labels so that the F1 differs across thresholds.
        let mut x = CsrMatrix::new(6);
        let mut y = LabelSets::new(4);
        for r in 0..120u32 {
            // Two distinct features per row, in increasing order (as `push_row` requires).
            let (a, b) = (r % 6, (r % 6 + 1 + r / 6 % 5) % 6);
            let (lo, hi) = (a.min(b), a.max(b));
            let vals = if a < b { [1.0, 0.5] } else { [0.5, 1.0] };
            x.push_row(&[lo, hi], &vals);
            let mut labels = vec![r % 4];
            if r % 3 == 0 {
                labels.push((r / 3 + 1) % 4);
            }
            labels.sort_unstable();
            labels.dedup();
            y.push_row(&labels);
        }
        let data = Dataset {
            name: "t".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        };
        let mut cfg = Config::paper();
        cfg.model.hidden = 5;
        cfg.model.card_hidden = 3;
        cfg.inference.steps = 3;
        cfg.train.epochs = 3;
        cfg.train.full_epochs = 0;
        cfg.train.batch_size = 10;
        cfg.train.dev_fraction = 0.25;
        cfg.train.tune_threshold = true;
        let model = train(&data, &cfg, &mut |_| {}).unwrap().model;
        let thr = model.config.threshold;
        let grid = default_threshold_grid();
        // The threshold may be the decimal the f32 grid point stands for (0.65, not
        // 0.6499999762): within 1e-6 of it, still far closer than the 0.05 spacing.
        assert!(grid.iter().any(|&g| (g as f64 - thr).abs() < 1e-6), "{thr}");
        // Recompute every grid point's dev F1 independently: none beats the chosen one.
        let (_, dev_idx) = cfg.train.dev_split(data.n_rows());
        let dev = data.select_rows(&dev_idx);
        let out = predict(&model, &dev.features, 7).unwrap();
        let opts = MetricOptions::default();
        let f1_at = |t: f32| {
            let pred = binarize(&out.y, 4, &Binarize::Threshold(t), None).unwrap();
            evaluate(&pred, &dev.labels, &opts).example_f1
        };
        let chosen = f1_at(thr as f32);
        for &g in &grid {
            assert!(f1_at(g) <= chosen + 1e-12, "{g} beats the chosen {thr}");
        }
    }
}

#[cfg(test)]
mod decay_tests {
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
