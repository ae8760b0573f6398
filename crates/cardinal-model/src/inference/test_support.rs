//! Inputs shared by the kernels' tests.

use cardinal_proj::AnyProjector;
use ndarray::Array2;

use super::Unroll;

/// A deterministic stream of numbers uniform in [−1, 1) (the testkit's LCG from `seed`).
pub(super) fn uniform_pm1(seed: u64) -> impl FnMut() -> f64 {
    let mut g = cardinal_testkit::Lcg::new(seed);
    move || g.signed()
}

/// The Euclidean unroll (η 0.2, momentum 0.9) that the block-against-row tests compare.
pub(super) fn block_test_unroll<'a>(
    wpt: &'a Array2<f64>,
    we: &'a [f64],
    steps: usize,
    projector: &'a AnyProjector,
    final_projector: Option<&'a AnyProjector>,
) -> Unroll<'a, f64> {
    Unroll {
        wpt: wpt.view(),
        we,
        eta: 0.2,
        momentum: 0.9,
        steps,
        projector,
        final_projector,
    }
}
