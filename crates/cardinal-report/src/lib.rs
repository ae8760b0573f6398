//! A self-contained HTML report of trained models: training curves with the best epoch,
//! predicted against gold counts, per-label F1 against label frequency, a reliability diagram
//! of `y_T`, F1 against the threshold with the model's threshold, and the metrics table; for
//! several models, their curves and tables side by side.
//!
//! The page is built from run directories through [`cardinal::engine::Engine`] (the model is
//! loaded, its recorded data read with `Engine::run_data`, inference run on test and dev):
//! [`gather`] computes what is shown, [`figures`] draws it with `plotters`' SVG back end, and
//! [`page`] writes one HTML file with the figures inline (no script, nothing fetched).
//!
//! ```no_run
//! use cardinal::engine::Engine;
//! use std::path::PathBuf;
//!
//! let html = cardinal_report::report(&Engine::default(), &[PathBuf::from("runs/bibtex")])?;
//! std::fs::write("report.html", html)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use cardinal::engine::Engine;

pub mod figures;
pub mod gather;
pub mod page;

/// What can go wrong while building a report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Loading a model, reading its data or running it.
    #[error(transparent)]
    Engine(#[from] cardinal::Error),
    /// A metric over the model's outputs.
    #[error(transparent)]
    Metrics(#[from] cardinal::metrics::MetricsError),
    /// A file of a run directory that is not what it should be.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The plotting back end failed (it writes to memory: not expected).
    #[error("drawing a figure: {0}")]
    Draw(String),
}

/// This crate's results.
pub type Result<T> = std::result::Result<T, Error>;

/// A legend name for each directory: its last component, with its position added where two
/// would read the same.
pub fn run_names(dirs: &[PathBuf]) -> Vec<String> {
    let base = |d: &Path| {
        d.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| d.display().to_string())
    };
    let bases: Vec<String> = dirs.iter().map(|d| base(d)).collect();
    bases
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if bases.iter().filter(|o| *o == b).count() > 1 {
                format!("{b} ({})", i + 1)
            } else {
                b.clone()
            }
        })
        .collect()
}

/// The report page for the run directories `dirs`, in that order.
pub fn report(engine: &Engine, dirs: &[PathBuf]) -> Result<String> {
    let names = run_names(dirs);
    let views = dirs
        .iter()
        .zip(names)
        .map(|(d, name)| {
            tracing::info!(dir = %d.display(), "gathering the report's data");
            gather::gather(engine, d, name)
        })
        .collect::<Result<Vec<_>>>()?;
    page::render(&views)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let dirs = [
            PathBuf::from("a/seed0"),
            PathBuf::from("b/seed0"),
            PathBuf::from("c/x"),
        ];
        assert_eq!(run_names(&dirs), ["seed0 (1)", "seed0 (2)", "x"]);
    }
}
