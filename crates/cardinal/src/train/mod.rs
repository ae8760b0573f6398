//! Training: AdaGrad over the end-to-end loss, the two-phase schedule of the released code
//! (epochs on the train part of a seeded train/dev split, then epochs on all of train), dev
//! evaluation, early stopping, and divergence checks.
//!
//! One concern per file: `optim` (AdaGrad and its fused step), `state` (a run's state and what
//! it reports), `init` (a fresh model), `schedule` (the loop), `average` (the weight average).

mod average;
mod init;
mod optim;
mod schedule;
mod state;

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod fixtures;

#[cfg(test)]
pub(crate) use init::init_model;
pub use init::init_model_within;
pub(crate) use optim::Adagrad;
#[cfg(test)]
pub(crate) use schedule::train;
pub(crate) use schedule::{epoch_over_all, run};
pub use state::{EpochRecord, Event, Hooks, Progress, Start, TrainState, Trained};
