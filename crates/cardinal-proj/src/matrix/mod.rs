//! The paper's Section 6: projections of an `L × M` matrix onto the transportation polytope
//!
//! ```text
//! Z̃(z) = C ∩ D,  C = {Y ≥ 0, Y 1 = 1},  D = {Y ≥ 0, Yᵀ 1 = z},   Σ_j z_j = L,
//! ```
//!
//! where row `i` of `Y` is the relaxed one-hot vector of position `i` over `M` classes and `z_j`
//! the (predicted) size of class `j`. Matrices are row-major slices of length `L·M`.
//!
//! Three operators implement [`MatrixProjector`]:
//!
//! * [`ExactMatrix`]: the Euclidean projection, by a semismooth Newton method on the dual over
//!   the `M` column multipliers (the `L` row multipliers are eliminated exactly by row-wise
//!   simplex projections), run until the column sums meet `z` to `1e-9` (in `f64` whatever the
//!   caller's float type). Its VJP differentiates the KKT system on the support.
//! * [`DykstraMatrix`]: the paper's operator, `R` rounds of Dykstra's algorithm alternating all
//!   rows onto the unit simplex and all columns onto the simplex of size `z_j`, each with a
//!   row operator of the crate ([`crate::SoftSimplex`], Algorithm 1, in the paper), unrolled
//!   and differentiated round by round.
//! * [`SinkhornMatrix`]: beyond the paper, the entropic projection
//!   `argmax_{Y ∈ Z̃} ⟨V, Y⟩ + ε H(Y)`, by log-domain Sinkhorn iterations to convergence,
//!   differentiated implicitly at its fixed point: a smooth map with a dense Jacobian.
//!
//! **Counts that do not sum to `L`.** `C` and `D` intersect only when `Σz = L`: for any other
//! `z` the paper's Dykstra alternates between disjoint sets and converges to nothing. Every
//! operator therefore reads `z` through [`counts::normalize`]: a `z` with non-negative finite
//! entries whose sum is within a relative [`COUNT_SUM_TOL`] of `L` is rescaled to sum to `L`
//! exactly (removing the rounding of a predicted or typed `z`), and the VJP includes that
//! rescaling, so `∂ℓ/∂z` is well defined in every direction (and orthogonal to `z`: scaling
//! every count by a common factor changes nothing). A `z` further from `L` is refused with
//! [`ProjError::InfeasibleCounts`]: it signals a caller's mistake (wrong `M`, wrong `L`), not
//! rounding. The model's count head predicts `z = L · softmax(a(x))`, so its sets always
//! intersect.
//!
//! ```
//! use cardinal_proj::matrix::{ExactMatrix, MatrixProjector};
//!
//! // Three positions, two classes, class sizes z = (2, 1).
//! let v = [0.9_f64, 0.1, 0.8, 0.2, 0.7, 0.3];
//! let mut y = [0.0; 6];
//! let mut tape = Default::default();
//! ExactMatrix::default().forward(&v, 2, &[2.0, 1.0], &mut y, &mut tape)?;
//! for row in y.chunks(2) {
//!     assert!((row[0] + row[1] - 1.0).abs() < 1e-9);
//! }
//! let col0: f64 = y.iter().step_by(2).sum();
//! assert!((col0 - 2.0).abs() < 1e-9);
//! # Ok::<(), cardinal_proj::ProjError>(())
//! ```

pub mod counts;
mod dykstra;
mod exact;
mod laplacian;
mod method;
mod sinkhorn;

pub use counts::COUNT_SUM_TOL;
pub use dykstra::{DykstraMatrix, DykstraMatrixTape};
pub use exact::{ExactMatrix, ExactMatrixTape};
pub use method::{AnyMatrixProjector, AnyMatrixTape, MatrixMethod};
pub use sinkhorn::{SinkhornMatrix, SinkhornMatrixTape, DEFAULT_SINKHORN_EPS};

use crate::{ProjError, Real};

/// A differentiable projection of an `L × M` matrix (row-major) given class sizes `z ∈ R^M`.
pub trait MatrixProjector<F: Real>: Send + Sync {
    /// What `forward` records for `vjp`; reused across calls.
    type Tape: Default + Send;

    /// Writes the projection of `v` (`L·M` entries, `M = classes`) into `out` (same length)
    /// given the class sizes `z` (`M` entries, summing to `L` within [`COUNT_SUM_TOL`]).
    fn forward(
        &self,
        v: &[F],
        classes: usize,
        z: &[F],
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError>;

    /// Given `g = ∂ℓ/∂out`, overwrites `gv` with `∂ℓ/∂v` and `gz` with `∂ℓ/∂z`.
    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F], gz: &mut [F]);
}
