//! The training objective: which iterates the relaxed-F1 loss weighs, and the auxiliary terms.

use serde::{Deserialize, Serialize};

use super::check::non_negative;
use crate::error::Result;

/// Weights of the per-iterate losses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterateWeights {
    /// The released code: `(1/T)·1/(T − i + 1)` for the iterate `y_{i+1}`, `i = 0..T−1`
    /// (weights 1/(T+1) … 1/2, divided by T).
    Authors,
    /// Only the last iterate, weight 1.
    Last,
    /// The paper's §3.1 as printed: `ℓ̄ = (1/T) Σ_{t=1}^{T} ℓ(y_t, y*)/(T − t + 1)`, so `y_T`
    /// weighs `1/T` (the released code gives it `1/(2T)`).
    Printed,
}

impl IterateWeights {
    /// The weight of the loss on the iterate `y_t` (`t` from 1) of `steps` ascent steps.
    pub fn weight(self, t: usize, steps: usize) -> f64 {
        let tt = steps as f64;
        match self {
            Self::Authors => 1.0 / (tt * (tt - t as f64 + 2.0)),
            Self::Printed => 1.0 / (tt * (tt - t as f64 + 1.0)),
            Self::Last => f64::from(u8::from(t == steps)),
        }
    }
}

/// The training objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LossConfig {
    /// How the relaxed-F1 losses of the iterates are weighed.
    pub iterate_weights: IterateWeights,
    /// Weight of the relaxed-F1 loss on the iterates (0 turns it off, e.g. for the MLP baseline
    /// trained with the unary BCE only).
    pub f1_weight: f64,
    /// Weight of a supervised cross-entropy term on the true count (0 = the paper: `h` learns
    /// only through the F1 loss).
    pub cardinality_weight: f64,
    /// Weight of an auxiliary binary cross-entropy on the unary scores `σ(u)` (summed over
    /// labels): a dense learning signal for every label, also those a projection clips to 0.
    pub unary_bce_weight: f64,
    /// Sum the per-example losses over the batch (the released code) instead of averaging.
    pub sum_over_batch: bool,
}

impl Default for LossConfig {
    fn default() -> Self {
        Self {
            iterate_weights: IterateWeights::Authors,
            f1_weight: 1.0,
            cardinality_weight: 0.0,
            unary_bce_weight: 0.0,
            sum_over_batch: true,
        }
    }
}

impl LossConfig {
    /// Checks every field against its allowed range; the error names the field
    /// (`loss.f1_weight`), its value and the range.
    pub fn validate(&self) -> Result<()> {
        non_negative("loss.cardinality_weight", self.cardinality_weight)?;
        non_negative("loss.f1_weight", self.f1_weight)?;
        non_negative("loss.unary_bce_weight", self.unary_bce_weight)
    }
}

#[cfg(test)]
mod tests {
    use super::IterateWeights;

    /// Each rule against its formula written out by hand for T = 3: the paper's §3.1 weighs
    /// `y_t` by `1/(T(T − t + 1))` (`y_T` by `1/T`), the released code by `1/(T(T − t + 2))`.
    #[test]
    fn iterate_weights_follow_their_formulas() {
        let at = |w: IterateWeights| (1..=3).map(|t| w.weight(t, 3)).collect::<Vec<_>>();
        let close = |a: Vec<f64>, b: [f64; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-15);
        assert!(close(
            at(IterateWeights::Printed),
            [1.0 / 9.0, 1.0 / 6.0, 1.0 / 3.0]
        ));
        assert!(close(
            at(IterateWeights::Authors),
            [1.0 / 12.0, 1.0 / 9.0, 1.0 / 6.0]
        ));
        assert_eq!(at(IterateWeights::Last), [0.0, 0.0, 1.0]);
    }
}
