//! What a system's training produces, of whichever kind it is: networks' weights (Predict and
//! Constrain, the paper's baselines, a forest blended with networks) or a forest alone, which
//! holds no network at all.
//!
//! [`Fitted`] is what the `System` trait (`cardinal::system`) predicts with and what a
//! model folder holds; each system says which kind it makes and takes.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::pipeline::Model;
use crate::search_record::SearchRecord;
use cardinal_forest::Forest;

/// A random forest that decides each row's label set alone (system `forest`): no network, no
/// energy, no unrolled ascent.
#[derive(Debug, Clone)]
pub struct ForestModel {
    /// The configuration it was grown with (`model.forest`).
    pub config: Config,
    /// The forest.
    pub forest: Forest,
    /// Input dimension `D` of the rows it was grown on.
    pub n_features: usize,
    /// Number of labels `L`.
    pub n_labels: usize,
    /// Mean label count on the training data.
    pub train_mean_cardinality: f64,
    /// What the default's search did before it was grown (`None` when it did not run).
    pub search: Option<SearchRecord>,
}

/// A fitted model, of the kind its system makes.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per model: the size does not matter
pub enum Fitted {
    /// Trained networks, with the forest they are combined with if any (a blend's, or the
    /// unary scores' prior).
    Networks(Model<f32>),
    /// A forest alone.
    Forest(ForestModel),
}

impl From<Model<f32>> for Fitted {
    fn from(model: Model<f32>) -> Self {
        Fitted::Networks(model)
    }
}

impl From<ForestModel> for Fitted {
    fn from(model: ForestModel) -> Self {
        Fitted::Forest(model)
    }
}

impl Fitted {
    /// The configuration it was trained with.
    pub fn config(&self) -> &Config {
        match self {
            Fitted::Networks(m) => &m.config,
            Fitted::Forest(f) => &f.config,
        }
    }

    /// The configuration, to change (a loaded model's inference settings).
    pub fn config_mut(&mut self) -> &mut Config {
        match self {
            Fitted::Networks(m) => &mut m.config,
            Fitted::Forest(f) => &mut f.config,
        }
    }

    /// Input dimension `D`.
    pub fn n_features(&self) -> usize {
        match self {
            Fitted::Networks(m) => m.n_features(),
            Fitted::Forest(f) => f.n_features,
        }
    }

    /// Number of labels `L`.
    pub fn n_labels(&self) -> usize {
        match self {
            Fitted::Networks(m) => m.n_labels(),
            Fitted::Forest(f) => f.n_labels,
        }
    }

    /// Mean label count on the training data.
    pub fn train_mean_cardinality(&self) -> f64 {
        match self {
            Fitted::Networks(m) => m.train_mean_cardinality,
            Fitted::Forest(f) => f.train_mean_cardinality,
        }
    }

    /// What the default's search did before this model trained, if it ran.
    pub fn search(&self) -> Option<&SearchRecord> {
        match self {
            Fitted::Networks(m) => m.search.as_ref(),
            Fitted::Forest(f) => f.search.as_ref(),
        }
    }

    /// Sets what the default's search did before this model trained.
    pub fn set_search(&mut self, search: Option<SearchRecord>) {
        match self {
            Fitted::Networks(m) => m.search = search,
            Fitted::Forest(f) => f.search = search,
        }
    }

    /// The counts `z` it chooses among: the count network's, or every set size `0..=L` for
    /// a forest alone.
    pub fn counts(&self) -> Vec<f32> {
        match self {
            Fitted::Networks(m) => m.counts.clone(),
            Fitted::Forest(f) => (0..=f.n_labels).map(|k| k as f32).collect(),
        }
    }

    /// The forest that decides the label sets (alone, or blended with the networks), or that
    /// gives the unary scores their prior; `None` for networks without one.
    pub fn forest(&self) -> Option<&Forest> {
        match self {
            Fitted::Networks(m) => m.forest.as_ref(),
            Fitted::Forest(f) => Some(&f.forest),
        }
    }

    /// The networks, for a model that has them.
    pub fn networks(&self) -> Option<&Model<f32>> {
        match self {
            Fitted::Networks(m) => Some(m),
            Fitted::Forest(_) => None,
        }
    }

    /// The networks, moved out, for a model that has them.
    pub fn into_networks(self) -> Option<Model<f32>> {
        match self {
            Fitted::Networks(m) => Some(m),
            Fitted::Forest(_) => None,
        }
    }

    /// The networks `system` predicts with, or [`Error::ModelKind`] for a forest.
    pub fn networks_for(&self, system: &str) -> Result<&Model<f32>> {
        self.networks().ok_or_else(|| Error::ModelKind {
            system: system.into(),
            expected: NETWORKS,
            found: self.kind(),
        })
    }

    /// What it is made of, in words: [`NETWORKS`] or [`FOREST_ALONE`].
    pub fn kind(&self) -> &'static str {
        match self {
            Fitted::Networks(_) => NETWORKS,
            Fitted::Forest(_) => FOREST_ALONE,
        }
    }
}

/// [`Fitted::kind`] of trained networks.
pub const NETWORKS: &str = "trained networks";
/// [`Fitted::kind`] of a forest alone.
pub const FOREST_ALONE: &str = "a forest alone";

/// What every fitted model says about itself, whatever its kind: what evaluation reads.
pub trait ModelFacts {
    /// The configuration it was trained with.
    fn config(&self) -> &Config;
    /// Number of labels `L`.
    fn n_labels(&self) -> usize;
    /// Mean label count on the training data.
    fn train_mean_cardinality(&self) -> f64;
    /// What the default's search did before it trained, if it ran.
    fn search(&self) -> Option<&SearchRecord>;
}

impl ModelFacts for Fitted {
    fn config(&self) -> &Config {
        Fitted::config(self)
    }
    fn n_labels(&self) -> usize {
        Fitted::n_labels(self)
    }
    fn train_mean_cardinality(&self) -> f64 {
        Fitted::train_mean_cardinality(self)
    }
    fn search(&self) -> Option<&SearchRecord> {
        Fitted::search(self)
    }
}

impl ModelFacts for Model<f32> {
    fn config(&self) -> &Config {
        &self.config
    }
    fn n_labels(&self) -> usize {
        Model::n_labels(self)
    }
    fn train_mean_cardinality(&self) -> f64 {
        self.train_mean_cardinality
    }
    fn search(&self) -> Option<&SearchRecord> {
        self.search.as_ref()
    }
}

/// Checks that `model` fits data of `n_features` features and `n_labels` labels (`what`
/// names the data for the error).
pub fn check_dims(model: &Fitted, n_features: usize, n_labels: usize, what: &str) -> Result<()> {
    let sizes = (model.n_features(), model.n_labels());
    crate::model::check_sizes(sizes, n_features, n_labels, what)
}
