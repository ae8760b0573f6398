//! `br-logistic`: binary relevance with logistic regression, one linear classifier per label
//! on the standardised input, trained jointly (the losses are independent) with binary
//! cross-entropy, its L2 weight decay chosen on the dev split and its threshold tuned there.
//!
//! The weights live in the unary network's first layer of [`Params`] (`unary.w1`, `D × L`,
//! and `unary.b1`: the configuration's `model.hidden` is set to the label count), so
//! checkpoints, `eval` and `predict` work unchanged; the other tensors stay unused.

use ndarray::{Array1, Array2};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::BaselineConfig;
use cardinal::config::Config;
use cardinal::data::{CsrMatrix, Dataset, LabelSets};
use cardinal::engine::Trained;
use cardinal::engine::{Model, Outputs};
use cardinal::parts::sigmoid;
use cardinal::parts::{sparse_first_layer, sparse_first_layer_grad, Float, Params, Standardizer};
use cardinal::system::{Hooks, Pnc, Reads, Start, System};
use cardinal::{Error, Result};

use super::tuned::choose_on_dev;
use super::BatchObjective;
use cardinal::search::scaled_dev_fraction;

/// `config.system` of binary relevance with logistic regression.
pub const BR_LOGISTIC: &str = "br-logistic";

/// The weight decays tried on dev.
pub const WEIGHT_DECAYS: [f64; 3] = [1e-4, 1e-3, 1e-2];

/// The logits `x̃W1 + b1` of `rows` of `x` (`rows × L`).
fn logits<F: Float>(
    p: &Params<F>,
    x: &CsrMatrix,
    rows: &[usize],
    stdz: &Standardizer,
) -> Array2<F> {
    let mut pre = Array2::zeros((rows.len(), p.w1.ncols()));
    sparse_first_layer(
        x,
        rows,
        stdz,
        p.w1.view(),
        p.b1.as_slice().expect("contiguous"),
        pre.view_mut(),
    );
    pre
}

/// The mean over `rows` of the binary cross-entropy summed over labels, and its gradient in
/// `unary.w1` and `unary.b1` written into `grad` (every other tensor of `grad` set to 0).
pub fn bce_and_grad<F: Float>(
    p: &Params<F>,
    x: &CsrMatrix,
    labels: &LabelSets,
    rows: &[usize],
    stdz: &Standardizer,
    grad: &mut Params<F>,
) -> f64 {
    let pre = logits(p, x, rows, stdz);
    let scale = 1.0 / rows.len().max(1) as f64;
    let mut loss = 0.0;
    let mut dpre = pre.mapv(|a| sigmoid(a));
    for (r, &row) in rows.iter().enumerate() {
        let gold = labels.row(row);
        for (j, &a) in pre.row(r).iter().enumerate() {
            let a = a.to_f64().expect("finite");
            let on = gold.binary_search(&(j as u32)).is_ok();
            // log(1 + e^{-|a|}) + max(±a, 0): the stable form of −log σ(±a).
            let softplus = |t: f64| t.max(0.0) + (-t.abs()).exp().ln_1p();
            loss += if on { softplus(-a) } else { softplus(a) };
            if on {
                dpre[[r, j]] -= F::one();
            }
        }
    }
    dpre.mapv_inplace(|v| v * F::from(scale).expect("finite"));
    grad.visit_mut(|_, g, _| g.fill(F::zero()));
    let mut db = Array1::zeros(p.w1.ncols());
    sparse_first_layer_grad(x, rows, stdz, dpre.view(), &mut db, &mut grad.w1);
    grad.b1.assign(&db);
    loss * scale
}

/// The batch objective of [`super::fit`].
struct Logistic;

impl BatchObjective for Logistic {
    fn prepare(&mut self, _model: &mut Model<f32>, _train: &Dataset, _rows: &[usize]) {}

    fn loss_and_grad(
        &mut self,
        model: &Model<f32>,
        train: &Dataset,
        rows: &[usize],
        grad: &mut Params<f32>,
        _rng: &mut Xoshiro256PlusPlus,
    ) -> Result<f64> {
        Ok(bce_and_grad(
            &model.params,
            &train.features,
            &train.labels,
            rows,
            &model.standardizer,
            grad,
        ))
    }
}

/// `σ(x̃W1 + b1)` on `rows`; `z` is the expected count `Σ σ`.
pub fn predict_rows(model: &Model<f32>, x: &CsrMatrix, rows: &[usize]) -> Outputs<f32> {
    let pre = logits(&model.params, x, rows, &model.standardizer);
    let y: Vec<f32> = pre.iter().map(|&a| sigmoid(a)).collect();
    let l = pre.ncols().max(1);
    let z = y.chunks(l).map(|r| r.iter().sum()).collect();
    Outputs {
        y,
        z,
        unary: pre.iter().copied().collect(),
        ranking: Vec::new(),
    }
}

/// One configuration of the search: the user's seed and dev split, `model.hidden = L`,
/// AdaGrad 0.1, up to 50 epochs with the best dev epoch kept, the threshold tuned on dev, no
/// epochs on all of train afterwards (so that the dev choices stay honest).
fn candidate(base: &Config, n_rows: usize, n_labels: usize, weight_decay: f64) -> Config {
    let mut c = Config::paper();
    c.preset = BR_LOGISTIC.into();
    c.system = BR_LOGISTIC.into();
    c.seed = base.seed;
    c.train.split_seed = base.train.split_seed;
    c.train.dev_fold = base.train.dev_fold;
    c.train.dev_fraction = scaled_dev_fraction(base.train.dev_fraction, n_rows);
    c.model.hidden = n_labels;
    c.inference.steps = 0;
    c.train.weight_decay = weight_decay;
    c.train.unary_weight_decay_mult = 1.0;
    c.train.epochs = 50;
    c.train.full_epochs = 0;
    c.train.tune_threshold = true;
    BaselineConfig::edit(&mut c, |b| {
        b.keep_best = true;
        b.select_with_threshold_grid = true;
        b.dev_every = 1;
    });
    c
}

/// Binary relevance with logistic regression (see the module documentation).
pub struct BrLogistic;

impl System for BrLogistic {
    fn name(&self) -> &'static str {
        BR_LOGISTIC
    }

    fn about(&self) -> &'static str {
        "binary relevance: one logistic regression per label; not Predict and Constrain: no \
         count, no energy, no projection"
    }

    /// No field of the `baseline` section: its candidates set their own, and its inference reads none. The product sections are not refused:
    /// the search replaces them by its candidates', which is what a saved model of this
    /// system records and trains again from, and the default `predict` preset sets them.
    fn reads(&self) -> Reads {
        Pnc.reads()
    }

    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained> {
        let Start::Fresh(cfg) = start else {
            return Err(Error::Unsupported {
                system: BR_LOGISTIC.into(),
                what: "resume (it trains in one go, without checkpoints)".into(),
            });
        };
        let candidates: Vec<Config> = WEIGHT_DECAYS
            .iter()
            .map(|&wd| candidate(&cfg, train.n_rows(), train.n_labels(), wd))
            .collect();
        let budget = hooks.memory_budget;
        let mut trained = choose_on_dev(train, candidates, hooks, |c, on_event| {
            super::fit(train, c, &mut Logistic, on_event, budget)
        })?;
        // The candidate's `baseline` fields were its training loop's; this system reads none,
        // so the saved configuration, which trains again from the start, carries none.
        trained.model.config_mut().system_settings = Default::default();
        Ok(trained)
    }

    fn predict_networks(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        batch: usize,
    ) -> Result<Outputs<f32>> {
        let rows: Vec<usize> = (0..x.n_rows).collect();
        let mut out = Outputs::default();
        for chunk in rows.chunks(batch.max(1)) {
            let part = predict_rows(model, x, chunk);
            out.y.extend_from_slice(&part.y);
            out.z.extend_from_slice(&part.z);
            out.unary.extend_from_slice(&part.unary);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The gradient of the mean BCE in `unary.w1` and `unary.b1` against central differences
    /// in f64, with a non-trivial standardisation (so that the folded shift is exercised).
    #[test]
    fn bce_gradient_matches_finite_differences() {
        let (d, l) = (5, 3);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let p: Params<f64> = Params::glorot(d, l, l, 2, 3, 2, 0.005, &mut rng);
        let mut x = CsrMatrix::new(d);
        let mut y = LabelSets::new(l);
        for r in 0..6u32 {
            let idx: Vec<u32> = (0..d as u32).filter(|j| (j + r) % 3 != 0).collect();
            let vals: Vec<f32> = idx
                .iter()
                .map(|&j| 0.2 + 0.3 * j as f32 - 0.1 * r as f32)
                .collect();
            x.push_row(&idx, &vals);
            let lab: Vec<u32> = (0..l as u32).filter(|j| (j + r) % 2 == 0).collect();
            y.push_row(&lab);
        }
        let stdz = Standardizer::fit(&x);
        assert!(stdz.mean.iter().any(|&m| m != 0.0));
        let rows = [0, 1, 3, 5];
        let mut g = p.zeros_like();
        let loss = bce_and_grad(&p, &x, &y, &rows, &stdz, &mut g);
        assert!(loss > 0.0);
        let checked = crate::systems::tests::check_central_differences(
            &p,
            &g,
            &["unary.w1", "unary.b1"],
            1e-7,
            |q| bce_and_grad(q, &x, &y, &rows, &stdz, &mut q.zeros_like()),
        );
        assert_eq!(checked, d * l + l);
    }

    /// On data where each label is a linear function of the input, the trained system beats
    /// the empty prediction by far on its own training rows.
    #[test]
    fn it_learns_a_linear_problem() {
        let data = super::super::tests::toy(200, 4);
        let mut cfg = Config::paper();
        cfg.system = BR_LOGISTIC.into();
        let mut hooks = Hooks {
            on_event: &mut |_| {},
            after_epoch: &mut |_| Ok(()),
            wait: cardinal::runtime::WaitPolicy::Active,
            memory_budget: cardinal::runtime::MemoryBudget::default(),
            cancel: &std::sync::atomic::AtomicBool::new(false),
            search: None,
            forests: None,
        };
        let trained = BrLogistic
            .fit(&data, Start::Fresh(cfg), &mut hooks)
            .unwrap();
        let model = trained.model;
        assert_eq!(model.config().system, BR_LOGISTIC);
        let out = BrLogistic.predict(&model, &data.features, 64).unwrap();
        let rep = cardinal::eval::evaluate_outputs(&model, &out, &data.labels);
        assert!(rep.at_threshold.example_f1 > 0.8, "{:?}", rep.at_threshold);
    }
}
