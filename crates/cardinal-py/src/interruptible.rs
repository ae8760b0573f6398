//! Long calls (a fit) with the GIL released, progress printed to Python's `sys.stderr`, and
//! Ctrl-C honoured.
//!
//! Python runs signal handlers on its main thread only, so the work runs on a thread of its
//! own while the calling thread waits without the GIL, wakes every [`POLL`] to print the
//! progress lines the work sent and to run `PyErr_CheckSignals`; on a signal's exception it
//! sets the cancel flag the work checks (after every epoch, [`Engine::fit_cancellable`]) and
//! raises that exception once the work has stopped.
//!
//! [`Engine::fit_cancellable`]: cardinal::engine::Engine::fit_cancellable

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::panic_to_py;

/// How often the waiting thread prints progress and checks for signals.
const POLL: Duration = Duration::from_millis(50);

/// A line of progress, sent from the work to the waiting thread.
pub(crate) type Say<'a> = &'a mut (dyn FnMut(String) + Send);

/// Runs `work(say, cancel)` on its own thread; see the module documentation. A panic in the
/// work becomes a `RuntimeError` (it never unwinds into the interpreter).
pub(crate) fn run<R: Send>(
    py: Python<'_>,
    work: impl FnOnce(Say<'_>, &AtomicBool) -> R + Send,
) -> PyResult<R> {
    let cancel = AtomicBool::new(false);
    let (tx, mut rx) = mpsc::channel::<String>();
    let mut signal: Option<PyErr> = None;
    let outcome = std::thread::scope(|s| {
        let cancel = &cancel;
        let handle = s.spawn(move || {
            let mut say = move |line: String| {
                // The receiver lives until this thread is joined.
                let _ = tx.send(line);
            };
            work(&mut say, cancel)
        });
        loop {
            // The receiver is not `Sync`: it moves into the GIL-free closure and back.
            let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
            rx = back;
            match got {
                Ok(line) => {
                    if let Err(e) = write_stderr(py, &line) {
                        signal.get_or_insert(e);
                        cancel.store(true, Ordering::Relaxed);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if let Err(e) = py.check_signals() {
                signal.get_or_insert(e);
                cancel.store(true, Ordering::Relaxed);
            }
        }
        py.detach(|| handle.join())
    });
    let result = outcome.map_err(panic_to_py)?;
    match signal {
        // The work stopped because of the signal: raise the signal's exception.
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// Writes `line` and a newline to `sys.stderr` (so that notebooks show it) and flushes.
fn write_stderr(py: Python<'_>, line: &str) -> PyResult<()> {
    let stderr = py.import("sys")?.getattr("stderr")?;
    stderr.call_method1("write", (format!("{line}\n"),))?;
    stderr.call_method0("flush")?;
    Ok(())
}
