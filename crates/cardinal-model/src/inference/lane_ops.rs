//! Moving rows in and out of lane vectors (one row per SIMD lane), and the lane arithmetic
//! the lockstep kernels share.

use cardinal_proj::lanes::Lanes;
use ndarray::ArrayView2;

use crate::model::Scalar;

/// Lane `w` of `lanes` (one value per label) written out as a row.
pub(super) fn lane_to_row<F: Copy, const N: usize>(lanes: &[Lanes<F, N>], w: usize, row: &mut [F]) {
    for (r, x) in row.iter_mut().zip(lanes) {
        *r = x[w];
    }
}

/// `row` written into lane `w` of `lanes`.
pub(super) fn row_to_lane<F: Copy, const N: usize>(row: &[F], w: usize, lanes: &mut [Lanes<F, N>]) {
    for (x, &r) in lanes.iter_mut().zip(row) {
        x[w] = r;
    }
}

/// `rows × cols` row-major view of lane vectors (`cols` a multiple of the width).
pub(super) fn lanes_view<F: Scalar, const N: usize>(
    x: &[Lanes<F, N>],
    rows: usize,
    cols: usize,
) -> ArrayView2<'_, F> {
    ArrayView2::from_shape((rows, cols), x.as_flattened()).expect("lanes of that shape")
}

/// `acc += a·x` on one lane vector (mul then add, never fused: same numbers on every CPU).
#[inline(always)]
pub(super) fn axpy<F: Scalar, const N: usize>(acc: &mut Lanes<F, N>, a: F, x: &Lanes<F, N>) {
    for w in 0..N {
        acc[w] += a * x[w];
    }
}
