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

use std::path::PathBuf;

use cardinal::engine::{Engine, EVAL_FILE, METRICS_FILE, WEIGHTS_FILE};

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
    /// A folder with nothing to report: no model, no evaluation and no training curves.
    #[error(
        "{}: holds no model ({WEIGHTS_FILE}), no {EVAL_FILE} and no {METRICS_FILE}",
        path.display()
    )]
    NothingToReport {
        /// The folder.
        path: PathBuf,
    },
    /// The plotting back end failed (it writes to memory: not expected).
    #[error("drawing a figure: {source}")]
    Draw {
        /// The plotting library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// This crate's results.
pub type Result<T> = std::result::Result<T, Error>;

/// A legend name for each directory: its last components, as few as keep the names apart
/// (`seed0` alone, `dvn/seed0` beside `spen/seed0`), with the position added where even the
/// whole paths read the same.
pub fn run_names(dirs: &[PathBuf]) -> Vec<String> {
    let parts: Vec<Vec<String>> = dirs
        .iter()
        .map(|d| {
            d.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .filter(|c| c != "." && c != "/")
                .collect()
        })
        .collect();
    let suffix = |p: &[String], k: usize| p[p.len().saturating_sub(k)..].join("/");
    let longest = parts.iter().map(Vec::len).max().unwrap_or(0);
    for k in 1..=longest {
        let names: Vec<String> = parts.iter().map(|p| suffix(p, k)).collect();
        let unique = names
            .iter()
            .enumerate()
            .all(|(i, n)| names.iter().skip(i + 1).all(|o| o != n));
        if unique {
            return names;
        }
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{} ({})", suffix(p, longest), i + 1))
        .collect()
}

/// The report page for the run directories `dirs`, in that order.
pub fn report(engine: &Engine, dirs: &[PathBuf]) -> Result<String> {
    report_with_data(engine, dirs, None)
}

/// [`report`], the runs' recorded data looked up by name in `data_dir` where one is given
/// (the data has moved since the runs, or they came from another machine).
pub fn report_with_data(
    engine: &Engine,
    dirs: &[PathBuf],
    data_dir: Option<&std::path::Path>,
) -> Result<String> {
    let names = run_names(dirs);
    let views = dirs
        .iter()
        .zip(names)
        .map(|(d, name)| {
            tracing::info!(dir = %d.display(), "gathering the report's data");
            gather::gather(engine, d, name, data_dir)
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
        assert_eq!(run_names(&dirs), ["a/seed0", "b/seed0", "c/x"]);
        let dirs = [PathBuf::from("runs/b0"), PathBuf::from("runs/b1")];
        assert_eq!(run_names(&dirs), ["b0", "b1"]);
        let dirs = [PathBuf::from("runs/b0"), PathBuf::from("./runs/b0")];
        assert_eq!(run_names(&dirs), ["runs/b0 (1)", "runs/b0 (2)"]);
    }
}
