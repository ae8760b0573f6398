//! Why the Section 6 model refuses its data, its configuration or its saved state.

use cardinal_proj::ProjError;

/// A refusal of the Section 6 model: each names what it refuses and what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegError {
    /// A configuration document that does not parse.
    #[error(
        "invalid configuration: expected {{\"{}\": {{...}}}}: {source}",
        crate::SECTION
    )]
    InvalidConfig {
        /// The JSON reader's refusal.
        #[source]
        source: serde_json::Error,
    },
    /// A configuration field set to a value outside what it allows.
    #[error("{field} = {value} is out of range: expected {allowed}")]
    OutOfRange {
        /// The field's dotted path (`multi_target.steps`).
        field: String,
        /// The value given, as written.
        value: String,
        /// What the field allows.
        allowed: String,
    },
    /// A configuration field whose value conflicts with another setting or with the data.
    #[error("{field} = {value}: {conflict}")]
    Conflict {
        /// The field's dotted path.
        field: String,
        /// Its value.
        value: String,
        /// What it conflicts with, and what would do.
        conflict: String,
    },
    /// Data, or a saved state, of another shape than the model's.
    #[error("{what} has {found}; expected {expected}")]
    Shape {
        /// What has the wrong shape.
        what: String,
        /// The shape it has.
        found: String,
        /// The shape expected.
        expected: String,
    },
    /// An image whose projection failed, in training or at prediction.
    #[error("{data}: image {image}: {source}")]
    Image {
        /// The data's name.
        data: String,
        /// The image (row), from 0.
        image: usize,
        /// What failed.
        #[source]
        source: ProjError,
    },
}
