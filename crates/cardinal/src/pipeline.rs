//! The whole model on a batch: networks, unrolled inference, the loss and its gradient.

use cardinal_proj::lanes::{SoftDykstraLanes, LANES};
use cardinal_proj::{AnyProjector, Method};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

use crate::config::{Config, IterateWeights, ZMode};
use crate::data::{CsrMatrix, LabelSets};
use crate::error::{Error, Result};
use crate::inference::{soft_f1, BlockScratch, BlockTape, Kernel, RowTape, Unroll};
use crate::model::{
    c, first_layer_row_dispatch, first_layer_shift, sparse_first_layer_backward, Decay,
    FirstLayerGrad, Float, Params, Standardizer,
};

/// A trained or initialised model: parameters plus everything needed to apply them.
#[derive(Debug, Clone)]
pub struct Model<F: Float> {
    pub config: Config,
    pub params: Params<F>,
    pub standardizer: Standardizer,
    /// The counts the cardinality network chooses among (`K` values).
    pub counts: Vec<F>,
    /// Mean label count on the training data (the constant baseline of the count predictor).
    pub train_mean_cardinality: f64,
}

/// Per-row outputs of a forward pass.
#[derive(Debug, Clone, Default)]
pub struct Outputs<F> {
    /// Last iterates `y_T`, `n × L` row-major.
    pub y: Vec<F>,
    /// Predicted counts `z`, one per row.
    pub z: Vec<F>,
    /// Unary scores `u(x)`, `n × L`.
    pub unary: Vec<F>,
    /// Scores that rank the labels, `n × L`: the last ascent step's point before its
    /// projection (the order of `y_T`, without its ties where entries meet 0 or 1; see
    /// `RowTape::ranking`). Empty for systems that do not keep them; see
    /// [`Outputs::ranking_scores`].
    pub ranking: Vec<F>,
}

impl<F> Outputs<F> {
    /// The scores to rank labels by (precision@k): [`Outputs::ranking`], else `y`.
    pub fn ranking_scores(&self) -> &[F] {
        if self.ranking.len() == self.y.len() {
            &self.ranking
        } else {
            &self.y
        }
    }
}

impl<F: Copy> Outputs<F> {
    /// Makes `ranking` cover every row already in `y` (rows without ranking scores rank by
    /// `y`, as [`Outputs::ranking_scores`] would), so that appended rows can extend both.
    fn align_ranking(&mut self) {
        if self.ranking.len() != self.y.len() {
            self.ranking.clone_from(&self.y);
        }
    }
}

/// Reusable buffers of one batch (no allocation once grown).
#[derive(Default)]
pub struct Workspace<F: Float> {
    pre1: Array2<F>,
    h1: Array2<F>,
    u: Array2<F>,
    prec: Array2<F>,
    hc: Array2<F>,
    p: Array2<F>,
    z: Vec<F>,
    tapes: Vec<RowTape<F>>,
    /// Lockstep inference scratch, one per block of `INFER_LANES` rows.
    blocks: Vec<BlockScratch<F, INFER_LANES>>,
    /// Per-thread scratch of [`Model::forward_blocks`].
    block_work: Vec<std::sync::Mutex<BlockWork<F>>>,
    /// The training unroll's lockstep operator and its `(rounds, labels)`.
    lanes: Option<((usize, usize), SoftDykstraLanes)>,
    /// Lockstep training tapes, one per block of `TRAIN_LANES` rows.
    block_tapes: Vec<BlockTape<F, TRAIN_LANES>>,
    /// The unary and cardinality first layers' standardisation shifts, while
    /// [`Model::forward_batched`] runs (the weights cannot change meanwhile).
    shifts: Option<[Vec<F>; 2]>,
    /// Runs every pass with this unroll kernel instead of the one [`Kernel::choose`] picks
    /// (e.g. [`Kernel::Row`], the reference, to compare the kernels); the lockstep kernel is
    /// honoured only where it applies (soft Dykstra steps).
    pub kernel: Option<Kernel>,
    /// Key of the dropout masks of the next training batch (see [`dropout_keep`]); set by the
    /// trainer, one per batch, so that masks are reproducible and independent of threads.
    pub dropout_key: u64,
    /// Inference only: the count `z` of each row of the data (indexed by its row number)
    /// instead of `h(x)`'s, e.g. the gold counts, to measure what a perfect count predictor
    /// would give.
    pub count_override: Option<Vec<F>>,
    gu: Array2<F>,
    ggs: Array2<F>,
    masks: Array2<F>,
    row_out: Vec<RowResult<F>>,
    energy_s: Array2<F>,
    energy_proj: Array2<F>,
    dh: Array2<F>,
    dhc: Array2<F>,
    dlogits: Array2<F>,
    /// Structure of the first layers' gradients of the last [`Model::loss_and_sparse_grad`].
    pub grad_w1: FirstLayerGrad<F>,
    pub grad_c1: FirstLayerGrad<F>,
}

/// One thread's buffers for a unit of inference rows (see [`Model::forward_blocks`]).
#[derive(Default)]
struct BlockWork<F: Float> {
    pre: Vec<F>,
    hidden: Vec<F>,
    prec: Vec<F>,
    hc: Vec<F>,
    p: Vec<F>,
    scratch: BlockScratch<F, INFER_LANES>,
}

#[derive(Debug, Clone, Copy, Default)]
struct RowResult<F> {
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
    pub fn total(&self) -> f64 {
        self.f1_loss + self.card_loss + self.decay_loss
    }
}

impl<F: Float> Model<F> {
    pub fn n_features(&self) -> usize {
        self.params.w1.nrows()
    }
    pub fn n_labels(&self) -> usize {
        self.params.w2.ncols()
    }

    fn projector(&self, training: bool) -> AnyProjector {
        let inf = &self.config.inference;
        let method: Method = if training {
            inf.train_projection
        } else {
            inf.test_projection
        };
        AnyProjector::new(method, inf.rounds, inf.fp_iters).with_eps(inf.smooth_eps)
    }

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

    /// Networks forward for `rows` of `x`: fills `u`, `p` and `z` in the workspace.
    fn networks_forward(&self, x: &CsrMatrix, rows: &[usize], ws: &mut Workspace<F>, train: bool) {
        let p = &self.params;
        let b = rows.len();
        let stdz = &self.standardizer;
        let (shift_u, shift_c) = match &ws.shifts {
            Some([u, c]) => (Some(u.as_slice()), Some(c.as_slice())),
            None => (None, None),
        };
        let dropout = self.dropout(train, ws.dropout_key);
        let (unary, card) = (TwoLayer::unary(p), TwoLayer::card(p));
        // The two networks side by side (each also splits its rows over threads).
        let (pre1, h1, u) = (&mut ws.pre1, &mut ws.h1, &mut ws.u);
        let (prec, hc, pc) = (&mut ws.prec, &mut ws.hc, &mut ws.p);
        rayon::join(
            || unary.forward(x, rows, stdz, shift_u, dropout, pre1, h1, u),
            || card.forward(x, rows, stdz, shift_c, None, prec, hc, pc),
        );
        ws.z.clear();
        for row in ws.p.outer_iter_mut() {
            ws.z.push(self.count_of(row));
        }
        if let (false, Some(counts)) = (train, &ws.count_override) {
            for (z, &r) in ws.z.iter_mut().zip(rows) {
                *z = counts[r];
            }
        }
        if ws.tapes.len() < b {
            ws.tapes.resize_with(b, RowTape::default);
        }
    }

    /// Softmax of the cardinality logits `row` in place, and the count they give.
    fn count_of(&self, mut row: ndarray::ArrayViewMut1<F>) -> F {
        let m = row.fold(F::neg_infinity(), |m, &v| m.max(v));
        row.mapv_inplace(|v| (v - m).exp());
        let s = row.sum();
        row.mapv_inplace(|v| v / s);
        match self.config.model.z_mode {
            ZMode::Expectation => row.iter().zip(&self.counts).map(|(&p, &k)| p * k).sum(),
            ZMode::Argmax => {
                let mut best = 0;
                for (i, &v) in row.iter().enumerate() {
                    if v > row[best] {
                        best = i;
                    }
                }
                self.counts[best]
            }
        }
    }

    /// The weight-decay coefficient in effect: `train.weight_decay`, scaled down for label-rich
    /// data when `train.decay_reference_cardinality` is set.
    pub fn weight_decay(&self) -> f64 {
        let t = &self.config.train;
        let scale = t
            .decay_reference_cardinality
            .filter(|_| self.train_mean_cardinality > 0.0)
            .map_or(1.0, |r| (r / self.train_mean_cardinality).min(1.0));
        t.weight_decay * scale
    }

    /// The unary hidden layer's dropout while training, if any.
    fn dropout(&self, train: bool, key: u64) -> Option<Dropout> {
        let rate = self.config.model.dropout;
        (train && rate > 0.0).then_some(Dropout { rate, key })
    }

    /// The optional final projection of `y_T`.
    fn final_projector(&self) -> Option<AnyProjector> {
        let inf = &self.config.inference;
        inf.final_projection
            .map(|m| AnyProjector::new(m, inf.rounds, inf.fp_iters).with_eps(inf.smooth_eps))
    }

    fn unroll<'a>(
        &'a self,
        wpt: &'a Array2<F>,
        projector: &'a AnyProjector,
        final_projector: Option<&'a AnyProjector>,
    ) -> Unroll<'a, F> {
        let inf = &self.config.inference;
        Unroll {
            wpt: wpt.view(),
            we: self.params.we.as_slice().unwrap(),
            eta: self.params.eta[0],
            momentum: c(inf.momentum),
            steps: inf.steps,
            projector,
            final_projector,
        }
    }

    /// The unroll kernel of a pass: the workspace's override, else [`Kernel::choose`].
    fn kernel(&self, ws: &Workspace<F>, training: bool) -> Kernel {
        let inf = &self.config.inference;
        let method = if training {
            inf.train_projection
        } else {
            inf.test_projection
        };
        match ws.kernel {
            Some(Kernel::Row) => Kernel::Row,
            _ => Kernel::choose(method, inf.steps, self.n_labels(), training),
        }
    }

    /// Inference over `rows` of `x` in batches of `batch` rows; appends to `out`. The same
    /// numbers as [`Self::forward`] per batch, with the per-model work done once.
    pub fn forward_batched(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        batch: usize,
        ws: &mut Workspace<F>,
        out: &mut Outputs<F>,
    ) -> Result<()> {
        check_count_override(ws, x)?;
        let p = &self.params;
        let stdz = &self.standardizer;
        ws.shifts = Some([
            first_layer_shift(stdz, p.w1.view()),
            first_layer_shift(stdz, p.c1.view()),
        ]);
        let l = self.n_labels();
        if self.kernel(ws, false) == Kernel::Lockstep {
            let result = self.forward_blocks(x, rows, batch, ws, out);
            ws.shifts = None;
            return result;
        }
        out.y.reserve(rows.len() * l);
        out.unary.reserve(rows.len() * l);
        out.z.reserve(rows.len());
        let result = rows
            .chunks(batch.max(1))
            .try_for_each(|chunk| self.forward(x, chunk, ws, out));
        ws.shifts = None;
        result
    }

    /// The lockstep part of [`Self::forward_batched`]: the rows are cut into units, each taken
    /// from the input through the networks and then, block of `INFER_LANES` rows by block,
    /// through the unroll by one thread, units in parallel (nothing serial between the
    /// networks and the unroll). A unit is a whole batch, or, when there are fewer batches
    /// than threads, a run of whole blocks of one: the blocks are those [`Self::forward`] forms
    /// batch by batch, and every row's numbers are its.
    fn forward_blocks(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        batch: usize,
        ws: &mut Workspace<F>,
        out: &mut Outputs<F>,
    ) -> Result<()> {
        let [shift_u, shift_c] = ws.shifts.as_ref().expect("shifts set by forward_batched");
        let (l, n) = (self.n_labels(), rows.len());
        let steps = self.config.inference.steps;
        let threads = rayon::current_num_threads().max(1);
        // Units of whole batches (one thread: the order of a batch-by-batch pass, each first
        // layer's weights reused from cache over a batch), cut into runs of whole blocks when
        // there are fewer batches than threads.
        let per = n
            .div_ceil(threads)
            .next_multiple_of(INFER_LANES)
            .max(INFER_LANES);
        let mut units = Vec::new();
        for chunk in rows.chunks(batch.max(1)) {
            units.extend(chunk.chunks(per));
        }
        let grow = |v: &mut Vec<F>, by: usize| {
            if v.is_empty() {
                // Zeroed by the allocator, not by a serial fill.
                *v = vec![F::zero(); by];
            } else {
                v.resize(v.len() + by, F::zero());
            }
        };
        out.align_ranking();
        let (y0, u0, z0) = (out.y.len(), out.unary.len(), out.z.len());
        grow(&mut out.y, n * l);
        grow(&mut out.unary, n * l);
        grow(&mut out.z, n);
        grow(&mut out.ranking, n * l);
        let mut parts = Vec::with_capacity(units.len());
        let (mut ys, mut us, mut zs) = (&mut out.y[y0..], &mut out.unary[u0..], &mut out.z[z0..]);
        let mut rs = &mut out.ranking[y0..];
        for b in &units {
            let (y, yr) = std::mem::take(&mut ys).split_at_mut(b.len() * l);
            let (u, ur) = std::mem::take(&mut us).split_at_mut(b.len() * l);
            let (z, zr) = std::mem::take(&mut zs).split_at_mut(b.len());
            let (rank, rr) = std::mem::take(&mut rs).split_at_mut(b.len() * l);
            (ys, us, zs, rs) = (yr, ur, zr, rr);
            parts.push((*b, y, u, z, rank));
        }
        let projector = self.projector(false);
        let final_projector = self.final_projector();
        let wpt = self.params.wp.t().as_standard_layout().into_owned();
        let un = self.unroll(&wpt, &projector, final_projector.as_ref());
        let lanes = SoftDykstraLanes::new(self.config.inference.rounds, l);
        // One scratch per worker thread, reused across its units.
        if ws.block_work.len() < threads {
            ws.block_work.resize_with(threads, Default::default);
        }
        let work = &ws.block_work;
        let (unary, card) = (TwoLayer::unary(&self.params), TwoLayer::card(&self.params));
        let (h, hc, k) = (
            self.params.w1.ncols(),
            self.params.c1.ncols(),
            self.counts.len(),
        );
        let stdz = &self.standardizer;
        let count_override = ws.count_override.as_deref();
        parts
            .into_par_iter()
            .try_for_each(|(rows, y, u, z, rank)| -> Result<()> {
                let slot = rayon::current_thread_index().unwrap_or(0) % threads;
                let mut guard = work[slot].lock().unwrap_or_else(|e| e.into_inner());
                let w = &mut *guard;
                let nb = rows.len();
                for (v, len) in [
                    (&mut w.pre, nb * h),
                    (&mut w.hidden, nb * h),
                    (&mut w.prec, nb * hc),
                    (&mut w.hc, nb * hc),
                    (&mut w.p, nb * k),
                ] {
                    v.resize(len, F::zero());
                }
                unary.forward_rows(x, rows, stdz, shift_u, None, &mut w.pre, &mut w.hidden, u);
                card.forward_rows(
                    x,
                    rows,
                    stdz,
                    shift_c,
                    None,
                    &mut w.prec,
                    &mut w.hc,
                    &mut w.p,
                );
                for ((zr, pr), &r) in z.iter_mut().zip(w.p.chunks_exact_mut(k)).zip(rows) {
                    *zr = self.count_of(ndarray::ArrayViewMut1::from(pr));
                    if let Some(counts) = count_override {
                        *zr = counts[r];
                    }
                }
                for (((y, u), z), rank) in y
                    .chunks_mut(INFER_LANES * l)
                    .zip(u.chunks(INFER_LANES * l))
                    .zip(z.chunks(INFER_LANES))
                    .zip(rank.chunks_mut(INFER_LANES * l))
                {
                    // A block that fails is rerun row by row for the row's own error.
                    if un
                        .forward_block(&lanes, u, z, y, rank, &mut w.scratch)
                        .is_err()
                    {
                        let mut tape = RowTape::default();
                        for (r, (yr, rr)) in y
                            .chunks_exact_mut(l)
                            .zip(rank.chunks_exact_mut(l))
                            .enumerate()
                        {
                            un.forward_row(&u[r * l..(r + 1) * l], z[r], &mut tape)?;
                            yr.copy_from_slice(tape.y(steps, l));
                            rr.copy_from_slice(tape.ranking(l));
                        }
                    }
                }
                Ok(())
            })
    }

    /// Inference (no gradients) for `rows` of `x`; appends to `out`.
    pub fn forward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        ws: &mut Workspace<F>,
        out: &mut Outputs<F>,
    ) -> Result<()> {
        check_count_override(ws, x)?;
        self.networks_forward(x, rows, ws, false);
        let projector = self.projector(false);
        let final_projector = self.final_projector();
        let wpt = self.params.wp.t().as_standard_layout().into_owned();
        let un = self.unroll(&wpt, &projector, final_projector.as_ref());
        let l = self.n_labels();
        let steps = self.config.inference.steps;
        out.align_ranking();
        let start = out.y.len();
        out.y.resize(start + rows.len() * l, F::zero());
        out.ranking.resize(start + rows.len() * l, F::zero());
        let rank = &mut out.ranking[start..];
        let u = ws.u.as_slice().unwrap();
        let z = &ws.z;
        let inf = &self.config.inference;
        if self.kernel(ws, false) == Kernel::Lockstep {
            // Blocks of INFER_LANES rows in lockstep (fixed blocks: the same numbers for any thread
            // count); a block that fails is rerun row by row for the row's own error.
            let lanes = SoftDykstraLanes::new(inf.rounds, l);
            if ws.blocks.len() < rows.len().div_ceil(INFER_LANES) {
                ws.blocks
                    .resize_with(rows.len().div_ceil(INFER_LANES), BlockScratch::default);
            }
            out.y[start..]
                .par_chunks_mut(INFER_LANES * l)
                .zip(rank.par_chunks_mut(INFER_LANES * l))
                .zip(ws.blocks.par_iter_mut())
                .enumerate()
                .try_for_each(|(b, ((y, rank), scratch))| -> Result<()> {
                    let r0 = b * INFER_LANES;
                    let n = y.len() / l;
                    let (ub, zb) = (&u[r0 * l..(r0 + n) * l], &z[r0..r0 + n]);
                    if un.forward_block(&lanes, ub, zb, y, rank, scratch).is_err() {
                        let mut tape = RowTape::default();
                        for (r, (yr, rr)) in y
                            .chunks_exact_mut(l)
                            .zip(rank.chunks_exact_mut(l))
                            .enumerate()
                        {
                            un.forward_row(&ub[r * l..(r + 1) * l], zb[r], &mut tape)?;
                            yr.copy_from_slice(tape.y(steps, l));
                            rr.copy_from_slice(tape.ranking(l));
                        }
                    }
                    Ok(())
                })?;
        } else {
            out.y[start..]
                .par_chunks_mut(l)
                .zip(rank.par_chunks_mut(l))
                .zip(ws.tapes[..rows.len()].par_iter_mut())
                .enumerate()
                .try_for_each(|(r, ((y, rank), tape))| -> Result<()> {
                    un.forward_row(&u[r * l..(r + 1) * l], z[r], tape)?;
                    y.copy_from_slice(tape.y(steps, l));
                    rank.copy_from_slice(tape.ranking(l));
                    Ok(())
                })?;
        }
        out.z.extend_from_slice(&ws.z);
        out.unary.extend_from_slice(u);
        Ok(())
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
        self.networks_forward(x, rows, ws, true);
        let cfg = &self.config;
        let (b, l, e, steps) = (
            rows.len(),
            self.n_labels(),
            self.params.wp.ncols(),
            cfg.inference.steps,
        );
        let batch_scale: F = if cfg.loss.sum_over_batch {
            F::one()
        } else {
            c(1.0 / b as f64)
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
                let w = weights[t - 1];
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
                    if un
                        .forward_block_tape(lanes, ub, zb, |r| gold(r0 + r), &weights, bt)
                        .is_err()
                    {
                        return false;
                    }
                    un.backward_block(lanes, bt);
                    un.energy_block(bt);
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
        let (gu, pre1, h1, dh) = (&ws.gu, &ws.pre1, &ws.h1, &mut ws.dh);
        let (dlogits, prec, hc, dhc) = (&ws.dlogits, &ws.prec, &ws.hc, &mut ws.dhc);
        rayon::join(
            || unary.backward(x, rows, stdz, dropout, gu, pre1, h1, dh, du),
            || card.backward(x, rows, stdz, None, dlogits, prec, hc, dhc, dc),
        );

        Ok(loss)
    }
}

/// A standardised sparse input → ReLU hidden layer → linear output (the unary and the
/// cardinality networks).
struct TwoLayer<'a, F> {
    w1: &'a Array2<F>,
    b1: &'a Array1<F>,
    w2: &'a Array2<F>,
    b2: &'a Array1<F>,
}

/// Where [`TwoLayer::backward`] writes (`W1`'s gradient in split form in `aux`, see
/// `FirstLayerGrad`).
struct TwoLayerGrad<'a, F> {
    b1: &'a mut Array1<F>,
    w2: &'a mut Array2<F>,
    b2: &'a mut Array1<F>,
    aux: &'a mut FirstLayerGrad<F>,
}

impl<'a, F: Float> TwoLayer<'a, F> {
    /// The unary network `x → H → L`.
    fn unary(p: &'a Params<F>) -> Self {
        Self {
            w1: &p.w1,
            b1: &p.b1,
            w2: &p.w2,
            b2: &p.b2,
        }
    }

    /// The cardinality network `x → Hc → K`.
    fn card(p: &'a Params<F>) -> Self {
        Self {
            w1: &p.c1,
            b1: &p.cb1,
            w2: &p.c2,
            b2: &p.cb2,
        }
    }

    /// `pre = x̃W1 + b1`, `hidden = relu(pre)`, `out = hidden·W2 + b2` for `rows` of `x`;
    /// `shift` is [`first_layer_shift`] of `W1` if the caller has it.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        stdz: &Standardizer,
        shift: Option<&[F]>,
        dropout: Option<Dropout>,
        pre: &mut Array2<F>,
        hidden: &mut Array2<F>,
        out: &mut Array2<F>,
    ) {
        let b = rows.len();
        ensure_shape(pre, b, self.w1.ncols());
        ensure_shape(hidden, b, self.w1.ncols());
        ensure_shape(out, b, self.w2.ncols());
        let computed;
        let shift = match shift {
            Some(s) => s,
            None => {
                computed = first_layer_shift(stdz, self.w1.view());
                &computed
            }
        };
        // Row chunks in parallel, one per thread, each through the first layer, the ReLU,
        // dropout and its own output GEMM: every output is computed as in a whole-batch pass
        // (a GEMM's entry does not depend on how the rows are split), so the numbers do not
        // depend on the thread count.
        let (hdim, odim) = (self.w1.ncols(), self.w2.ncols());
        let chunk = row_chunk(b);
        pre.as_slice_mut()
            .unwrap()
            .par_chunks_mut(chunk * hdim)
            .zip(hidden.as_slice_mut().unwrap().par_chunks_mut(chunk * hdim))
            .zip(out.as_slice_mut().unwrap().par_chunks_mut(chunk * odim))
            .zip(rows.par_chunks(chunk))
            .for_each(|(((pre, hid), out), rows)| {
                self.forward_rows(x, rows, stdz, shift, dropout, pre, hid, out)
            });
    }

    /// [`Self::forward`] on `rows` in this thread, into row-major slices `pre`, `hidden`
    /// (`rows × H`) and `out` (`rows × O`).
    #[allow(clippy::too_many_arguments)]
    fn forward_rows(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        stdz: &Standardizer,
        shift: &[F],
        dropout: Option<Dropout>,
        pre: &mut [F],
        hidden: &mut [F],
        out: &mut [F],
    ) {
        let (hdim, odim) = (self.w1.ncols(), self.w2.ncols());
        let (w1, b1) = (self.w1.view(), self.b1.as_slice().unwrap());
        for ((p, hr), &r) in pre
            .chunks_exact_mut(hdim)
            .zip(hidden.chunks_exact_mut(hdim))
            .zip(rows)
        {
            let (idx, val) = x.row(r);
            first_layer_row_dispatch(p, b1, shift, idx, val, &stdz.scale, &w1);
            for (hv, &pv) in hr.iter_mut().zip(p.iter()) {
                *hv = pv.max(F::zero());
            }
            if let Some(d) = dropout {
                d.apply_row(r, hr);
            }
        }
        let n = rows.len();
        let hid = ArrayView2::from_shape((n, hdim), &*hidden).unwrap();
        let mut out = ArrayViewMut2::from_shape((n, odim), out).unwrap();
        out.assign(&self.b2.broadcast((n, odim)).unwrap());
        general_mat_mul(F::one(), &hid, self.w2, F::one(), &mut out);
    }

    /// Backward from `dout = ∂ℓ/∂out`; `dh` is scratch for `∂ℓ/∂pre`.
    fn backward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        stdz: &Standardizer,
        dropout: Option<Dropout>,
        dout: &Array2<F>,
        pre: &Array2<F>,
        hidden: &Array2<F>,
        dh: &mut Array2<F>,
        grad: TwoLayerGrad<'_, F>,
    ) {
        // ∂W2 and ∂pre are two GEMMs of the same size: one per thread.
        let (w2, dw2, db2) = (self.w2, grad.w2, grad.b2);
        ensure_shape(dh, rows.len(), self.w1.ncols());
        rayon::join(
            || {
                db2.assign(&dout.sum_axis(Axis(0)));
                general_mat_mul(F::one(), &hidden.t(), dout, F::zero(), dw2);
            },
            || {
                general_mat_mul(F::one(), dout, &w2.t(), F::zero(), dh);
                dh.zip_mut_with(pre, |d, &a| {
                    if a <= F::zero() {
                        *d = F::zero()
                    }
                });
                if let Some(d) = dropout {
                    d.apply(rows, dh);
                }
            },
        );
        sparse_first_layer_backward(x, rows, stdz, dh.view(), grad.b1, grad.aux);
    }
}

/// Rows per parallel chunk of a batch of `b` rows in the networks: one chunk per thread, but
/// not so few rows that repacking the second layer per chunk dominates.
fn row_chunk(b: usize) -> usize {
    b.div_ceil(rayon::current_num_threads())
        .max(16)
        .min(b.max(1))
}

/// Rows per lockstep block in inference (64 measured 6 % faster than 32 on Bibtex).
pub const INFER_LANES: usize = LANES;

/// Rows per lockstep block in training (each lane's arithmetic is the same for any width; 32
/// lanes train as fast as 64 at one thread on Bibtex, 16 are 15 % slower).
pub const TRAIN_LANES: usize = 32;

pub use crate::inference::LOCKSTEP_MAX_LABELS;

/// Inverted dropout on a hidden layer: unit `j` of data row `r` is kept with probability
/// `1 − rate` and scaled by `1/(1 − rate)`. The mask is a hash of `(key, r, j)`: the same for
/// the forward and the backward pass, for any batch composition and thread count, and on resume.
#[derive(Debug, Clone, Copy)]
pub struct Dropout {
    /// Probability of dropping a unit, in `[0, 1)`.
    pub rate: f64,
    /// The batch's key ([`dropout_key`]).
    pub key: u64,
}

impl Dropout {
    /// Multiplies `h` (rows of the batch `rows` × units) by the mask and the scale.
    pub fn apply<F: Float>(&self, rows: &[usize], h: &mut Array2<F>) {
        let scale: F = c(1.0 / (1.0 - self.rate));
        // Keep iff the hash's top 53 bits, as a fraction of 2^53, are at least `rate`.
        let cut = (self.rate * (1u64 << 53) as f64) as u64;
        for (mut hr, &r) in h.outer_iter_mut().zip(rows) {
            self.apply_row_with(r, hr.as_slice_mut().expect("contiguous"), scale, cut);
        }
    }

    /// [`Self::apply`] on one hidden row `h` of data row `r`.
    pub fn apply_row<F: Float>(&self, r: usize, h: &mut [F]) {
        let scale: F = c(1.0 / (1.0 - self.rate));
        let cut = (self.rate * (1u64 << 53) as f64) as u64;
        self.apply_row_with(r, h, scale, cut);
    }

    fn apply_row_with<F: Float>(&self, r: usize, h: &mut [F], scale: F, cut: u64) {
        for (j, v) in h.iter_mut().enumerate() {
            let keep = dropout_hash(self.key, r as u64, j as u64) >> 11 >= cut;
            *v = if keep { *v * scale } else { F::zero() };
        }
    }
}

/// SplitMix64 finaliser over the three words (a counter-based generator: no state).
fn dropout_hash(key: u64, row: u64, unit: u64) -> u64 {
    let mut z =
        key ^ row.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ unit.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The dropout key of one training batch.
pub fn dropout_key(seed: u64, phase: u8, epoch: usize, batch: usize) -> u64 {
    dropout_hash(
        seed ^ ((phase as u64) << 56),
        epoch as u64,
        (batch as u64) ^ 0x5EED,
    )
}

/// The weight-decay coefficient of a tensor of decay class `class`.
pub fn decay_coefficient(class: Decay, wd: f64, unary_mult: f64) -> f64 {
    match class {
        Decay::None => 0.0,
        Decay::Unary => wd * unary_mult,
        Decay::Other => wd,
    }
}

fn ensure_shape<F: Float>(a: &mut Array2<F>, rows: usize, cols: usize) {
    if a.dim() != (rows, cols) {
        *a = Array2::zeros((rows, cols));
    }
}

/// Builds the count values `min..=max`.
pub fn count_values<F: Float>(min: usize, max: usize) -> Vec<F> {
    (min..=max).map(|k| c(k as f64)).collect()
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

/// Checks that a model fits a dataset's dimensions.
pub fn check_dims<F: Float>(
    model: &Model<F>,
    n_features: usize,
    n_labels: usize,
    what: &str,
) -> Result<()> {
    if model.n_features() != n_features || model.n_labels() != n_labels {
        return Err(Error::Mismatch(format!(
            "{what} has {n_features} features and {n_labels} labels, but the model expects {} features and {} labels",
            model.n_features(),
            model.n_labels()
        )));
    }
    Ok(())
}

/// A count override must give one count per row of the data it is used on.
fn check_count_override<F: Float>(ws: &Workspace<F>, x: &CsrMatrix) -> Result<()> {
    match &ws.count_override {
        Some(counts) if counts.len() != x.n_rows => Err(Error::Mismatch(format!(
            "count override has {} entries for {} rows of data",
            counts.len(),
            x.n_rows
        ))),
        _ => Ok(()),
    }
}
