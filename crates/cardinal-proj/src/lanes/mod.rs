//! The paper's inference operator, soft Dykstra ([`crate::Dykstra`] over [`crate::SoftSimplex`]),
//! for [`LANES`] rows at once, one row per SIMD lane: forward ([`SoftDykstraLanes::forward`],
//! inference) and forward with tape plus VJP ([`SoftDykstraLanes::forward_tape`],
//! [`SoftDykstraLanes::vjp`], training).
//!
//! Layout: a block of rows is `L` lane vectors `[F; N]` (`N` = [`LANES`] unless chosen
//! otherwise); entry `i` of row `w` is `x[i][w]`.
//! Every step is the same for all rows, so each loop runs over whole lane vectors:
//! * the sort is a sorting network (the bitonic sorter pruned to `L`, in register groups of
//!   three layers, cache-blocked: `network.rs`), whose comparators are lane-wise max/min;
//! * the soft simplex head scan runs while any lane is still in its head (masked per lane);
//! * the forward pass needs no permutation: each Dykstra round is a coordinate-wise
//!   non-decreasing map of the input, so applying the same maps to the sorted input gives every
//!   round's sorted inner input (one sort per projection), and the output is the maps applied to
//!   the input itself.
//!
//! For the VJP the sort carries indices (ties put in the per-row argsort's order), and the soft
//! projection's VJP is taken in sorted coordinates over the head only; the tail's closed form
//! is added in original coordinates from a rank table.
//!
//! Floating-point rounding can make `q = c − b` non-monotone by an ulp among nearly equal
//! entries; the per-row operator repairs its order there, this one scans the mapped sorted
//! sequence as it is. The two agree to rounding (`tests/lanes.rs`); their VJPs agree wherever
//! the repair does not reorder entries (then they rank two entries an ulp apart differently).
//!
//! Contract of these kernels (SIMD loops, exempt from the house limit on function length):
//! lanes never mix (lane `w` of every output depends only on lane `w` of the inputs, so spare
//! lanes may hold anything valid); each lane computes the per-row operator's numbers to
//! rounding, its VJP ranks ties by the per-row order (`util::rank_key`); nothing is fused
//! into FMA, so every instruction-set variant of a caller computes the same numbers; buffers
//! grow once and are reused. Checked by `tests/lanes.rs` and the `network` unit tests.
//!
//! Files: `network.rs` (the sorting network and the tie order), `soft_round.rs` (one round's
//! inner input and soft simplex threshold), `forward.rs` (the operator and its inference pass),
//! `vjp.rs` (the taped forward pass and the VJP), `smooth.rs` (the smoothed projection, the
//! final projection of the lockstep unroll, bit for bit as the per-row operator).

mod forward;
mod network;
mod smooth;
mod soft_round;
mod vjp;

pub use forward::{LanesScratch, SoftDykstraLanes};
pub use network::SortingNetwork;
pub use smooth::{SmoothLanes, SmoothLanesTape};
pub use vjp::{LanesTape, LanesVjpScratch};

use crate::Real;

/// Rows per block: four AVX-512 registers of `f32` per entry; wider blocks leave the L2 cache
/// (the widths compared: docs/journal/2026-11-26-speed.md).
pub const LANES: usize = 64;

/// One entry of each of the [`LANES`] rows of a block.
pub type Lanes<F, const N: usize = LANES> = [F; N];

/// A lane vector with every lane `x`.
#[inline(always)]
fn splat<F: Real, const N: usize>(x: F) -> Lanes<F, N> {
    [x; N]
}
