//! `NativeModel`: a trained model behind the Python estimator: fit, predict, save, load.

use std::path::PathBuf;

use cardinal::data::arrays::dataset_from_arrays;
use cardinal::engine::Engine;
use cardinal::metrics::{binarize, Binarize};
use cardinal::pipeline::Model;
use cardinal::runtime::{Runtime, WaitPolicy};
use cardinal::train::{EpochRecord, Event};
use cardinal::Config;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrays::{features, indicator_matrix, labels, matrix};
use crate::errors::{data_to_py, panic_to_py, to_py};
use crate::interruptible;

/// The engine of one call: the product's systems and the paper's Table 1 systems (as the
/// CLI), on `threads` threads (all cores when `None`).
fn engine(threads: Option<usize>) -> Engine {
    Engine {
        systems: cardinal_paper::systems(),
        runtime: Runtime {
            threads,
            wait: WaitPolicy::Active,
        },
    }
}

/// The configuration the estimator's parameters describe: `config` (JSON) read over the
/// preset (as the CLI's `--preset` and `--config`), then `overrides` (JSON, from the
/// estimator's keyword parameters) over that, then the seed.
fn resolve(
    preset: Option<&str>,
    config: Option<&str>,
    overrides: Option<&str>,
    seed: Option<u64>,
) -> cardinal::Result<Config> {
    let mut cfg = Config::resolve(preset, config, seed)?;
    if let Some(text) = overrides {
        cfg = cfg.with_overrides(text)?;
        if let Some(seed) = seed {
            cfg.seed = seed;
        }
        cfg.validate()?;
    }
    Ok(cfg)
}

/// Checks the configuration the arguments describe and returns it as JSON (the estimator
/// calls it to refuse bad parameters early and to show the full configuration).
#[pyfunction]
#[pyo3(signature = (preset=None, config=None, overrides=None, seed=None))]
pub fn check_config(
    preset: Option<&str>,
    config: Option<&str>,
    overrides: Option<&str>,
    seed: Option<u64>,
) -> PyResult<String> {
    let cfg = resolve(preset, config, overrides, seed).map_err(to_py)?;
    Ok(serde_json::to_string(&cfg).expect("a configuration serialises"))
}

/// A progress line for `verbose` output, or `None` for events it does not show.
fn progress_line(ev: &Event, verbose: u8) -> Option<String> {
    match ev {
        Event::Start {
            phase,
            epochs,
            batches_per_epoch,
        } => Some(format!(
            "phase {phase}: up to {epochs} epochs of {batches_per_epoch} batches"
        )),
        Event::Epoch(rec) => {
            let dev = rec
                .dev_example_f1
                .map(|f| format!(" dev F1 {f:.2}"))
                .unwrap_or_default();
            Some(format!(
                "phase {} epoch {:>3}: loss {:.4}{dev}  ({:.2} s)",
                rec.phase, rec.epoch, rec.loss, rec.seconds
            ))
        }
        Event::Batch {
            epoch, batch, loss, ..
        } if verbose >= 2 => Some(format!("  epoch {epoch} batch {batch}: loss {loss:.4}")),
        Event::Batch { .. } => None,
        Event::Searching {
            candidates,
            folds,
            rows,
        } => Some(format!(
            "search: {candidates} candidate configurations, {folds}-fold CV on the {rows} rows (search=False trains the configuration as it is)"
        )),
        Event::Searched {
            scores,
            folds,
            chosen,
        } => Some(cardinal::search::summary(scores, *folds, chosen)),
    }
}

/// A trained model (the library's `Model`), with the label names of the data it came from.
#[pyclass(module = "cardinal._native", frozen)]
pub struct NativeModel {
    model: Model<f32>,
    label_names: Vec<String>,
    /// The epochs of the fit that made it (empty for a loaded model).
    history: Vec<EpochRecord>,
}

#[pymethods]
impl NativeModel {
    /// Trains on `x` (features) and `y` (label indicators), as `cardinal train` trains: the
    /// configuration's dev part held out for early stopping, then the full-data epochs.
    #[staticmethod]
    #[pyo3(signature = (x, y, preset=None, config=None, overrides=None, seed=None, threads=None, verbose=0))]
    pub fn fit(
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        preset: Option<&str>,
        config: Option<&str>,
        overrides: Option<&str>,
        seed: Option<u64>,
        threads: Option<usize>,
        verbose: u8,
    ) -> PyResult<Self> {
        let cfg = resolve(preset, config, overrides, seed).map_err(to_py)?;
        let train = dataset_from_arrays("python", features(x, "X")?, labels(y, "Y")?)
            .map_err(data_to_py)?;
        let engine = engine(threads);
        let trained = interruptible::run(py, |say, cancel| {
            engine.install(|| {
                let mut on_event = |ev: Event| {
                    if verbose > 0 {
                        if let Some(line) = progress_line(&ev, verbose) {
                            say(line);
                        }
                    }
                };
                engine.fit_cancellable(&train, cfg, &mut on_event, cancel)
            })
        })?
        .and_then(|r| r)
        .map_err(to_py)?;
        Ok(Self {
            model: trained.model,
            label_names: Vec::new(),
            history: trained.history,
        })
    }

    /// Inference on `x`: `(labels, y_T, z, ranking)`: the indicator matrix at the model's
    /// threshold (`uint8`), the last iterate `y_T` and the counts `z` (`float32`), and the
    /// scores that rank the labels.
    #[pyo3(signature = (x, threads=None))]
    pub fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let x = features(x, "X")?;
        let engine = engine(threads);
        let model = &self.model;
        let out = py
            .detach(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    engine.install(|| engine.predict(model, &x))
                }))
            })
            .map_err(panic_to_py)?
            .and_then(|r| r)
            .map_err(to_py)?;
        let (n, l) = (x.n_rows, model.n_labels());
        let rule = Binarize::Threshold(model.config.threshold as f32);
        let sets = binarize(&out.y, l, &rule, None).map_err(|e| to_py(e.into()))?;
        let ranking = out.ranking_scores().to_vec();
        let items = [
            indicator_matrix(py, &sets)?.into_any(),
            matrix(py, n, l, out.y)?.into_any(),
            numpy::PyArray1::from_vec(py, out.z).into_any(),
            matrix(py, n, l, ranking)?.into_any(),
        ];
        PyTuple::new(py, items)
    }

    /// Writes the model directory `path` in the CLI's format (`model.safetensors`,
    /// `config.json`, `meta.json`); an existing model is replaced only when `overwrite`.
    #[pyo3(signature = (path, overwrite=false))]
    pub fn save(&self, py: Python<'_>, path: PathBuf, overwrite: bool) -> PyResult<()> {
        let engine = engine(Some(1));
        py.detach(|| engine.save_model(&self.model, &path, "", &self.label_names, overwrite))
            .map_err(to_py)
    }

    /// Reads the model directory `path` (written by `save` or by `cardinal train`).
    #[staticmethod]
    pub fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let engine = engine(Some(1));
        let (model, meta) = py.detach(|| engine.load(&path)).map_err(to_py)?;
        Ok(Self {
            model,
            label_names: meta.label_names,
            history: Vec::new(),
        })
    }

    /// The model's full configuration, as JSON.
    #[getter]
    pub fn config_json(&self) -> String {
        serde_json::to_string(&self.model.config).expect("a configuration serialises")
    }

    /// The fit's epochs as JSON (a list of the records `metrics.jsonl` holds: phase, epoch,
    /// loss, dev example-F1, seconds); empty for a loaded model.
    #[getter]
    pub fn history_json(&self) -> String {
        serde_json::to_string(&self.history).expect("epoch records serialise")
    }

    /// The number of input features.
    #[getter]
    pub fn n_features(&self) -> usize {
        self.model.n_features()
    }

    /// The number of labels.
    #[getter]
    pub fn n_labels(&self) -> usize {
        self.model.n_labels()
    }

    /// The label names recorded with the model (empty for a model trained from arrays).
    #[getter]
    pub fn label_names(&self) -> Vec<String> {
        self.label_names.clone()
    }
}
