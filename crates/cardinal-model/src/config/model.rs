//! Sizes of the three networks and how the predicted count `z` is formed.

use serde::{Deserialize, Serialize};

use super::check::{check, count, rate};
use crate::error::Result;

/// Which counts the cardinality network chooses among; `z` is a function of its softmax.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum CountRange {
    /// The counts `min..=max`.
    Fixed {
        /// Smallest count.
        min: usize,
        /// Largest count (capped at the number of labels).
        max: usize,
    },
    /// From the training label counts: `min` is the smallest training count, `max` the smallest
    /// count that covers at least `coverage` of the training examples, but never below
    /// `min + 2`. With `coverage = 0.8` this gives the authors' `{1,2,3}` on Bibtex
    /// (81.2 % of its training examples have at most 3 labels).
    Auto {
        /// Share of the training examples whose count the range must cover, in `(0, 1]`.
        coverage: f64,
    },
}

/// How `z` is read off the cardinality network's softmax `p` over counts `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZMode {
    /// `z = Σ_k k·p_k`: differentiable, the authors' choice.
    Expectation,
    /// `z = argmax_k p_k`: not differentiable; the network then learns only from the
    /// supervised cardinality term.
    Argmax,
}

/// Sizes of the three networks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Hidden units of the unary (feature) network `x → H → L`.
    pub hidden: usize,
    /// Hidden units of the global energy `w2ᵀ relu(Wpᵀ y)`.
    pub energy_hidden: usize,
    /// Hidden units of the cardinality network `x → Hc → K`.
    pub card_hidden: usize,
    /// The counts the cardinality network chooses among.
    #[serde(deserialize_with = "super::strict::object")]
    pub counts: CountRange,
    /// How `z` is read off the cardinality network's softmax.
    pub z_mode: ZMode,
    /// Dropout rate on the unary network's hidden units while training (0 = none, the paper;
    /// inverted dropout, so inference uses the network as is).
    pub dropout: f64,
    /// The forest candidates of the default's search (`crate::search`): when set, the label
    /// sets come from a random forest's neighbourhoods, each the set of highest expected
    /// example-F1 under them (its size is the predicted count). With `networks` 0 the forest
    /// is the whole model (system `forest`: no network is made); above 0 the three networks
    /// train, and their joint distribution is blended in. Unset (and then not written)
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forest: Option<ForestConfig>,
    /// A random forest's label marginals as a prior of Predict and Constrain's unary scores:
    /// each score is the unary network's plus `weight · logit(q)`, with `q` the forest's
    /// marginal clipped to `[clip, 1 − clip]` (out of bag on the rows the forest grew on), so
    /// that the network learns what the forest misses; the energy, the unrolled ascent and the
    /// projection onto `C(z)` still decide. Unset (and then not written) otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forest_prior: Option<ForestPriorConfig>,
}

/// The forest of [`ModelConfig::forest_prior`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForestPriorConfig {
    /// Number of trees.
    pub trees: usize,
    /// Fewest (bootstrap-weighted) training rows in a leaf.
    pub min_leaf: usize,
    /// The prior's scale on the unary scores (the forest's log-odds times this).
    pub weight: f64,
    /// The marginals are clipped to `[clip, 1 − clip]` before their log-odds are taken.
    pub clip: f64,
}

impl Default for ForestPriorConfig {
    fn default() -> Self {
        Self {
            trees: 300,
            min_leaf: 1,
            weight: 1.0,
            clip: 0.01,
        }
    }
}

/// The forest of [`ModelConfig::forest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForestConfig {
    /// Number of trees.
    pub trees: usize,
    /// Fewest (bootstrap-weighted) training rows in a leaf.
    pub min_leaf: usize,
    /// The networks' share of the joint distribution the sets are decided under, in `[0, 1)`:
    /// 0 decides by the forest alone and leaves the networks untrained; above 0 the networks
    /// are trained as configured and their joint (the count distribution and the unary
    /// scores, `crate::forest`) is mixed in with this weight.
    pub networks: f64,
}

impl ForestConfig {
    /// How its forest is grown.
    pub fn growth(&self) -> cardinal_forest::GrowSettings {
        cardinal_forest::GrowSettings {
            trees: self.trees,
            min_leaf: self.min_leaf,
        }
    }
}

impl ForestPriorConfig {
    /// How its forest is grown.
    pub fn growth(&self) -> cardinal_forest::GrowSettings {
        cardinal_forest::GrowSettings {
            trees: self.trees,
            min_leaf: self.min_leaf,
        }
    }
}

impl Default for ForestConfig {
    fn default() -> Self {
        Self {
            trees: 300,
            min_leaf: 1,
            networks: 0.0,
        }
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            hidden: 150,
            energy_hidden: 16,
            card_hidden: 150,
            counts: CountRange::Auto { coverage: 0.8 },
            z_mode: ZMode::Expectation,
            dropout: 0.0,
            forest: None,
            forest_prior: None,
        }
    }
}

impl ModelConfig {
    /// Checks every field against its allowed range; the error names the field
    /// (`model.hidden`), its value and the range.
    pub fn validate(&self) -> Result<()> {
        count("model.hidden", self.hidden, 1, 1 << 16)?;
        count("model.energy_hidden", self.energy_hidden, 0, 1 << 16)?;
        count("model.card_hidden", self.card_hidden, 1, 1 << 16)?;
        rate("model.dropout", self.dropout)?;
        if let Some(f) = &self.forest {
            count("model.forest.trees", f.trees, 1, 10_000)?;
            count("model.forest.min_leaf", f.min_leaf, 1, 1_000_000)?;
            rate("model.forest.networks", f.networks)?;
        }
        if let Some(f) = &self.forest_prior {
            count("model.forest_prior.trees", f.trees, 1, 10_000)?;
            count("model.forest_prior.min_leaf", f.min_leaf, 1, 1_000_000)?;
            check(
                f.weight.is_finite() && f.weight > 0.0 && f.weight <= 100.0,
                "model.forest_prior.weight",
                f.weight,
                "(0, 100]",
            )?;
            check(
                f.clip > 0.0 && f.clip < 0.5,
                "model.forest_prior.clip",
                f.clip,
                "(0, 0.5)",
            )?;
            check(
                self.forest.is_none(),
                "model.forest_prior",
                "set",
                "unset where model.forest is set (a forest system decides by its forest)",
            )?;
        }
        match self.counts {
            // `min` is bounded by `max` here and by the number of labels when training starts.
            CountRange::Fixed { min, max } => check(
                min <= max,
                "model.counts.max",
                max,
                &format!(">= model.counts.min ({min})"),
            ),
            CountRange::Auto { coverage } => check(
                coverage > 0.0 && coverage <= 1.0,
                "model.counts.coverage",
                coverage,
                "(0, 1]",
            ),
        }
    }
}

/// Resolves a [`CountRange`] against the training label counts: the smallest and largest
/// count, the largest capped at `n_labels`.
pub fn resolve_counts(
    range: &CountRange,
    train_counts: &[usize],
    n_labels: usize,
) -> (usize, usize) {
    match *range {
        CountRange::Fixed { min, max } => (min, max.min(n_labels)),
        CountRange::Auto { coverage } => {
            if train_counts.is_empty() {
                return (0, 2.min(n_labels));
            }
            let mut sorted = train_counts.to_vec();
            sorted.sort_unstable();
            let min = sorted[0];
            let need = ((coverage * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            let covered = sorted[need - 1];
            (min, covered.max(min + 2).min(n_labels).max(min))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_counts_reproduce_the_authors_range_on_bibtex_like_counts() {
        // Bibtex training histogram head: 1849 ones, 1230 twos, 885 threes, then 916 above 3.
        let mut counts = vec![1; 1849];
        counts.extend(vec![2; 1230]);
        counts.extend(vec![3; 885]);
        counts.extend(vec![5; 916]);
        assert_eq!(
            resolve_counts(&CountRange::Auto { coverage: 0.8 }, &counts, 159),
            (1, 3)
        );
        assert_eq!(
            resolve_counts(&CountRange::Auto { coverage: 1.0 }, &counts, 159),
            (1, 5)
        );
        assert_eq!(
            resolve_counts(&CountRange::Fixed { min: 0, max: 500 }, &counts, 159),
            (0, 159)
        );
    }

    #[test]
    fn counts_with_max_below_min_are_refused() {
        let cfg = ModelConfig {
            counts: CountRange::Fixed { min: 5, max: 2 },
            ..ModelConfig::default()
        };
        let err = cfg.validate().unwrap_err().to_string();
        assert_eq!(
            err,
            "model.counts.max = 2 is out of range: expected >= model.counts.min (5)"
        );
        ModelConfig::default().validate().unwrap();
    }
}
