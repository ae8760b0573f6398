//! Unrolled projected gradient ascent on the relaxed labels, forward and backward (rows are
//! independent given the unary scores `u` and the count `z`).
//!
//! Forward, from `y_0 = σ(u)`, `v_0 = 0`, for `t = 1..T`:
//! ```text
//! a_t = Wpᵀ y_{t−1},  g_t = u + Wp (w2 ⊙ 1[a_t > 0])     (∇_y of yᵀu + w2ᵀ relu(Wpᵀ y))
//! v_t = μ v_{t−1} + η g_t,   y_t = Π(y_{t−1} + v_t, z)
//! ```
//! `∂g_t/∂y_{t−1}` is zero almost everywhere (the energy is piecewise linear in `y`), so no
//! second-order derivative is needed. Backward, for `t = T..1`, with `ḡy` the adjoint of `y_t`
//! and `ḡv` that of `v_t`:
//! ```text
//! ḡy += ∂ℓ/∂y_t;  (ḡy', ḡz_t) = Π_vjp(ḡy);  ḡv += ḡy';  ḡg_t = η ḡv;  ḡu += ḡg_t;
//! ḡη += ⟨ḡv, g_t⟩;  ḡv ← μ ḡv;  ḡy ← ḡy'
//! ```
//! and finally `ḡu += ḡy ⊙ y_0 (1 − y_0)`. The energy's parameter gradients are
//! `∂ℓ/∂Wp = Σ_t ḡg_t (w2 ⊙ m_t)ᵀ` and `∂ℓ/∂w2 = Σ_t (Wpᵀ ḡg_t) ⊙ m_t`; the per-step `ḡg_t` and
//! `m_t` are returned so the caller can form both sums for a whole batch with two GEMMs, in a
//! fixed order (bit-identical results for any thread count).
//!
//! Two implementations compute these numbers, chosen by [`Kernel::choose`]: the per-row
//! reference (`row`: [`RowTape`], [`Unroll::forward_row`], [`Unroll::backward_row`]), and
//! blocks of rows in lockstep, one row per SIMD lane (`block` for inference, `block_train` for
//! training, both on the ascent step of `block_step` and the lane helpers of `lane_ops`). The
//! loss they train, [`soft_f1`], lives in [`crate::loss`].

use cardinal_proj::{AnyProjector, Method};
use ndarray::ArrayView2;

use crate::model::Scalar;

mod block;
mod block_step;
mod block_train;
mod energy_products;
mod lane_ops;
mod row;
#[cfg(test)]
mod test_support;

pub use crate::loss::soft_f1;
pub use block::BlockScratch;
pub use block_train::BlockTape;
pub use row::RowTape;

/// Up to this many labels, training runs rows in lockstep (`Unroll::forward_block_tape`); above
/// it, the per-row path, whose tape of one row stays smaller than a block's (measured with
/// `bench/scaling.sh`: docs/results/speed.md). Inference runs in lockstep at any `L`: its
/// blocks keep no tape, and the cache-blocked sorting network keeps long rows in the caches.
pub const LOCKSTEP_TRAIN_MAX_LABELS: usize = 8192;

/// Which implementation of the unroll runs a pass. Both compute the same numbers (to
/// rounding; the tests compare them); [`Kernel::choose`] is the rule that picks, and the batch
/// passes run the kind it names through one interface (`batch`'s `UnrollKernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// One row at a time ([`Unroll::forward_row`], [`Unroll::backward_row`]): any projection.
    /// The reference.
    Row,
    /// Blocks of rows in lockstep, one row per SIMD lane ([`Unroll::forward_block`],
    /// [`Unroll::forward_block_tape`], [`Unroll::backward_block`]): soft Dykstra steps
    /// (`cardinal_proj::lanes`) with any final projection. Every other projection has no
    /// lockstep form and runs on [`Kernel::Row`] (`docs/DESIGN.md`).
    Lockstep,
}

impl Kernel {
    /// The kernel for steps projected by `method` over `n_labels` labels: lockstep for soft
    /// Dykstra (in training, only with at least one step, since with none there is nothing to
    /// run in lockstep, and up to [`LOCKSTEP_TRAIN_MAX_LABELS`] labels), the row kernel
    /// otherwise.
    pub fn choose(method: Method, steps: usize, n_labels: usize, training: bool) -> Self {
        let lockstep_training = steps > 0 && n_labels <= LOCKSTEP_TRAIN_MAX_LABELS;
        if method == Method::DykstraSoft && (lockstep_training || !training) {
            Self::Lockstep
        } else {
            Self::Row
        }
    }
}

/// The fixed parts of one unrolled solve.
pub struct Unroll<'a, F: Scalar> {
    /// Energy matrix transposed, `Wpᵀ` (`E × L`, rows contiguous: both products below then
    /// run over contiguous length-`L` rows).
    pub wpt: ArrayView2<'a, F>,
    /// Energy output weights `w2`, `E`.
    pub we: &'a [F],
    /// Step size `η` of every ascent step.
    pub eta: F,
    /// Momentum `μ` of the velocity.
    pub momentum: F,
    /// Number of ascent steps `T`.
    pub steps: usize,
    /// The projection `Π` of every step (`y_t = Π(y_{t−1} + v_t, z)`).
    pub projector: &'a AnyProjector,
    /// An optional projection applied once more to the last iterate (e.g. the exact one after
    /// soft Dykstra steps, so that `y_T` is feasible); it replaces `y_T`.
    pub final_projector: Option<&'a AnyProjector>,
}

/// `σ(x)`, computed without overflow for large `|x|`.
#[inline]
pub fn sigmoid<F: Scalar>(x: F) -> F {
    if x >= F::zero() {
        F::one() / (F::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (F::one() + e)
    }
}

impl<F: Scalar> Unroll<'_, F> {
    /// Number of labels `L`.
    pub fn l(&self) -> usize {
        self.wpt.ncols()
    }
    /// Number of energy units `E`.
    pub fn e(&self) -> usize {
        self.wpt.nrows()
    }
}
