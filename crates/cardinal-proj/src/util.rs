//! Shared helpers: input validation, descending argsort, small numeric utilities.

use crate::{ProjError, Real};
use std::cmp::Ordering;

/// Which range `z` must lie in.
#[derive(Clone, Copy)]
pub(crate) enum ZRange {
    /// `0 <= z <= L` (sets with the upper bound 1: C(z)).
    UpToLen,
    /// `z >= 0` (the positive simplex B(z) has no upper limit).
    NonNegative,
}

/// Checks the row, the output buffer and `z`; every operator calls this first so that invalid
/// input becomes an error instead of a NaN further down.
pub(crate) fn validate<F: Real>(
    v: &[F],
    z: F,
    out_len: usize,
    range: ZRange,
) -> Result<(), ProjError> {
    if v.is_empty() {
        return Err(ProjError::Empty);
    }
    if v.len() != out_len {
        return Err(ProjError::LengthMismatch {
            input: v.len(),
            output: out_len,
        });
    }
    let zf = z.to_f64().unwrap_or(f64::NAN);
    match range {
        ZRange::UpToLen => {
            // `!(a && b)` so that NaN is rejected too.
            if !(zf >= 0.0 && zf <= v.len() as f64) {
                return Err(ProjError::InvalidZ {
                    z: zf,
                    len: v.len(),
                });
            }
        }
        ZRange::NonNegative => {
            if !(zf >= 0.0 && zf.is_finite()) {
                return Err(ProjError::NegativeZ { z: zf });
            }
        }
    }
    // A single pass with a cheap test; the index is only searched for on failure.
    if !v.iter().all(|x| x.is_finite()) {
        let (index, value) = v.iter().enumerate().find(|(_, x)| !x.is_finite()).unwrap();
        return Err(ProjError::NonFinite {
            index,
            value: value.to_f64().unwrap_or(f64::NAN),
        });
    }
    Ok(())
}

/// Descending order on finite values (validated before any sort, so `partial_cmp` never fails).
#[inline]
pub(crate) fn desc<F: Real>(a: &F, b: &F) -> Ordering {
    b.partial_cmp(a).unwrap_or(Ordering::Equal)
}

/// Fills `perm` with a permutation sorting `v` descending and `mu` with the sorted values.
/// Sorting (value, index) pairs keeps comparisons on contiguous memory (faster than an
/// indirect index sort); `pairs` is reused, so nothing is allocated once it has grown.
pub(crate) fn argsort_desc_with<F: Real>(
    v: &[F],
    perm: &mut Vec<u32>,
    mu: &mut Vec<F>,
    pairs: &mut Vec<(F, u32)>,
) {
    pairs.clear();
    pairs.extend(v.iter().enumerate().map(|(i, &x)| (x, i as u32)));
    pairs.sort_unstable_by(|a, b| desc(&a.0, &b.0));
    perm.clear();
    mu.clear();
    perm.extend(pairs.iter().map(|p| p.1));
    mu.extend(pairs.iter().map(|p| p.0));
}

/// `F::from(usize)`; exact for every length we handle.
#[inline]
pub(crate) fn of<F: Real>(n: usize) -> F {
    F::from_usize(n).expect("usize fits a float")
}
