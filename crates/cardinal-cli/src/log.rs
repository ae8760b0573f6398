//! Logging: where diagnostics go and in what form. Everything but a command's output goes to
//! standard error, as text (the default) or, with `--log-format json`, as one JSON object per
//! line (tracing's JSON format: `timestamp`, `level`, `fields`, `target`), progress events
//! included, so that a program reading the log never meets a line of another kind.

use std::io::IsTerminal;
use std::sync::OnceLock;

/// The form of the log on standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines; a progress bar when standard error is a terminal.
    Text,
    /// One JSON object per event (tracing's JSON format), never a progress bar.
    Json,
}

/// The tracing target of progress events (always enabled, whatever the verbosity, so that
/// `--log-format json` reports every epoch).
pub(crate) const PROGRESS_TARGET: &str = "cardinal::progress";

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// The format chosen at start-up.
pub(crate) fn format() -> LogFormat {
    *FORMAT.get().unwrap_or(&LogFormat::Text)
}

/// Whether a live progress bar can be drawn: text logs on a terminal.
pub(crate) fn interactive() -> bool {
    format() == LogFormat::Text && std::io::stderr().is_terminal()
}

/// Installs the subscriber: warnings by default, `-v` the library's info events (data loaded,
/// phases, early stopping, checkpoints, evaluation), `-vv` debug events (every new best epoch,
/// timings of each stage); `RUST_LOG` overrides the library's level.
pub(crate) fn init(format: LogFormat, verbose: u8) {
    let _ = FORMAT.set(format);
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| level.into())
        .add_directive(
            format!("{PROGRESS_TARGET}=info")
                .parse()
                .expect("a valid directive"),
        );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only on a terminal: a redirected log holds no escape codes.
        .with_ansi(std::io::stderr().is_terminal())
        // Its report of a failed write is an `eprintln!`, which panics when standard error
        // cannot be written (`2>/dev/full`): a log line that cannot be written is dropped.
        .log_internal_errors(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// A line for the user on standard error: as is in text, as a progress event in JSON.
pub(crate) fn note(message: &str) {
    match format() {
        LogFormat::Text => errln!("{message}"),
        LogFormat::Json => tracing::info!(target: PROGRESS_TARGET, "{message}"),
    }
}
