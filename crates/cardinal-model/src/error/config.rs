//! What is wrong with a configuration's text: the typed "what" of
//! [`Error::InvalidConfig`](super::Error::InvalidConfig), with the JSON reader's error kept as
//! the source.

use std::fmt;

/// Why a configuration's text is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// The JSON reader's refusal: a syntax error, an unknown field, a value of the wrong type.
    #[error("{}", JsonWords(.0))]
    Json(#[source] serde_json::Error),
    /// A section or nested object given as another kind of value.
    #[error("{subject} must be {expected}, found {found}")]
    NotAnObject {
        /// What must be an object (`` `train` ``, `the top level`).
        subject: String,
        /// What it must be (`an object`, `an object or null`).
        expected: &'static str,
        /// What it is (`an array`, ``integer `3` ``).
        found: String,
    },
    /// A configuration file above the size a configuration may have.
    #[error(
        "the file is more than {limit} bytes ({} MiB), the most a configuration file may have",
        limit >> 20
    )]
    TooLarge {
        /// The limit, bytes.
        limit: u64,
    },
    /// A configuration file that is not UTF-8 text.
    #[error("the file is not UTF-8 text (byte {})", .0.valid_up_to())]
    NotUtf8(#[source] std::str::Utf8Error),
    /// A `preset` naming a saved configuration (a search candidate, a baseline) without the
    /// rest of that configuration.
    #[error(
        "`{name}` is not a preset but the name of a saved configuration (a search candidate or \
         a baseline), and this one names neither its `system` nor its `model`: give the whole \
         config.json it was saved as, or a preset ({presets})"
    )]
    SavedNameAlone {
        /// The name given.
        name: String,
        /// The presets there are, comma-separated.
        presets: String,
    },
}

/// A JSON reader's error in its own words, without the position it appends (the refusal
/// gives the position itself, by field and line). Where the words do not end in that
/// position they are given whole.
struct JsonWords<'a>(&'a serde_json::Error);

impl fmt::Display for JsonWords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let text = e.to_string();
        let place = format!(" at line {} column {}", e.line(), e.column());
        f.write_str(text.strip_suffix(&place).unwrap_or(&text))
    }
}

/// Why a system does not read a field of its configuration ([`Error::NotRead`](super::Error::NotRead)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unread {
    /// Of the field's section the system reads these fields only (none: no field of it).
    #[error(
        "{}",
        if reads.is_empty() {
            format!("it reads no field of the `{section}` section")
        } else {
            format!("of the `{section}` section it reads {} only", reads.join(", "))
        }
    )]
    Fields {
        /// The section (`inference`, `baseline`).
        section: &'static str,
        /// The fields of it the system reads.
        reads: Vec<&'static str>,
    },
    /// The field is the other systems' section, of which this system reads nothing.
    #[error("it reads no field of the `{section}` section, which configures the other systems")]
    OthersSection {
        /// The section.
        section: &'static str,
    },
    /// Only Predict and Constrain reads the field; `instead` names what does the same for
    /// this system, if anything.
    #[error(
        "it applies to system `pnc` only{}",
        instead.map_or(String::new(), |i| format!("; for this system use {i}"))
    )]
    PncOnly {
        /// The field of this system's own that does the same.
        instead: Option<&'static str>,
    },
    /// A forest's prior is added to Predict and Constrain's unary scores, which no other
    /// system has.
    #[error("only Predict and Constrain's unary scores take a forest's prior")]
    UnaryScoresOnly,
    /// The forest grows on the rows as they are: every row counts once, whatever its weight.
    #[error("the forest counts every training row once")]
    EveryRowOnce,
}
