//! The default's search as tasks for Python to schedule (joblib, and through it Dask): the
//! list of tasks of a fit, one task run, and its result as JSON for the fit that chooses.

use cardinal::search::{fold_line, SearchTask};
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::to_py;
use crate::interruptible;
use crate::model::{engine, resolve, training_data, NativePool};

/// The tasks of the default's search that `NativeModel.fit` with the same arguments would
/// run, as `(training, fold)` pairs; empty when it would not search.
#[pyfunction]
#[pyo3(signature = (x, y, preset=None, config=None, overrides=None, seed=None, system=None, sample_weight=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_tasks(
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    preset: Option<&str>,
    config: Option<&str>,
    overrides: Option<&str>,
    seed: Option<u64>,
    system: Option<&str>,
    sample_weight: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<Vec<(usize, usize)>> {
    let cfg = resolve(preset, config, overrides, seed, system).map_err(to_py)?;
    let train = training_data(x, y, sample_weight)?;
    let tasks = engine(1)?.search_tasks(&train, &cfg).map_err(to_py)?;
    Ok(tasks.into_iter().map(|t| (t.training, t.fold)).collect())
}

/// Runs task `(training, fold)` of the default's search of a fit with these arguments on
/// `pool`'s threads: its result as JSON, for `NativeModel.fit(search_results=...)`. With
/// `verbose`, a line when the fold is done.
#[pyfunction]
#[pyo3(signature = (x, y, pool, training, fold, preset=None, config=None, overrides=None, seed=None, system=None, sample_weight=None, verbose=0))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_search_task(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    pool: &NativePool,
    training: usize,
    fold: usize,
    preset: Option<&str>,
    config: Option<&str>,
    overrides: Option<&str>,
    seed: Option<u64>,
    system: Option<&str>,
    sample_weight: Option<PyReadonlyArray1<'_, f64>>,
    verbose: u8,
) -> PyResult<String> {
    let cfg = resolve(preset, config, overrides, seed, system).map_err(to_py)?;
    let train = training_data(x, y, sample_weight)?;
    let engine = engine(pool.threads())?;
    let task = SearchTask { training, fold };
    let folds_run = cfg.search.folds_run(train.n_rows());
    let result = interruptible::run(py, |say, cancel| {
        let started = std::time::Instant::now();
        let result =
            pool.install(|| engine.run_search_task(&train, &cfg, task, &mut |_| {}, cancel));
        if let (Ok(r), true) = (&result, verbose > 0) {
            let seconds = started.elapsed().as_secs_f64();
            say(fold_line(&r.candidates, fold + 1, folds_run, seconds));
        }
        result
    })?
    .map_err(to_py)?;
    serde_json::to_string(&result).map_err(|e| PyValueError::new_err(e.to_string()))
}
