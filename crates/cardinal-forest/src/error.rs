//! Why a forest cannot be grown.

/// Why [`Forest::fit`](crate::Forest::fit) refused its training data or stopped.
// Exhaustive: `cardinal` puts each refusal in the configuration's words, and a new one must
// get its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForestError {
    /// The training data has no rows.
    #[error("the training data `{data}` has no rows")]
    NoRows {
        /// The data's name.
        data: String,
    },
    /// A size the forest cannot index: its tensors hold indices as exact `f32`.
    #[error(
        "{size} {what}: a forest stores its indices as f32, so it takes fewer than {} training \
         rows, label entries and features each",
        crate::MAX_INDEX
    )]
    TooLarge {
        /// What is too large (`training rows`, `label entries`, `features`).
        what: &'static str,
        /// How many there are.
        size: usize,
    },
    /// Weighted training rows: the trees and the neighbourhoods count every row once, so
    /// weights are refused rather than silently ignored.
    #[error("the forest counts every training row once and takes no sample weights")]
    Weighted,
    /// The caller's cancel flag was set while the trees were grown.
    #[error("growing the forest was cancelled")]
    Cancelled,
}
