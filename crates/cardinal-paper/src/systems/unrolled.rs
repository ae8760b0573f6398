//! SC and logit-space ascent: unrolled inference trained end to end with P&C's relaxed-F1 loss
//! on the iterates; also the test-time inference of SPEN (clipped ascent, no cardinality).
//! Which of the three runs is a [`Flavor`], fixed by the system's registration.

use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::ascent::{Ascent, AscentGrad, AscentTape, Space};
use super::nets::c;
use super::nets::{Energy, Mlp, MlpCache, MlpGrad};
use super::settings::{ACTIVATIONS, PRETRAINING, THRESHOLD_SELECTION, TRAINING_LOOP};
use super::{iterate_weights, BatchObjective};
use super::{BaselineConfig, BaselineField};
use cardinal::config::{Config, InferenceField, LossField};
use cardinal::data::{CsrMatrix, Dataset};
use cardinal::engine::{Model, Outputs};
use cardinal::parts::soft_f1;
use cardinal::parts::{Float, Params};
use cardinal::system::{Fields, Reads, SettingGroups};
use cardinal::Result;
use ndarray::Array2;

/// What SC reads: of its inference the ascent's steps, step size and momentum (it clips to
/// the box, never projects), of the `loss` section P&C's relaxed-F1 loss and the unary BCE
/// (it has no count loss), not the search. Its iterates live in the box unless
/// `logit_iterates`, where the entropy applies.
pub const SC_READS: Reads = Reads {
    settings: &SettingGroups(&[
        TRAINING_LOOP,
        THRESHOLD_SELECTION,
        PRETRAINING,
        ACTIVATIONS,
        &[
            BaselineField::InitZeros,
            BaselineField::LogitIterates,
            BaselineField::EntropyWeight,
        ],
    ]),
    inference: ASCENT,
    loss: UNROLLED_LOSS,
    search: Fields::NONE,
};

/// The fields of the `inference` section the unrolled ascent reads.
const ASCENT: Fields<InferenceField> = Fields::Only(&[
    InferenceField::Steps,
    InferenceField::Eta,
    InferenceField::Momentum,
]);

/// The fields of the `loss` section the unrolled systems' loss reads.
const UNROLLED_LOSS: Fields<LossField> = Fields::Only(&[
    LossField::IterateWeights,
    LossField::F1Weight,
    LossField::UnaryBceWeight,
    LossField::SumOverBatch,
]);

/// What logit-space ascent reads: as SC, but its iterates are always logits, so neither
/// `init_zeros` (a box start) nor `logit_iterates`.
pub const LOGIT_READS: Reads = Reads {
    settings: &SettingGroups(&[
        TRAINING_LOOP,
        THRESHOLD_SELECTION,
        PRETRAINING,
        ACTIVATIONS,
        &[BaselineField::EntropyWeight],
    ]),
    inference: ASCENT,
    loss: UNROLLED_LOSS,
    search: Fields::NONE,
};

/// The member of the unrolled-ascent family a system runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// SPEN's test-time inference: the energy alone, no cardinality potential; iterates in
    /// the box unless `baseline.logit_iterates` ([`Flavor::space`]).
    Spen,
    /// SC: the energy and the sigmoid cardinality potential; iterates in the box unless
    /// `baseline.logit_iterates`.
    Sc,
    /// Ascent in logit space, no cardinality potential.
    Logit,
}

impl Flavor {
    /// Where the iterates live: logit space for [`Flavor::Logit`], and for any flavour with
    /// `baseline.logit_iterates`; the box otherwise.
    pub fn space(self, cfg: &Config) -> Space {
        if self == Flavor::Logit || BaselineConfig::read(cfg).logit_iterates {
            Space::Logit
        } else {
            Space::Box
        }
    }

    /// Whether the score has the sigmoid cardinality potential (weights from the cardinality
    /// network).
    pub fn has_cardinality(self) -> bool {
        self == Flavor::Sc
    }
}

/// The ascent of `flavor` for `model` over its parameters `p` (generic so that tests can run
/// it in `f64`).
pub fn ascent_of<'a, F: Float>(
    flavor: Flavor,
    model: &Model<f32>,
    p: &'a Params<F>,
) -> Ascent<'a, F> {
    let cfg = &model.config;
    let space = flavor.space(cfg);
    let bc = BaselineConfig::read(cfg);
    Ascent {
        energy: Energy {
            wp: p.wp.view(),
            we: p.we.as_slice().expect("contiguous"),
            act: bc.energy_activation,
        },
        eta: c(cfg.inference.eta),
        momentum: c(cfg.inference.momentum),
        steps: cfg.inference.steps,
        space,
        init_zeros: bc.init_zeros,
        sc_kmin: c(model.counts[0] as f64),
        entropy: c(bc.entropy_weight),
    }
}

/// Unary scores `u` and, for SC, the per-row cardinality weights.
struct Scores<F> {
    u: Array2<F>,
    sc: Option<Array2<F>>,
    unary_cache: MlpCache<F>,
    card_cache: MlpCache<F>,
}

fn scores<F: Float>(
    flavor: Flavor,
    model: &Model<f32>,
    p: &Params<F>,
    x: &CsrMatrix,
    rows: &[usize],
) -> Scores<F> {
    let mut unary_cache = MlpCache::default();
    let mut card_cache = MlpCache::default();
    let act = BaselineConfig::read(&model.config).hidden_activation;
    Mlp::unary(p, act).forward(x, rows, &model.standardizer, &mut unary_cache);
    let sc = flavor.has_cardinality().then(|| {
        Mlp::card(p).forward(x, rows, &model.standardizer, &mut card_cache);
        card_cache.out.clone()
    });
    Scores {
        u: unary_cache.out.clone(),
        sc,
        unary_cache,
        card_cache,
    }
}

/// Inference of `flavor` for `rows` of `x`: the last iterate, `z = Σ y_T`.
pub fn predict_rows(
    flavor: Flavor,
    model: &Model<f32>,
    x: &CsrMatrix,
    rows: &[usize],
) -> Outputs<f32> {
    let p = &model.params;
    let s = scores(flavor, model, p, x, rows);
    let asc = ascent_of(flavor, model, p);
    let (l, steps) = (model.n_labels(), model.config.inference.steps);
    let mut y = vec![0f32; rows.len() * l];
    y.par_chunks_mut(l).enumerate().for_each(|(r, out)| {
        let mut tape = AscentTape::default();
        let sc =
            s.sc.as_ref()
                .map_or(&[][..], |w| w.row(r).to_slice().unwrap());
        asc.forward(s.u.row(r).to_slice().unwrap(), sc, &mut tape);
        out.copy_from_slice(tape.y(steps, l));
    });
    let z = y.chunks(l).map(|r| r.iter().sum()).collect();
    Outputs {
        y,
        z,
        unary: s.u.into_raw_vec_and_offset().0,
        ranking: Vec::new(),
    }
}

/// Loss (P&C's weighted negative relaxed F1 over the iterates, plus the optional unary BCE)
/// and gradient of a batch for `flavor`, generic over the float type.
pub fn batch_loss_grad<F: Float>(
    flavor: Flavor,
    model: &Model<f32>,
    p: &Params<F>,
    train: &Dataset,
    rows: &[usize],
    grad: &mut Params<F>,
) -> F {
    let cfg = &model.config;
    grad.visit_mut(|_, g, _| g.fill(F::zero()));
    let mut s = scores(flavor, model, p, &train.features, rows);
    let scale = if cfg.loss.sum_over_batch {
        1.0
    } else {
        1.0 / rows.len() as f64
    };
    let objective = RowObjective {
        asc: ascent_of(flavor, model, p),
        weights: iterate_weights(cfg)
            .into_iter()
            .map(|w| c(w * scale * cfg.loss.f1_weight))
            .collect(),
        bce_w: c(cfg.loss.unary_bce_weight * scale),
        labels: model.n_labels(),
        energy: p.we.len(),
        steps: cfg.inference.steps,
    };
    let per_row: Vec<(F, AscentGrad<F>)> = (0..rows.len())
        .into_par_iter()
        .map(|r| {
            let u = s.u.row(r).to_slice().unwrap().to_vec();
            let sc: Vec<F> = s.sc.as_ref().map_or(Vec::new(), |w| w.row(r).to_vec());
            objective.row(&u, &sc, train.labels.row(rows[r]))
        })
        .collect();
    let (total, dout, dcard) = gather(&per_row, grad, model.n_labels(), p.c2.ncols());
    backward_nets(model, p, &mut s, (train, rows), (dout, dcard), grad);
    total
}

/// The loss of one row and its gradient through the ascent.
struct RowObjective<'a, F> {
    asc: Ascent<'a, F>,
    /// The relaxed-F1 weight of each iterate, scaled.
    weights: Vec<F>,
    /// The weight of the unary BCE, scaled (0: none).
    bce_w: F,
    labels: usize,
    /// Hidden units of the energy.
    energy: usize,
    steps: usize,
}

impl<F: Float> RowObjective<'_, F> {
    /// The loss of the row with unary scores `u`, cardinality weights `sc` and labels `gold`,
    /// and its gradient with respect to `u`, the energy and `sc`.
    fn row(&self, u: &[F], sc: &[F], gold: &[u32]) -> (F, AscentGrad<F>) {
        let (l, steps) = (self.labels, self.steps);
        let mut tape = AscentTape::default();
        self.asc.forward(u, sc, &mut tape);
        let mut gys = vec![F::zero(); steps * l];
        let mut loss = F::zero();
        for t in 1..=steps {
            let w = self.weights[t - 1];
            if w != F::zero() {
                let f1 = soft_f1(tape.y(t, l), gold, Some((&mut gys[(t - 1) * l..t * l], -w)));
                loss -= w * f1;
            }
        }
        let mut g = AscentGrad::zeros(l, self.energy, sc.len());
        self.asc.backward(u, sc, &tape, &gys, &mut g);
        let bce_w = self.bce_w;
        if bce_w > F::zero() {
            for i in 0..l {
                let x = u[i];
                loss += bce_w * ((-x.abs()).exp().ln_1p() + x.max(F::zero()));
                g.gu[i] += bce_w * cardinal::parts::sigmoid(x);
            }
            for &gi in gold {
                loss -= bce_w * u[gi as usize];
                g.gu[gi as usize] -= bce_w;
            }
        }
        (loss, g)
    }
}

/// Sums the rows' losses and energy gradients (into `grad`), in row order, and lays out their
/// gradients with respect to the unary scores (`l` per row) and the cardinality weights (`k`
/// per row) for the networks' backward passes.
fn gather<F: Float>(
    per_row: &[(F, AscentGrad<F>)],
    grad: &mut Params<F>,
    l: usize,
    k: usize,
) -> (F, Array2<F>, Array2<F>) {
    let mut dout = Array2::<F>::zeros((per_row.len(), l));
    let mut dcard = Array2::<F>::zeros((per_row.len(), k));
    let mut total = F::zero();
    for (r, (loss, g)) in per_row.iter().enumerate() {
        total += *loss;
        dout.row_mut(r)
            .iter_mut()
            .zip(&g.gu)
            .for_each(|(o, &v)| *o = v);
        grad.wp += &g.gwp;
        for (o, &v) in grad.we.iter_mut().zip(&g.gwe) {
            *o += v;
        }
        if !g.gsc.is_empty() {
            dcard
                .row_mut(r)
                .iter_mut()
                .zip(&g.gsc)
                .for_each(|(o, &v)| *o = v);
        }
    }
    (total, dout, dcard)
}

/// The backward passes of the unary network (`dout`) and, for SC, of the cardinality network
/// (`dcard`), into `grad`.
fn backward_nets<F: Float>(
    model: &Model<f32>,
    p: &Params<F>,
    s: &mut Scores<F>,
    (train, rows): (&Dataset, &[usize]),
    (dout, dcard): (Array2<F>, Array2<F>),
    grad: &mut Params<F>,
) {
    let act = BaselineConfig::read(&model.config).hidden_activation;
    let stdz = &model.standardizer;
    Mlp::unary(p, act).backward(
        &train.features,
        rows,
        stdz,
        &mut s.unary_cache,
        dout.view(),
        MlpGrad::unary(grad),
    );
    if s.sc.is_some() {
        Mlp::card(p).backward(
            &train.features,
            rows,
            stdz,
            &mut s.card_cache,
            dcard.view(),
            MlpGrad::card(grad),
        );
    }
}

/// SC and logit-space training.
pub struct Unrolled {
    /// Which member of the family is trained.
    pub flavor: Flavor,
}

impl BatchObjective for Unrolled {
    fn loss_and_grad(
        &mut self,
        model: &Model<f32>,
        train: &Dataset,
        rows: &[usize],
        grad: &mut Params<f32>,
        _rng: &mut Xoshiro256PlusPlus,
    ) -> Result<f64> {
        Ok(batch_loss_grad(self.flavor, model, &model.params, train, rows, grad) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_largest_entries, perturbed, small, toy};
    use super::super::{LOGIT, SC};
    use super::*;
    use crate::systems::tests::init_model;
    use crate::systems::Activation;

    /// The whole SC and logit models — every parameter tensor through the networks, the
    /// unrolled steps and the loss — against central differences in `f64`.
    #[test]
    fn whole_model_gradients_match_finite_differences() {
        let data = toy(30, 11);
        let cases = [
            (SC, Flavor::Sc, Activation::Relu),
            (LOGIT, Flavor::Logit, Activation::Softplus),
        ];
        for (system, flavor, act) in cases {
            let mut cfg = Config::paper();
            small(&mut cfg);
            cfg.system = system.into();
            BaselineConfig::edit(&mut cfg, |b| {
                b.energy_activation = act;
                b.hidden_activation = act;
            });
            cfg.inference.steps = 3;
            cfg.inference.eta = 0.3;
            cfg.loss.unary_bce_weight = 0.1;
            let model = init_model(&data, &cfg).unwrap();
            let mut p: Params<f64> = model.params.cast();
            // Non-trivial energy and cardinality weights.
            p.wp.mapv_inplace(|v| 3.0 * v);
            p.c2.mapv_inplace(|v| 5.0 * v);
            let rows = [0usize, 3, 4, 9];
            let mut g = p.zeros_like();
            batch_loss_grad(flavor, &model, &p, &data, &rows, &mut g);
            let mut scratch = p.zeros_like();
            let names = [
                "unary.w1",
                "unary.b1",
                "unary.w2",
                "energy.wp",
                "energy.we",
                "card.w2",
                "card.w1",
            ];
            // A handful of entries per tensor, the largest gradients first.
            let checked = check_largest_entries(&g, &names, 4, 1e-6, 1e-5, system, |name, j, d| {
                let q = perturbed(&p, name, j, d);
                batch_loss_grad(flavor, &model, &q, &data, &rows, &mut scratch)
            });
            assert!(
                checked >= 10,
                "{system}: only {checked} non-zero gradients checked"
            );
        }
    }

    #[test]
    fn a_wrong_gradient_is_caught() {
        // The check above must be able to fail: drop the σ' factor of the logit step and the
        // unary gradient no longer matches.
        let data = toy(30, 11);
        let mut cfg = Config::paper();
        small(&mut cfg);
        cfg.system = LOGIT.into();
        cfg.inference.steps = 2;
        cfg.inference.eta = 0.5;
        let model = init_model(&data, &cfg).unwrap();
        let p: Params<f64> = model.params.cast();
        let rows = [1usize, 2];
        let mut g = p.zeros_like();
        batch_loss_grad(Flavor::Logit, &model, &p, &data, &rows, &mut g);
        let mut wrong = g.clone();
        wrong.b2.mapv_inplace(|v| v * 1.1 + 1e-3);
        let mut scratch = p.zeros_like();
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for j in 0..p.b2.len() {
            let mut q = p.clone();
            q.b2[j] += h;
            let a = batch_loss_grad(Flavor::Logit, &model, &q, &data, &rows, &mut scratch);
            q.b2[j] -= 2.0 * h;
            let b = batch_loss_grad(Flavor::Logit, &model, &q, &data, &rows, &mut scratch);
            let fd = (a - b) / (2.0 * h);
            assert!((fd - g.b2[j]).abs() < 1e-5 * (1.0 + fd.abs()));
            worst = worst.max((fd - wrong.b2[j]).abs());
        }
        assert!(worst > 1e-4, "a perturbed gradient went unnoticed");
    }
}
