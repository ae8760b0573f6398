//! The whole model on a batch under the `pipeline` path: re-exports of [`crate::batch`] and of
//! the model ([`crate::model`]) it runs for the trainer, evaluation, the systems and the command
//! line, which name them here.
//!
//! Only re-exports belong in this module; the code lives in [`crate::batch`] and
//! [`crate::model`].

pub use crate::batch::Stage;
pub use crate::batch::{BatchLoss, Workspace};
pub use crate::model::{check_dims, count_values, decay_coefficient, dropout_key};
pub use crate::model::{Model, Outputs};
