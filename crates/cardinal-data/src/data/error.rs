//! The error type of the readers: every parse error carries the file (when known), a 1-based line
//! and a 1-based byte column, and says what was expected.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::invalid::InvalidInput;

/// Result alias of this module.
pub type Result<T, E = DataError> = std::result::Result<T, E>;

/// Where an error happened: file (when known), 1-based line and 1-based byte column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// The file, when the reader was given a path.
    pub path: Option<PathBuf>,
    /// 1-based line.
    pub line: usize,
    /// 1-based byte column.
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
    /// A token other than the one the syntax requires.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the syntax requires there.
        expected: &'static str,
        /// The token found, shortened and escaped.
        found: String,
    },
    /// The input ended inside a construct.
    #[error("unexpected end of file: expected {expected} (truncated file?)")]
    UnexpectedEof {
        /// What was still to come.
        expected: &'static str,
    },
    /// An ARFF feature attribute type the reader cannot encode (`date`, `relational`).
    #[error(
        "unsupported attribute type `{found}` for attribute `{name}`: expected numeric, real, \
         integer, a nominal set {{...}} or string"
    )]
    UnknownAttributeType {
        /// The attribute.
        name: String,
        /// Its declared type.
        found: String,
    },
    /// An ARFF label attribute whose type is neither `{0,1}` nor numeric.
    #[error(
        "unsupported type `{found}` for label attribute `{name}`: expected the nominal set \
         {{0,1}} or numeric (values 0 and 1)"
    )]
    UnsupportedLabelType {
        /// The attribute.
        name: String,
        /// Its declared type.
        found: String,
    },
    /// Labels were to come from a MEKA relation name (`-C n`), which has no such option.
    #[error(
        "the relation name `{relation}` {} saying which attributes are labels (MEKA writes \
         e.g. `@relation 'Scene: -C 6'`); name the labels instead",
        crate::data::arff::meka_problem(relation)
    )]
    NoMekaLabels {
        /// The relation name.
        relation: String,
    },
    /// Two ARFF attributes with the same name.
    #[error("duplicate attribute name `{name}`")]
    DuplicateAttribute {
        /// The repeated name.
        name: String,
    },
    /// An index at or above the number of attributes, features or labels.
    #[error("index {index} out of range: expected an index below {bound} ({what})")]
    IndexOutOfRange {
        /// The index as written in the file.
        index: u64,
        /// The exclusive upper bound, in the file's index base.
        bound: u64,
        /// Where the bound comes from.
        what: &'static str,
    },
    /// A sparse index not greater than the one before it.
    #[error(
        "unsorted sparse index {index} after {previous}: expected strictly increasing indices"
    )]
    UnsortedIndex {
        /// The index.
        index: u64,
        /// The index before it.
        previous: u64,
    },
    /// A sparse index given twice in one row.
    #[error("duplicate sparse index {index}: expected strictly increasing indices")]
    DuplicateIndex {
        /// The repeated index.
        index: u64,
    },
    /// A label listed twice in one row.
    #[error("duplicate label {label} in one row")]
    DuplicateLabel {
        /// The repeated label id, as written.
        label: u64,
    },
    /// A value that does not parse as a finite 32-bit number (not a number, NaN, an
    /// infinity, or beyond the `f32` range).
    #[error("{}", non_numeric(found))]
    NonNumeric {
        /// The token found.
        found: String,
    },
    /// A value outside a nominal attribute's set.
    #[error("invalid value `{found}` for attribute `{name}`: expected one of {expected}")]
    BadNominal {
        /// The attribute.
        name: String,
        /// The value found.
        found: String,
        /// The attribute's values.
        expected: String,
    },
    /// A missing value `?`, which the readers do not support.
    #[error("missing value `?` for attribute `{name}`: missing values are not supported")]
    MissingValue {
        /// The attribute.
        name: String,
    },
    /// A dense ARFF row with a value count other than the number of attributes.
    #[error("dense row has {found} values: expected {expected} (one per attribute)")]
    DenseArity {
        /// The number of attributes.
        expected: usize,
        /// The values in the row.
        found: usize,
    },
    /// A label name (from the XML file or a label list) that the ARFF header does not declare.
    #[error("label `{name}` (from {source_name}) is not an attribute of the ARFF header")]
    LabelNotInHeader {
        /// The label.
        name: String,
        /// Where the label was named.
        source_name: String,
    },
    /// A count in an XMC header that the file's rows contradict.
    #[error("{what}: the header promised {promised}, found {found}")]
    HeaderCount {
        /// What was counted.
        what: &'static str,
        /// The header's count.
        promised: usize,
        /// The count in the file.
        found: usize,
    },
    /// A count or id above a limit of the readers.
    #[error("{what} {value} is too large: at most {limit} are supported ({why})")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The largest supported value.
        limit: u64,
        /// The constant that sets the limit.
        why: &'static str,
    },
    /// A [`LabelSpec::Names`](super::LabelSpec::Names) list that names a label twice.
    #[error("invalid label specification: label `{name}` listed twice")]
    LabelListedTwice {
        /// The repeated label.
        name: String,
    },
    /// A [`LabelSpec::First`](super::LabelSpec::First) or
    /// [`LabelSpec::Last`](super::LabelSpec::Last) count above the number of attributes.
    #[error(
        "invalid label specification: {requested} labels requested but the header has only \
         {attributes} attributes"
    )]
    TooManyLabelsRequested {
        /// The count asked for.
        requested: usize,
        /// The attributes the header declares.
        attributes: usize,
    },
    /// A MULAN label XML file that is not well-formed XML.
    #[error("invalid label XML: {source}")]
    Xml {
        /// The XML parser's error.
        #[source]
        source: roxmltree::Error,
    },
    /// A MULAN label XML file whose root element is not `<labels>`.
    #[error("invalid label XML: expected root element <labels>, found <{found}>")]
    XmlRoot {
        /// The root element's name.
        found: String,
    },
    /// A `<label>` element without its `name` attribute.
    #[error("invalid label XML: expected a `name` attribute on <label>")]
    XmlUnnamedLabel,
    /// Two `<label>` elements with the same name.
    #[error("invalid label XML: duplicate label name `{name}`")]
    XmlDuplicateLabel {
        /// The repeated name.
        name: String,
    },
    /// A label XML file without any `<label>` element.
    #[error("invalid label XML: expected at least one <label> element")]
    XmlNoLabels,
}

/// The error type of the data module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// Reading failed.
    #[error("{}: {source}", shown_path(path))]
    Io {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The input is gzip data that does not decompress: the file is damaged or cut short.
    /// Reported instead of any parse error the damaged text led to.
    #[error("{}: corrupt or truncated gzip data ({source})", shown_path(path))]
    Gzip {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The decompressor's error.
        #[source]
        source: io::Error,
    },
    /// The content is malformed at `location`.
    #[error("{location}: {kind}")]
    Parse {
        /// File, line and column.
        location: Location,
        /// What was wrong.
        kind: ParseErrorKind,
    },
    /// A dataset name or path could not be resolved.
    #[error("dataset `{spec}` not found: {detail}")]
    NotFound {
        /// The name or path asked for.
        spec: String,
        /// Where it was looked for.
        detail: String,
    },
    /// Bad arguments (e.g. split sizes larger than the dataset, mismatched train/test headers).
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
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
            DataError::Io { path, .. } | DataError::Gzip { path, .. } if path.is_none() => {
                *path = Some(p.to_path_buf())
            }
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

    /// A read error; one raised by the gzip decompressor becomes [`DataError::Gzip`].
    pub(crate) fn io(source: io::Error) -> Self {
        if source.get_ref().is_some_and(|e| e.is::<GzipFailure>()) {
            let kind = source.kind();
            let source = match source.into_inner().map(|e| e.downcast::<GzipFailure>()) {
                Some(Ok(g)) => g.0,
                // Unreachable after the check above; keep the error rather than panic.
                Some(Err(e)) => io::Error::new(kind, e),
                None => io::Error::from(kind),
            };
            return DataError::Gzip { path: None, source };
        }
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

fn shown_path(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map_or("<input>".to_string(), |p| p.display().to_string())
}

/// Marks an I/O error as raised by the gzip decompressor (wrapped by the readers' gzip stream,
/// unwrapped into [`DataError::Gzip`]).
#[derive(Debug)]
pub(crate) struct GzipFailure(pub io::Error);

impl fmt::Display for GzipFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for GzipFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
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

/// What is wrong with the value `found` that did not parse as a finite `f32`.
fn non_numeric(found: &str) -> String {
    match found.trim().parse::<f64>() {
        Ok(v) if v.is_nan() => format!("value `{found}` is NaN: expected a finite number"),
        // `inf`, `infinity`: written infinite, not a number too large.
        Ok(v) if v.is_infinite() && found.to_ascii_lowercase().contains("inf") => {
            format!("value `{found}` is infinite: expected a finite number")
        }
        Ok(_) => format!(
            "value `{found}` is outside the range of a 32-bit float (magnitude at most {:e}): \
             expected a number in that range",
            f32::MAX
        ),
        Err(_) => format!("non-numeric value `{found}`: expected a number"),
    }
}
