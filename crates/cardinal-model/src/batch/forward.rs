//! Inference: the networks, then the unrolled solver, on rows of data (no gradients).

use rayon::prelude::*;

use super::kernel::{InferRows, UnrollKernel, INFER_LANES};
use super::workspace::BlockWork;
use super::Workspace;
use crate::batch::Float;
use crate::data::CsrMatrix;
use crate::error::{Error, Result};
use crate::model::{first_layer_shift, Model, Outputs, TwoLayer};

impl<F: Float> Model<F> {
    /// Inference over `rows` of `x` in batches of `batch` rows; appends to `out`. The same
    /// numbers as `Self::forward` per batch, with the per-model work done once.
    pub fn forward_batched(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        batch: usize,
        ws: &mut Workspace<F>,
        out: &mut Outputs<F>,
    ) -> Result<()> {
        check_count_override(ws, x)?;
        check_unary_prior(ws, x, self.n_labels())?;
        let p = &self.params;
        let stdz = &self.standardizer;
        ws.shifts = Some([
            first_layer_shift(stdz, p.w1.view()),
            first_layer_shift(stdz, p.c1.view()),
        ]);
        let result = self.forward_blocks(x, rows, batch, ws, out);
        ws.shifts = None;
        result
    }

    /// The body of [`Self::forward_batched`]: the rows are cut into units, each taken from the
    /// input through the networks and then through the unroll by one thread
    /// ([`UnrollKernel::infer_serial`]: the lockstep kernel block of `INFER_LANES` rows by
    /// block), units in parallel (nothing serial between the networks and the unroll). A unit
    /// is a whole batch, or, when there are fewer batches than threads, a run of whole blocks
    /// of one: the blocks are those `Self::forward` forms batch by batch, and every row's
    /// numbers are its.
    fn forward_blocks(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        batch: usize,
        ws: &mut Workspace<F>,
        out: &mut Outputs<F>,
    ) -> Result<()> {
        let threads = rayon::current_num_threads().max(1);
        let units = inference_units(rows, batch, threads);
        let parts = unit_outputs(out, &units, self.n_labels());
        let projector = self.projector(false);
        let final_projector = self.final_projector();
        let wpt = self.params.wp.t().as_standard_layout().into_owned();
        let un = self.unroll(&wpt, &projector, final_projector.as_ref());
        // One scratch per worker thread, reused across its units.
        if ws.block_work.len() < threads {
            ws.block_work.resize_with(threads, Default::default);
        }
        let Workspace {
            shifts,
            block_work,
            lanes,
            kernel,
            count_override,
            unary_prior,
            ..
        } = ws;
        let shifts = shifts.as_ref().expect("shifts set by forward_batched");
        let kernel = self.unroll_kernel(*kernel, lanes, false);
        let unit = UnitRun {
            x,
            shifts,
            count_override: count_override.as_deref(),
            unary_prior: unary_prior.as_deref(),
            un: &un,
            kernel: kernel.as_ref(),
        };
        parts.into_par_iter().try_for_each(|part| {
            let slot = rayon::current_thread_index().unwrap_or(0) % threads;
            let mut guard = block_work[slot].lock().unwrap_or_else(|e| e.into_inner());
            self.unit_forward(&unit, part, &mut guard)
        })
    }

    /// One unit of [`Self::forward_blocks`] in this thread: the networks and the counts, then
    /// the unroll.
    fn unit_forward(
        &self,
        run: &UnitRun<'_, F>,
        part: UnitOut<'_, F>,
        w: &mut BlockWork<F>,
    ) -> Result<()> {
        let UnitOut {
            rows,
            y,
            u,
            z,
            rank,
        } = part;
        self.unit_networks(run, rows, u, z, w);
        let batch = InferRows {
            l: self.n_labels(),
            u,
            z,
            rows,
        };
        run.kernel
            .infer_serial(run.un, &batch, y, rank, &mut w.scratch)
    }

    /// The networks on a unit's `rows` in this thread: the unary scores into `u`, the counts
    /// into `z` (as `Self::forward` computes them).
    fn unit_networks(
        &self,
        run: &UnitRun<'_, F>,
        rows: &[usize],
        u: &mut [F],
        z: &mut [F],
        w: &mut BlockWork<F>,
    ) {
        let (x, stdz, [shift_u, shift_c]) = (run.x, &self.standardizer, run.shifts);
        let (unary, card) = (TwoLayer::unary(&self.params), TwoLayer::card(&self.params));
        let (h, hc, k) = (
            self.params.w1.ncols(),
            self.params.c1.ncols(),
            self.counts.len(),
        );
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
        if let Some(prior) = run.unary_prior {
            super::stages::add_prior(u, prior, rows);
        }
        let (prec, hidden_c, p) = (&mut w.prec, &mut w.hc, &mut w.p);
        card.forward_rows(x, rows, stdz, shift_c, None, prec, hidden_c, p);
        let (l, f1_count) = (self.n_labels(), self.config.inference.expected_f1_count);
        for (i, ((zr, pr), &r)) in z
            .iter_mut()
            .zip(w.p.chunks_exact_mut(k))
            .zip(rows)
            .enumerate()
        {
            *zr = self.count_of(ndarray::ArrayViewMut1::from(&mut *pr), true);
            if f1_count {
                *zr = self.expected_f1_z(pr, &u[i * l..(i + 1) * l]);
            }
            if let Some(counts) = run.count_override {
                *zr = counts[r];
            }
        }
    }

    /// Inference (no gradients) for `rows` of `x`; appends to `out`.
    #[cfg(any(test, feature = "test-support"))]
    pub fn forward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        ws: &mut Workspace<F>,
        out: &mut Outputs<F>,
    ) -> Result<()> {
        check_count_override(ws, x)?;
        check_unary_prior(ws, x, self.n_labels())?;
        self.networks_forward(x, rows, ws, false);
        let projector = self.projector(false);
        let final_projector = self.final_projector();
        let wpt = self.params.wp.t().as_standard_layout().into_owned();
        let un = self.unroll(&wpt, &projector, final_projector.as_ref());
        let l = self.n_labels();
        out.align_ranking();
        let start = out.y.len();
        out.y.resize(start + rows.len() * l, F::zero());
        out.ranking.resize(start + rows.len() * l, F::zero());
        let batch = InferRows {
            l,
            u: ws.u.as_slice().unwrap(),
            z: &ws.z,
            rows,
        };
        let (y, rank) = (&mut out.y[start..], &mut out.ranking[start..]);
        let kernel = self.unroll_kernel(ws.kernel, &mut ws.lanes, false);
        kernel.infer(&un, &batch, y, rank, &mut ws.kernel_bufs)?;
        out.z.extend_from_slice(&ws.z);
        out.unary.extend_from_slice(batch.u);
        Ok(())
    }
}

/// What every unit of [`Model::forward_blocks`] shares.
struct UnitRun<'a, F: Float> {
    x: &'a CsrMatrix,
    /// The unary and cardinality first layers' standardisation shifts.
    shifts: &'a [Vec<F>; 2],
    count_override: Option<&'a [F]>,
    unary_prior: Option<&'a [F]>,
    un: &'a crate::inference::Unroll<'a, F>,
    kernel: &'a dyn UnrollKernel<F>,
}

/// A unit's rows and its slices of the outputs.
struct UnitOut<'a, F> {
    rows: &'a [usize],
    y: &'a mut [F],
    u: &'a mut [F],
    z: &'a mut [F],
    rank: &'a mut [F],
}

/// The units of [`Model::forward_blocks`]: whole batches (one thread: the order of a
/// batch-by-batch pass, each first layer's weights reused from cache over a batch), cut into
/// runs of whole blocks when there are fewer batches than threads.
fn inference_units(rows: &[usize], batch: usize, threads: usize) -> Vec<&[usize]> {
    let per = rows
        .len()
        .div_ceil(threads)
        .next_multiple_of(INFER_LANES)
        .max(INFER_LANES);
    let mut units = Vec::new();
    for chunk in rows.chunks(batch.max(1)) {
        units.extend(chunk.chunks(per));
    }
    units
}

/// Grows `out` by the units' rows and cuts the new part into one [`UnitOut`] per unit.
fn unit_outputs<'a, F: Float>(
    out: &'a mut Outputs<F>,
    units: &[&'a [usize]],
    l: usize,
) -> Vec<UnitOut<'a, F>> {
    let n: usize = units.iter().map(|u| u.len()).sum();
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
    for &rows in units {
        let (y, yr) = std::mem::take(&mut ys).split_at_mut(rows.len() * l);
        let (u, ur) = std::mem::take(&mut us).split_at_mut(rows.len() * l);
        let (z, zr) = std::mem::take(&mut zs).split_at_mut(rows.len());
        let (rank, rr) = std::mem::take(&mut rs).split_at_mut(rows.len() * l);
        (ys, us, zs, rs) = (yr, ur, zr, rr);
        parts.push(UnitOut {
            rows,
            y,
            u,
            z,
            rank,
        });
    }
    parts
}

/// A count override must give one count per row of the data it is used on.
fn check_count_override<F: Float>(ws: &Workspace<F>, x: &CsrMatrix) -> Result<()> {
    match &ws.count_override {
        Some(counts) if counts.len() != x.n_rows => Err(Error::Shape {
            what: "the count override".into(),
            found: format!("{} entries", counts.len()),
            expected: format!("one per row of the data, {}", x.n_rows),
        }),
        _ => Ok(()),
    }
}

/// A unary prior must give one row of `l` scores per row of the data it is used on.
pub(crate) fn check_unary_prior<F: Float>(
    ws: &Workspace<F>,
    x: &CsrMatrix,
    l: usize,
) -> Result<()> {
    match &ws.unary_prior {
        Some(prior) if prior.len() != x.n_rows * l => Err(Error::Shape {
            what: "the unary prior".into(),
            found: format!("{} entries", prior.len()),
            expected: format!("{l} per row of the data, {}", x.n_rows * l),
        }),
        _ => Ok(()),
    }
}
