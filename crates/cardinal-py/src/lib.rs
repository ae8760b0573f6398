//! `cardinal_pnc._native`: the Python package's extension module, a thin layer over
//! [`cardinal::engine::Engine`].
//!
//! Python passes numpy arrays (dense, or the three arrays of a CSR matrix); this crate turns
//! them into the library's types with the library's checked constructors
//! ([`cardinal::data::arrays`]), calls the engine with the GIL released, and turns the results
//! back into numpy arrays. Every library error becomes a Python exception carrying the
//! library's message (module `errors`); nothing here trains, predicts, reads data or projects by
//! itself. The scikit-learn estimator (`cardinal.CardinalClassifier`) is plain Python over
//! this module (`python/cardinal_pnc/`).

#![warn(missing_docs)]

use std::sync::OnceLock;

use cardinal::runtime::Environment;
use pyo3::prelude::*;

/// The allocator of the library's own allocations, as in the `cardinal` binary: mimalloc keeps
/// freed pages for reuse, where the system allocator hands each training batch's and
/// prediction's large buffers back as fresh zero-filled pages (measured side by side with the
/// CLI: docs/results/python.md). Memory handed to numpy is freed by this library's allocator
/// too, through the array's owner object.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod arrays;
mod datasets;
mod errors;
mod interruptible;
mod model;
mod project;
mod search_tasks;

/// The environment variables the library depends on (`CARDINAL_DATA`,
/// `CARDINAL_MEMORY_BUDGET`), read once, when the module is initialised: the library itself
/// reads none.
static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();

/// The environment as the module's initialisation read it.
pub(crate) fn environment() -> &'static Environment {
    ENVIRONMENT.get_or_init(Environment::read)
}

/// The extension module `cardinal_pnc._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    environment();
    m.add_class::<model::NativeModel>()?;
    m.add_class::<model::NativePool>()?;
    m.add_function(wrap_pyfunction!(model::label_sets, m)?)?;
    m.add_function(wrap_pyfunction!(datasets::load_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(project::project, m)?)?;
    m.add_function(wrap_pyfunction!(project::project_vjp, m)?)?;
    m.add_function(wrap_pyfunction!(model::check_config, m)?)?;
    m.add_function(wrap_pyfunction!(model::base_preset, m)?)?;
    m.add_function(wrap_pyfunction!(model::systems, m)?)?;
    m.add_function(wrap_pyfunction!(model::presets, m)?)?;
    m.add_function(wrap_pyfunction!(search_tasks::search_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(search_tasks::run_search_task, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
