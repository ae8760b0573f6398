//! The unrolled projected gradient ascent: steps, step size and the projections it uses.

use serde::{Deserialize, Serialize};

use super::check::{check, count, positive, rate};
use crate::error::Result;
use cardinal_proj::Method;

/// The unrolled projected gradient ascent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InferenceConfig {
    /// Number of unrolled steps `T`.
    pub steps: usize,
    /// Step size `η` of the inner ascent.
    pub eta: f64,
    /// Momentum of the inner ascent.
    pub momentum: f64,
    /// Projection used while training (exact, simplex, soft, dykstra-soft, dykstra-exact, fp,
    /// smooth).
    #[serde(with = "method_name")]
    pub train_projection: Method,
    /// Projection used at evaluation and prediction.
    #[serde(with = "method_name")]
    pub test_projection: Method,
    /// A projection applied once more to the last iterate, in training and at test (`null`:
    /// none, the paper). `exact` after soft Dykstra steps makes `y_T` feasible.
    #[serde(with = "opt_method_name")]
    pub final_projection: Option<Method>,
    /// Dykstra rounds `R` (for the Dykstra methods).
    pub rounds: usize,
    /// Bisection iterations `J` of the FP method.
    pub fp_iters: usize,
    /// Temperature `ε` of the smoothed projection (`smooth`), in units of `y`.
    pub smooth_eps: f64,
    /// "No labels" as a prediction: at inference, a row whose count network gives the count 0
    /// a probability of at least this value gets `z = 0`, so that `y_T = 0` (on `C(0)`) and
    /// its label set is empty (`null`: never; the count 0 must be in the model's count range).
    /// Predicting the empty set is the better decision for example-F1 whenever `P(0) > 1/2`
    /// and an empty prediction for an empty gold set scores 1: any non-empty prediction then
    /// scores at most `1 − P(0)` in expectation. Training is unchanged.
    #[serde(default)]
    pub empty_at: Option<f64>,
    /// At inference, the count `z` of a row is the set size with the highest expected
    /// example-F1 (`crate::model::expected_f1`) under the count network's distribution and the
    /// unary marginals `σ(u)`, instead of the distribution's mean (an empty prediction for an
    /// empty gold set counting 1, this also decides "no labels", over `empty_at`). `y_T`
    /// then lies on `C(z)` for that integer `z`. Training is unchanged. Off unless set (and
    /// then not written), so that configurations without it read and write as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expected_f1_count: bool,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        Self {
            steps: 15,
            eta: 0.005,
            momentum: 0.9,
            train_projection: Method::DykstraSoft,
            test_projection: Method::DykstraSoft,
            final_projection: None,
            rounds: 2,
            fp_iters: 20,
            smooth_eps: 0.1,
            empty_at: None,
            expected_f1_count: false,
        }
    }
}

impl InferenceConfig {
    /// Checks every field against its allowed range; the error names the field
    /// (`inference.eta`), its value and the range.
    pub(crate) fn validate(&self) -> Result<()> {
        count("inference.steps", self.steps, 0, 1000)?;
        positive("inference.eta", self.eta)?;
        rate("inference.momentum", self.momentum)?;
        count("inference.rounds", self.rounds, 1, 1000)?;
        count("inference.fp_iters", self.fp_iters, 1, 200)?;
        if let Some(p) = self.empty_at {
            check(
                p > 0.0 && p <= 1.0,
                "inference.empty_at",
                p,
                "(0, 1] or null",
            )?;
        }
        // Checked whatever the projections: a saved configuration may switch to `smooth` later.
        positive("inference.smooth_eps", self.smooth_eps)
    }
}

/// (De)serialises a projection [`Method`] by its command-line name.
mod method_name {
    use cardinal_proj::Method;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(m)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Method, D::Error> {
        let name = String::deserialize(d)?;
        name.parse()
            .map_err(|e| serde::de::Error::custom(format!("{e}")))
    }
}

/// (De)serialises an optional projection [`Method`] by its name (`null` for none).
mod opt_method_name {
    use cardinal_proj::Method;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(m: &Option<Method>, s: S) -> Result<S::Ok, S::Error> {
        match m {
            Some(m) => s.collect_str(m),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Method>, D::Error> {
        let name: Option<String> = Option::deserialize(d)?;
        name.map(|n| {
            n.parse()
                .map_err(|e| serde::de::Error::custom(format!("{e}")))
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projections_are_written_by_name() {
        let cfg = InferenceConfig {
            final_projection: Some(Method::Smooth),
            ..InferenceConfig::default()
        };
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(json["train_projection"], "dykstra-soft");
        assert_eq!(json["final_projection"], "smooth");
        let back: InferenceConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, cfg);
        let none = serde_json::to_value(InferenceConfig::default()).unwrap();
        assert!(none["final_projection"].is_null());
    }
}
