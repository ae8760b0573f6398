//! The model's parts, for systems that build on them: the baselines of the paper's Table 1 (the
//! `cardinal-paper` crate) train their own networks on the same parameters, input
//! standardisation, sparse first layer, dropout and loss as Predict and Constrain.
//!
//! Only re-exports belong here; the code lives in the crate-private `model`, `inference`, `loss`
//! and `train` modules. A model and its outputs are [`crate::engine::Model`] and
//! [`crate::engine::Outputs`]; a training run's results and events are in [`crate::engine`] too.

pub use crate::inference::{sigmoid, soft_f1};
pub use crate::model::{
    decay_coefficient, dropout_key, sparse_first_layer, sparse_first_layer_grad, Decay, Dropout,
    Params, Scalar, Standardizer,
};
pub use crate::train::init_model_within;
pub use cardinal_model::batch::Float;
