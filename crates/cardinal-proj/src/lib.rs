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
//! ```
//! use cardinal_proj::{AnyProjector, CappedSimplex, CappedTape, Method, ProjParams, Projector};
//!
//! // Exact projection of v onto C(2): u = clip(v − τ, 0, 1) with τ = 0.1 here.
//! let v = [0.9_f64, 2.0, -0.5, 0.3];
//! let z = 2.0;
//! let mut u = [0.0; 4];
//! let mut tape = CappedTape::default();
//! CappedSimplex.forward(&v, z, &mut u, &mut tape)?;
//! assert!(u.iter().all(|&x| (0.0..=1.0).contains(&x)));
//! assert!((u.iter().sum::<f64>() - z).abs() < 1e-12);
//! let want = [0.8, 1.0, 0.0, 0.2];
//! assert!(u.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-12));
//!
//! // VJP: the gradient flows through the free coordinates (0 and 3) only, minus their mean.
//! let g = [1.0, 0.0, 0.0, 0.0];
//! let mut gv = [0.0; 4];
//! let gz = CappedSimplex.vjp(&tape, &g, &mut gv);
//! assert_eq!(tape.n_free(), 2);
//! assert_eq!(gv, [0.5, 0.0, 0.0, -0.5]);
//! assert_eq!(gz, 0.5);
//!
//! // The same operator chosen at run time, e.g. from a config string.
//! let method: Method = "exact".parse()?;
//! let proj = AnyProjector::new(method, ProjParams::default());
//! let mut any_tape = Default::default();
//! let mut u2 = [0.0; 4];
//! proj.forward(&v, z, &mut u2, &mut any_tape)?;
//! assert_eq!(u2, u);
//! assert!(proj.forward(&v, 5.0, &mut u2, &mut any_tape).is_err()); // z > L
//! # Ok::<(), cardinal_proj::ProjError>(())
//! ```
//!
//! This crate holds math only: no model, tensor or training code.

#![warn(missing_docs)]

mod any;
mod batch;
mod capped;
mod clip;
mod dykstra;
mod fp;
pub mod lanes;
pub mod matrix;
pub mod sigmoid_cardinality;
mod simplex;
mod smooth;
mod soft;
mod soft_printed;
mod util;

pub use any::{AnyProjector, AnyTape, Method, ProjParams, DEFAULT_SMOOTH_EPS};
pub use batch::{forward_batch, vjp_batch};
pub use capped::{capped_simplex_tau, capped_simplex_tau_sort, CappedSimplex, CappedTape};
pub use clip::{BoxClip, ClipTape};
pub use dykstra::{Dykstra, DykstraTape};
pub use fp::{FastProjection, FpTape};
pub use simplex::{Simplex, SimplexTape};
pub use smooth::{SmoothCappedSimplex, SmoothTape};
pub use soft::{SoftSimplex, SoftTape};
pub use soft_printed::{SoftPrintedTape, SoftSimplexPrinted};

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

    /// `x ← exp(x)` for every entry, for `−∞ ≤ x ≤ 88`; the `f32` version is a
    /// vectorisable polynomial within 2 ulp of `expf` that flushes results below `f32`'s
    /// normal range to 0.
    #[doc(hidden)]
    fn exp_in_place(x: &mut [Self]) {
        for v in x {
            *v = v.exp();
        }
    }
}

/// Cephes' `expf`: `e^x = 2^n e^r`, `n = round(x log2 e)`, `r = x − n ln 2` (ln 2 in two
/// parts), `e^r` by a degree-7 polynomial. Branch-free, so that loops of it vectorise.
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 · 2^23: adding and subtracting it rounds to integer
    let xc = x.clamp(-87.0, 88.0);
    let t = xc * std::f32::consts::LOG2_E + MAGIC;
    let n = t - MAGIC;
    let r = (xc - n * 0.693_359_4) + n * 2.121_944_4e-4;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * (r * r) + r + 1.0;
    // 2^n from the bits of `t`, whose low mantissa bits hold n: a saturating `n as i32` would
    // compile to scalar conversions with range fixups and keep the loop from vectorising.
    let ni = (t.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let scale = f32::from_bits(((ni + 127) << 23) as u32);
    if x < -87.0 {
        0.0
    } else {
        y * scale
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
    #[inline(always)]
    fn exp_in_place(x: &mut [Self]) {
        for v in x {
            *v = exp_f32(*v);
        }
    }
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
    /// `z` is outside `[0, L]` (or NaN) for an operator onto `C(z)`.
    #[error("cardinality z = {z} is outside [0, {len}] for a row of length {len}")]
    InvalidZ {
        /// The rejected cardinality.
        z: f64,
        /// The row length `L`.
        len: usize,
    },
    /// An input entry is NaN or infinite.
    #[error("input entry {index} is not finite ({value})")]
    NonFinite {
        /// Position of the first such entry in the row.
        index: usize,
        /// The entry.
        value: f64,
    },
    /// The output buffer's length differs from the input row's.
    #[error("length mismatch: input has {input} entries, output buffer {output}")]
    LengthMismatch {
        /// Entries in the input row.
        input: usize,
        /// Entries in the output buffer.
        output: usize,
    },
    /// The input row has no entries.
    #[error("empty input row")]
    Empty,
    /// `z` is negative or not finite, for an operator onto `B(z)` (no upper bound on `z`).
    #[error("cardinality z = {z} is not finite or negative (must be >= 0)")]
    NegativeZ {
        /// The rejected cardinality.
        z: f64,
    },
    /// A batch buffer's length is not rows × `L` (or `L` is 0).
    #[error("batch shape mismatch: {what}")]
    BatchShape {
        /// Which buffer, its length and the expected shape.
        what: String,
    },
    /// A name that is not one of [`Method::ALL`]'s.
    #[error("unknown projection method {name:?} (expected {allowed})")]
    UnknownMethod {
        /// The name given.
        name: String,
        /// The names accepted, `|`-separated in [`Method::ALL`]'s order.
        allowed: String,
    },
    /// A matrix operator's shapes disagree: `M` is 0, the matrix's length is not a multiple of
    /// `M` (or is 0), or a buffer has the wrong length.
    #[error("matrix shape mismatch: {what}")]
    MatrixShape {
        /// Which buffer, its length and the expected shape.
        what: String,
    },
    /// A class size `z_j` of a matrix operator is negative or not finite.
    #[error("class size z_{class} = {value} is not finite or negative (must be >= 0)")]
    NegativeCount {
        /// The class (0-based).
        class: usize,
        /// The rejected size.
        value: f64,
    },
    /// The class sizes do not sum to the number of rows `L` (within
    /// [`matrix::COUNT_SUM_TOL`]): no matrix has unit rows and these column sums.
    #[error("class sizes sum to {sum}, but a matrix of {rows} rows with unit rows needs them to sum to {rows}")]
    InfeasibleCounts {
        /// `Σ z_j`.
        sum: f64,
        /// The number of rows `L`.
        rows: usize,
    },
    /// An iterative solver did not reach its tolerance.
    #[error("{solver} did not converge in {iters} iterations (residual {residual:e})")]
    NotConverged {
        /// Which solver.
        solver: &'static str,
        /// Iterations run.
        iters: usize,
        /// The residual it stopped at.
        residual: f64,
    },
    /// A name that is not one of [`matrix::MatrixMethod::ALL`]'s.
    #[error("unknown matrix projection method {name:?} (expected {allowed})")]
    UnknownMatrixMethod {
        /// The name given.
        name: String,
        /// The names accepted, `|`-separated in [`matrix::MatrixMethod::ALL`]'s order.
        allowed: String,
    },
    /// A parameter of an operator (such as the smoothing temperature) is out of its range.
    #[error("parameter {name} = {value} is out of range: expected {allowed}")]
    InvalidParameter {
        /// The parameter's name ([`ProjParams`]' field for the operators of [`Method`]).
        name: &'static str,
        /// Its rejected value.
        value: f64,
        /// The values allowed, e.g. `1..=1000` or `a finite number > 0`.
        allowed: String,
    },
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

#[cfg(test)]
mod exp_tests {
    #[test]
    fn polynomial_expf_is_within_two_ulp_of_libm() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 88.0 {
            let got = super::exp_f32(x) as f64;
            let want = (x as f64).exp();
            worst = worst.max(((got - want) / want).abs());
            x += 0.001_37;
        }
        assert!(worst < 2.5e-7, "max relative error {worst}");
        assert_eq!(super::exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(super::exp_f32(-100.0), 0.0);
        assert_eq!(super::exp_f32(0.0), 1.0);
    }
}
