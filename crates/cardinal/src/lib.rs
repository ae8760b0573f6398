//! `cardinal`: deep structured prediction with cardinality constraints.
//!
//! An implementation of "Predict and Constrain" (Brukhim & Globerson, ICML 2018): a model that
//! predicts how many labels an input has, `z = h(x)`, and then which, by unrolled projected
//! gradient ascent on a learned score over relaxed labels `y ∈ [0,1]^L` constrained to `Σ y = z`.
//!
//! Modules, one per concern: [`data`] (readers, splits) and [`metrics`] (from `cardinal-data`),
//! [`model`] (networks and the score), [`inference`] (the unrolled, differentiable solver),
//! [`loss`] (the relaxed F1), [`batch`] (the whole model on a batch: networks → unroll → loss,
//! named through [`pipeline`]), [`train`] (AdaGrad, schedule, loop), [`eval`], [`cv`] (k-fold
//! cross-validation), [`engine`], [`config`], [`checkpoint`]. The projection math lives in the
//! `cardinal-proj` crate, re-exported as [`proj`].
//!
//! Within the crate the arrows run one way: `engine → {train, eval, cv} → batch →
//! {inference, loss} → model → cardinal-proj`.

#![warn(missing_docs)]
#![warn(unnameable_types)]

pub use cardinal_data::{data, metrics};
pub use cardinal_proj as proj;

mod batch;
mod checkpoint;
pub mod config;
mod cv;
pub mod engine;
pub mod error;
pub mod eval;
mod eval_units;
// `Kernel::supports` and a few `BlockTape` accessors were public API with no caller left now
// that the module is crate-private; their owners remove them.
#[allow(dead_code)]
mod inference;
mod loss;
mod model;
pub mod parts;
mod pipeline;
mod run_dir;
pub mod runtime;
pub mod search;
pub mod segment;
mod simd;
pub mod system;
mod train;

pub use config::Config;
pub use engine::{DataSpec, Engine};
pub use error::{Error, Result};
