//! The library's front door: what every front end (the CLI, the Python package) calls.
//!
//! An [`Engine`] holds the systems it knows and the [`Runtime`] it runs in. It trains
//! ([`Engine::fit`]), predicts, evaluates and cross-validates, and manages run directories
//! ([`Engine::start_run`], [`Engine::resume_run`], [`Engine::finish_run`]): a model directory
//! with `run.json` (where the data came from), per-epoch checkpoints, `metrics.jsonl`, the
//! saved model and `eval.json`. Front ends parse, call, and print.
//!
//! ```
//! use cardinal::data::synthetic::{synthetic, SyntheticShape};
//! use cardinal::engine::Engine;
//! use cardinal::config::Config;
//!
//! let data = synthetic(&SyntheticShape {
//!     train_rows: 120,
//!     test_rows: 40,
//!     features: 20,
//!     labels: 6,
//!     density: 0.2,
//!     seed: 1,
//! });
//! let mut cfg = Config::predict();
//! cfg.model.hidden = 16;
//! cfg.train.epochs = 2;
//! // The plain configuration: on a file this small the default's search could choose `paper`,
//! // which does not hold the constraint exactly.
//! cfg.search.max_rows = 0;
//! let engine = Engine::default();
//! let trained = engine.fit(&data.train, cfg, &mut |_| {}).unwrap();
//! let (report, out) = engine.evaluate(&trained.model, &data.test).unwrap();
//! // The constraint Σ y = z holds on every row.
//! assert_eq!(report.constraint.frac_sum_within_001, 1.0);
//! assert_eq!(out.z.len(), 40);
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::checkpoint;
use crate::config::Config;
use crate::cv::cross_validate;
use crate::data::{read_inputs, CsrMatrix, Dataset, Inputs, Labels, LoadNote, TrainTest};
use crate::error::{Error, Result};
use crate::eval::{
    add_dev_threshold, add_gold_count, add_ranking, evaluate_outputs, gold_counts, EvalReport,
};
use crate::fitted::check_dims;
use crate::run_dir::{self, Checkpointer, Existing, MetricsLog, RunDir, RunModel};
use crate::runtime::Runtime;
use crate::search::Searched;
pub use crate::system::OutputKind;
use crate::system::{Hooks, Start, System, Systems};
use crate::train::TrainState;
use binary_run::BinaryRun;

mod bench;
mod binary_run;
mod run_data;
mod search_tasks;
mod segment;
mod segment_run;

pub use crate::data_spec::DataSpec;
pub use bench::EpochBench;
pub use segment_run::{SegOutcome, SegRun};

// What the front ends need of the rest of the library, at the front door: a model folder's
// files and what they record, the events of a training run, and a model with its outputs.
pub use crate::checkpoint::{
    read_model_file_if_any, write_atomic, write_output, Meta, TrainedOn, WEIGHTS_FILE,
};
pub use crate::cv::{CvReport, FoldResult};
pub use crate::fitted::{Fitted, ForestModel};
pub use crate::pipeline::{Model, Outputs};
pub use crate::train::{EpochRecord, Event, Progress, Trained};
pub use binary_run::load_state;
#[cfg(test)]
pub(crate) use binary_run::save_state;

/// Rows per inference batch.
pub(crate) const PREDICT_BATCH: usize = 256;

// Run directories' files and checkpoints, where front ends have always found them.
pub(crate) use crate::run_dir::RUN_FILE;
pub use crate::run_dir::{
    hash_dataset, read_eval, read_history, read_names, Checkpoints, RunRecord, EVAL_FILE,
    METRICS_FILE,
};

/// A run directory ready to train: its data, and where training starts.
#[derive(Debug)]
pub struct PreparedRun {
    /// The run directory.
    pub dir: PathBuf,
    /// Its train and test data.
    pub data: TrainTest,
    /// A fresh configuration, or the state of the interrupted run.
    pub start: Start,
    /// Held until the run is finished: no other process writes into `dir` meanwhile. The
    /// run's files go to its [`RunDir::path`], which becomes `dir` when the run is finished.
    pub(crate) run_dir: RunDir,
    /// What the data readers decided (see [`DataSpec::load_noted`]), for the user.
    pub notes: Vec<LoadNote>,
}

impl PreparedRun {
    /// The configuration the run trains.
    pub fn config(&self) -> &Config {
        match &self.start {
            Start::Fresh(cfg) => cfg,
            Start::Resume(state) => &state.model.config,
        }
    }

    /// Epochs already run (non-zero when resuming).
    pub fn epochs_run(&self) -> usize {
        match &self.start {
            Start::Fresh(_) => 0,
            Start::Resume(state) => state.epochs_run(),
        }
    }
}

/// What a finished run produced (all of it also written to its directory).
#[derive(Debug)]
pub struct RunOutcome {
    /// The trained model.
    pub model: Fitted,
    /// Every epoch's record, resumed ones included.
    pub history: Vec<EpochRecord>,
    /// The evaluation on the test data.
    pub report: EvalReport,
}

/// The front door. `Engine::default()` knows the product's systems and uses all cores.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    /// The systems `config.system` may name.
    pub systems: Systems,
    /// Threads and wait policy.
    pub runtime: Runtime,
}

impl Engine {
    /// An engine over `systems`, with the default runtime.
    pub fn new(systems: Systems) -> Self {
        Self {
            systems,
            runtime: Runtime::default(),
        }
    }

    /// `spec`, looking names up in the runtime's data folder when it names none.
    pub fn locate(&self, spec: &DataSpec) -> DataSpec {
        spec.or_data_dir(self.runtime.data_dir.as_deref())
    }

    /// Runs `f` on a worker of a pool of this engine's threads (refused when the thread count
    /// is out of bounds). Front ends wrap a whole command in it; the other methods run in whatever pool they are called from.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> Result<R> {
        self.runtime.install(f)
    }

    /// `system` with the default's search above it ([`Searched`]), the search's folds taken
    /// from `results` where given.
    fn searched<'a>(
        &'a self,
        system: &'a dyn System,
        results: Option<&'a [crate::search::SearchTaskResult]>,
    ) -> Searched<'a> {
        Searched {
            system,
            systems: &self.systems,
            results,
        }
    }

    /// Trains `cfg` on `train` with its system; no files are written.
    pub fn fit(
        &self,
        train: &Dataset,
        cfg: Config,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Trained> {
        self.fit_cancellable(train, cfg, on_event, &AtomicBool::new(false))
    }

    /// [`Engine::fit`] that stops with [`Error::Interrupted`] when `cancel` is set, checked
    /// after every epoch (for front ends whose user may interrupt: the Python package sets it
    /// on Ctrl-C). Systems that train in one go are not interrupted.
    pub fn fit_cancellable(
        &self,
        train: &Dataset,
        cfg: Config,
        on_event: &mut dyn FnMut(Event),
        cancel: &AtomicBool,
    ) -> Result<Trained> {
        self.fit_fresh(train, cfg, on_event, cancel, None)
    }

    /// A fresh training of `cfg` on `train`, the default's search (if it runs) taking its
    /// folds' results from `search_results` where given.
    fn fit_fresh(
        &self,
        train: &Dataset,
        cfg: Config,
        on_event: &mut dyn FnMut(Event),
        cancel: &AtomicBool,
        search_results: Option<&[crate::search::SearchTaskResult]>,
    ) -> Result<Trained> {
        let system = self.systems.for_config(&cfg)?;
        require_rows(train, &cfg.train)?;
        let mut hooks = Hooks {
            on_event,
            after_epoch: &mut |_| Ok(()),
            wait: self.runtime.wait,
            memory_budget: self.runtime.memory_budget,
            cancel,
            search: None,
            forests: None,
        };
        self.searched(system, search_results)
            .fit(train, Start::Fresh(cfg), &mut hooks)
    }

    /// Saves `model` as the model directory `dir`, in the format [`Engine::load`] and the CLI
    /// read, recording `trained_on` in `meta.json` (any of its fields may be left at its
    /// default: arrays have no feature names and no file index base, so new files are then
    /// read by position, and a LIBSVM file by the loader's own rule; with feature names, those
    /// of a pandas DataFrame, new data is matched to the model's columns by name, as for an
    /// ARFF file). A directory that already holds a run is refused unless `replace`.
    pub fn save_model(
        &self,
        model: &Fitted,
        dir: &Path,
        trained_on: &TrainedOn,
        replace: bool,
    ) -> Result<()> {
        let existing = if replace {
            Existing::Replace
        } else {
            Existing::Refuse
        };
        let run_dir = run_dir::prepare(dir, existing)?;
        run_dir.save_model(&BinaryRun { trained_on }, model)?;
        run_dir.commit()
    }

    /// The model's system's inference on every row of `x`.
    pub fn predict(&self, model: &Fitted, x: &CsrMatrix) -> Result<Outputs<f32>> {
        let system = self.systems.get(&model.config().system)?;
        if x.n_cols != model.n_features() {
            return Err(Error::Shape {
                what: "the data".into(),
                found: format!("{} features", x.n_cols),
                expected: format!("the model's {}", model.n_features()),
            });
        }
        let start = std::time::Instant::now();
        let out = system.predict(model, x, PREDICT_BATCH)?;
        tracing::debug!(
            rows = x.n_rows,
            seconds = start.elapsed().as_secs_f64(),
            "inference"
        );
        Ok(out)
    }

    /// [`Engine::predict`] with each row's count `z` set to `counts` (one per row of `x`)
    /// instead of predicted (`System::predict_with_counts`); `None` for systems without a
    /// count.
    pub fn predict_with_counts(
        &self,
        model: &Fitted,
        x: &CsrMatrix,
        counts: Vec<f32>,
    ) -> Result<Option<Outputs<f32>>> {
        check_dims(model, x.n_cols, model.n_labels(), "the data")?;
        let system = self.systems.get(&model.config().system)?;
        system.predict_with_counts(model, x, counts, PREDICT_BATCH)
    }

    /// What `model` is, in one line for a user, by its system ([`crate::system::System::about`]).
    pub fn about(&self, model: &Fitted) -> Result<&'static str> {
        let about = self.systems.get(&model.config().system)?.about();
        // The one model-dependent part of what a system is: Predict and Constrain's unary
        // scores with a forest's prior (`model.forest_prior`).
        Ok(match model.config().model.forest_prior {
            Some(_) => crate::system::PNC_FOREST_PRIOR_ABOUT,
            None => about,
        })
    }

    /// What `model`'s outputs are, by its system ([`OutputKind`]): which labelling rules and
    /// diagnostics apply to it, and where its graded scores are.
    pub fn output_kind(&self, model: &Fitted) -> Result<OutputKind> {
        Ok(self.systems.get(&model.config().system)?.outputs())
    }

    /// Every metric of `model` on `data`, the outputs they were computed from, and what a
    /// perfect count predictor would give (a second inference pass, for systems with a count).
    pub fn evaluate(&self, model: &Fitted, data: &Dataset) -> Result<(EvalReport, Outputs<f32>)> {
        check_dims(
            model,
            data.n_features(),
            data.n_labels(),
            "the evaluation data",
        )?;
        let system = self.systems.get(&model.config().system)?;
        let start = std::time::Instant::now();
        let out = system.predict(model, &data.features, PREDICT_BATCH)?;
        tracing::debug!(
            rows = data.n_rows(),
            seconds = start.elapsed().as_secs_f64(),
            "inference for evaluation"
        );
        let mut report = evaluate_outputs(model, &out, &data.labels);
        report.outputs = Some(system.outputs());
        add_ranking(&mut report, &out, &data.labels)?;
        let counts = gold_counts(&data.labels);
        if let Some(at_gold) =
            system.predict_with_counts(model, &data.features, counts, PREDICT_BATCH)?
        {
            add_gold_count(model, &mut report, &at_gold, &data.labels)?;
        }
        Ok((report, out))
    }

    /// Adds to `report` (of outputs `out` on `gold`) the threshold that is best on `dev`
    /// (SPEN's protocol: chosen on dev, never on the evaluated data).
    pub fn add_dev_threshold(
        &self,
        model: &Fitted,
        report: &mut EvalReport,
        dev: &Dataset,
        out: &Outputs<f32>,
        gold: &crate::data::LabelSets,
    ) -> Result<()> {
        let dev_out = self.predict(model, &dev.features)?;
        add_dev_threshold(model, report, &dev_out, &dev.labels, out, gold)
    }

    /// `k`-fold cross-validation of `cfg` on `train`: a [`CvReport`] of every fold.
    pub fn cross_validate(
        &self,
        train: &Dataset,
        cfg: &Config,
        k: usize,
        on_event: &mut dyn FnMut(usize, Event),
        on_fold: &mut dyn FnMut(&FoldResult),
    ) -> Result<CvReport> {
        let system = self.systems.for_config(cfg)?;
        let rt = &self.runtime;
        cross_validate(
            &self.searched(system, None),
            train,
            cfg,
            k,
            rt.wait,
            rt.memory_budget,
            &AtomicBool::new(false),
            on_event,
            on_fold,
        )
    }

    /// The rows of `spec` (a file, folder or dataset name) to run the model described by
    /// `meta` on: every row of a single file in file order, features laid out in the model's
    /// columns, labels read or skipped as `labels` says (see [`crate::data::inputs`]).
    pub fn read_inputs(
        &self,
        meta: &Meta,
        spec: &str,
        data_dir: Option<&Path>,
        labels: Labels,
    ) -> Result<Inputs> {
        let dir = data_dir.or(self.runtime.data_dir.as_deref());
        Ok(read_inputs(spec, dir, &meta.input_schema(), labels)?)
    }

    /// Loads the model directory `dir` (checking that its system is known). A field of its
    /// configuration that its system does not read is dropped, with a warning
    /// (`Systems::drop_unread`).
    pub fn load(&self, dir: &Path) -> Result<(Fitted, Meta)> {
        let (model, meta, _) = self.load_run(dir)?;
        Ok((model, meta))
    }

    /// Loads the model directory `dir` as [`Engine::load`] does, with what its run records of
    /// its data (`None` without `run.json`), all read from one version of the folder: a
    /// `train --force` replacing the run meanwhile never pairs the old model with the new
    /// run's data.
    pub fn load_run(&self, dir: &Path) -> Result<(Fitted, Meta, Option<RunRecord>)> {
        let ((mut model, meta), record) = checkpoint::read_snapshot(dir, |snap| {
            let loaded = checkpoint::load_from(snap)?;
            Ok((loaded, RunRecord::read(snap)?))
        })
        .map_err(|e| run_dir::explain_missing_model(dir, e))?;
        for field in self.systems.drop_unread(model.config_mut())? {
            tracing::warn!(
                dir = %dir.display(),
                field,
                system = %model.config().system,
                "the model's system does not read this field of its configuration: dropped"
            );
        }
        tracing::info!(
            dir = %dir.display(),
            system = %model.config().system,
            dataset = %meta.dataset,
            features = model.n_features(),
            labels = model.n_labels(),
            "model loaded"
        );
        Ok((model, meta, record))
    }

    /// Creates the run directory `dir` for `cfg` on the data of `spec`, and records the data
    /// source in it. A directory that already holds a run is refused unless `replace`; then
    /// the new run is written beside it and replaces it whole when [`Engine::finish_run`]
    /// ends (a run that fails or is killed leaves the old one as it was).
    pub fn start_run(
        &self,
        dir: &Path,
        spec: &DataSpec,
        cfg: Config,
        replace: bool,
    ) -> Result<PreparedRun> {
        self.systems.for_config(&cfg)?;
        let located = self.locate(spec);
        let (data, notes) = located.load_noted()?;
        require_rows(&data.train, &cfg.train)?;
        log_data(&data);
        // `run.json` records the spec as given: a run resumed later looks its data up as
        // this one did, in the data folder of the day when the spec names none.
        let run_dir = run_dir::create(dir, spec, &located, &data, replace)?;
        Ok(PreparedRun {
            dir: dir.to_path_buf(),
            data,
            start: Start::Fresh(cfg),
            run_dir,
            notes,
        })
    }

    /// Reopens the interrupted run in `dir` at its latest checkpoint, with the same data.
    pub fn resume_run(&self, dir: &Path) -> Result<PreparedRun> {
        let (run_dir, spec) = run_dir::reopen(dir)?;
        let spec = self.locate(&spec);
        let (data, notes) = spec.load_noted()?;
        run_dir::check_identity(dir, &spec, &data)?;
        log_data(&data);
        let (state, meta) = run_dir::load_checkpoint::<BinaryRun>(dir)?;
        tracing::info!(
            dir = %dir.display(),
            epochs_run = state.epochs_run(),
            "resuming from the latest checkpoint"
        );
        let system = self.systems.for_config(&state.model.config)?;
        if !system.resumable() {
            return Err(Error::Unsupported {
                system: system.name().into(),
                what: "resume".into(),
            });
        }
        crate::pipeline::check_dims(
            &state.model,
            data.train.n_features(),
            data.train.n_labels(),
            "the training data",
        )?;
        check_labels(&meta, &data.train, dir)?;
        Ok(PreparedRun {
            dir: dir.to_path_buf(),
            data,
            start: Start::Resume(Box::new(state)),
            run_dir,
            notes,
        })
    }

    /// Trains a prepared run to the end: `metrics.jsonl` after every epoch, resumable
    /// checkpoints as `checkpoints` says (when the system is resumable), then the model, and
    /// its evaluation on the test data as `eval.json`. The latest checkpoint also holds the
    /// best weights so far (early stopping's), so latest and best are both kept.
    pub fn finish_run(
        &self,
        run: PreparedRun,
        checkpoints: Checkpoints,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<RunOutcome> {
        let system = self.systems.for_config(run.config())?;
        let PreparedRun {
            data,
            start,
            run_dir,
            notes,
            ..
        } = run;
        let dir = run_dir.path().to_path_buf();
        let history = match &start {
            Start::Resume(state) => BinaryRun::history(state),
            Start::Fresh(_) => &[],
        };
        let mut metrics = MetricsLog::new(&dir, history);
        let mut io_error = None;
        let mut log_event = |ev: Event| {
            if let Event::Epoch(rec) = &ev {
                if let Err(e) = metrics.push(rec) {
                    io_error.get_or_insert(e);
                }
            }
            on_event(ev);
        };
        let trained_on = TrainedOn::of(&data.train).with_notes(&notes);
        let kind = BinaryRun {
            trained_on: &trained_on,
        };
        let mut checkpointer = Checkpointer::new(&kind, &dir, checkpoints);
        let mut hooks = Hooks {
            on_event: &mut log_event,
            after_epoch: &mut |st: &TrainState| checkpointer.after_epoch(st),
            wait: self.runtime.wait,
            memory_budget: self.runtime.memory_budget,
            cancel: &AtomicBool::new(false),
            search: None,
            forests: None,
        };
        let trained = self
            .searched(system, None)
            .fit(&data.train, start, &mut hooks)?;
        if let Some(e) = io_error {
            return Err(e);
        }
        run_dir.save_model(&kind, &trained.model)?;
        tracing::info!(dir = %dir.display(), epochs = trained.history.len(), "model saved");
        let (report, _) = self.evaluate(&trained.model, &data.test)?;
        tracing::info!(
            rows = data.test.n_rows(),
            example_f1_percent = 100.0 * report.at_threshold.example_f1,
            "evaluated on the test split"
        );
        run_dir.finish(&report)?;
        Ok(RunOutcome {
            model: trained.model,
            history: trained.history,
            report,
        })
    }
}

/// The data a run reads, for `-v`.
fn log_data(data: &TrainTest) {
    tracing::info!(
        dataset = %data.train.name,
        train_rows = data.train.n_rows(),
        test_rows = data.test.n_rows(),
        features = data.train.n_features(),
        labels = data.train.n_labels(),
        "data loaded"
    );
}

/// Refuses training data without rows (it would train nothing and save a random model) or
/// without label columns, or with a dev split that leaves no rows to train on.
fn require_rows(train: &Dataset, tc: &crate::config::TrainConfig) -> Result<()> {
    tc.check_rows(train.n_rows())?;
    if train.n_rows() == 0 {
        return Err(Error::Empty {
            data: train.name.clone(),
            what: "rows",
        });
    }
    // Zero label columns would reach the networks as empty chunks (a panic), not an error.
    if train.n_labels() == 0 {
        return Err(Error::Empty {
            data: train.name.clone(),
            what: "label columns",
        });
    }
    Ok(())
}

/// The dev rows `cfg` holds out of `train` (its split: the rows early stopping scored), or
/// `None` when it holds out none. The one definition of "a run's dev data" for every front
/// end (`eval --split dev`, the report's threshold curve, Table 1's dev-tuned threshold).
pub fn dev_split(train: &Dataset, cfg: &Config) -> Option<Dataset> {
    let (_, dev_rows) = cfg.train.dev_split(train.n_rows());
    (!dev_rows.is_empty()).then(|| train.select_rows(&dev_rows))
}

/// Refuses data whose label names differ from those the model in `model_dir` was trained on.
pub fn check_labels(meta: &Meta, data: &Dataset, model_dir: &Path) -> Result<()> {
    if !meta.label_names.is_empty()
        && !data.label_names.is_empty()
        && meta.label_names != data.label_names
    {
        return Err(Error::LabelsDiffer {
            model_dir: model_dir.to_path_buf(),
            dataset: meta.dataset.clone(),
        });
    }
    Ok(())
}
