//! What a system's outputs are ([`OutputKind`], public at `cardinal::system`): read by
//! evaluation and the front ends, declared by each system.

use serde::Serialize;

use crate::pipeline::Outputs;

/// What a system's [`Outputs`] are, and so what a front end may print and accept for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputKind {
    /// Predict and Constrain's: `y` is the last iterate `y_T` on `C(z)`, `z` the count
    /// network's prediction. The count and the constraint diagnostics apply, and a threshold
    /// on `y_T` is a labelling rule.
    Constrained,
    /// A label set decided for the expected F1 (the forests): `y` is the set's indicator, `z`
    /// its size, and the graded scores are the labels' marginal probabilities
    /// (`Outputs::unary`). The count applies; the constraint holds by construction and says
    /// nothing; a threshold on `y` would give the same set at every value and is refused.
    Decided,
    /// Graded label scores without a predicted count (the Table 1 baselines, the MLP): a
    /// threshold applies; `z` is only the scores' sum.
    Scores,
}

impl OutputKind {
    /// The graded per-label scores of `out` (`predict_proba`, `--all-scores`): `y` for
    /// Predict and Constrain and the score systems, the marginal probabilities for a decided
    /// set.
    pub fn graded<'a>(&self, out: &'a Outputs<f32>) -> &'a [f32] {
        match self {
            Self::Decided if out.unary.len() == out.y.len() => &out.unary,
            _ => &out.y,
        }
    }

    /// Whether a threshold on `y` is a labelling rule for these outputs.
    pub fn accepts_threshold(&self) -> bool {
        !matches!(self, Self::Decided)
    }

    /// Whether `z` is a prediction of the count (so that the count diagnostics apply).
    pub fn predicts_count(&self) -> bool {
        !matches!(self, Self::Scores)
    }
}
