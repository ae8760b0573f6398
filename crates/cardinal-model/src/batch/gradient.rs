//! The training loss of a batch and its gradient: the weighted negative relaxed F1 of the
//! iterates, the optional unary BCE and supervised cardinality terms, and weight decay. With
//! per-example weights ([`LabelSets::weights`]) each example's terms are multiplied by its
//! weight.

use rayon::prelude::*;

use std::time::Instant;

use super::kernel::{RowResult, TrainOut, TrainRows};
use super::{Stage, Workspace};
use crate::batch::Float;
use crate::config::ZMode;
use crate::data::{CsrMatrix, LabelSets};
use crate::error::Result;
use crate::model::{c, ensure_shape, Model, Params, TwoLayer, TwoLayerGrad};

/// Loss terms of one batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchLoss {
    /// Weighted negative relaxed F1 over the iterates (summed or averaged over the batch).
    pub f1_loss: f64,
    /// Supervised cardinality cross-entropy term (already weighted).
    pub card_loss: f64,
    /// Weight-decay term.
    pub decay_loss: f64,
}

impl BatchLoss {
    /// The sum of the terms.
    pub fn total(&self) -> f64 {
        self.f1_loss + self.card_loss + self.decay_loss
    }
}

impl<F: Float> Model<F> {
    /// The weight of the loss on the iterate `y_t`.
    fn iterate_weight(&self, t: usize) -> F {
        // t is 1-based: the weight of the loss on y_t.
        let steps = self.config.inference.steps;
        c(self.config.loss.iterate_weights.weight(t, steps))
    }

    /// Loss of the batch `rows` and its gradient, written into `grad` (overwritten), with the
    /// weight-decay term included. The simple, complete form of [`Self::loss_and_sparse_grad`].
    pub fn loss_and_grad(
        &self,
        x: &CsrMatrix,
        labels: &LabelSets,
        rows: &[usize],
        ws: &mut Workspace<F>,
        grad: &mut Params<F>,
    ) -> Result<BatchLoss> {
        grad.w1.fill(F::zero());
        grad.c1.fill(F::zero());
        let mut loss = self.loss_and_sparse_grad(x, labels, rows, ws, grad)?;
        ws.grad_w1.densify(&self.standardizer, &mut grad.w1);
        ws.grad_c1.densify(&self.standardizer, &mut grad.c1);
        let wd = self.weight_decay();
        let mult = self.config.train.unary_weight_decay_mult;
        let mut decay = 0.0;
        grad.zip_mut(&self.params, |_, g, w, class| {
            let lambda = crate::model::decay_coefficient(class, wd, mult);
            if lambda == 0.0 {
                return;
            }
            let lf: F = c(lambda);
            let mut sq = F::zero();
            for (g, &w) in g.iter_mut().zip(w) {
                *g += lf * w;
                sq += w * w;
            }
            decay += 0.5 * lambda * sq.to_f64().unwrap();
        });
        loss.decay_loss = decay;
        Ok(loss)
    }

    /// Loss of the batch `rows` without weight decay, and its gradient in split form: every
    /// tensor of `grad` is overwritten except the first layers' `w1` and `c1`, which are left
    /// alone; their gradients are described by `ws.grad_w1` / `ws.grad_c1` (the rows the batch
    /// touches and the dense rank-one remainder). The optimiser consumes this form in one fused
    /// pass (`train::Adagrad::step_fused`).
    ///
    /// The stages: the networks forward, the unroll with its relaxed-F1 loss and backward
    /// pass (the kernel's), the unary BCE term, the cardinality net's output gradient, and the
    /// networks backward.
    pub fn loss_and_sparse_grad(
        &self,
        x: &CsrMatrix,
        labels: &LabelSets,
        rows: &[usize],
        ws: &mut Workspace<F>,
        grad: &mut Params<F>,
    ) -> Result<BatchLoss> {
        let start = Instant::now();
        self.networks_forward(x, rows, ws, true);
        ws.clock.add(Stage::NetsForward, start);
        let scales = LossScales::new(labels, rows, self.config.loss.sum_over_batch);
        let start = Instant::now();
        self.unroll_train(labels, rows, &scales, ws, grad)?;
        ws.clock.add(Stage::Unroll, start);
        let start = Instant::now();
        self.add_unary_bce(labels, rows, &scales, ws);
        let results = &ws.row_out[..rows.len()];
        let mut loss = BatchLoss {
            f1_loss: results.iter().map(|r| r.loss.to_f64().unwrap()).sum(),
            ..Default::default()
        };
        // η is a fixed hyper-parameter (the optimisers never update it); its gradient is
        // still reported, and checked against finite differences.
        grad.eta[0] = results.iter().map(|r| r.geta).sum();
        loss.card_loss = self.count_output_grad(labels, rows, &scales, ws);
        ws.clock.add(Stage::Loss, start);
        let start = Instant::now();
        self.networks_backward(x, rows, ws, grad);
        ws.clock.add(Stage::NetsBackward, start);
        Ok(loss)
    }

    /// The unroll of a training batch, by the kernel [`Self::unroll_kernel`] picks: each row's
    /// relaxed-F1 loss over the iterates, `∂ℓ/∂u` (into `ws.gu`), `∂ℓ/∂z` and `∂ℓ/∂η` (into
    /// `ws.row_out`), and the energy's gradients `grad.wp`, `grad.we`.
    fn unroll_train(
        &self,
        labels: &LabelSets,
        rows: &[usize],
        scales: &LossScales<F>,
        ws: &mut Workspace<F>,
        grad: &mut Params<F>,
    ) -> Result<()> {
        let (b, l, steps) = (rows.len(), self.n_labels(), self.config.inference.steps);
        ensure_shape(&mut ws.gu, b, l);
        ws.row_out.resize(b, RowResult::default());
        let projector = self.projector(true);
        let final_projector = self.final_projector();
        let wpt = self.params.wp.t().as_standard_layout().into_owned();
        let un = self.unroll(&wpt, &projector, final_projector.as_ref());
        let f1_weight: F = c(self.config.loss.f1_weight);
        let iterate_weights: Vec<F> = (1..=steps)
            .map(|t| self.iterate_weight(t) * scales.batch * f1_weight)
            .collect();
        let batch = TrainRows {
            l,
            u: ws.u.as_slice().unwrap(),
            z: &ws.z,
            labels,
            rows,
            iterate_weights: &iterate_weights,
            row_weights: scales.rows.as_deref(),
            wp: self.params.wp.view(),
        };
        let mut out = TrainOut {
            gu: ws.gu.as_slice_mut().unwrap(),
            results: &mut ws.row_out[..b],
            gwp: &mut grad.wp,
            gwe: &mut grad.we,
        };
        let kernel = self.unroll_kernel(ws.kernel, &mut ws.lanes, true);
        kernel.train(&un, &batch, &mut out, &mut ws.kernel_bufs, &ws.clock)
    }

    /// The optional unary BCE term `BCE(σ(u), y*)`, weighted, added to each row's loss and
    /// `∂ℓ/∂u`.
    fn add_unary_bce(
        &self,
        labels: &LabelSets,
        rows: &[usize],
        scales: &LossScales<F>,
        ws: &mut Workspace<F>,
    ) {
        let bce_w: F = c::<F>(self.config.loss.unary_bce_weight) * scales.batch;
        if bce_w <= F::zero() {
            return;
        }
        let l = self.n_labels();
        let u = ws.u.as_slice().unwrap();
        ws.gu
            .as_slice_mut()
            .unwrap()
            .par_chunks_mut(l)
            .zip(ws.row_out[..rows.len()].par_iter_mut())
            .enumerate()
            .for_each(|(r, (gu, res))| {
                let (u, gold) = (&u[r * l..(r + 1) * l], labels.row(rows[r]));
                res.loss += unary_bce(u, gold, scales.weigh(r, bce_w), gu);
            });
    }

    /// The cardinality net's output gradient (`ws.dlogits`): through `z` (in expectation
    /// mode) and the optional supervised cardinality cross-entropy, whose value it returns.
    fn count_output_grad(
        &self,
        labels: &LabelSets,
        rows: &[usize],
        scales: &LossScales<F>,
        ws: &mut Workspace<F>,
    ) -> f64 {
        let (b, k) = (rows.len(), self.counts.len());
        ensure_shape(&mut ws.dlogits, b, k);
        ws.dlogits.fill(F::zero());
        let card_w: F = c(self.config.loss.cardinality_weight);
        let (kmin, kmax) = (self.counts[0], self.counts[k - 1]);
        let expectation = self.config.model.z_mode == ZMode::Expectation;
        let mut card_loss = 0.0;
        for r in 0..b {
            let pr = ws.p.row(r);
            let mut dl = ws.dlogits.row_mut(r);
            if expectation {
                let gz = ws.row_out[r].gz;
                for j in 0..k {
                    dl[j] += pr[j] * (self.counts[j] - ws.z[r]) * gz;
                }
            }
            if card_w > F::zero() {
                let card_w = scales.weigh(r, card_w);
                let count: F = c(labels.count(rows[r]) as f64);
                let target = (count.max(kmin).min(kmax) - kmin).to_usize().unwrap();
                card_loss -= (card_w * scales.batch * pr[target].max(c(1e-30)).ln())
                    .to_f64()
                    .unwrap();
                for j in 0..k {
                    let onehot = if j == target { F::one() } else { F::zero() };
                    dl[j] += card_w * scales.batch * (pr[j] - onehot);
                }
            }
        }
        card_loss
    }

    /// The unary and the cardinality nets' backward passes side by side, from `ws.gu` and
    /// `ws.dlogits`.
    fn networks_backward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        ws: &mut Workspace<F>,
        grad: &mut Params<F>,
    ) {
        let p = &self.params;
        let stdz = &self.standardizer;
        let (unary, card) = (TwoLayer::unary(p), TwoLayer::card(p));
        let du = TwoLayerGrad {
            b1: &mut grad.b1,
            w2: &mut grad.w2,
            b2: &mut grad.b2,
            aux: &mut ws.grad_w1,
        };
        let dc = TwoLayerGrad {
            b1: &mut grad.cb1,
            w2: &mut grad.c2,
            b2: &mut grad.cb2,
            aux: &mut ws.grad_c1,
        };
        let dropout = self.dropout(true, ws.dropout_key);
        let clock = &ws.clock;
        let (gu, pre1, h1, dh) = (&ws.gu, &ws.pre1, &ws.h1, &mut ws.dh);
        let (dlogits, prec, hc, dhc) = (&ws.dlogits, &ws.prec, &ws.hc, &mut ws.dhc);
        rayon::join(
            || {
                clock.time(Stage::UnaryBackward, || {
                    unary.backward(x, rows, stdz, dropout, gu, pre1, h1, dh, du)
                })
            },
            || {
                clock.time(Stage::CountBackward, || {
                    card.backward(x, rows, stdz, None, dlogits, prec, hc, dhc, dc)
                })
            },
        );
    }
}

/// The scales of a batch's loss terms. With per-example weights ([`LabelSets::weights`]) each
/// row's terms are multiplied by its weight, and a mean over the batch divides by the weights'
/// sum (so that an integer weight is the row repeated). Without weights nothing is
/// multiplied: the same numbers as before weights existed.
struct LossScales<F> {
    /// Each row's weight, if the labels carry weights.
    rows: Option<Vec<F>>,
    /// `1`, `1 / rows` or `1 / Σ weights`: a sum or a mean over the batch.
    batch: F,
}

impl<F: Float> LossScales<F> {
    fn new(labels: &LabelSets, rows: &[usize], sum_over_batch: bool) -> Self {
        let weights = labels.weights.as_ref();
        let batch = match (sum_over_batch, weights) {
            (true, _) => F::one(),
            (false, None) => c(1.0 / rows.len() as f64),
            (false, Some(w)) => {
                let total: f64 = rows.iter().map(|&r| w[r]).sum();
                if total > 0.0 {
                    c(1.0 / total)
                } else {
                    F::zero()
                }
            }
        };
        let rows = weights.map(|w| rows.iter().map(|&r| c(w[r])).collect());
        Self { rows, batch }
    }

    /// Row `r`'s weight times `x`, or `x` itself without weights.
    #[inline]
    fn weigh(&self, r: usize, x: F) -> F {
        match &self.rows {
            Some(w) => x * w[r],
            None => x,
        }
    }
}

/// `BCE(σ(u), y*)` of one row summed over its labels, times `w`, with its gradient
/// `w (σ(u) − y*)` added to `gu`.
fn unary_bce<F: Float>(u: &[F], gold: &[u32], w: F, gu: &mut [F]) -> F {
    let mut loss = F::zero();
    for (&x, gu) in u.iter().zip(gu.iter_mut()) {
        // log(1 + e^{-|x|}) + max(x, 0) − x·y*, stably; σ(x) from the same e^{-|x|}
        let e = (-x.abs()).exp();
        loss += w * (e.ln_1p() + x.max(F::zero()));
        let sigma = if x >= F::zero() {
            F::one() / (F::one() + e)
        } else {
            e / (F::one() + e)
        };
        *gu += w * sigma;
    }
    for &g in gold {
        loss -= w * u[g as usize];
        gu[g as usize] -= w;
    }
    loss
}

/// The loss as a plain function of the parameters (what gradient checks need).
pub fn batch_loss<F: Float>(
    model: &Model<F>,
    x: &CsrMatrix,
    labels: &LabelSets,
    rows: &[usize],
    ws: &mut Workspace<F>,
) -> Result<f64> {
    let mut g = model.params.zeros_like();
    Ok(model.loss_and_grad(x, labels, rows, ws, &mut g)?.total())
}
