//! The library's error type: values in messages, no panics on bad input.

use std::path::PathBuf;

/// Errors of model construction, training, checkpoints and configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Data(#[from] cardinal_data::data::DataError),
    #[error(transparent)]
    Projection(#[from] cardinal_proj::ProjError),
    #[error("{path}: {message}")]
    Checkpoint { path: PathBuf, message: String },
    #[error("{0}")]
    Mismatch(String),
    #[error(
        "training diverged in phase {phase}, epoch {epoch}, batch {batch}: {quantity} is not \
         finite (see train.skip_nonfinite_batches)"
    )]
    Diverged {
        phase: u8,
        epoch: usize,
        batch: usize,
        quantity: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
