//! Standard output that never panics: `println!` panics when stdout is a closed pipe
//! (`cardinal predict … | head`) or a full disk. Lines go through `outln!` instead; the
//! first write error is kept, later lines are dropped, and `main` reports it once the command
//! returns: a closed pipe ends quietly, as standard Unix tools do, anything else is a one-line
//! error.
//!
//! Standard error is written the same way through `errln!`, except that its errors are
//! ignored: a log or progress line that cannot be written (`2>/dev/full`, `2>&1 | head -2`)
//! must not end a run that is about to be saved.

use std::io::Write;
use std::sync::Mutex;

static FIRST_ERROR: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes one formatted line to standard output (see the module docs).
pub(crate) fn line(args: std::fmt::Arguments) {
    bytes(format!("{args}\n").as_bytes());
}

/// Writes raw bytes to standard output (see the module docs).
pub(crate) fn bytes(b: &[u8]) {
    let mut first = FIRST_ERROR.lock().unwrap_or_else(|e| e.into_inner());
    if first.is_some() {
        return;
    }
    if let Err(e) = std::io::stdout().lock().write_all(b) {
        *first = Some(e);
    }
}

/// Flushes standard output and returns the first write error, if any.
pub(crate) fn finish() -> Option<std::io::Error> {
    let mut first = FIRST_ERROR.lock().unwrap_or_else(|e| e.into_inner());
    if first.is_none() {
        if let Err(e) = std::io::stdout().lock().flush() {
            *first = Some(e);
        }
    }
    first.take()
}

/// `println!` through [`line()`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// Writes one formatted line to standard error, ignoring a failed write (see the module docs).
pub(crate) fn err_line(args: std::fmt::Arguments) {
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("{args}\n").as_bytes());
}

/// `eprintln!` through [`err_line()`]: never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::err_line(format_args!($($arg)*))
    };
}
