//! The batch passes' scalar type, [`Float`]: a model [`Scalar`] whose lockstep kernels, at the
//! widths the passes run them, are compiled once, in this crate.
//!
//! Why: the kernels are generic, and at `opt-level` 2 rustc shares no generic code between
//! crates, so each crate that trained or predicted with a `Model<f32>` compiled them all again,
//! three CPU-feature variants each, for `f32` and `f64`: over 40 % of the LLVM IR of
//! `cardinal`'s test build, and again in `cardinal-paper`, the CLI and the Python module
//! (RESULTS §11). A trait method implemented for `f32` is not generic: the crates above call the
//! code compiled here.

use cardinal_proj::lanes::SoftDykstraLanes;
use cardinal_proj::ProjError;

use super::kernel::{INFER_LANES, TRAIN_LANES};
use crate::inference::{BlockScratch, BlockTape, Unroll};
use crate::model::Scalar;

/// The scalar type of the batch passes (`f32` for training; `f64`, for gradient checks, with
/// the `test-support` feature): a [`Scalar`] with its lockstep kernels compiled in this crate.
pub trait Float: Scalar {
    /// [`Unroll::forward_block_tape`] on a training block of [`TRAIN_LANES`] rows.
    fn forward_block_tape<'g>(
        un: &Unroll<'_, Self>,
        lanes: &SoftDykstraLanes,
        u: &[Self],
        z: &[Self],
        gold: &dyn Fn(usize) -> &'g [u32],
        weights: &[Self],
        t: &mut BlockTape<Self, TRAIN_LANES>,
    ) -> Result<(), ProjError>;

    /// [`Unroll::backward_block`] on a training block of [`TRAIN_LANES`] rows.
    fn backward_block(
        un: &Unroll<'_, Self>,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<Self, TRAIN_LANES>,
    );

    /// [`Unroll::forward_block`] on an inference block of `INFER_LANES` rows.
    fn forward_block(
        un: &Unroll<'_, Self>,
        lanes: &SoftDykstraLanes,
        u: &[Self],
        z: &[Self],
        y_out: &mut [Self],
        rank_out: &mut [Self],
        s: &mut BlockScratch<Self, INFER_LANES>,
    ) -> Result<(), ProjError>;
}

/// `Float` for each scalar type, each method kept out of line: inlined into a caller in
/// another crate, it would be compiled there again.
macro_rules! compiled_here {
    ($($t:ty),+) => {$(
        impl Float for $t {
            #[inline(never)]
            fn forward_block_tape<'g>(
                un: &Unroll<'_, Self>,
                lanes: &SoftDykstraLanes,
                u: &[Self],
                z: &[Self],
                gold: &dyn Fn(usize) -> &'g [u32],
                weights: &[Self],
                t: &mut BlockTape<Self, TRAIN_LANES>,
            ) -> Result<(), ProjError> {
                un.forward_block_tape(lanes, u, z, gold, weights, t)
            }

            #[inline(never)]
            fn backward_block(
                un: &Unroll<'_, Self>,
                lanes: &SoftDykstraLanes,
                t: &mut BlockTape<Self, TRAIN_LANES>,
            ) {
                un.backward_block(lanes, t)
            }

            #[inline(never)]
            fn forward_block(
                un: &Unroll<'_, Self>,
                lanes: &SoftDykstraLanes,
                u: &[Self],
                z: &[Self],
                y_out: &mut [Self],
                rank_out: &mut [Self],
                s: &mut BlockScratch<Self, INFER_LANES>,
            ) -> Result<(), ProjError> {
                un.forward_block(lanes, u, z, y_out, rank_out, s)
            }
        }
    )+};
}

compiled_here!(f32);
// `f64` serves the gradient checks only (the tests of this crate and of those above it, through
// their `test-support` feature): release builds do not compile its kernels.
#[cfg(any(test, feature = "test-support"))]
compiled_here!(f64);
