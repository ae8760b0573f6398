//! `cardinal`: deep structured prediction with cardinality constraints.
//!
//! An implementation of "Predict and Constrain" (Brukhim & Globerson, ICML 2018): a model that
//! predicts how many labels an input has, `z = h(x)`, and then which, by unrolled projected
//! gradient ascent on a learned score over relaxed labels `y ∈ [0,1]^L` constrained to `Σ y = z`.
//!
//! # The public surface
//!
//! The front ends (the command line, the Python package, the HTML report) reach the library
//! through [`engine`]: an [`engine::Engine`] trains, predicts, evaluates, cross-validates and
//! manages run directories, and `engine` names every type it takes or returns (a model and
//! its outputs, training events, a model folder's metadata, the cross-validation report, the
//! benchmark's epochs). Beside it: [`config`], [`eval`] (the evaluation report), [`runtime`]
//! (threads and memory), [`search`] (the default's configuration search) and [`segment`] (the
//! paper's Section 6 model), the crate's [`Error`] and [`Result`] at the root, with [`data`]
//! and [`metrics`] from `cardinal-data` and the projections of `cardinal-proj` as [`proj`].
//!
//! The systems of the paper's Table 1 (the `cardinal-paper` crate) implement [`system`]'s
//! `System` trait and build their networks from [`parts`]: the model's parameters, input
//! standardisation, sparse first layer, dropout and relaxed F1.
//!
//! Every public item has one path.
//!
//! # Inside the crate
//!
//! Crate-private modules, one per concern: `train` (AdaGrad, schedule, loop), `cv` (k-fold
//! cross-validation), `checkpoint` (model folders), `run_dir` (run directories) and
//! `data_spec` (where data comes from). The model itself (configuration, networks, the unroll,
//! the loss, the batch pipeline, the error type) is the `cardinal-model` crate's, named here by
//! its modules' paths (`crate::model`, `crate::batch`, ...); the forests are `cardinal-forest`'s,
//! the Section 6 model `cardinal-segment`'s, and the crash-safe files `cardinal-store`'s.
//!
//! The arrows run one way, between crates and between the modules of each (checked by
//! `tools/module_cycles.py`): `engine → search → system → {train, eval, cv} →
//! cardinal-model (batch → {inference, loss} → model → config) → cardinal-proj`.

#![warn(missing_docs)]

pub use cardinal_data::{data, metrics};
pub use cardinal_proj as proj;

// The model itself is `cardinal-model`'s: its configuration is public here as `config`, its
// error type at the root; the rest is named by this crate's modules under their old paths.
#[cfg(test)]
use cardinal_model::batch;
pub use cardinal_model::config;
// What a training makes, of its system's kind.
pub use cardinal_model::fitted;
// A section's field enum and its comparison, for the sections other crates add.
pub use cardinal_model::plain_section;
use cardinal_model::{inference, model, output_kind, pipeline, search_record, simd};
pub use cardinal_model::{
    CheckpointProblem, ConfigProblem, Disagreement, Error, NotARun, Record, Result, Unread,
};

/// The library's error type, `cardinal-model`'s, by the path this crate's modules name it.
mod error {
    pub(crate) use cardinal_model::{
        CheckpointProblem, Disagreement, Error, NotARun, Record, Result, Unread,
    };
}

mod checkpoint;
mod cv;
mod data_spec;
pub mod engine;
pub mod eval;
pub mod parts;
mod run_dir;
pub mod runtime;
pub mod search;
pub mod segment;
pub mod system;
mod train;
