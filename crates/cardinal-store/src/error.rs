//! Why a file or folder cannot be read or written: the path, and a typed account of what is
//! wrong with it.

use std::fmt;
use std::path::PathBuf;

/// An error of the store: every one names the file or folder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file or folder that is not what the store reads or writes there.
    #[error("{}: {problem}", path.display())]
    Refused {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong with it.
        problem: Problem,
    },
    /// Another live process holds the lock of a run directory.
    #[error(
        "{} is in use by another run (process {pid}); wait for it or choose another directory",
        path.display()
    )]
    RunBusy {
        /// The run directory.
        path: PathBuf,
        /// The process holding its lock.
        pid: u32,
    },
}

impl StoreError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// `path` refused for `problem`.
    pub fn refused(path: impl Into<PathBuf>, problem: Problem) -> Self {
        Self::Refused {
            path: path.into(),
            problem,
        }
    }
}

/// What is wrong with a file or folder the store was asked to read or write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// A model folder's entry that is a symbolic link.
    #[error(
        "is a symbolic link: a model folder's files are read only when they are plain files in it"
    )]
    SymbolicLink,
    /// A model folder's entry that is a folder, FIFO, socket or device.
    #[error(
        "is {what}, not a plain file: a model folder's files are read only when they are plain \
         files"
    )]
    NotPlain {
        /// What it is (`a folder`, `a FIFO, socket or device`).
        what: &'static str,
    },
    /// A model folder's file above the size limit of its kind.
    #[error("is {size} bytes or more: a model folder's file may have at most {limit}")]
    TooLarge {
        /// Its size (at least).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A tensor file whose header does not describe it.
    #[error("not a valid safetensors file: {0}")]
    NotSafetensors(TensorHeader),
    /// A save journal that does not parse.
    #[error("invalid save journal: {0}")]
    BadJournal(JsonProblem),
    /// A save journal naming a file outside its folder.
    #[error("names a file outside its folder")]
    JournalOutsideFolder,
    /// An output path that is a folder.
    #[error("is a folder: name a file to write")]
    OutputIsAFolder,
    /// Something in a run directory's lock file's place that is not a lock file.
    #[error(
        "is {what}, not cardinal's lock file; remove it if no run is writing into {}",
        dir.display()
    )]
    NotALockFile {
        /// What it is (`a folder`, `not a plain file`).
        what: &'static str,
        /// The run directory.
        dir: PathBuf,
    },
    /// A lock file that names no process (written by someone else).
    #[error("names no process; remove it if no run is writing into {}", dir.display())]
    LockOfNoProcess {
        /// The run directory.
        dir: PathBuf,
    },
}

/// What is wrong with a tensor file's header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorHeader {
    /// Too short to hold the header's length.
    #[error("{size} bytes, shorter than its header's length")]
    Short {
        /// The file's size.
        size: u64,
    },
    /// A header length beyond the file or the format's limit.
    #[error(
        "its header claims {claimed} bytes, but the file has {size} (and a header at most {max})"
    )]
    Length {
        /// The length the header claims.
        claimed: u64,
        /// The file's size.
        size: u64,
        /// The largest header read.
        max: u64,
    },
    /// The file ends inside its header.
    #[error("the file ends inside its header")]
    EndsInHeader,
    /// A header that is not a JSON object.
    #[error("its header is not a JSON object: {0}")]
    NotAnObject(JsonProblem),
    /// A tensor without data offsets.
    #[error("tensor `{tensor}` has no data offsets")]
    NoOffsets {
        /// The tensor's name.
        tensor: String,
    },
    /// A file whose size is not what its header describes.
    #[error(
        "the file has {size} bytes, but its header describes {}",
        described.map_or("more than can be".to_string(), |e| e.to_string())
    )]
    Size {
        /// The file's size.
        size: u64,
        /// The size the header describes (`None`: more than a `u64` holds).
        described: Option<u64>,
    },
}

/// What is wrong with a JSON file of a model folder, in words that never quote it (the file may
/// be someone else's, and its keys and values are not echoed): which kind of problem, and
/// where ([`json_problem`](crate::json_problem)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonProblem {
    /// Which kind of problem.
    pub what: JsonProblemKind,
    /// Its line in the file (1-based).
    pub line: usize,
    /// Its column (1-based).
    pub column: usize,
}

/// The kinds of [`JsonProblem`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonProblemKind {
    /// The file cannot be read.
    Unreadable,
    /// Not valid JSON.
    Syntax,
    /// It ends early.
    Eof,
    /// A field this version requires is missing, a field is not one it writes, or a field
    /// has the wrong type or value. Which, is found at the line and column: the kinds are
    /// not told apart, since serde tells them apart only in its English words.
    Data,
}

impl fmt::Display for JsonProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.what {
            JsonProblemKind::Unreadable => "it cannot be read",
            JsonProblemKind::Syntax => "it is not valid JSON",
            JsonProblemKind::Eof => "it ends early",
            JsonProblemKind::Data => {
                "a field is missing, is not one this version writes, or has the wrong type or value"
            }
        };
        write!(f, "{what} (line {}, column {})", self.line, self.column)
    }
}

/// What is wrong with one tensor of a tensor file: missing, of another type or shape than the
/// file's other records imply, or holding values its reader cannot take. What the tensor
/// means is the reader's; this names it and the rule it breaks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorProblem {
    /// No tensor of this name.
    #[error("tensor `{name}` is missing")]
    Missing {
        /// The tensor's name.
        name: String,
    },
    /// A tensor of another element type.
    #[error("tensor `{name}` has dtype {found}, expected {expected}")]
    Dtype {
        /// The tensor's name.
        name: String,
        /// Its element type, as the file names it.
        found: String,
        /// The element type read (`F32`).
        expected: &'static str,
    },
    /// A tensor of another shape.
    #[error("tensor `{name}` has shape {found:?}, expected {expected}")]
    Shape {
        /// The tensor's name.
        name: String,
        /// Its shape.
        found: Vec<usize>,
        /// The shape expected, and what implies it (`[3, 4], as meta.json and config.json
        /// imply`).
        expected: String,
    },
    /// A tensor holding NaN or an infinity.
    #[error("tensor `{name}` holds non-finite values")]
    NonFinite {
        /// The tensor's name.
        name: String,
    },
    /// A tensor of non-negative quantities (a second moment, an accumulator) holding a
    /// negative value.
    #[error("tensor `{name}` holds negative values")]
    Negative {
        /// The tensor's name.
        name: String,
    },
    /// A value that should be an index and is not one below the bound.
    #[error("tensor `{name}` holds {value}, expected an index below {below}")]
    NotAnIndex {
        /// The tensor's name.
        name: String,
        /// The value.
        value: f32,
        /// The bound.
        below: usize,
    },
    /// Values out of the order the tensor keeps.
    #[error("tensor `{name}` must {rule}")]
    Order {
        /// The tensor's name.
        name: String,
        /// The order it keeps (`increase within each row`).
        rule: String,
    },
    /// An entry that is not what its place holds (a tree node that is not a valid split).
    #[error("tensor `{name}`: entry {entry} is not {expected}")]
    Entry {
        /// The tensor's name.
        name: String,
        /// The entry (row), from 0.
        entry: usize,
        /// What it should be (`a valid split`, `the next leaf`).
        expected: &'static str,
    },
}
