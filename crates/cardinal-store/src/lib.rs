//! `cardinal-store`: the files and folders cardinal writes and reads, crash-safe and bounded.
//!
//! * Every file is written under a temporary name beside its destination, synced, and renamed
//!   into place ([`write_atomic`], [`stage`] and [`Staged`]), so that a crash never leaves a
//!   partial file where a whole one was.
//! * A save of several files is committed as one unit by a journal ([`commit_all`],
//!   [`recover`]): a save killed at any instant leaves the old files or the new ones, whole.
//! * A model folder is untrusted input: a file in it is read only when it is a plain file and
//!   within a size limit of its kind, and a tensor file's header is checked against its size
//!   before the rest is read ([`read_model_file`]).
//! * An output file (`predict --out`) is replaced atomically where it is a regular file and
//!   written in place where it is a device or FIFO ([`write_output`]).
//! * One process at a time writes into a run directory ([`lock`]); a lock left by a process
//!   that is gone is taken over.
//!
//! What the files hold (a model's weights, its configuration) is `cardinal`'s; this crate
//! knows bytes, names and folders. Its refusals are [`StoreError`]s, each naming the file and
//! what is wrong with it ([`Problem`]).
//!
//! # Example
//!
//! ```
//! use cardinal_store::{commit_all, read_model_file, stage, write_atomic};
//!
//! let dir = std::env::temp_dir().join(format!("cardinal-store-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! write_atomic(&dir.join("meta.json"), b"{}").unwrap();
//! // Two files replaced as one unit.
//! let a = stage(&dir.join("meta.json"), |tmp| std::fs::write(tmp, b"[1]")).unwrap();
//! let b = stage(&dir.join("config.json"), |tmp| std::fs::write(tmp, b"[2]")).unwrap();
//! commit_all(&dir, vec![a, b]).unwrap();
//! assert_eq!(read_model_file(&dir.join("config.json")).unwrap(), b"[2]");
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![warn(missing_docs)]

mod commit;
mod error;
mod lock;
mod output;
mod read;
mod sibling;
mod staged;
mod tensor_file;

pub use commit::{commit_all, parse_journal, recover, Journal, SAVE_JOURNAL};
#[doc(hidden)]
pub use commit::{current, write_journal};
pub use error::{JsonProblem, JsonProblemKind, Problem, StoreError, TensorHeader, TensorProblem};
pub use lock::{lock, RunLock, LOCK_FILE};
pub use output::write_output;
pub use read::{
    json_problem, limit_of, not_plain, read_model_file, read_model_file_if_any, read_opened,
    MAX_JSON_BYTES, MAX_TENSOR_BYTES,
};
pub use sibling::hidden_sibling;
pub use staged::{stage, write_atomic, write_atomic_with, Staged};
pub use tensor_file::write_tensor_file;

/// The crate's `Result`, with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
