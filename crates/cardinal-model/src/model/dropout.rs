//! Inverted dropout on a hidden layer, with masks from a counter-based hash.

use ndarray::Array2;

use super::{c, Scalar};

/// Inverted dropout on a hidden layer: unit `j` of data row `r` is kept with probability
/// `1 − rate` and scaled by `1/(1 − rate)`. The mask is a hash of `(key, r, j)`: the same for
/// the forward and the backward pass, for any batch composition and thread count, and on resume.
#[derive(Debug, Clone, Copy)]
pub struct Dropout {
    /// Probability of dropping a unit, in `[0, 1)`.
    pub rate: f64,
    /// The batch's key ([`dropout_key`]).
    pub key: u64,
}

impl Dropout {
    /// Multiplies `h` (rows of the batch `rows` × units) by the mask and the scale.
    pub fn apply<F: Scalar>(&self, rows: &[usize], h: &mut Array2<F>) {
        let scale: F = c(1.0 / (1.0 - self.rate));
        // Keep iff the hash's top 53 bits, as a fraction of 2^53, are at least `rate`.
        let cut = (self.rate * (1u64 << 53) as f64) as u64;
        for (mut hr, &r) in h.outer_iter_mut().zip(rows) {
            self.apply_row_with(r, hr.as_slice_mut().expect("contiguous"), scale, cut);
        }
    }

    /// [`Self::apply`] on one hidden row `h` of data row `r`.
    pub fn apply_row<F: Scalar>(&self, r: usize, h: &mut [F]) {
        let scale: F = c(1.0 / (1.0 - self.rate));
        let cut = (self.rate * (1u64 << 53) as f64) as u64;
        self.apply_row_with(r, h, scale, cut);
    }

    fn apply_row_with<F: Scalar>(&self, r: usize, h: &mut [F], scale: F, cut: u64) {
        apply_row_dispatch(self.key, r as u64, h, scale, cut);
    }

    /// The scale `1/(1 − rate)` of the units kept.
    pub fn scale<F: Scalar>(&self) -> F {
        c(1.0 / (1.0 - self.rate))
    }
}

crate::simd::dispatch! {
    features ["avx512f", "avx512dq"], ["avx2"];
    /// Unit `j` of `h` (data row `row`) scaled by `scale` if its hash clears `cut`, else 0:
    /// branch-free, the hash lane-wise in 64-bit vector arithmetic.
    fn apply_row_dispatch<F: Scalar>(key: u64, row: u64, h: &mut [F], scale: F, cut: u64) {
        for (j, v) in h.iter_mut().enumerate() {
            let keep = dropout_hash(key, row, j as u64) >> 11 >= cut;
            *v = if keep { *v * scale } else { F::zero() };
        }
    }
}

/// SplitMix64 finaliser over the three words (a counter-based generator: no state).
#[inline(always)]
fn dropout_hash(key: u64, row: u64, unit: u64) -> u64 {
    let mut z =
        key ^ row.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ unit.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The dropout key of one training batch.
pub fn dropout_key(seed: u64, phase: u8, epoch: usize, batch: usize) -> u64 {
    dropout_hash(
        seed ^ ((phase as u64) << 56),
        epoch as u64,
        (batch as u64) ^ 0x5EED,
    )
}
