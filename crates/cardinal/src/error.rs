//! The library's error type: values in messages, no panics on bad input.

use std::path::PathBuf;

/// Errors of model construction, training, checkpoints and configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value out of range, or a configuration that does not parse; the message
    /// names the field, the value and what is allowed.
    #[error("{0}")]
    Config(String),
    /// A configuration field set to a value outside what it allows.
    #[error("{field} = {value} is out of range: expected {allowed}")]
    OutOfRange {
        /// The field's full dotted path (`inference.smooth_eps`).
        field: String,
        /// The value given, as written.
        value: String,
        /// What the field allows (`a finite number > 0`, `1..=1000`).
        allowed: String,
    },
    /// A configuration field set for a system that does not read it.
    #[error(
        "{field} is set, but system `{system}` does not read it ({why}); remove it, or choose \
         a system that reads it"
    )]
    NotRead {
        /// The field's full dotted path (`baseline.optimizer`).
        field: String,
        /// The system the configuration trains.
        system: String,
        /// Which systems read it.
        why: String,
    },
    /// Reading or checking a dataset failed.
    #[error(transparent)]
    Data(#[from] cardinal_data::data::DataError),
    /// A metric could not be computed (e.g. predictions and labels of different shapes).
    #[error(transparent)]
    Metrics(#[from] cardinal_data::metrics::MetricsError),
    /// A projection was given input it cannot project (e.g. an infeasible count).
    #[error(transparent)]
    Projection(#[from] cardinal_proj::ProjError),
    /// Inference failed on one row of the data (e.g. extreme inputs gave a non-finite count).
    #[error("row {row} of the data (from 0): {source}")]
    Row {
        /// The row's number in the data, from 0.
        row: usize,
        /// What failed.
        #[source]
        source: cardinal_proj::ProjError,
    },
    /// A model directory or checkpoint is missing, corrupt or inconsistent.
    #[error("{path}: {message}")]
    Checkpoint {
        /// The offending file or directory.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Data and model disagree (features, labels, counts).
    #[error("{0}")]
    Mismatch(String),
    /// `config.system` names no system of the registry in use.
    #[error("unknown system `{name}`; known systems: {known}")]
    UnknownSystem {
        /// The name asked for.
        name: String,
        /// The names the registry knows, comma-separated.
        known: String,
    },
    /// The system cannot do what was asked (e.g. resume a run of a system that trains in one
    /// go).
    #[error("system `{system}` cannot {what}")]
    Unsupported {
        /// The system's name.
        system: String,
        /// What it was asked to do.
        what: String,
    },
    /// A run directory already holds a run, and replacing it was not asked for.
    #[error(
        "{path} {what}; pass --force to replace it (the old run stays until the new one is \
         finished) or --resume to continue its run"
    )]
    RunExists {
        /// The run directory.
        path: PathBuf,
        /// What it holds.
        what: String,
    },
    /// A folder that replacing a run would delete is not a run (or is a filesystem root or
    /// the home folder).
    #[error(
        "{path} {why}: only a folder holding a cardinal run is replaced; choose another folder"
    )]
    NotARun {
        /// The folder.
        path: PathBuf,
        /// What it is, or what is in it.
        why: String,
    },
    /// Another live process is writing into the run directory.
    #[error(
        "{path} is in use by another run (process {pid}); wait for it or choose another directory"
    )]
    RunBusy {
        /// The run directory.
        path: PathBuf,
        /// The process holding its lock.
        pid: u32,
    },
    /// The thread pool could not be set up.
    #[error("{0}")]
    Runtime(String),
    /// Training produced a non-finite loss, gradient or parameter.
    #[error(
        "training diverged in phase {phase}, epoch {epoch}, batch {batch}: {quantity} is not \
         finite (see train.skip_nonfinite_batches)"
    )]
    Diverged {
        /// 1: the train part of the split, 2: all of train.
        phase: u8,
        /// Epoch within the phase, from 1.
        epoch: usize,
        /// Batch within the epoch, from 0.
        batch: usize,
        /// What was not finite.
        quantity: String,
    },
    /// Training was stopped by its caller (e.g. Ctrl-C in the Python package) through
    /// [`Engine::fit_cancellable`](crate::engine::Engine::fit_cancellable).
    #[error("training interrupted after {epochs} epochs")]
    Interrupted {
        /// Epochs finished, over both phases.
        epochs: usize,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
