//! `cardinal-model`: the Predict and Constrain model itself, below the trainer and the front
//! door of `cardinal`, which re-exports what users need (`cardinal::config`, `cardinal::Error`,
//! `cardinal::engine::Model`). Users depend on `cardinal`; this crate's API serves it.
//!
//! * [`config`]: the typed configuration, its presets and checks;
//! * [`model`]: the networks and their parameters (`Params`, standardisation, the sparse first
//!   layer, dropout, the expected-F1 count), and [`model::Model`], a fitted model;
//! * [`inference`]: the unrolled, differentiable projected gradient ascent;
//! * [`loss`]: the relaxed F1;
//! * [`batch`]: the whole model on a batch, networks → unroll → loss (named through
//!   [`pipeline`]);
//! * [`Error`], the library's error type, with the record of a model's search
//!   ([`search_record`]) and what a system's outputs are ([`output_kind`]).
//!
//! Within the crate the arrows run one way: `batch → {inference, loss} → model → config →
//! error`, with `cardinal-proj` below all of them.
//!
//! # Example
//!
//! ```
//! use cardinal_model::config::Config;
//! // The default configuration and the authors' are both valid.
//! let cfg = Config::predict();
//! assert_eq!(cfg.system, "pnc");
//! let paper = Config::paper();
//! assert!(paper.inference.steps > 0);
//! ```

#![warn(missing_docs)]

pub use cardinal_data::{data, metrics};
pub use cardinal_proj as proj;

pub mod batch;
pub mod config;
mod error;
pub mod fitted;
pub mod inference;
pub mod loss;
pub mod model;
pub mod output_kind;
pub mod pipeline;
pub mod search_record;
pub mod simd;

pub use error::{
    CheckpointProblem, ConfigProblem, Disagreement, Error, NotARun, Record, Result, Unread,
};
