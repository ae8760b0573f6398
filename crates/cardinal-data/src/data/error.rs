//! The error type of the readers: every parse error carries the file (when known), a 1-based line
//! and a 1-based byte column, and says what was expected.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Result alias of this module.
pub type Result<T, E = DataError> = std::result::Result<T, E>;

/// Where an error happened: file (when known), 1-based line and 1-based byte column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub path: Option<PathBuf>,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}:{}:{}", p.display(), self.line, self.column),
            None => write!(f, "line {}, column {}", self.line, self.column),
        }
    }
}

/// What went wrong while parsing (the location is kept beside it in [`DataError::Parse`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    #[error("expected {expected}, found {found}")]
    Expected {
        expected: &'static str,
        found: String,
    },
    #[error("unexpected end of file: expected {expected} (truncated file?)")]
    UnexpectedEof { expected: &'static str },
    #[error(
        "unsupported attribute type `{found}` for attribute `{name}`: expected numeric, real, \
         integer or the nominal set {{0,1}}"
    )]
    UnknownAttributeType { name: String, found: String },
    #[error("duplicate attribute name `{name}`")]
    DuplicateAttribute { name: String },
    #[error("index {index} out of range: expected an index below {bound} ({what})")]
    IndexOutOfRange {
        index: u64,
        bound: u64,
        what: &'static str,
    },
    #[error(
        "unsorted sparse index {index} after {previous}: expected strictly increasing indices"
    )]
    UnsortedIndex { index: u64, previous: u64 },
    #[error("duplicate sparse index {index}: expected strictly increasing indices")]
    DuplicateIndex { index: u64 },
    #[error("duplicate label {label} in one row")]
    DuplicateLabel { label: u64 },
    #[error("non-numeric value `{found}`: expected a number")]
    NonNumeric { found: String },
    #[error("invalid value `{found}` for attribute `{name}`: expected one of {expected}")]
    BadNominal {
        name: String,
        found: String,
        expected: String,
    },
    #[error("missing value `?` for attribute `{name}`: missing values are not supported")]
    MissingValue { name: String },
    #[error("dense row has {found} values: expected {expected} (one per attribute)")]
    DenseArity { expected: usize, found: usize },
    #[error("label `{name}` (from {source_name}) is not an attribute of the ARFF header")]
    LabelNotInHeader { name: String, source_name: String },
    #[error("{what}: the header promised {promised}, found {found}")]
    HeaderCount {
        what: &'static str,
        promised: usize,
        found: usize,
    },
    #[error("{what} {value} is too large: at most {limit} are supported ({why})")]
    TooLarge {
        what: &'static str,
        value: u64,
        limit: u64,
        why: &'static str,
    },
    #[error("invalid label specification: {0}")]
    BadLabelSpec(String),
    #[error("invalid label XML: {0}")]
    Xml(String),
}

/// The error type of the data module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// Reading failed (including a corrupt gzip stream).
    #[error("{}: {source}", path.as_ref().map_or("<input>".to_string(), |p| p.display().to_string()))]
    Io {
        path: Option<PathBuf>,
        #[source]
        source: io::Error,
    },
    /// The content is malformed at `location`.
    #[error("{location}: {kind}")]
    Parse {
        location: Location,
        kind: ParseErrorKind,
    },
    /// A dataset name or path could not be resolved.
    #[error("dataset `{spec}` not found: {detail}")]
    NotFound { spec: String, detail: String },
    /// Bad arguments (e.g. split sizes larger than the dataset, mismatched train/test headers).
    #[error("{0}")]
    Invalid(String),
}

impl DataError {
    /// The location of a parse error.
    pub fn location(&self) -> Option<&Location> {
        match self {
            DataError::Parse { location, .. } => Some(location),
            _ => None,
        }
    }

    /// The kind of a parse error.
    pub fn parse_kind(&self) -> Option<&ParseErrorKind> {
        match self {
            DataError::Parse { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// Attaches `path` to an error that has none yet (readers of `impl BufRead` don't know it).
    pub fn with_path(mut self, p: &Path) -> Self {
        match &mut self {
            DataError::Io { path, .. } if path.is_none() => *path = Some(p.to_path_buf()),
            DataError::Parse { location, .. } if location.path.is_none() => {
                location.path = Some(p.to_path_buf())
            }
            _ => {}
        }
        self
    }

    pub(crate) fn parse(line: usize, column: usize, kind: ParseErrorKind) -> Self {
        DataError::Parse {
            location: Location {
                path: None,
                line,
                column,
            },
            kind,
        }
    }

    pub(crate) fn io(source: io::Error) -> Self {
        DataError::Io { path: None, source }
    }

    /// Out of memory while reading line `line`, holding `bytes` bytes of data so far.
    pub(crate) fn out_of_memory(line: usize, bytes: usize) -> Self {
        DataError::io(io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "out of memory at line {line} with {:.1} MiB of data read: the dataset does not \
                 fit in the memory available to this process",
                bytes as f64 / (1 << 20) as f64
            ),
        ))
    }
}

/// Makes room for at least `extra` more elements without aborting the process when the
/// allocation fails (the readers' growing arrays; amortised doubling, so this is a comparison
/// on most calls).
pub(crate) fn try_room<T>(v: &mut Vec<T>, extra: usize) -> std::result::Result<(), ()> {
    v.try_reserve(extra).map_err(|_| ())
}

/// Shows a token for an error message: escaped, shortened, and `end of line` when empty.
pub(crate) fn show(tok: &[u8]) -> String {
    if tok.is_empty() {
        return "end of line".to_string();
    }
    let s = String::from_utf8_lossy(&tok[..tok.len().min(40)]);
    let mut out = format!("`{}", s.escape_debug());
    if tok.len() > 40 {
        out.push_str("...");
    }
    out.push('`');
    out
}
