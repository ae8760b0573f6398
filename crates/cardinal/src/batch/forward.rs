//! Inference: the networks, then the unrolled solver, on rows of data (no gradients).

use cardinal_proj::lanes::{SoftDykstraLanes, LANES};
use rayon::prelude::*;

use super::Workspace;
use crate::data::CsrMatrix;
use crate::error::{Error, Result};
use crate::inference::{BlockScratch, Kernel, RowTape};
use crate::model::{first_layer_shift, Float, Model, Outputs, TwoLayer};

/// Rows per lockstep block in inference (the widths compared: docs/journal/2026-11-26-speed.md).
pub const INFER_LANES: usize = LANES;

impl<F: Float> Model<F> {
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
                let f1_count = self.config.inference.expected_f1_count;
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
                    if let Some(counts) = count_override {
                        *zr = counts[r];
                    }
                }
                for (j, (((y, u), z), rank)) in y
                    .chunks_mut(INFER_LANES * l)
                    .zip(u.chunks(INFER_LANES * l))
                    .zip(z.chunks(INFER_LANES))
                    .zip(rank.chunks_mut(INFER_LANES * l))
                    .enumerate()
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
                            un.forward_row(&u[r * l..(r + 1) * l], z[r], &mut tape)
                                .map_err(|source| Error::Row {
                                    row: rows[j * INFER_LANES + r],
                                    source,
                                })?;
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
                            un.forward_row(&ub[r * l..(r + 1) * l], zb[r], &mut tape)
                                .map_err(|source| Error::Row {
                                    row: rows[r0 + r],
                                    source,
                                })?;
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
                    un.forward_row(&u[r * l..(r + 1) * l], z[r], tape)
                        .map_err(|source| Error::Row {
                            row: rows[r],
                            source,
                        })?;
                    y.copy_from_slice(tape.y(steps, l));
                    rank.copy_from_slice(tape.ranking(l));
                    Ok(())
                })?;
        }
        out.z.extend_from_slice(&ws.z);
        out.unary.extend_from_slice(u);
        Ok(())
    }
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
