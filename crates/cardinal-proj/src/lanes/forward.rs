//! The lockstep operator and its inference forward pass (no tape).

use super::network::SortingNetwork;
use super::soft_round::{inner_input, room_for_head, soft_theta};
use super::{Lanes, LANES};
use crate::util::of;
use crate::{ProjError, Real};

/// Soft Dykstra with `rounds` rounds on blocks of rows of length `n`.
#[derive(Debug, Clone)]
pub struct SoftDykstraLanes {
    pub(super) rounds: usize,
    pub(super) net: SortingNetwork,
}

/// Buffers of [`SoftDykstraLanes::forward`], reused across calls.
#[derive(Debug, Clone, Default)]
pub struct LanesScratch<F, const N: usize = LANES> {
    pub(super) sorted: Vec<Lanes<F, N>>,
    /// Per head position: `c_j` and the softmax logit (then its weight); the current head
    /// is a prefix (see `soft_theta`).
    pub(super) head_c: Vec<Lanes<F, N>>,
    pub(super) head_a: Vec<Lanes<F, N>>,
    /// `θ` of each round so far.
    pub(super) thetas: Vec<Lanes<F, N>>,
}

impl SoftDykstraLanes {
    /// The operator with `rounds` Dykstra rounds for rows of length `n`.
    pub fn new(rounds: usize, n: usize) -> Self {
        Self {
            rounds,
            net: SortingNetwork::new(n),
        }
    }

    /// Row length.
    pub fn len(&self) -> usize {
        self.net.len()
    }

    /// Whether the row length is 0 (every call then fails with [`ProjError::Empty`]).
    pub fn is_empty(&self) -> bool {
        self.net.is_empty()
    }

    /// The per-row operator's input errors: a non-finite entry, `z` outside `[0, n]`, a length
    /// mismatch.
    #[inline(always)]
    pub(super) fn check<F: Real, const N: usize>(
        &self,
        v: &[Lanes<F, N>],
        z: &Lanes<F, N>,
        out: &[Lanes<F, N>],
    ) -> Result<(), ProjError> {
        let n = self.net.len();
        if n == 0 || v.len() != n || out.len() != n {
            return Err(if n == 0 || v.is_empty() {
                ProjError::Empty
            } else {
                ProjError::LengthMismatch {
                    input: v.len(),
                    output: out.len().min(n),
                }
            });
        }
        let len: F = of(n);
        for &zw in z {
            if !(zw >= F::zero() && zw <= len) {
                return Err(ProjError::InvalidZ {
                    z: zw.to_f64().unwrap_or(f64::NAN),
                    len: n,
                });
            }
        }
        let mut finite = [true; N];
        for x in v {
            for w in 0..N {
                finite[w] &= x[w].is_finite();
            }
        }
        if finite.iter().any(|&f| !f) {
            let (index, value) = v
                .iter()
                .enumerate()
                .find_map(|(i, x)| x.iter().find(|a| !a.is_finite()).map(|&a| (i, a)))
                .expect("a non-finite entry");
            return Err(ProjError::NonFinite {
                index,
                value: value.to_f64().unwrap_or(f64::NAN),
            });
        }
        Ok(())
    }

    /// Projects every lane of `v` (length `n`) with its count `z[w]` into `out`. Errors like the
    /// per-row operator: a non-finite entry, `z` outside `[0, n]`, a length mismatch.
    #[inline(always)]
    pub fn forward<F: Real, const N: usize>(
        &self,
        v: &[Lanes<F, N>],
        z: &Lanes<F, N>,
        out: &mut [Lanes<F, N>],
        s: &mut LanesScratch<F, N>,
    ) -> Result<(), ProjError> {
        self.check(v, z, out)?;
        if self.rounds == 0 {
            out.copy_from_slice(v);
            return Ok(());
        }
        let zero = F::zero();
        s.sorted.resize(v.len(), [zero; N]);
        self.net.sort_desc(v, &mut s.sorted);
        // Each round's inner input c_k is a coordinate-wise map of the input given the earlier
        // rounds' θ: computed on the fly from the sorted input inside each scan, and from the
        // input itself in the one output pass. No per-round buffers.
        s.thetas.clear();
        room_for_head(&mut s.head_c, 0, v.len());
        room_for_head(&mut s.head_a, 0, v.len());
        for _ in 0..self.rounds {
            let round = soft_theta(&s.sorted, z, &s.thetas, &mut s.head_c, &mut s.head_a, None);
            s.thetas.push(round.theta);
        }
        let (last, earlier) = s.thetas.split_last().expect("rounds > 0");
        for (o, x) in out.iter_mut().zip(v) {
            let mut c = [zero; N];
            inner_input(x, earlier, &mut c);
            // Into a local vector, stored whole: stores through `o` lane by lane would have
            // to respect a possible overlap with the input and stay scalar.
            let mut y = [zero; N];
            for w in 0..N {
                let u = c[w] - last[w];
                y[w] = if u > zero { u } else { zero };
            }
            *o = y;
        }
        Ok(())
    }
}
