//! Deep value network (Gygli, Norouzi & Angelova, ICML 2017), as in its released code: a value
//! `v(x, y) = σ(yᵀf(x) + w2ᵀ softplus(Wpᵀ y))` regressing the relaxed F1 of hypotheses `y`
//! with a sigmoid cross-entropy, inference by clipped gradient ascent on `v` from zeros.
//!
//! Hypotheses: a fraction `dvn_adversarial_fraction` of the batches gets one inference step
//! started at the gold labels (a random half of the rows) or at zeros, the rest full inference
//! from zeros (the released code's "adversarial" branch takes the value gradient, not the loss
//! gradient, and so does this one).

use rand::Rng;
use rand_distr::StandardNormal;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::nets::c;
use super::nets::{Energy, Mlp, MlpCache, MlpGrad};
use super::settings::{ACTIVATIONS, THRESHOLD_SELECTION, TRAINING_LOOP};
use super::BaselineField;
use super::{BaselineConfig, BatchObjective};
use cardinal::config::InferenceField;
use cardinal::data::{CsrMatrix, Dataset};
use cardinal::engine::{Model, Outputs};
use cardinal::parts::{sigmoid, soft_f1};
use cardinal::parts::{Float, Params};
use cardinal::system::{Fields, Reads, SettingGroups};
use cardinal::Result;
use ndarray::Array2;

/// What DVN reads: of its inference the steps and step size (plain clipped steps, no
/// momentum), neither the `loss` section (its
/// objective is the value regression) nor the search. Its inference starts from zeros
/// whatever `baseline.init_zeros` says, and its own initialisation replaces the unary
/// pre-training.
pub const READS: Reads = Reads {
    settings: &SettingGroups(&[
        TRAINING_LOOP,
        THRESHOLD_SELECTION,
        ACTIVATIONS,
        &[BaselineField::DvnAdversarialFraction],
    ]),
    inference: Fields::Only(&[InferenceField::Steps, InferenceField::Eta]),
    loss: Fields::NONE,
    search: Fields::NONE,
};

fn energy_of<'a, F: Float>(model: &Model<f32>, p: &'a Params<F>) -> Energy<'a, F> {
    Energy {
        wp: p.wp.view(),
        we: p.we.as_slice().expect("contiguous"),
        act: BaselineConfig::read(&model.config).energy_activation,
    }
}

/// `s = yᵀf + E(y)`, the value's logit.
fn logit<F: Float>(energy: &Energy<F>, f: &[F], y: &[F], a: &mut [F]) -> F {
    f.iter().zip(y).map(|(&a, &b)| a * b).sum::<F>() + energy.value(y, a)
}

/// `steps` of `y ← clip(y + η ∂v/∂y)` from `y`.
pub fn infer<F: Float>(energy: &Energy<F>, f: &[F], y: &mut [F], eta: F, steps: usize) {
    let e = energy.hidden();
    let (mut a, mut s) = (vec![F::zero(); e], vec![F::zero(); e]);
    let mut g = vec![F::zero(); y.len()];
    for _ in 0..steps {
        let v = sigmoid(logit(energy, f, y, &mut a));
        g.copy_from_slice(f);
        energy.add_grad(y, &mut a, &mut s, &mut g);
        let dv = eta * v * (F::one() - v);
        for (yi, &gi) in y.iter_mut().zip(&g) {
            *yi = (*yi + dv * gi).max(F::zero()).min(F::one());
        }
    }
}

/// Inference for `rows` of `x` from zeros; `z = Σ y`.
pub fn predict_rows(model: &Model<f32>, x: &CsrMatrix, rows: &[usize]) -> Outputs<f32> {
    let mut cache = MlpCache::default();
    let act = BaselineConfig::read(&model.config).hidden_activation;
    Mlp::unary(&model.params, act).forward(x, rows, &model.standardizer, &mut cache);
    let energy = energy_of(model, &model.params);
    let l = model.n_labels();
    let eta = model.config.inference.eta as f32;
    let steps = model.config.inference.steps;
    let mut y = vec![0f32; rows.len() * l];
    y.par_chunks_mut(l).enumerate().for_each(|(r, yr)| {
        infer(
            &energy,
            cache.out.row(r).to_slice().unwrap(),
            yr,
            eta,
            steps,
        );
    });
    let z = y.chunks(l).map(|r| r.iter().sum()).collect();
    Outputs {
        y,
        z,
        unary: cache.out.into_raw_vec_and_offset().0,
        ranking: Vec::new(),
    }
}

/// The value network's loss on given hypotheses `hyp` (`b × L`) with targets their relaxed F1:
/// mean sigmoid cross-entropy; overwrites `grad`.
pub fn value_loss_grad<F: Float>(
    model: &Model<f32>,
    p: &Params<F>,
    train: &Dataset,
    rows: &[usize],
    hyp: &Array2<F>,
    grad: &mut Params<F>,
) -> F {
    grad.visit_mut(|_, g, _| g.fill(F::zero()));
    let mut cache = MlpCache::default();
    let mlp = Mlp::unary(p, BaselineConfig::read(&model.config).hidden_activation);
    mlp.forward(&train.features, rows, &model.standardizer, &mut cache);
    let energy = energy_of(model, p);
    let (b, l) = (rows.len(), model.n_labels());
    let scale: F = c(1.0 / b as f64);
    let mut a = vec![F::zero(); energy.hidden()];
    let mut dout = Array2::<F>::zeros((b, l));
    let mut gwe = vec![F::zero(); energy.hidden()];
    let mut total = F::zero();
    for r in 0..b {
        let y = hyp.row(r).to_vec();
        let target = soft_f1(&y, train.labels.row(rows[r]), None);
        let s = logit(&energy, cache.out.row(r).to_slice().unwrap(), &y, &mut a);
        // max(s, 0) − s·t + log(1 + e^{−|s|})
        total += scale * (s.max(F::zero()) - s * target + (-s.abs()).exp().ln_1p());
        let ds = scale * (sigmoid(s) - target);
        for i in 0..l {
            dout[[r, i]] = ds * y[i];
        }
        energy.add_param_grad(&y, ds, &mut a, &mut grad.wp, &mut gwe);
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

/// DVN training.
#[derive(Default)]
pub struct Dvn;

impl BatchObjective for Dvn {
    /// He-normal initialisation of the value network, as the released code.
    fn prepare(&mut self, model: &mut Model<f32>, _train: &Dataset, _rows: &[usize]) {
        let mut rng = <Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(model.config.seed);
        let p = &mut model.params;
        let mut he = |w: &mut [f32], fan_in: usize| {
            let std = (2.0 / fan_in as f64).sqrt();
            for v in w {
                let n: f64 = rng.sample(StandardNormal);
                *v = (n * std) as f32;
            }
        };
        let (d, h, l, e) = (p.w1.nrows(), p.w1.ncols(), p.w2.ncols(), p.we.len());
        he(p.w1.as_slice_mut().unwrap(), d);
        he(p.w2.as_slice_mut().unwrap(), h);
        he(p.wp.as_slice_mut().unwrap(), l);
        he(p.we.as_slice_mut().unwrap(), e.max(1));
    }

    fn loss_and_grad(
        &mut self,
        model: &Model<f32>,
        train: &Dataset,
        rows: &[usize],
        grad: &mut Params<f32>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Result<f64> {
        let cfg = &model.config;
        let (b, l) = (rows.len(), model.n_labels());
        let bc = BaselineConfig::read(cfg);
        let p = &model.params;
        let mut cache = MlpCache::default();
        Mlp::unary(p, bc.hidden_activation).forward(
            &train.features,
            rows,
            &model.standardizer,
            &mut cache,
        );
        let energy = energy_of(model, p);
        let eta = cfg.inference.eta as f32;
        let adversarial = rng.random::<f64>() < bc.dvn_adversarial_fraction;
        let mut hyp = Array2::<f32>::zeros((b, l));
        let from_gold: Vec<bool> = (0..b)
            .map(|_| adversarial && rng.random::<bool>())
            .collect();
        let steps = if adversarial { 1 } else { cfg.inference.steps };
        hyp.as_slice_mut()
            .unwrap()
            .par_chunks_mut(l)
            .enumerate()
            .for_each(|(r, y)| {
                if from_gold[r] {
                    for &g in train.labels.row(rows[r]) {
                        y[g as usize] = 1.0;
                    }
                }
                infer(&energy, cache.out.row(r).to_slice().unwrap(), y, eta, steps);
            });
        Ok(value_loss_grad(model, p, train, rows, &hyp, grad) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_largest_entries, perturbed, small, toy};
    use super::*;
    use crate::systems::tests::init_model;
    use crate::systems::Activation;
    use cardinal::config::Config;

    #[test]
    fn value_gradients_match_finite_differences() {
        let data = toy(30, 5);
        let mut cfg = Config::paper();
        small(&mut cfg);
        cfg.system = super::super::DVN.into();
        BaselineConfig::edit(&mut cfg, |b| {
            b.energy_activation = Activation::Softplus;
            b.hidden_activation = Activation::Softplus;
        });
        let model = init_model(&data, &cfg).unwrap();
        let p: Params<f64> = model.params.cast();
        let rows = [0usize, 2, 3, 8];
        let mut g = cardinal_testkit::Lcg::new(3);
        let hyp = Array2::from_shape_fn((4, 6), |_| g.uniform());
        let mut g = p.zeros_like();
        value_loss_grad(&model, &p, &data, &rows, &hyp, &mut g);
        let mut scratch = p.zeros_like();
        let names = [
            "unary.w1",
            "unary.b1",
            "unary.w2",
            "unary.b2",
            "energy.wp",
            "energy.we",
        ];
        let checked = check_largest_entries(&g, &names, 3, 1e-6, 1e-6, "DVN", |name, j, d| {
            let q = perturbed(&p, name, j, d);
            value_loss_grad(&model, &q, &data, &rows, &hyp, &mut scratch)
        });
        assert!(checked >= 12, "{checked} non-zero gradients checked");
    }

    #[test]
    fn inference_ascends_the_value() {
        let data = toy(10, 5);
        let mut cfg = Config::paper();
        small(&mut cfg);
        BaselineConfig::edit(&mut cfg, |b| b.energy_activation = Activation::Softplus);
        let model = init_model(&data, &cfg).unwrap();
        let p: Params<f64> = model.params.cast();
        let energy = energy_of(&model, &p);
        let f = [0.5, -0.3, 0.8, 0.1, -0.9, 0.2];
        let mut a = vec![0.0; energy.hidden()];
        let mut y = vec![0.0; 6];
        let v0 = logit(&energy, &f, &y, &mut a);
        infer(&energy, &f, &mut y, 0.5, 20);
        let v1 = logit(&energy, &f, &y, &mut a);
        assert!(v1 > v0 && y.iter().all(|&v| (0.0..=1.0).contains(&v)));
    }
}
