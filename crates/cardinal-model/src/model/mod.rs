//! The model of Predict and Constrain: its networks and their parameters.
//!
//! * unary net `u(x) = relu(x̃ W1 + b1) W2 + b2` (`x̃` the standardised input), score `yᵀu(x)`;
//! * global energy `s_g(y) = w2ᵀ relu(Wpᵀ y)`, not conditioned on `x`, no biases;
//! * cardinality net `p(x) = softmax(relu(x̃ C1 + c1) C2 + c2)` over the counts `k`,
//!   `z = Σ_k k p_k` (or the argmax).
//!
//! The standardisation `x̃ = (x − mean)·scale` is folded into the first layers, so the sparse input
//! stays sparse: `x̃ W = Σ_{d ∈ nz(x)} x_d scale_d W_d − (mean ⊙ scale)ᵀ W`.
//!
//! One concern per file: the parameters and their scalar type (`params`), the input
//! standardisation (`standardize`), the sparse first layer and its gradient (`sparse_layer`),
//! the two networks on rows of a batch (`networks`) and dropout (`dropout`). This module is the
//! bottom of the crate's model code and uses neither the unroll nor the loss: the whole model on
//! a batch (networks, unrolled inference, the loss and its gradient) is [`crate::batch`], which
//! adds its methods to [`Model`].

mod dropout;
pub mod expected_f1;
mod networks;
mod params;
mod sparse_layer;
mod standardize;

pub use dropout::{dropout_key, Dropout};
pub use networks::{ensure_shape, TwoLayer, TwoLayerGrad};
pub use params::c;
pub use params::{Decay, Params, Scalar};
pub use sparse_layer::{first_layer_row_dispatch, first_layer_shift};
pub use sparse_layer::{sparse_first_layer, sparse_first_layer_grad};
pub use sparse_layer::{sparse_first_layer_backward, FirstLayerGrad};
pub use standardize::Standardizer;

use crate::config::Config;
use crate::error::{Error, Result};

/// A trained or initialised model: parameters plus everything needed to apply them.
#[derive(Debug, Clone)]
pub struct Model<F: Scalar> {
    /// The configuration the model was built and trained with.
    pub config: Config,
    /// The trained (or initial) weights.
    pub params: Params<F>,
    /// The input standardisation, from the training data.
    pub standardizer: Standardizer,
    /// The counts the cardinality network chooses among (`K` values).
    pub counts: Vec<F>,
    /// Mean label count on the training data (the constant baseline of the count predictor).
    pub train_mean_cardinality: f64,
    /// The forest that decides the label sets, alone or blended with the networks, when the
    /// configuration has one (`model.forest`).
    pub forest: Option<cardinal_forest::Forest>,
    /// What the default's search did before this model trained (`None` when it did not
    /// run), saved in `meta.json`.
    pub search: Option<crate::search_record::SearchRecord>,
}

/// Per-row outputs of a forward pass.
#[derive(Debug, Clone, Default)]
pub struct Outputs<F> {
    /// Last iterates `y_T`, `n × L` row-major.
    pub y: Vec<F>,
    /// Predicted counts `z`, one per row.
    pub z: Vec<F>,
    /// Unary scores `u(x)`, `n × L`.
    pub unary: Vec<F>,
    /// Scores that rank the labels, `n × L`: the last ascent step's point before its
    /// projection (the order of `y_T`, without its ties where entries meet 0 or 1; see
    /// `RowTape::ranking`). Empty for systems that do not keep them; see
    /// [`Outputs::ranking_scores`].
    pub ranking: Vec<F>,
}

impl<F> Outputs<F> {
    /// The scores to rank labels by (precision@k): [`Outputs::ranking`], else `y`.
    pub fn ranking_scores(&self) -> &[F] {
        if self.ranking.len() == self.y.len() {
            &self.ranking
        } else {
            &self.y
        }
    }
}

impl<F: Copy> Outputs<F> {
    /// Makes `ranking` cover every row already in `y` (rows without ranking scores rank by
    /// `y`, as [`Outputs::ranking_scores`] would), so that appended rows can extend both.
    pub fn align_ranking(&mut self) {
        if self.ranking.len() != self.y.len() {
            self.ranking.clone_from(&self.y);
        }
    }
}

impl<F: Scalar> Model<F> {
    /// Input dimension `D`.
    pub fn n_features(&self) -> usize {
        self.params.w1.nrows()
    }

    /// Number of labels `L`.
    pub fn n_labels(&self) -> usize {
        self.params.w2.ncols()
    }

    /// The unary hidden layer's dropout while training, if any.
    pub fn dropout(&self, train: bool, key: u64) -> Option<Dropout> {
        let rate = self.config.model.dropout;
        (train && rate > 0.0).then_some(Dropout { rate, key })
    }

    /// The weight-decay coefficient in effect: `train.weight_decay`, scaled down for label-rich
    /// data when `train.decay_reference_cardinality` is set.
    pub fn weight_decay(&self) -> f64 {
        let t = &self.config.train;
        let scale = t
            .decay_reference_cardinality
            .filter(|_| self.train_mean_cardinality > 0.0)
            .map_or(1.0, |r| (r / self.train_mean_cardinality).min(1.0));
        t.weight_decay * scale
    }
}

/// The weight-decay coefficient of a tensor of decay class `class`.
pub fn decay_coefficient(class: Decay, wd: f64, unary_mult: f64) -> f64 {
    match class {
        Decay::None => 0.0,
        Decay::Unary => wd * unary_mult,
        Decay::Other => wd,
    }
}

/// Builds the count values `min..=max`.
pub fn count_values<F: Scalar>(min: usize, max: usize) -> Vec<F> {
    (min..=max).map(|k| c(k as f64)).collect()
}

/// Checks that a model fits a dataset's dimensions.
pub fn check_dims<F: Scalar>(
    model: &Model<F>,
    n_features: usize,
    n_labels: usize,
    what: &str,
) -> Result<()> {
    check_sizes(
        (model.n_features(), model.n_labels()),
        n_features,
        n_labels,
        what,
    )
}

/// Checks that a model of `sizes` (features, labels) fits data of `n_features` features and
/// `n_labels` labels (`what` names the data for the error), whatever the model's kind.
pub fn check_sizes(
    sizes: (usize, usize),
    n_features: usize,
    n_labels: usize,
    what: &str,
) -> Result<()> {
    if sizes != (n_features, n_labels) {
        return Err(Error::Shape {
            what: what.to_string(),
            found: format!("{n_features} features and {n_labels} labels"),
            expected: format!("the model's {} features and {} labels", sizes.0, sizes.1),
        });
    }
    Ok(())
}
