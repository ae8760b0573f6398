//! Structured-hinge training: SPEN (Belanger & McCallum 2016) and the §4 top-z alternative.
//!
//! Both minimise the margin-rescaled hinge `max(0, m·Δ(ŷ, y*) + s(x, ŷ) − s(x, y*))` with
//! `ŷ = argmax_y s(x, y) + m·Δ(y, y*)` (loss-augmented inference). By Danskin's theorem its
//! gradient is `∇_θ s(x, ŷ) − ∇_θ s(x, y*)` at the maximiser, so no inference is differentiated.
//!
//! * SPEN: `s = yᵀu(x) + w2ᵀ act(Wpᵀ y)` over `y ∈ [0,1]^L`; loss-augmented inference is
//!   projected (clipped) gradient ascent from `σ(u)`, approximate as in SPEN.
//! * Top-z: `s = yᵀu(x) + c_{|y|}(x)` over binary `y` with `|y|` in the count range; exact:
//!   for every count `k` the best labelling is the top `k` unaries, then the best `k`.

use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::nets::c;
use super::nets::{Energy, Mlp, MlpCache, MlpGrad};
use super::settings::{ACTIVATIONS, PRETRAINING, THRESHOLD_SELECTION, TRAINING_LOOP};
use super::BaselineField;
use super::BatchObjective;
use super::{BaselineConfig, TaskLoss};
use cardinal::config::InferenceField;
use cardinal::data::{CsrMatrix, Dataset};
use cardinal::engine::{Model, Outputs};
use cardinal::parts::{sigmoid, soft_f1};
use cardinal::parts::{Float, Params};
use cardinal::system::{Fields, Reads, SettingGroups};
use cardinal::Result;
use ndarray::Array2;

/// What SPEN reads: of its inference the ascent's steps, step size and momentum (also
/// loss-augmented; its iterates are clipped to the box or logits, never projected), neither
/// the `loss` section (its objective is the hinge) nor the search.
pub const SPEN_READS: Reads = Reads {
    settings: &SettingGroups(&[
        TRAINING_LOOP,
        THRESHOLD_SELECTION,
        PRETRAINING,
        ACTIVATIONS,
        // Loss-augmented inference's, and its test-time inference's, in the box
        // (`unrolled::Flavor::Spen`).
        &[
            BaselineField::TaskLoss,
            BaselineField::MarginScale,
            BaselineField::LogitIterates,
            BaselineField::EntropyWeight,
            BaselineField::InitZeros,
        ],
    ]),
    inference: Fields::Only(&[
        InferenceField::Steps,
        InferenceField::Eta,
        InferenceField::Momentum,
    ]),
    loss: Fields::NONE,
    search: Fields::NONE,
};

/// What top-z reads: exact inference and its own hinge (a batch mean of the Hamming-margin
/// hinge), so neither the `inference` nor the `loss` section, nor the search. Its outputs are
/// 0 or 1, which every threshold of the grid splits alike: choosing the dev epoch at the
/// grid's best threshold is choosing it at its own (`select_with_threshold_grid` unread).
pub const TOPZ_READS: Reads = Reads {
    settings: &SettingGroups(&[
        TRAINING_LOOP,
        PRETRAINING,
        &[BaselineField::HiddenActivation, BaselineField::MarginScale],
    ]),
    inference: Fields::NONE,
    loss: Fields::NONE,
    search: Fields::NONE,
};

/// `s(x, y) = yᵀu + E(y)` for one row.
pub fn spen_score<F: Float>(energy: &Energy<F>, u: &[F], y: &[F]) -> F {
    let mut a = vec![F::zero(); energy.hidden()];
    let lin: F = u.iter().zip(y).map(|(&a, &b)| a * b).sum();
    lin + energy.value(y, &mut a)
}

/// Loss-augmented inference of SPEN for one row: ascent on `s(y) + m·Δ(y, y*)` from `σ(u)`
/// with the configured steps, step size and momentum, clipped to the box or, with
/// `baseline.logit_iterates`, in logit space with the entropy term `λ H(y)`.
pub fn loss_augmented<F: Float>(
    model: &Model<f32>,
    energy: &Energy<F>,
    u: &[F],
    gold: &[u32],
) -> Vec<F> {
    let cfg = &model.config;
    let bc = BaselineConfig::read(cfg);
    let l = u.len();
    let m: F = c(bc.margin_scale);
    let (eta, mu): (F, F) = (c(cfg.inference.eta), c(cfg.inference.momentum));
    let logit = bc.logit_iterates;
    let lambda: F = c(bc.entropy_weight);
    let mut is_gold = vec![false; l];
    for &g in gold {
        is_gold[g as usize] = true;
    }
    let mut alpha = u.to_vec();
    let mut y: Vec<F> = u.iter().map(|&v| sigmoid(v)).collect();
    let mut vel = vec![F::zero(); l];
    let (mut a, mut s) = (
        vec![F::zero(); energy.hidden()],
        vec![F::zero(); energy.hidden()],
    );
    let mut g = vec![F::zero(); l];
    for _ in 0..cfg.inference.steps {
        g.copy_from_slice(u);
        energy.add_grad(&y, &mut a, &mut s, &mut g);
        match bc.task_loss {
            // Σ|y − y*| is linear on the box: slope 1 off the gold labels, −1 on them.
            TaskLoss::Hamming => {
                for i in 0..l {
                    g[i] += if is_gold[i] { -m } else { m };
                }
            }
            // Δ = 1 − F1: ascend −m·F1.
            TaskLoss::F1 => {
                soft_f1(&y, gold, Some((&mut g, -m)));
            }
        }
        for i in 0..l {
            if logit {
                let d = y[i] * (F::one() - y[i]) * (g[i] - lambda * alpha[i]);
                vel[i] = mu * vel[i] + eta * d;
                alpha[i] += vel[i];
                y[i] = sigmoid(alpha[i]);
            } else {
                vel[i] = mu * vel[i] + eta * g[i];
                y[i] = (y[i] + vel[i]).max(F::zero()).min(F::one());
            }
        }
    }
    y
}

/// `λ H(y)`, the entropy term of the score (0 without logit iterates).
pub fn entropy_term<F: Float>(model: &Model<f32>, y: &[F]) -> F {
    let bc = BaselineConfig::read(&model.config);
    let lambda: F = c(bc.entropy_weight);
    if !bc.logit_iterates || lambda == F::zero() {
        return F::zero();
    }
    let h = |p: F| {
        if p > F::zero() && p < F::one() {
            -(p * p.ln() + (F::one() - p) * (F::one() - p).ln())
        } else {
            F::zero()
        }
    };
    lambda * y.iter().map(|&p| h(p)).sum::<F>()
}

/// `Δ(ŷ, y*)` of the configured task loss.
pub fn task_loss<F: Float>(kind: TaskLoss, y: &[F], gold: &[u32]) -> F {
    match kind {
        TaskLoss::Hamming => {
            let mut d: F = y.iter().copied().sum();
            for &g in gold {
                let v = y[g as usize];
                // |v − 1| − |v − 0| = 1 − 2v for v ∈ [0, 1]
                d += F::one() - v - v;
            }
            d
        }
        TaskLoss::F1 => F::one() - soft_f1(y, gold, None),
    }
}

/// SPEN's hinge on a batch, generic over the float type: returns the loss and overwrites
/// `grad`. Loss-augmented inference runs on `p` (its result is treated as a constant).
pub fn spen_batch<F: Float>(
    model: &Model<f32>,
    p: &Params<F>,
    train: &Dataset,
    rows: &[usize],
    grad: &mut Params<F>,
) -> F {
    let cfg = &model.config;
    let bc = BaselineConfig::read(cfg);
    grad.visit_mut(|_, g, _| g.fill(F::zero()));
    let act = bc.hidden_activation;
    let mut cache = MlpCache::default();
    let mlp = Mlp::unary(p, act);
    mlp.forward(&train.features, rows, &model.standardizer, &mut cache);
    let energy = Energy {
        wp: p.wp.view(),
        we: p.we.as_slice().expect("contiguous"),
        act: bc.energy_activation,
    };
    let (l, b) = (model.n_labels(), rows.len());
    let scale: F = c(1.0 / b as f64);
    let m: F = c(bc.margin_scale);
    let hats: Vec<Vec<F>> = (0..b)
        .into_par_iter()
        .map(|r| {
            let u = cache.out.row(r).to_vec();
            loss_augmented(model, &energy, &u, train.labels.row(rows[r]))
        })
        .collect();
    let mut dout = Array2::<F>::zeros((b, l));
    let mut a = vec![F::zero(); energy.hidden()];
    let mut total = F::zero();
    let mut gwe = vec![F::zero(); energy.hidden()];
    for r in 0..b {
        let u = cache.out.row(r).to_vec();
        let gold = train.labels.row(rows[r]);
        let mut ystar = vec![F::zero(); l];
        for &g in gold {
            ystar[g as usize] = F::one();
        }
        let yhat = &hats[r];
        // s(ŷ) includes λH(ŷ), constant in θ at fixed ŷ; H(y*) = 0.
        let hinge = m * task_loss(bc.task_loss, yhat, gold)
            + spen_score(&energy, &u, yhat)
            + entropy_term(model, yhat)
            - spen_score(&energy, &u, &ystar);
        if hinge <= F::zero() {
            continue;
        }
        total += scale * hinge;
        for i in 0..l {
            dout[[r, i]] = scale * (yhat[i] - ystar[i]);
        }
        energy.add_param_grad(yhat, scale, &mut a, &mut grad.wp, &mut gwe);
        energy.add_param_grad(&ystar, -scale, &mut a, &mut grad.wp, &mut gwe);
    }
    for (o, &v) in grad.we.iter_mut().zip(&gwe) {
        *o += v;
    }
    mlp.backward(
        &train.features,
        rows,
        &model.standardizer,
        &mut cache,
        dout.view(),
        MlpGrad::unary(grad),
    );
    total
}

/// SPEN trained with the structured SVM.
#[derive(Default)]
pub struct Ssvm;

impl BatchObjective for Ssvm {
    fn loss_and_grad(
        &mut self,
        model: &Model<f32>,
        train: &Dataset,
        rows: &[usize],
        grad: &mut Params<f32>,
        _rng: &mut Xoshiro256PlusPlus,
    ) -> Result<f64> {
        Ok(spen_batch(model, &model.params, train, rows, grad) as f64)
    }
}

/// Exact maximiser of `yᵀu' + c_k` over binary `y` with `|y| = k`, `k` in the counts
/// `kmin..kmin + c.len()`: returns `(score, k, labels)`.
pub fn topz_argmax<F: Float>(u: &[F], cards: &[F], kmin: usize) -> (F, usize, Vec<u32>) {
    let mut order: Vec<u32> = (0..u.len() as u32).collect();
    order.sort_by(|&a, &b| u[b as usize].total_cmp_like(u[a as usize]));
    let mut prefix = F::zero();
    let mut best = (F::neg_infinity(), kmin);
    let mut taken = 0;
    for (j, &cj) in cards.iter().enumerate() {
        let k = kmin + j;
        if k > u.len() {
            break;
        }
        while taken < k {
            prefix += u[order[taken] as usize];
            taken += 1;
        }
        let v = prefix + cj;
        if v > best.0 {
            best = (v, k);
        }
    }
    let mut labels: Vec<u32> = order[..best.1].to_vec();
    labels.sort_unstable();
    (best.0, best.1, labels)
}

trait TotalCmpLike {
    fn total_cmp_like(self, other: Self) -> std::cmp::Ordering;
}
impl<F: Float> TotalCmpLike for F {
    fn total_cmp_like(self, other: Self) -> std::cmp::Ordering {
        self.partial_cmp(&other)
            .unwrap_or(std::cmp::Ordering::Equal)
    }
}

/// Unary and count scores of a batch: `u` (`b × L`) and `c` (`b × K`).
fn topz_scores<F: Float>(
    model: &Model<f32>,
    p: &Params<F>,
    x: &CsrMatrix,
    rows: &[usize],
    unary: &mut MlpCache<F>,
    card: &mut MlpCache<F>,
) {
    let act = BaselineConfig::read(&model.config).hidden_activation;
    Mlp::unary(p, act).forward(x, rows, &model.standardizer, unary);
    Mlp::card(p).forward(x, rows, &model.standardizer, card);
}

/// The top-z hinge on a batch (Hamming task loss scaled by `margin_scale`).
pub fn topz_batch<F: Float>(
    model: &Model<f32>,
    p: &Params<F>,
    train: &Dataset,
    rows: &[usize],
    grad: &mut Params<F>,
) -> F {
    grad.visit_mut(|_, g, _| g.fill(F::zero()));
    let (mut uc, mut cc) = (MlpCache::default(), MlpCache::default());
    topz_scores(model, p, &train.features, rows, &mut uc, &mut cc);
    let (l, b, k) = (model.n_labels(), rows.len(), p.c2.ncols());
    let kmin = model.counts[0] as usize;
    let m: F = c(BaselineConfig::read(&model.config).margin_scale);
    let scale: F = c(1.0 / b as f64);
    let mut du = Array2::<F>::zeros((b, l));
    let mut dc = Array2::<F>::zeros((b, k));
    let mut total = F::zero();
    for r in 0..b {
        let gold = train.labels.row(rows[r]);
        let u = uc.out.row(r).to_vec();
        let cards = cc.out.row(r).to_vec();
        let mut aug: Vec<F> = u.iter().map(|&v| v + m).collect();
        for &g in gold {
            aug[g as usize] = u[g as usize] - m;
        }
        let (best, khat, yhat) = topz_argmax(&aug, &cards, kmin);
        // A gold count outside the range is scored with the nearest count.
        let kg = gold.len().clamp(kmin, kmin + k - 1) - kmin;
        let gold_score: F = gold.iter().map(|&g| u[g as usize]).sum::<F>() + cards[kg];
        let hinge = best + m * c::<F>(gold.len() as f64) - gold_score;
        if hinge <= F::zero() {
            continue;
        }
        total += scale * hinge;
        for &i in &yhat {
            du[[r, i as usize]] += scale;
        }
        for &g in gold {
            du[[r, g as usize]] -= scale;
        }
        dc[[r, khat - kmin]] += scale;
        dc[[r, kg]] -= scale;
    }
    let act = BaselineConfig::read(&model.config).hidden_activation;
    let stdz = &model.standardizer;
    Mlp::unary(p, act).backward(
        &train.features,
        rows,
        stdz,
        &mut uc,
        du.view(),
        MlpGrad::unary(grad),
    );
    Mlp::card(p).backward(
        &train.features,
        rows,
        stdz,
        &mut cc,
        dc.view(),
        MlpGrad::card(grad),
    );
    total
}

/// Exact top-z prediction: `y` the indicator of the best labelling, `z` its count.
pub fn topz_predict_rows(model: &Model<f32>, x: &CsrMatrix, rows: &[usize]) -> Outputs<f32> {
    let (mut uc, mut cc) = (MlpCache::default(), MlpCache::default());
    topz_scores(model, &model.params, x, rows, &mut uc, &mut cc);
    let l = model.n_labels();
    let kmin = model.counts[0] as usize;
    let mut out = Outputs::default();
    for r in 0..rows.len() {
        let u = uc.out.row(r).to_vec();
        let (_, k, labels) = topz_argmax(&u, &cc.out.row(r).to_vec(), kmin);
        let mut y = vec![0f32; l];
        for i in labels {
            y[i as usize] = 1.0;
        }
        out.y.extend_from_slice(&y);
        out.z.push(k as f32);
        out.unary.extend_from_slice(&u);
    }
    out
}

/// The §4 top-z system trained with the structured hinge.
#[derive(Default)]
pub struct TopzHinge;

impl BatchObjective for TopzHinge {
    fn loss_and_grad(
        &mut self,
        model: &Model<f32>,
        train: &Dataset,
        rows: &[usize],
        grad: &mut Params<f32>,
        _rng: &mut Xoshiro256PlusPlus,
    ) -> Result<f64> {
        Ok(topz_batch(model, &model.params, train, rows, grad) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_largest_entries, perturbed, small, toy};
    use super::*;
    use crate::systems::tests::init_model;
    use crate::systems::Activation;
    use cardinal::config::{Config, CountRange};

    #[test]
    fn topz_argmax_is_exact_by_brute_force() {
        let u = [0.3f64, -1.2, 2.0, 0.1, -0.4, 0.9];
        for cards in [
            [0.0, 0.5, -3.0, 1.0],
            [2.0, -1.0, 0.0, 0.0],
            [-5.0, -5.0, 4.0, -5.0],
        ] {
            let (best, k, labels) = topz_argmax(&u, &cards, 1);
            let mut brute = (f64::NEG_INFINITY, 0usize);
            for mask in 0u32..64 {
                let n = mask.count_ones() as usize;
                if !(1..=4).contains(&n) {
                    continue;
                }
                let s: f64 = (0..6)
                    .filter(|i| mask >> i & 1 == 1)
                    .map(|i| u[i])
                    .sum::<f64>()
                    + cards[n - 1];
                if s > brute.0 {
                    brute = (s, n);
                }
            }
            assert!((best - brute.0).abs() < 1e-12, "{best} vs {brute:?}");
            assert_eq!((k, labels.len()), (brute.1, brute.1));
        }
    }

    /// With the maximisers held fixed (Danskin), the hinge's gradient in every parameter is
    /// that of `s(ŷ) − s(y*)`: checked against central differences of the batch loss for SPEN
    /// (softplus energy: smooth) and top-z. A margin far below the hinge's kink keeps the
    /// active set fixed under the perturbation.
    #[test]
    fn hinge_gradients_match_finite_differences() {
        let data = toy(30, 7);
        for (system, spen) in [
            (super::super::SPEN_SSVM, true),
            (super::super::TOPZ_HINGE, false),
        ] {
            let mut cfg = Config::paper();
            small(&mut cfg);
            cfg.system = system.into();
            BaselineConfig::edit(&mut cfg, |b| {
                b.energy_activation = Activation::Softplus;
                b.hidden_activation = Activation::Softplus;
                b.margin_scale = 1.0;
            });
            cfg.model.counts = CountRange::Fixed { min: 0, max: 4 };
            cfg.inference.steps = 5;
            cfg.inference.eta = 0.1;
            let model = init_model(&data, &cfg).unwrap();
            let mut p: Params<f64> = model.params.cast();
            p.wp.mapv_inplace(|v| 2.0 * v);
            let rows = [0usize, 1, 2, 5];
            let batch = |q: &Params<f64>, g: &mut Params<f64>| {
                if spen {
                    spen_batch(&model, q, &data, &rows, g)
                } else {
                    topz_batch(&model, q, &data, &rows, g)
                }
            };
            let mut g = p.zeros_like();
            let loss = batch(&p, &mut g);
            assert!(loss > 0.0, "{system}: the hinge is active");
            let mut scratch = p.zeros_like();
            let names = [
                "unary.w2",
                "unary.b2",
                "unary.w1",
                "energy.wp",
                "energy.we",
                "card.w2",
            ];
            let checked = check_largest_entries(&g, &names, 3, 1e-7, 1e-5, system, |name, j, d| {
                // SPEN's loss-augmented ŷ moves with the parameters: hold the inference fixed by
                // evaluating the score difference at the unperturbed maximiser.
                match spen {
                    true => spen_fixed(&model, &p, name, j, d, &data, &rows),
                    false => batch(&perturbed(&p, name, j, d), &mut scratch),
                }
            });
            assert!(
                checked >= 8,
                "{system}: {checked} non-zero gradients checked"
            );
        }
    }

    /// SPEN's batch hinge with ŷ computed at `p` but scored with `p` perturbed at one entry.
    fn spen_fixed(
        model: &Model<f32>,
        p: &Params<f64>,
        name: &str,
        j: usize,
        delta: f64,
        data: &Dataset,
        rows: &[usize],
    ) -> f64 {
        let bc = BaselineConfig::read(&model.config);
        let mut cache = MlpCache::default();
        let act = bc.hidden_activation;
        Mlp::unary(p, act).forward(&data.features, rows, &model.standardizer, &mut cache);
        let energy = Energy {
            wp: p.wp.view(),
            we: p.we.as_slice().unwrap(),
            act: bc.energy_activation,
        };
        let hats: Vec<Vec<f64>> = (0..rows.len())
            .map(|r| {
                let u = cache.out.row(r).to_vec();
                loss_augmented(model, &energy, &u, data.labels.row(rows[r]))
            })
            .collect();
        let mut q = p.clone();
        q.visit_mut(|n, d, _| {
            if n == name {
                d[j] += delta;
            }
        });
        let mut qc = MlpCache::default();
        Mlp::unary(&q, act).forward(&data.features, rows, &model.standardizer, &mut qc);
        let qe = Energy {
            wp: q.wp.view(),
            we: q.we.as_slice().unwrap(),
            act: bc.energy_activation,
        };
        let mut total = 0.0;
        for r in 0..rows.len() {
            let gold = data.labels.row(rows[r]);
            let u = qc.out.row(r).to_vec();
            let mut ystar = vec![0.0; u.len()];
            for &g in gold {
                ystar[g as usize] = 1.0;
            }
            let h = task_loss(bc.task_loss, &hats[r], gold) + spen_score(&qe, &u, &hats[r])
                - spen_score(&qe, &u, &ystar);
            total += h.max(0.0) / rows.len() as f64;
        }
        total
    }
}
