//! `NativeModel`: a trained model behind the Python estimator: fit, predict, save, load.

use std::path::PathBuf;

use cardinal::config::Config;
use cardinal::config::ConfigRequest;
use cardinal::config::SearchScoring;
use cardinal::data::arrays::{dataset_from_arrays, with_sample_weights};
use cardinal::data::{align_features, InputSchema};
use cardinal::engine::Engine;
use cardinal::engine::Fitted;
use cardinal::engine::TrainedOn;
use cardinal::engine::{EpochRecord, Event};
use cardinal::metrics::{binarize, Binarize};
use cardinal::runtime::WaitPolicy;
use cardinal::search::SearchRecord;
use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrays::{features, labels, matrix};
use crate::errors::{data_to_py, panic_to_py, to_py};
use crate::interruptible;

/// The engine of a call from Python: the product's systems and the paper's Table 1 systems
/// (as the CLI), on `threads` threads whose idle workers sleep (passive waiting: several
/// estimators in one process, as under `GridSearchCV(n_jobs=k)`, leave each other the cores).
/// The memory budget and data folder are the environment's, as the module read it at
/// initialisation (a budget that does not parse is refused here, by the variable's name).
pub(crate) fn engine(threads: usize) -> PyResult<Engine> {
    let runtime = crate::environment()
        .runtime(Some(threads), WaitPolicy::Passive)
        .map_err(to_py)?;
    Ok(Engine {
        systems: cardinal_paper::systems(),
        runtime,
    })
}

/// The training set of `x` (features) and `y` (label indicators), its rows weighed by
/// `sample_weight` when given.
pub(crate) fn training_data(
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    sample_weight: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<cardinal::data::Dataset> {
    let mut train =
        dataset_from_arrays("X", features(x, "X")?, labels(y, "Y")?).map_err(data_to_py)?;
    if let Some(w) = sample_weight {
        let w = w.as_slice().map_err(|_| {
            PyValueError::new_err("sample_weight: expected a contiguous 1-D float64 array")
        })?;
        let labels = std::mem::take(&mut train.labels);
        train.labels = with_sample_weights(labels, "sample_weight", w).map_err(data_to_py)?;
    }
    Ok(train)
}

/// An estimator's thread pool: built once and used by its every fit and predict (a pool per
/// call would start and stop its threads every time).
#[pyclass(module = "cardinal_pnc._native", frozen)]
pub struct NativePool {
    pool: rayon::ThreadPool,
    threads: usize,
}

#[pymethods]
impl NativePool {
    /// A pool of `threads` worker threads (at least 1).
    #[new]
    pub fn new(threads: usize) -> PyResult<Self> {
        // The library's one pool constructor: the CLI's cap on `--threads`, checked before
        // any thread starts.
        let pool =
            cardinal::runtime::thread_pool(Some(threads), "n_jobs").map_err(|e| match e {
                cardinal::Error::OutOfRange { .. } => PyValueError::new_err(e.to_string()),
                e => PyRuntimeError::new_err(format!("n_jobs: {e}")),
            })?;
        Ok(Self { pool, threads })
    }

    /// The number of worker threads.
    #[getter]
    pub fn threads(&self) -> usize {
        self.threads
    }
}

impl NativePool {
    /// Runs `f` on a worker of this pool.
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }
}

/// Refuses names that cannot name `n` columns: a count other than `n`, or a name twice.
fn check_names(names: &[String], n: usize, what: &str, of: &str) -> PyResult<()> {
    if names.len() != n {
        return Err(PyValueError::new_err(format!(
            "{what}: {} names for the {n} columns of {of}",
            names.len()
        )));
    }
    let mut seen = std::collections::HashMap::with_capacity(n);
    for (j, name) in names.iter().enumerate() {
        if let Some(first) = seen.insert(name.as_str(), j) {
            return Err(PyValueError::new_err(format!(
                "{what}: `{name}` names two columns of {of} ({first} and {j})"
            )));
        }
    }
    Ok(())
}

/// The configuration the estimator's parameters describe: `config` (JSON) read over the
/// preset (as the CLI's `--preset` and `--config`), then `overrides` (JSON, from the
/// estimator's keyword parameters) over that, then the seed.
pub(crate) fn resolve(
    preset: Option<&str>,
    config: Option<&str>,
    overrides: Option<&str>,
    seed: Option<u64>,
    system: Option<&str>,
) -> cardinal::Result<Config> {
    ConfigRequest {
        preset,
        file: config,
        overrides,
        seed,
        system,
        saved: Some(cardinal_paper::systems().saved_configs()),
        ..ConfigRequest::default()
    }
    .resolve()
}

/// Checks the configuration the arguments describe and returns it as JSON (the estimator
/// calls it to refuse bad parameters early and to show the full configuration).
#[pyfunction]
#[pyo3(signature = (preset=None, config=None, overrides=None, seed=None, system=None))]
pub(crate) fn check_config(
    preset: Option<&str>,
    config: Option<&str>,
    overrides: Option<&str>,
    seed: Option<u64>,
    system: Option<&str>,
) -> PyResult<String> {
    let cfg = resolve(preset, config, overrides, seed, system).map_err(to_py)?;
    // A system the registry does not know is refused here, naming the known ones, before
    // anything trains.
    cardinal_paper::systems().get(&cfg.system).map_err(to_py)?;
    Ok(serde_json::to_string(&cfg).expect("a configuration serialises"))
}

/// The preset a saved configuration named `name` is read over (the registry's
/// `SavedConfigs::base_preset`): the estimator's `preset` for a loaded model.
#[pyfunction]
pub(crate) fn base_preset(name: &str) -> &'static str {
    cardinal_paper::systems().saved_configs().base_preset(name)
}

/// The systems the estimator's `system` may name, each with what it is, in the registry's
/// order (the product's, then the paper crate's): the list Python shows is the library's.
#[pyfunction]
pub(crate) fn systems() -> Vec<(&'static str, &'static str)> {
    let registry = cardinal_paper::systems();
    registry
        .names()
        .into_iter()
        .map(|n| (n, registry.get(n).map_or("", |s| s.about())))
        .collect()
}

/// The presets the estimator's `preset` may name.
#[pyfunction]
pub(crate) fn presets() -> Vec<&'static str> {
    cardinal::config::Config::PRESETS.to_vec()
}

/// A progress line for `verbose` output, or `None` for events it does not show.
pub(crate) fn progress_line(ev: &Event, verbose: u8) -> Option<String> {
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
            folds_run,
            rows,
        } => Some(format!(
            "search: {candidates} candidate configurations, {} on the {rows} rows (search=False trains the configuration as it is)",
            cardinal::config::cv_words(*folds, *folds_run)
        )),
        Event::SearchFold {
            candidates,
            fold,
            folds_run,
            seconds,
        } => Some(cardinal::search::fold_line(candidates, *fold, *folds_run, *seconds)),
        Event::Searched { record } => Some(record.summary()),
    }
}

/// What the default's search found: every candidate's system and mean cross-validated
/// example-F1 and the one trained, as JSON for the estimator's `search_results_`.
fn search_record(record: &SearchRecord) -> String {
    let scores = &record.scores;
    let names: Vec<&str> = scores.iter().map(|s| s.preset.as_str()).collect();
    let systems: Vec<&str> = scores.iter().map(|s| s.system.as_str()).collect();
    let f1: Vec<f64> = scores.iter().map(|s| s.example_f1).collect();
    let thresholds: Vec<f64> = scores.iter().map(|s| s.threshold).collect();
    serde_json::json!({
        "candidates": names,
        "systems": systems,
        "mean_example_f1": f1,
        "thresholds": thresholds,
        "folds": record.folds,
        "folds_run": record.folds_run(),
        "rows": record.rows,
        "scope": record.scope,
        "scoring": match record.scoring {
            SearchScoring::ExampleF1 => "example_f1",
            SearchScoring::F1Samples => "f1_samples",
        },
        "chosen": record.chosen,
        "chosen_system": record.chosen_score().map_or("", |s| s.system.as_str()),
    })
    .to_string()
}

/// A trained model (the library's `Fitted`, of its system's kind), with the feature and label names of the data it
/// came from.
#[pyclass(module = "cardinal_pnc._native", frozen)]
pub struct NativeModel {
    model: Fitted,
    feature_names: Vec<String>,
    label_names: Vec<String>,
    /// The epochs of the fit that made it (empty for a loaded model).
    history: Vec<EpochRecord>,
}

#[pymethods]
impl NativeModel {
    /// Trains on `x` (features) and `y` (label indicators), as `cardinal train` trains: the
    /// configuration's dev part held out for early stopping, then the full-data epochs. The
    /// names, when given, are recorded with the model (`meta.json`). `sample_weight`, when
    /// given, weighs each example's training loss (`LabelSets::weights`). `search_results`,
    /// when given, are the results of every task of the default's search
    /// (`run_search_task`, as JSON), which then chooses from them instead of training its
    /// folds here.
    #[staticmethod]
    #[pyo3(signature = (x, y, pool, preset=None, config=None, overrides=None, seed=None, verbose=0, feature_names=None, label_names=None, sample_weight=None, system=None, search_results=None))]
    pub fn fit(
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        pool: &NativePool,
        preset: Option<&str>,
        config: Option<&str>,
        overrides: Option<&str>,
        seed: Option<u64>,
        verbose: u8,
        feature_names: Option<Vec<String>>,
        label_names: Option<Vec<String>>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        system: Option<&str>,
        search_results: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let cfg = resolve(preset, config, overrides, seed, system).map_err(to_py)?;
        let train = training_data(x, y, sample_weight)?;
        let search_results = search_results
            .map(|r| parse_search_results(&r))
            .transpose()?;
        let feature_names = feature_names.unwrap_or_default();
        if !feature_names.is_empty() {
            check_names(&feature_names, train.n_features(), "feature names", "X")?;
        }
        let label_names = label_names.unwrap_or_default();
        if !label_names.is_empty() {
            check_names(&label_names, train.n_labels(), "label_names", "Y")?;
        }
        let engine = engine(pool.threads)?;
        let trained = interruptible::run(py, |say, cancel| {
            pool.pool.install(|| {
                let mut on_event = |ev: Event| {
                    if verbose > 0 {
                        if let Some(line) = progress_line(&ev, verbose) {
                            say(line);
                        }
                    }
                };
                match &search_results {
                    Some(results) => {
                        engine.fit_with_search_results(&train, cfg, results, &mut on_event, cancel)
                    }
                    None => engine.fit_cancellable(&train, cfg, &mut on_event, cancel),
                }
            })
        })?
        .map_err(to_py)?;
        Ok(Self {
            model: trained.model,
            feature_names,
            label_names,
            history: trained.history,
        })
    }

    /// Inference on `x`: `(y_T, z, ranking, graded)`: the last iterate and the counts
    /// (`float32`), the scores that rank the labels, and the graded label scores (`y_T` for
    /// Predict and Constrain, the marginal probabilities for a forest's decided set). With `feature_names` (a DataFrame's columns) and a
    /// model that has names, the columns are matched by name as the CLI matches an ARFF
    /// file's: reordered columns are aligned, missing, extra or renamed ones refused.
    #[pyo3(signature = (x, pool, feature_names=None))]
    pub fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        pool: &NativePool,
        feature_names: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut x = features(x, "X")?;
        let names = feature_names.unwrap_or_default();
        if !names.is_empty() && !self.feature_names.is_empty() {
            let schema = InputSchema {
                n_features: self.model.n_features(),
                n_labels: self.model.n_labels(),
                feature_names: self.feature_names.clone(),
                label_names: self.label_names.clone(),
                libsvm_base: None,
            };
            x = align_features(&x, &names, &schema, "X").map_err(data_to_py)?;
        }
        let engine = engine(pool.threads)?;
        let model = &self.model;
        let out = py
            .detach(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.pool.install(|| engine.predict(model, &x))
                }))
            })
            .map_err(panic_to_py)?
            .map_err(to_py)?;
        let (n, l) = (x.n_rows, model.n_labels());
        let ranking = out.ranking_scores().to_vec();
        let graded = engine
            .output_kind(model)
            .map_err(to_py)?
            .graded(&out)
            .to_vec();
        let items = [
            matrix(py, n, l, out.y)?.into_any(),
            numpy::PyArray1::from_vec(py, out.z).into_any(),
            matrix(py, n, l, ranking)?.into_any(),
            matrix(py, n, l, graded)?.into_any(),
        ];
        PyTuple::new(py, items)
    }

    /// Writes the model directory `path` in the CLI's format (`model.safetensors`,
    /// `config.json`, `meta.json` with the feature and label names); an existing model is
    /// replaced only when `overwrite`. `threshold`, when given, is recorded as the model's
    /// (the CLI's `predict` and `eval` use it).
    #[pyo3(signature = (path, overwrite=false, threshold=None))]
    pub fn save(
        &self,
        py: Python<'_>,
        path: PathBuf,
        overwrite: bool,
        threshold: Option<f64>,
    ) -> PyResult<()> {
        let engine = engine(1)?;
        let trained_on = TrainedOn {
            dataset: String::new(),
            feature_names: self.feature_names.clone(),
            label_names: self.label_names.clone(),
            libsvm_base: None,
        };
        let retitled;
        let model = match threshold {
            Some(t) if t != self.model.config().threshold => {
                let mut m = self.model.clone();
                m.config_mut().threshold = t;
                retitled = m;
                &retitled
            }
            _ => &self.model,
        };
        py.detach(|| engine.save_model(model, &path, &trained_on, overwrite))
            .map_err(to_py)
    }

    /// Reads the model directory `path` (written by `save` or by `cardinal train`).
    #[staticmethod]
    pub fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let engine = engine(1)?;
        let (model, meta) = py.detach(|| engine.load(&path)).map_err(to_py)?;
        Ok(Self {
            model,
            feature_names: meta.feature_names,
            label_names: meta.label_names,
            history: Vec::new(),
        })
    }

    /// The model's full configuration, as JSON.
    #[getter]
    pub fn config_json(&self) -> String {
        serde_json::to_string(self.model.config()).expect("a configuration serialises")
    }

    /// The fit's epochs as JSON (a list of the records `metrics.jsonl` holds: phase, epoch,
    /// loss, dev example-F1, seconds); empty for a loaded model.
    #[getter]
    pub fn history_json(&self) -> String {
        serde_json::to_string(&self.history).expect("epoch records serialise")
    }

    /// What the default's search found, as JSON (`candidates`, `systems`,
    /// `mean_example_f1`, `thresholds`, `folds`, `rows`, `scope`, `chosen`,
    /// `chosen_system`); `None` when it did not run. Kept with the model, so a loaded model
    /// has it too.
    #[getter]
    pub fn search_json(&self) -> Option<String> {
        self.model.search().map(search_record)
    }

    /// The system the model is (`pnc`, `forest`, `forest-blend`, a Table 1 system).
    #[getter]
    pub fn system(&self) -> String {
        self.model.config().system.clone()
    }

    /// What the model's system is, in one line.
    #[getter]
    pub fn about(&self) -> PyResult<String> {
        Ok(engine(1)?.about(&self.model).map_err(to_py)?.to_string())
    }

    /// Whether a threshold on the outputs is a labelling rule for this model (not for a
    /// decided set, the forests').
    #[getter]
    pub fn accepts_threshold(&self) -> PyResult<bool> {
        Ok(engine(1)?
            .output_kind(&self.model)
            .map_err(to_py)?
            .accepts_threshold())
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

    /// The feature names recorded with the model (empty for a model trained on arrays).
    #[getter]
    pub fn feature_names(&self) -> Vec<String> {
        self.feature_names.clone()
    }

    /// The label names recorded with the model (empty when none were given).
    #[getter]
    pub fn label_names(&self) -> Vec<String> {
        self.label_names.clone()
    }
}

/// The label sets that `rule` (the CLI's `--labels-by`: `threshold=T`, `round-z`, `top-k=K`)
/// chooses from an inference's outputs, as an `int64` indicator matrix: a threshold applies to
/// `y_T`, a ranking rule ranks by the tie-free ranking scores, as in `cardinal predict`.
#[pyfunction]
pub(crate) fn label_sets<'py>(
    py: Python<'py>,
    y: PyReadonlyArray2<'py, f32>,
    z: PyReadonlyArray1<'py, f32>,
    ranking: PyReadonlyArray2<'py, f32>,
    rule: &str,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let rule: Binarize = rule
        .parse()
        .map_err(|e| PyValueError::new_err(format!("labels_by: {e}")))?;
    let (n, l) = (y.shape()[0], y.shape()[1]);
    let contiguous = |_| PyValueError::new_err("expected C-contiguous outputs");
    let scores = match rule {
        Binarize::Threshold(_) => y.as_slice().map_err(contiguous)?,
        _ => ranking.as_slice().map_err(contiguous)?,
    };
    let sets = binarize(scores, l, &rule, Some(z.as_slice().map_err(contiguous)?))
        .map_err(|e| to_py(e.into()))?;
    let mut dense = vec![0u8; n * l];
    for r in 0..n {
        sets.write_dense(r, &mut dense[r * l..(r + 1) * l]);
    }
    matrix(py, n, l, dense.into_iter().map(i64::from).collect())
}

/// The tasks' results from their JSON, each refused by its position if it is not one.
fn parse_search_results(texts: &[String]) -> PyResult<Vec<cardinal::search::SearchTaskResult>> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            serde_json::from_str(t).map_err(|e| {
                PyValueError::new_err(format!(
                    "search_results[{i}]: not a result of run_search_task: {e}"
                ))
            })
        })
        .collect()
}
