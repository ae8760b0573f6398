//! `cardinal-segment`: the paper's Section 6 as a model, Predict and Constrain for non-binary
//! labels.
//!
//! An example is an image of `L` positions with `C` features each (`x_p ∈ R^C`); its labels are
//! one of `M` classes per position. The model ([`SegModel`]):
//!
//! * **unary scores** `S = X W + 1bᵀ` (`L × M`, one linear map shared by every position);
//! * **a count head** `z = L · softmax(V x̄ + c)`, `x̄` the image's mean feature vector, so that
//!   `Σz = L` always and the polytope is never empty;
//! * **`T` unrolled projected ascent steps** on the linear score `⟨S, Y⟩`:
//!   `Y_0 = 1/M`, `Y_{t+1} = P(Y_t + η S; z)` with `P` a projection onto
//!   `{Y ≥ 0, Y1 = 1, Yᵀ1 = z}` from [`cardinal_proj::matrix`] (exact, Dykstra with the released Algorithm 1, or
//!   Sinkhorn), optionally with a global energy `E(Y) = Σ_k w_k softplus(⟨B_k, Y⟩)` whose
//!   gradient joins the score, `Y_{t+1} = P(Y_t + η(S + ∇E(Y_t)); z)` (`energy`), and
//!   optionally a pairwise energy between the 4-neighbours of an image grid
//!   (`grid_energy`);
//! * **loss**: one minus the soft intersection-over-union averaged over classes (the relaxed
//!   mean IoU, the metric itself, as the binary model trains on a relaxed F1), plus
//!   `λ Σ_j (z_j/L − n_j/L)²` on the counts. Cross-entropy was not chosen because the Euclidean
//!   projection puts exact zeros in `Y_T`: `−log Y` is unbounded there.
//!
//! Trained end to end by Adam (`fit`) on hand-written gradients (checked against finite
//! differences in the tests). [`Mode`] picks the unary softmax baseline, the unroll without
//! class sizes (rows on the simplex only), P&C with predicted counts, or P&C with the gold
//! counts (an oracle). Front ends reach it through `cardinal`'s `Engine`
//! (`start_segmentation_run`, `finish_segmentation_run`, `evaluate_segmentation`,
//! `predict_segmentation`, `load_segmentation`), which also writes and reads its model
//! directories (`"labels": "multi_target"` in `meta.json`, so that `eval` and `predict`
//! dispatch on it). Its configuration is the `{"multi_target": {...}}` document
//! ([`SegConfig::from_json`]); its refusals are [`SegError`]s.
//!
//! # Example
//!
//! ```
//! use cardinal_data::data::synth_seg::{synth_seg, SynthSegSpec};
//! use cardinal_segment::{evaluate, fit, SegConfig};
//!
//! let spec = SynthSegSpec { train: 40, test: 20, ..SynthSegSpec::default() };
//! let (train, test) = synth_seg(&spec).unwrap();
//! let cfg = SegConfig { epochs: 2, ..SegConfig::default() };
//! let model = fit(&train, &cfg).unwrap();
//! let metrics = evaluate(&model, &test).unwrap();
//! assert!((0.0..=1.0).contains(&metrics.mean_iou));
//! ```

#![warn(missing_docs)]

mod energy;
mod error;
mod eval;
mod grid_energy;
mod model;
mod predict;
mod settings;
mod step;
mod train;

pub use energy::GlobalEnergy;
pub use error::{Conflict, SegError};
pub use eval::{evaluate, SegMetrics};
pub use grid_energy::GridEnergy;
pub use model::{Mode, SegModel};
pub use predict::{predict_rows, SegRow};
pub use settings::SECTION;
pub use train::{fit, fit_from, start, SegConfig, SegEpoch, SegState};

/// The crate's `Result`, with [`SegError`].
pub type Result<T, E = SegError> = std::result::Result<T, E>;

/// `n` deterministic values in `[-1, 1)` (xorshift), for the tests' random matrices.
#[cfg(test)]
fn test_values(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// Asserts that `grad` is the gradient of `f` at `x` by central differences, entry by entry.
#[cfg(test)]
fn assert_central_differences(f: impl Fn(&[f64]) -> f64, x: &[f64], grad: &[f64], what: &str) {
    let h = 1e-6;
    for i in 0..x.len() {
        let (mut up, mut dn) = (x.to_vec(), x.to_vec());
        up[i] += h;
        dn[i] -= h;
        let fd = (f(&up) - f(&dn)) / (2.0 * h);
        assert!(
            (fd - grad[i]).abs() < 1e-8 * (1.0 + fd.abs()),
            "{what} {i}: fd {fd} vs {}",
            grad[i]
        );
    }
}
