//! Projections onto the cardinality-constrained box and their vector-Jacobian products.
//!
//! Notation (as in Brukhim & Globerson, ICML 2018):
//! `C(z) = {u ∈ R^L : 0 ≤ u_i ≤ 1, Σ u_i = z}`, `A = {u : u_i ≤ 1}`,
//! `B(z) = {u : u_i ≥ 0, Σ u_i = z}`.
//!
//! Every operator implements [`Projector`]: `forward` writes the projection of one row into a
//! caller's buffer and records in a reusable [`Projector::Tape`] what `vjp` needs; `vjp` maps the
//! gradient with respect to the output to gradients with respect to the input row and to `z`.
//! No allocation happens once a tape has grown to the row length.
//!
//! This crate holds math only: no model, tensor or training code.

mod any;
mod batch;
mod capped;
mod clip;
mod dykstra;
mod fp;
pub mod lanes;
pub mod sigmoid_cardinality;
mod simplex;
mod smooth;
mod soft;
mod util;

pub use any::{AnyProjector, AnyTape, Method, DEFAULT_SMOOTH_EPS};
pub use batch::{forward_batch, vjp_batch};
pub use capped::{capped_simplex_tau, capped_simplex_tau_sort, CappedSimplex, CappedTape};
pub use clip::{BoxClip, ClipTape};
pub use dykstra::{Dykstra, DykstraTape};
pub use fp::{FastProjection, FpTape};
pub use simplex::{Simplex, SimplexTape};
pub use smooth::{SmoothCappedSimplex, SmoothTape};
pub use soft::{SoftSimplex, SoftTape};

use std::fmt::Debug;

/// Floating-point scalar the operators are generic over (`f32` for training, `f64` for checks).
pub trait Real:
    num_traits::Float
    + num_traits::FromPrimitive
    + num_traits::NumAssign
    + Default
    + Debug
    + Send
    + Sync
    + std::iter::Sum
    + 'static
{
    /// Number of significant low bits of [`Real::order_key`] (32 for `f32`, 64 for `f64`).
    #[doc(hidden)]
    const KEY_BITS: u32 = 64;

    /// Order-preserving unsigned key: for finite `a`, `b`, `a < b` implies
    /// `order_key(a) < order_key(b)`, and equal keys imply equal values. Sorting by this key lets
    /// the argsorts compare integers instead of floats.
    #[doc(hidden)]
    fn order_key(self) -> u64 {
        f64_order_key(self.to_f64().unwrap_or(f64::NAN))
    }
}

#[inline]
fn f64_order_key(x: f64) -> u64 {
    let b = x.to_bits();
    // Negative: flip every bit (larger magnitude sorts lower); non-negative: set the sign bit.
    b ^ ((((b as i64) >> 63) as u64) | (1 << 63))
}

impl Real for f32 {
    const KEY_BITS: u32 = 32;
    #[inline]
    fn order_key(self) -> u64 {
        let b = self.to_bits();
        (b ^ ((((b as i32) >> 31) as u32) | (1 << 31))) as u64
    }
}
impl Real for f64 {
    #[inline]
    fn order_key(self) -> u64 {
        f64_order_key(self)
    }
}

/// Errors of the projection operators: invalid input is reported, never turned into NaN.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProjError {
    #[error("cardinality z = {z} is outside [0, {len}] for a row of length {len}")]
    InvalidZ { z: f64, len: usize },
    #[error("input entry {index} is not finite ({value})")]
    NonFinite { index: usize, value: f64 },
    #[error("length mismatch: input has {input} entries, output buffer {output}")]
    LengthMismatch { input: usize, output: usize },
    #[error("empty input row")]
    Empty,
    #[error("cardinality z = {z} is not finite or negative (must be >= 0)")]
    NegativeZ { z: f64 },
    #[error("batch shape mismatch: {what}")]
    BatchShape { what: String },
    #[error("unknown projection method {0:?} (expected exact|simplex|soft|dykstra-soft|dykstra-exact|fp|smooth|clip)")]
    UnknownMethod(String),
    #[error("parameter {name} = {value} is out of range (must be finite and > 0)")]
    InvalidParameter { name: &'static str, value: f64 },
}

/// A differentiable projection of one row `v` (length L) given a cardinality `z`.
pub trait Projector<F: Real>: Send + Sync {
    /// What `forward` records for `vjp`; reused across calls (buffers grow, never shrink).
    type Tape: Default + Send;

    /// Writes the projection of `v` into `out` (same length) and records the tape.
    fn forward(&self, v: &[F], z: F, out: &mut [F], tape: &mut Self::Tape)
        -> Result<(), ProjError>;

    /// Given `g = ∂ℓ/∂out`, overwrites `gv` with `∂ℓ/∂v` and returns `∂ℓ/∂z`.
    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F;

    /// Whether [`Projector::forward_ordered`] makes use of the order it is given (sort-based
    /// operators); [`Dykstra`] only computes an order for inner projections that do.
    #[doc(hidden)]
    fn uses_order(&self) -> bool {
        false
    }

    /// [`Projector::forward`] given `order`, a permutation expected to sort `v` descending
    /// (non-strictly), so that a sort-based operator can skip its sort. Implementations must check
    /// the order and sort themselves if it does not sort `v`: the output never depends on it, and
    /// the VJP only in how tied entries are ranked. The default ignores it.
    #[doc(hidden)]
    fn forward_ordered(
        &self,
        v: &[F],
        z: F,
        order: &[u32],
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        let _ = order;
        self.forward(v, z, out, tape)
    }
}
