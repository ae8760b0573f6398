//! The training loss of a batch and its gradient: the weighted negative relaxed F1 of the
//! iterates, the optional unary BCE and supervised cardinality terms, and weight decay. With
//! per-example weights ([`LabelSets::weights`]) each example's terms are multiplied by its
//! weight.

use cardinal_proj::lanes::SoftDykstraLanes;
use ndarray::linalg::general_mat_mul;
use rayon::prelude::*;

use std::time::Instant;

use super::{Stage, Workspace};
use crate::config::{IterateWeights, ZMode};
use crate::data::{CsrMatrix, LabelSets};
use crate::error::Result;
use crate::inference::{BlockTape, Kernel, RowTape};
use crate::loss::soft_f1;
use crate::model::{
    c, decay_coefficient, ensure_shape, Float, Model, Params, TwoLayer, TwoLayerGrad,
};

/// Rows per lockstep block in training (each lane's arithmetic is the same for any width; the
/// widths compared: docs/journal/2026-11-26-speed.md).
pub const TRAIN_LANES: usize = 32;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RowResult<F> {
    loss: F,
    gz: F,
    geta: F,
}

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
        let tt = steps as f64;
        let w = match self.config.loss.iterate_weights {
            IterateWeights::Authors => 1.0 / (tt * (tt - t as f64 + 2.0)),
            IterateWeights::Last => f64::from(u8::from(t == steps)),
        };
        c(w)
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
            let lambda = decay_coefficient(class, wd, mult);
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
        let cfg = &self.config;
        let (b, l, e, steps) = (
            rows.len(),
            self.n_labels(),
            self.params.wp.ncols(),
            cfg.inference.steps,
        );
        // Per-example loss weights (`LabelSets::weights`): each row's terms are multiplied by
        // its weight, and a mean over the batch divides by the weights' sum (so that an
        // integer weight is the row repeated). Without weights nothing is multiplied: the
        // same numbers as before weights existed.
        let row_w: Option<Vec<F>> = labels
            .weights
            .as_ref()
            .map(|w| rows.iter().map(|&r| c(w[r])).collect());
        let batch_scale: F = match (cfg.loss.sum_over_batch, &labels.weights) {
            (true, _) => F::one(),
            (false, None) => c(1.0 / b as f64),
            (false, Some(w)) => {
                let total: f64 = rows.iter().map(|&r| w[r]).sum();
                if total > 0.0 {
                    c(1.0 / total)
                } else {
                    F::zero()
                }
            }
        };
        // Row r's weight times `x`, or `x` itself without weights.
        let weigh = |r: usize, x: F| -> F {
            match &row_w {
                Some(w) => x * w[r],
                None => x,
            }
        };
        ensure_shape(&mut ws.gu, b, l);
        // At least one step's room per row: rayon cannot split into empty chunks (steps = 0,
        // the MLP baseline, leaves these buffers zero).
        let (sl, em) = (steps.max(1), e.max(1));
        ensure_shape(&mut ws.ggs, b * sl, l);
        ensure_shape(&mut ws.masks, b * sl, em);
        if steps == 0 {
            ws.ggs.fill(F::zero());
            ws.masks.fill(F::zero());
        }
        ws.row_out.resize(b, RowResult::default());
        let projector = self.projector(true);
        let final_projector = self.final_projector();
        let wpt = self.params.wp.t().as_standard_layout().into_owned();
        let un = self.unroll(&wpt, &projector, final_projector.as_ref());
        let bce_w: F = c::<F>(cfg.loss.unary_bce_weight) * batch_scale;
        let weights: Vec<F> = (1..=steps)
            .map(|t| self.iterate_weight(t) * batch_scale * c::<F>(cfg.loss.f1_weight))
            .collect();
        let u = ws.u.as_slice().unwrap();
        let z = &ws.z;
        let gold = |r: usize| labels.row(rows[r]);
        // BCE(σ(u), y*) summed over labels, added to row r's `gu`: ∂/∂u = σ(u) − y*.
        let bce = |r: usize, gu: &mut [F]| -> F {
            let mut loss = F::zero();
            if bce_w > F::zero() {
                let bce_w = weigh(r, bce_w);
                let urow = &u[r * l..(r + 1) * l];
                for i in 0..l {
                    let x = urow[i];
                    // log(1 + e^{-|x|}) + max(x, 0) − x·y*, stably; σ(x) from the same e^{-|x|}
                    let e = (-x.abs()).exp();
                    loss += bce_w * (e.ln_1p() + x.max(F::zero()));
                    let sigma = if x >= F::zero() {
                        F::one() / (F::one() + e)
                    } else {
                        e / (F::one() + e)
                    };
                    gu[i] += bce_w * sigma;
                }
                for &g in gold(r) {
                    loss -= bce_w * urow[g as usize];
                    gu[g as usize] -= bce_w;
                }
            }
            loss
        };
        // One row through the per-row unroll (the reference path).
        let row_pass = |r: usize,
                        gu: &mut [F],
                        ggs: &mut [F],
                        masks: &mut [F],
                        tape: &mut RowTape<F>|
         -> Result<RowResult<F>> {
            un.forward_row(&u[r * l..(r + 1) * l], z[r], tape)?;
            let gold = gold(r);
            // ∂ℓ/∂y_t for every iterate, built in `spare` and consumed by backward_row.
            let mut loss = F::zero();
            let mut gys = std::mem::take(&mut tape.spare);
            gys.clear();
            gys.resize(steps * l, F::zero());
            for t in 1..=steps {
                let w = weigh(r, weights[t - 1]);
                let f1 = soft_f1(tape.y(t, l), gold, Some((&mut gys[(t - 1) * l..t * l], -w)));
                loss -= w * f1;
            }
            let (gz, geta) = un.backward_row(tape, &gys, gu, ggs);
            tape.spare = gys;
            loss += bce(r, gu);
            masks[..steps * e].copy_from_slice(&tape.masks[..steps * e]);
            Ok(RowResult { loss, gz, geta })
        };
        let inf = &cfg.inference;
        let start = Instant::now();
        let mut lockstep = self.kernel(ws, true) == Kernel::Lockstep;
        let nb = b.div_ceil(TRAIN_LANES);
        if lockstep {
            // Blocks of TRAIN_LANES rows in lockstep (fixed blocks: the same numbers for any
            // thread count; 32 rows, so that a batch of 50 gives two threads a block each),
            // each also forming its energy gradients. If a block fails (invalid input), the
            // whole batch is rerun row by row below for the row's own error.
            // The sorting network depends only on the label count: built once per workspace.
            let lanes = match ws.lanes.take() {
                Some((key, lanes)) if key == (inf.rounds, l) => lanes,
                _ => SoftDykstraLanes::new(inf.rounds, l),
            };
            let lanes = &ws.lanes.insert(((inf.rounds, l), lanes)).1;
            if ws.block_tapes.len() < nb {
                ws.block_tapes.resize_with(nb, BlockTape::default);
            }
            let clock = &ws.clock;
            lockstep = ws
                .gu
                .as_slice_mut()
                .unwrap()
                .par_chunks_mut(TRAIN_LANES * l)
                .zip(ws.block_tapes[..nb].par_iter_mut())
                .zip(ws.row_out[..b].par_chunks_mut(TRAIN_LANES))
                .enumerate()
                .map(|(bi, ((gu, bt), res))| {
                    let r0 = bi * TRAIN_LANES;
                    let n = res.len();
                    let (ub, zb) = (&u[r0 * l..(r0 + n) * l], &z[r0..r0 + n]);
                    let forward = clock.time(Stage::UnrollForward, || {
                        un.forward_block_tape(lanes, ub, zb, |r| gold(r0 + r), &weights, bt)
                    });
                    if forward.is_err() {
                        return false;
                    }
                    if let Some(w) = &row_w {
                        bt.scale_rows(&w[r0..r0 + n]);
                    }
                    clock.time(Stage::UnrollBackward, || un.backward_block(lanes, bt));
                    clock.time(Stage::EnergyGrad, || un.energy_block(bt));
                    for (r, res) in res.iter_mut().enumerate() {
                        let gu = &mut gu[r * l..(r + 1) * l];
                        bt.write_gu(r, gu);
                        let loss = bt.loss(r) + bce(r0 + r, gu);
                        let (gz, geta) = bt.grads(r);
                        *res = RowResult { loss, gz, geta };
                    }
                    true
                })
                .collect::<Vec<bool>>()
                .into_iter()
                .all(|ok| ok);
        }
        if !lockstep {
            ws.gu
                .as_slice_mut()
                .unwrap()
                .par_chunks_mut(l)
                .zip(ws.ggs.as_slice_mut().unwrap().par_chunks_mut(sl * l))
                .zip(ws.masks.as_slice_mut().unwrap().par_chunks_mut(sl * em))
                .zip(ws.tapes[..b].par_iter_mut())
                .zip(ws.row_out.par_iter_mut())
                .enumerate()
                .try_for_each(|(r, ((((gu, ggs), masks), tape), res))| -> Result<()> {
                    *res = row_pass(r, gu, ggs, masks, tape)?;
                    Ok(())
                })?;
        }
        ws.clock.add(Stage::Unroll, start);
        let start = Instant::now();

        let p = &self.params;
        let mut loss = BatchLoss {
            f1_loss: ws.row_out[..b]
                .iter()
                .map(|r| r.loss.to_f64().unwrap())
                .sum(),
            ..Default::default()
        };

        // Energy: ∂Wp = Σ ḡg (w2 ⊙ m)ᵀ, ∂w2 = Σ (Wpᵀ ḡg) ⊙ m, over all rows and steps (the
        // lockstep blocks' sums added in block order).
        if lockstep {
            grad.wp.fill(F::zero());
            grad.we.fill(F::zero());
            for bt in &ws.block_tapes[..nb] {
                grad.wp += &bt.gwp;
                for (g, &x) in grad.we.iter_mut().zip(&bt.gwe) {
                    *g += x;
                }
            }
        } else if e > 0 {
            ensure_shape(&mut ws.energy_s, b * sl, e);
            ws.energy_s.assign(&ws.masks);
            ws.energy_s *= &p.we;
            general_mat_mul(F::one(), &ws.ggs.t(), &ws.energy_s, F::zero(), &mut grad.wp);
            ensure_shape(&mut ws.energy_proj, b * sl, e);
            general_mat_mul(F::one(), &ws.ggs, &p.wp, F::zero(), &mut ws.energy_proj);
            ws.energy_proj *= &ws.masks;
            grad.we.fill(F::zero());
            for row in ws.energy_proj.outer_iter() {
                grad.we += &row;
            }
        }
        // η is a fixed hyper-parameter (the optimisers never update it); its gradient is
        // still reported, and checked against finite differences.
        grad.eta[0] = ws.row_out[..b].iter().map(|r| r.geta).sum();

        // Cardinality net's output gradient: through z (expectation) and the supervised term.
        let k = self.counts.len();
        ensure_shape(&mut ws.dlogits, b, k);
        ws.dlogits.fill(F::zero());
        let dlogits = &mut ws.dlogits;
        let card_w: F = c(cfg.loss.cardinality_weight);
        let (kmin, kmax) = (self.counts[0], self.counts[k - 1]);
        for r in 0..b {
            let pr = ws.p.row(r);
            let mut dl = dlogits.row_mut(r);
            if cfg.model.z_mode == ZMode::Expectation {
                let gz = ws.row_out[r].gz;
                for j in 0..k {
                    dl[j] += pr[j] * (self.counts[j] - ws.z[r]) * gz;
                }
            }
            if card_w > F::zero() {
                let card_w = weigh(r, card_w);
                let count: F = c(labels.count(rows[r]) as f64);
                let target = (count.max(kmin).min(kmax) - kmin).to_usize().unwrap();
                loss.card_loss -= (card_w * batch_scale * pr[target].max(c(1e-30)).ln())
                    .to_f64()
                    .unwrap();
                for j in 0..k {
                    let onehot = if j == target { F::one() } else { F::zero() };
                    dl[j] += card_w * batch_scale * (pr[j] - onehot);
                }
            }
        }

        // The unary and the cardinality nets' backward passes side by side.
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
        clock.add(Stage::Loss, start);
        let start = Instant::now();
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
        clock.add(Stage::NetsBackward, start);

        Ok(loss)
    }
}

/// Gradient checks need the loss as a plain function of the parameters.
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
