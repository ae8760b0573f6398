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
    #[error("{field} = {value}: {with}")]
    Conflict {
        /// The field's dotted path.
        field: String,
        /// Its value.
        value: String,
        /// What it conflicts with.
        with: Conflict,
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

/// What a Section 6 setting conflicts with ([`SegError::Conflict`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Conflict {
    /// A term of the unrolled steps, set for the mode that runs none.
    #[error(
        "the {term} enters the unrolled steps, which mode \"unary\" does not run (expected \
         {off}, or mode pnc or oracle)"
    )]
    UnaryMode {
        /// The term (`global energy`, `grid energy`).
        term: &'static str,
        /// The setting's value that turns it off (`0`, `false`).
        off: &'static str,
    },
    /// A grid energy over data whose positions form no square grid.
    #[error("`{data}` has {positions} positions, which do not form a square grid")]
    NotAGrid {
        /// The data's name.
        data: String,
        /// Its positions.
        positions: usize,
    },
}
