//! Library errors as Python exceptions, with the library's message: bad input (data,
//! configuration, shapes) is a `ValueError`, a missing or unreadable file an `OSError`, an
//! existing model directory a `FileExistsError`, an interrupted fit a `KeyboardInterrupt`.

use pyo3::exceptions::{
    PyFileExistsError, PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError,
};
use pyo3::PyErr;

/// The Python exception for a library error.
pub(crate) fn to_py(e: cardinal::Error) -> PyErr {
    use cardinal::Error as E;
    let msg = e.to_string();
    match e {
        E::Io { .. } => PyOSError::new_err(msg),
        E::Data(ref d) if matches!(d, cardinal::data::DataError::Io { .. }) => {
            PyOSError::new_err(msg)
        }
        E::RunExists { path, what, .. } => PyFileExistsError::new_err(format!(
            "{} {what}; pass overwrite=True to replace it",
            path.display()
        )),
        E::Interrupted { .. } => PyKeyboardInterrupt::new_err(msg),
        E::Diverged { .. } | E::ThreadPool { .. } => PyRuntimeError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

/// [`to_py`] for errors of the data readers and array constructors.
pub(crate) fn data_to_py(e: cardinal::data::DataError) -> PyErr {
    to_py(cardinal::Error::Data(e))
}

/// A panic caught at the boundary (a bug, never bad input) as a `RuntimeError`, so that it does
/// not reach the interpreter as pyo3's `PanicException`.
pub(crate) fn panic_to_py(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    PyRuntimeError::new_err(format!("internal error in cardinal: {what}"))
}
