//! Standard output that never panics: `println!` panics when stdout is a closed pipe
//! (`cardinal predict … | head`) or a full disk. Lines go through `outln!` instead; the
//! first write error is kept, later lines are dropped, and `main` reports it once the command
//! returns: a closed pipe ends quietly, as standard Unix tools do, anything else is a one-line
//! error.

use std::io::Write;
use std::sync::Mutex;

static FIRST_ERROR: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes one formatted line to standard output (see the module docs).
pub fn line(args: std::fmt::Arguments) {
    bytes(format!("{args}\n").as_bytes());
}

/// Writes raw bytes to standard output (see the module docs).
pub fn bytes(b: &[u8]) {
    let mut first = FIRST_ERROR.lock().unwrap_or_else(|e| e.into_inner());
    if first.is_some() {
        return;
    }
    if let Err(e) = std::io::stdout().lock().write_all(b) {
        *first = Some(e);
    }
}

/// Flushes standard output and returns the first write error, if any.
pub fn finish() -> Option<std::io::Error> {
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
