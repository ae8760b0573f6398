//! The whole model on a batch under the `pipeline` path: re-exports of [`crate::model`] (and of
//! [`LOCKSTEP_MAX_LABELS`] from [`crate::inference`]) for the trainer, evaluation, the systems and
//! the command line, which name them here.
//!
//! Only re-exports belong in this module; the code lives in [`crate::model`].

pub use crate::inference::LOCKSTEP_MAX_LABELS;
pub use crate::model::{
    batch_loss, check_dims, count_values, decay_coefficient, dropout_key, BatchLoss, Dropout,
    Model, Outputs, Workspace, INFER_LANES, TRAIN_LANES,
};
