//! The reference kernel behind [`UnrollKernel`]: one row at a time ([`Unroll::forward_row`],
//! [`Unroll::backward_row`]), rows spread over threads, any projection.

use ndarray::linalg::general_mat_mul;
use rayon::prelude::*;

use super::{InferRows, KernelBuffers, RowResult, TrainOut, TrainRows, UnitScratch, UnrollKernel};
use crate::batch::clock::{Stage, StageClock};
use crate::batch::Float;
use crate::error::{Error, Result};
use crate::inference::{RowTape, Unroll};
use crate::loss::soft_f1;
use crate::model::ensure_shape;

/// The per-row reference kernel.
pub(in crate::batch) struct RowKernel;

impl<F: Float> UnrollKernel<F> for RowKernel {
    #[cfg(any(test, feature = "test-support"))]
    fn infer(
        &self,
        un: &Unroll<'_, F>,
        batch: &InferRows<'_, F>,
        y: &mut [F],
        rank: &mut [F],
        bufs: &mut KernelBuffers<F>,
    ) -> Result<()> {
        let (l, n) = (batch.l, batch.z.len());
        if bufs.tapes.len() < n {
            bufs.tapes.resize_with(n, RowTape::default);
        }
        y.par_chunks_mut(l)
            .zip(rank.par_chunks_mut(l))
            .zip(bufs.tapes[..n].par_iter_mut())
            .enumerate()
            .try_for_each(|(r, ((y, rank), tape))| infer_row(un, batch, r, y, rank, tape))
    }

    fn infer_serial(
        &self,
        un: &Unroll<'_, F>,
        batch: &InferRows<'_, F>,
        y: &mut [F],
        rank: &mut [F],
        scratch: &mut UnitScratch<F>,
    ) -> Result<()> {
        infer_rows_serial(un, batch, y, rank, &mut scratch.tape)
    }

    fn train(
        &self,
        un: &Unroll<'_, F>,
        batch: &TrainRows<'_, F>,
        out: &mut TrainOut<'_, F>,
        bufs: &mut KernelBuffers<F>,
        clock: &StageClock,
    ) -> Result<()> {
        let (b, l, e, steps) = (batch.z.len(), batch.l, un.e(), un.steps);
        // At least one step's room per row: rayon cannot split into empty chunks (steps = 0,
        // the MLP baseline, leaves these buffers zero).
        let (sl, em) = (steps.max(1), e.max(1));
        ensure_shape(&mut bufs.ggs, b * sl, l);
        ensure_shape(&mut bufs.masks, b * sl, em);
        if steps == 0 {
            bufs.ggs.fill(F::zero());
            bufs.masks.fill(F::zero());
        }
        if bufs.tapes.len() < b {
            bufs.tapes.resize_with(b, RowTape::default);
        }
        out.gu
            .par_chunks_mut(l)
            .zip(bufs.ggs.as_slice_mut().unwrap().par_chunks_mut(sl * l))
            .zip(bufs.masks.as_slice_mut().unwrap().par_chunks_mut(sl * em))
            .zip(bufs.tapes[..b].par_iter_mut())
            .zip(out.results.par_iter_mut())
            .enumerate()
            .try_for_each(|(r, ((((gu, ggs), masks), tape), res))| -> Result<()> {
                *res = train_row(un, batch, r, gu, ggs, masks, tape)?;
                Ok(())
            })?;
        if e > 0 {
            clock.time(Stage::EnergyGrad, || energy_grads(un, batch, out, bufs));
        }
        Ok(())
    }
}

/// Rows of `batch` one after the other through the row kernel, with one tape.
pub(super) fn infer_rows_serial<F: Float>(
    un: &Unroll<'_, F>,
    batch: &InferRows<'_, F>,
    y: &mut [F],
    rank: &mut [F],
    tape: &mut RowTape<F>,
) -> Result<()> {
    let l = batch.l;
    for (r, (y, rank)) in y
        .chunks_exact_mut(l)
        .zip(rank.chunks_exact_mut(l))
        .enumerate()
    {
        infer_row(un, batch, r, y, rank, tape)?;
    }
    Ok(())
}

/// Row `r` of `batch`: `y_T` into `y`, the ranking scores into `rank`.
fn infer_row<F: Float>(
    un: &Unroll<'_, F>,
    batch: &InferRows<'_, F>,
    r: usize,
    y: &mut [F],
    rank: &mut [F],
    tape: &mut RowTape<F>,
) -> Result<()> {
    let l = batch.l;
    un.forward_row(&batch.u[r * l..(r + 1) * l], batch.z[r], tape)
        .map_err(|source| Error::Row {
            row: batch.rows[r],
            source,
        })?;
    y.copy_from_slice(tape.y(un.steps, l));
    rank.copy_from_slice(tape.ranking(l));
    Ok(())
}

/// Row `r` of `batch` forward, its loss `−Σ_t w_t F1(y_t)` and backward: `∂ℓ/∂u` into `gu`,
/// the adjoints of `g_t` into `ggs` and the energy masks into `masks`.
fn train_row<F: Float>(
    un: &Unroll<'_, F>,
    batch: &TrainRows<'_, F>,
    r: usize,
    gu: &mut [F],
    ggs: &mut [F],
    masks: &mut [F],
    tape: &mut RowTape<F>,
) -> Result<RowResult<F>> {
    let (l, e, steps) = (batch.l, un.e(), un.steps);
    un.forward_row(&batch.u[r * l..(r + 1) * l], batch.z[r], tape)?;
    let gold = batch.gold(r);
    // ∂ℓ/∂y_t for every iterate, built in `spare` and consumed by backward_row.
    let mut loss = F::zero();
    let mut gys = std::mem::take(&mut tape.spare);
    gys.clear();
    gys.resize(steps * l, F::zero());
    for t in 1..=steps {
        let w = match batch.row_weights {
            Some(rw) => batch.iterate_weights[t - 1] * rw[r],
            None => batch.iterate_weights[t - 1],
        };
        let f1 = soft_f1(tape.y(t, l), gold, Some((&mut gys[(t - 1) * l..t * l], -w)));
        loss -= w * f1;
    }
    let (gz, geta) = un.backward_row(tape, &gys, gu, ggs);
    tape.spare = gys;
    masks[..steps * e].copy_from_slice(&tape.masks[..steps * e]);
    Ok(RowResult { loss, gz, geta })
}

/// The energy's parameter gradients from every row's adjoints and masks, two GEMMs in a fixed
/// order: `∂Wp = Σ ḡg (w2 ⊙ m)ᵀ`, `∂w2 = Σ (Wpᵀ ḡg) ⊙ m` over all rows and steps.
fn energy_grads<F: Float>(
    un: &Unroll<'_, F>,
    batch: &TrainRows<'_, F>,
    out: &mut TrainOut<'_, F>,
    bufs: &mut KernelBuffers<F>,
) {
    let (rows, e) = (bufs.masks.nrows(), un.e());
    ensure_shape(&mut bufs.energy_s, rows, e);
    bufs.energy_s.assign(&bufs.masks);
    bufs.energy_s *= &ndarray::ArrayView1::from(un.we);
    general_mat_mul(
        F::one(),
        &bufs.ggs.t(),
        &bufs.energy_s,
        F::zero(),
        &mut *out.gwp,
    );
    ensure_shape(&mut bufs.energy_proj, rows, e);
    general_mat_mul(
        F::one(),
        &bufs.ggs,
        &batch.wp,
        F::zero(),
        &mut bufs.energy_proj,
    );
    bufs.energy_proj *= &bufs.masks;
    out.gwe.fill(F::zero());
    for row in bufs.energy_proj.outer_iter() {
        *out.gwe += &row;
    }
}
