//! The lockstep kernel behind [`UnrollKernel`]: fixed blocks of rows, one row per SIMD lane
//! ([`Unroll::forward_block`] for inference; [`Unroll::forward_block_tape`],
//! [`Unroll::backward_block`] and [`Unroll::energy_block`] for training), blocks spread over
//! threads. Soft Dykstra steps only ([`Kernel::choose`](crate::inference::Kernel::choose)).
//!
//! The blocks are fixed (rows `0..W`, `W..2W`, ...), so the numbers are the same for any thread
//! count. A block that fails (invalid input) is rerun by the row kernel, only so that the error
//! names the row and its own problem: in inference that block, in training the whole batch.

use cardinal_proj::lanes::SoftDykstraLanes;
use rayon::prelude::*;

use super::row::infer_rows_serial;
use super::{
    InferRows, KernelBuffers, RowKernel, RowResult, TrainOut, TrainRows, UnitScratch, UnrollKernel,
    INFER_LANES, TRAIN_LANES,
};
use crate::batch::clock::{Stage, StageClock};
use crate::batch::Float;
use crate::error::Result;
use crate::inference::{BlockScratch, BlockTape, RowTape, Unroll};

/// The lockstep kernel, with the operator of its soft Dykstra steps (the rounds of the
/// unroll's projector, over its labels).
pub(in crate::batch) struct LockstepKernel<'a> {
    pub(in crate::batch) lanes: &'a SoftDykstraLanes,
}

impl<F: Float> UnrollKernel<F> for LockstepKernel<'_> {
    #[cfg(any(test, feature = "test-support"))]
    fn infer(
        &self,
        un: &Unroll<'_, F>,
        batch: &InferRows<'_, F>,
        y: &mut [F],
        rank: &mut [F],
        bufs: &mut KernelBuffers<F>,
    ) -> Result<()> {
        let (l, nb) = (batch.l, batch.z.len().div_ceil(INFER_LANES));
        if bufs.blocks.len() < nb {
            bufs.blocks.resize_with(nb, BlockScratch::default);
        }
        y.par_chunks_mut(INFER_LANES * l)
            .zip(rank.par_chunks_mut(INFER_LANES * l))
            .zip(bufs.blocks.par_iter_mut())
            .enumerate()
            .try_for_each(|(bi, ((y, rank), scratch))| {
                let block = batch.slice(bi * INFER_LANES, y.len() / l);
                self.infer_block(un, &block, y, rank, scratch, None)
            })
    }

    fn infer_serial(
        &self,
        un: &Unroll<'_, F>,
        batch: &InferRows<'_, F>,
        y: &mut [F],
        rank: &mut [F],
        scratch: &mut UnitScratch<F>,
    ) -> Result<()> {
        let l = batch.l;
        for (bi, (y, rank)) in y
            .chunks_mut(INFER_LANES * l)
            .zip(rank.chunks_mut(INFER_LANES * l))
            .enumerate()
        {
            let block = batch.slice(bi * INFER_LANES, y.len() / l);
            let (block_scratch, tape) = (&mut scratch.block, Some(&mut scratch.tape));
            self.infer_block(un, &block, y, rank, block_scratch, tape)?;
        }
        Ok(())
    }

    fn train(
        &self,
        un: &Unroll<'_, F>,
        batch: &TrainRows<'_, F>,
        out: &mut TrainOut<'_, F>,
        bufs: &mut KernelBuffers<F>,
        clock: &StageClock,
    ) -> Result<()> {
        let (b, l) = (batch.z.len(), batch.l);
        let nb = b.div_ceil(TRAIN_LANES);
        if bufs.block_tapes.len() < nb {
            bufs.block_tapes.resize_with(nb, BlockTape::default);
        }
        // Every block runs (no early exit), then the batch is judged as a whole.
        let ok = out
            .gu
            .par_chunks_mut(TRAIN_LANES * l)
            .zip(bufs.block_tapes[..nb].par_iter_mut())
            .zip(out.results.par_chunks_mut(TRAIN_LANES))
            .enumerate()
            .map(|(bi, ((gu, bt), res))| {
                self.train_block(un, batch, bi * TRAIN_LANES, gu, bt, res, clock)
            })
            .collect::<Vec<bool>>()
            .into_iter()
            .all(|ok| ok);
        if !ok {
            return RowKernel.train(un, batch, out, bufs, clock);
        }
        // The blocks' energy gradients added in block order.
        out.gwp.fill(F::zero());
        out.gwe.fill(F::zero());
        for bt in &bufs.block_tapes[..nb] {
            *out.gwp += &bt.gwp;
            for (g, &x) in out.gwe.iter_mut().zip(&bt.gwe) {
                *g += x;
            }
        }
        Ok(())
    }
}

impl LockstepKernel<'_> {
    /// One inference block; if it fails, its rows one by one through the row kernel (on
    /// `tape`, or a new one).
    fn infer_block<F: Float>(
        &self,
        un: &Unroll<'_, F>,
        block: &InferRows<'_, F>,
        y: &mut [F],
        rank: &mut [F],
        scratch: &mut BlockScratch<F, INFER_LANES>,
        tape: Option<&mut RowTape<F>>,
    ) -> Result<()> {
        match F::forward_block(un, self.lanes, block.u, block.z, y, rank, scratch) {
            Ok(()) => Ok(()),
            Err(_) => match tape {
                Some(tape) => infer_rows_serial(un, block, y, rank, tape),
                None => infer_rows_serial(un, block, y, rank, &mut RowTape::default()),
            },
        }
    }

    /// One training block of rows `r0..`: forward with its tape and loss, the per-example
    /// weights, backward, the block's energy gradients, and each row's results. False if the
    /// forward pass met invalid input.
    fn train_block<F: Float>(
        &self,
        un: &Unroll<'_, F>,
        batch: &TrainRows<'_, F>,
        r0: usize,
        gu: &mut [F],
        bt: &mut BlockTape<F, TRAIN_LANES>,
        res: &mut [RowResult<F>],
        clock: &StageClock,
    ) -> bool {
        let (l, n) = (batch.l, res.len());
        let (ub, zb) = (&batch.u[r0 * l..(r0 + n) * l], &batch.z[r0..r0 + n]);
        let forward = clock.time(Stage::UnrollForward, || {
            let gold = |r| batch.gold(r0 + r);
            F::forward_block_tape(un, self.lanes, ub, zb, &gold, batch.iterate_weights, bt)
        });
        if forward.is_err() {
            return false;
        }
        if let Some(w) = batch.row_weights {
            bt.scale_rows(&w[r0..r0 + n]);
        }
        clock.time(Stage::UnrollBackward, || {
            F::backward_block(un, self.lanes, bt)
        });
        clock.time(Stage::EnergyGrad, || un.energy_block(bt));
        for (r, res) in res.iter_mut().enumerate() {
            bt.write_gu(r, &mut gu[r * l..(r + 1) * l]);
            let (gz, geta) = bt.grads(r);
            *res = RowResult {
                loss: bt.loss(r),
                gz,
                geta,
            };
        }
        true
    }
}
