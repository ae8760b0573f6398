//! The whole model on a batch: the two networks, then the unrolled solver, then the loss and its
//! gradient (`networks → unroll → loss`), as methods of [`Model`](crate::model::Model).
//!
//! This module sits above [`crate::model`] (the networks and their parameters),
//! [`crate::inference`] (the unroll and its kernels) and [`crate::loss`] (the relaxed F1), and
//! joins them; none of them uses it. Rust lets a module add methods to a type of another, so the
//! batch-level methods are still called on the model (`model.forward(..)`,
//! `model.loss_and_grad(..)`); the trainer, evaluation, the systems and the command line name
//! the types through [`crate::pipeline`].
//!
//! One concern per file: the reusable buffers of a batch (`workspace`), the stages a batch goes
//! through and the solver built from the model (`stages`: the networks and the count, the
//! projections, the unroll and the kind of its kernel), the unroll kernels behind one interface
//! and the one place that picks them (`kernel`), inference over rows (`forward`), and the
//! training loss and its gradient (`gradient`).

mod clock;
mod float;
mod forward;
mod gradient;
mod heads;
mod kernel;
mod stages;
mod workspace;

// The batch's end-to-end tests (the gradient against finite differences, per-example loss
// weights against repeated rows) are `cardinal`'s (`train/batch_tests`): they build models with
// its trainer.

pub use clock::Stage;
pub use float::Float;
pub use gradient::batch_loss;
pub use gradient::BatchLoss;
pub use kernel::TRAIN_LANES;
pub use workspace::Workspace;
