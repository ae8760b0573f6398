//! `cardinal report`: one self-contained HTML page of trained models (built by the library's
//! `cardinal_report`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use cardinal::engine::write_output;
use cardinal::engine::Engine;

/// Arguments of `cardinal report`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReportArgs {
    /// Model directory written by `cardinal train` (repeat for a side-by-side comparison).
    #[arg(long = "model", value_name = "DIR", required = true)]
    pub models: Vec<PathBuf>,
    /// The HTML file to write (`-`: standard output).
    #[arg(long, value_name = "FILE", default_value = "report.html")]
    pub out: PathBuf,
    /// Folder holding the runs' datasets by name (default: the folder each run recorded, else
    /// env CARDINAL_DATA): where the data is when it has moved since the runs.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// Writes the report of `dirs` to `out` and says where it went.
pub(crate) fn write_report(
    engine: &Engine,
    dirs: &[PathBuf],
    out: &Path,
    data_dir: Option<&Path>,
) -> anyhow::Result<()> {
    let html = cardinal_report::report_with_data(engine, dirs, data_dir)?;
    if out.as_os_str() == "-" {
        crate::output::bytes(html.as_bytes());
        return Ok(());
    }
    write_output(out, html.as_bytes()).with_context(|| format!("writing {}", out.display()))?;
    crate::log::note(&format!(
        "report of {} run(s) written to {} ({:.0} kB)",
        dirs.len(),
        out.display(),
        html.len() as f64 / 1024.0
    ));
    Ok(())
}

pub(crate) fn run(engine: &Engine, args: &ReportArgs) -> anyhow::Result<()> {
    for model in &args.models {
        if args.out.as_os_str() != "-" {
            crate::out_path::refuse_inside_model(&args.out, "--out", model)?;
        }
        if engine.is_multi_target_run(model) {
            anyhow::bail!(
                "{} is a multi-target (Section 6) model: `report` draws binary multi-label \
                 models only; `cardinal eval --model {}` prints its scores (mean IoU, per \
                 class) and its `metrics.jsonl` holds the training curve",
                model.display(),
                model.display()
            );
        }
    }
    write_report(engine, &args.models, &args.out, args.data_dir.as_deref())
}
