//! The library's error type: values in messages, no panics on bad input.

use std::path::PathBuf;

mod checkpoint;
mod config;
mod folder;

pub use checkpoint::{CheckpointProblem, Disagreement, Record};
pub use config::{ConfigProblem, Unread};
pub use folder::NotARun;

/// Errors of model construction, training, checkpoints and configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration that does not parse (JSON syntax, an unknown field, a value of the
    /// wrong type), with where in the text.
    #[error(
        "invalid configuration{}: {problem}{}",
        field_suffix(.field),
        place_suffix(.line, .column)
    )]
    InvalidConfig {
        /// The dotted path of the field to blame (`train.lr`, `baseline.lr_drops[1]`), if one is.
        field: Option<String>,
        /// What is wrong (the JSON reader's refusal, or the shape expected and found; boxed:
        /// errors travel in every `Result`).
        #[source]
        problem: Box<ConfigProblem>,
        /// The line of the configuration text where it was found (1-based), if known.
        line: Option<usize>,
        /// Its column (1-based), if known.
        column: Option<usize>,
    },
    /// A preset name that names none.
    #[error(
        "preset = \"{name}\" is not a preset; known presets: {known} (a saved configuration \
         may also give the name it was saved under, with the rest of it)"
    )]
    UnknownPreset {
        /// The name given.
        name: String,
        /// The presets there are, comma-separated.
        known: String,
    },
    /// A dev split that leaves no row to train on.
    #[error(
        "{split} holds out {held_out} of the {rows} training rows as dev data, leaving none to \
         train on: lower it"
    )]
    NoTrainingRows {
        /// The setting that splits (`train.dev_fraction = 0.999`).
        split: String,
        /// Rows it holds out.
        held_out: usize,
        /// Rows there are.
        rows: usize,
    },
    /// A model whose training state would not fit the memory budget.
    #[error(
        "model too large for the memory budget: {shape} give {params:.0} parameters and an \
         estimated {need_gib:.1} GiB of training memory ({state_gib:.1} GiB parameter state + \
         {tapes_gib:.1} GiB per-batch tapes), above the budget of {budget_gib:.1} GiB (set \
         CARDINAL_MEMORY_BUDGET, e.g. 64G, or 0 for no limit; or reduce model.hidden / \
         train.batch_size)"
    )]
    TooLarge {
        /// The sizes that make it (features, labels, layers, batch, steps).
        shape: String,
        /// Parameters.
        params: f64,
        /// Estimated training memory, GiB.
        need_gib: f64,
        /// Of which the parameter state.
        state_gib: f64,
        /// Of which one batch's tapes.
        tapes_gib: f64,
        /// The budget, GiB.
        budget_gib: f64,
    },
    /// A configuration field set to a value outside what it allows.
    #[error("{field} = {value} is out of range: expected {allowed}")]
    OutOfRange {
        /// The field's full dotted path (`inference.smooth_eps`).
        field: String,
        /// The value given, as written.
        value: String,
        /// What the field allows (`a finite number > 0`, `1..=1000`).
        allowed: String,
    },
    /// A configuration field set for a system that does not read it.
    #[error(
        "{field} is set, but system `{system}` does not read it ({because}); remove it, or \
         choose a system that reads it"
    )]
    NotRead {
        /// The field's full dotted path (`baseline.optimizer`).
        field: String,
        /// The system the configuration trains.
        system: String,
        /// What the system reads instead, or which systems read the field.
        because: Unread,
    },
    /// Reading or checking a dataset failed.
    #[error(transparent)]
    Data(#[from] cardinal_data::data::DataError),
    /// A metric could not be computed (e.g. predictions and labels of different shapes).
    #[error(transparent)]
    Metrics(#[from] cardinal_data::metrics::MetricsError),
    /// A projection was given input it cannot project (e.g. an infeasible count).
    #[error(transparent)]
    Projection(#[from] cardinal_proj::ProjError),
    /// Inference failed on one row of the data (e.g. extreme inputs gave a non-finite count).
    #[error("row {row} of the data (from 0): {source}")]
    Row {
        /// The row's number in the data, from 0.
        row: usize,
        /// What failed.
        #[source]
        source: cardinal_proj::ProjError,
    },
    /// A model directory or checkpoint is missing, corrupt or inconsistent.
    #[error("{}: {problem}", path.display())]
    Checkpoint {
        /// The offending file or directory.
        path: PathBuf,
        /// What is wrong with it (boxed: errors travel in every `Result`).
        #[source]
        problem: Box<CheckpointProblem>,
    },
    /// A saved configuration file (a model directory's `config.json`) that is refused, with
    /// the refusal kept as the source.
    #[error("{}: {source}", path.display())]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// Why it is refused (boxed: errors travel in every `Result`).
        #[source]
        source: Box<Error>,
    },
    /// Data and model (or a saved state) disagree in shape: features, labels, counts, rows.
    #[error("{what} has {found}; expected {expected}")]
    Shape {
        /// What has the wrong shape (`the data`, a dataset's name).
        what: String,
        /// The shape it has.
        found: String,
        /// The shape expected, and whose it is.
        expected: String,
    },
    /// Training data without rows or without label columns.
    #[error("the training data `{data}` has no {what}")]
    Empty {
        /// The data's name.
        data: String,
        /// `rows` or `label columns`.
        what: &'static str,
    },
    /// New data whose label names differ from the model's.
    #[error("the data's labels differ from those of the model in {} (trained on `{dataset}`)", model_dir.display())]
    LabelsDiffer {
        /// The model directory.
        model_dir: PathBuf,
        /// The data it was trained on.
        dataset: String,
    },
    /// Data found under a run's name that is not the data the run trained on.
    #[error(
        "the data found for `{dataset}` is not the data the run in {} trained on: it trained on \
         {recorded}; found {found}. Restore that data (or its data folder), or start a new run",
        run.display()
    )]
    OtherData {
        /// The dataset's name.
        dataset: String,
        /// The run directory.
        run: PathBuf,
        /// What the run recorded.
        recorded: String,
        /// What was found.
        found: String,
    },
    /// A data file that cannot be read, named.
    #[error("{}: {source}", path.display())]
    DataFile {
        /// The file.
        path: PathBuf,
        /// Why (boxed: a data error is large, and errors travel in every `Result`).
        #[source]
        source: Box<cardinal_data::data::DataError>,
    },
    /// A path that is not the kind of file expected.
    #[error("{} is {what}: expected {expected}", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is (`a folder`).
        what: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    /// New multi-target data without targets where they are needed.
    #[error(
        "{} holds no targets (no `-C` option in its relation name, and no nominal attribute \
         named as one of the model's targets), and {why}",
        path.display()
    )]
    NoTargets {
        /// The file.
        path: PathBuf,
        /// Why they are needed.
        why: &'static str,
    },
    /// A dataset that holds no multi-target data where multi-target data is needed.
    #[error("`{dataset}` holds no multi-target data")]
    NotMultiTarget {
        /// The dataset.
        dataset: String,
    },
    /// A multi-target image whose projection failed, in training or at prediction.
    #[error("{data}: image {image}: {source}")]
    Image {
        /// The data's name.
        data: String,
        /// The image (row), from 0.
        image: usize,
        /// What failed.
        #[source]
        source: cardinal_proj::ProjError,
    },
    /// A choice among candidate configurations with none to choose from.
    #[error("no candidate configuration to choose from")]
    NoCandidates,
    /// `config.system` names no system of the registry in use.
    #[error("unknown system `{name}`; known systems: {known}")]
    UnknownSystem {
        /// The name asked for.
        name: String,
        /// The names the registry knows, comma-separated.
        known: String,
    },
    /// The system cannot do what was asked (e.g. resume a run of a system that trains in one
    /// go).
    #[error("system `{system}` cannot {what}")]
    Unsupported {
        /// The system's name.
        system: String,
        /// What it was asked to do.
        what: String,
    },
    /// A system was handed a fitted model of another kind than its own (a forest's to a
    /// system of networks, or the reverse).
    #[error("system `{system}` predicts with {expected}, not with {found}")]
    ModelKind {
        /// The system's name.
        system: String,
        /// The kind of model it predicts with.
        expected: &'static str,
        /// The kind it was handed.
        found: &'static str,
    },
    /// A run directory already holds a run, and replacing it was not asked for. Each front
    /// end says how to replace it, or to continue it where it is `resumable` (the command
    /// line's `--force` and `--resume`, Python's `overwrite=True`).
    #[error("{} {what}", path.display())]
    RunExists {
        /// The run directory.
        path: PathBuf,
        /// What it holds.
        what: String,
        /// Whether it holds an unfinished run with a checkpoint (`--resume` continues it).
        resumable: bool,
    },
    /// A folder that replacing a run would delete is not a run (or is a filesystem root or
    /// the home folder).
    #[error(
        "{} {what}: only a folder holding a cardinal run is replaced; choose another folder",
        path.display()
    )]
    NotARun {
        /// The folder.
        path: PathBuf,
        /// What it is, or what is in it.
        what: NotARun,
    },
    /// A run asked to continue that cannot be: it is finished, or it stopped before its first
    /// checkpoint. Each front end says how to start it again.
    #[error(
        "{}: {}",
        run.display(),
        if *finished {
            "is a finished run (its model and eval.json are written) and keeps no checkpoint: \
             there is nothing to resume"
        } else {
            "no checkpoint to resume from (checkpoints/LATEST is missing): the run stopped \
             before its first checkpoint, while its search ran or in its first epochs (a \
             search is not checkpointed), and nothing of it can be continued"
        }
    )]
    NotResumable {
        /// The run directory.
        run: PathBuf,
        /// Whether it is a finished run (its model and `eval.json` written).
        finished: bool,
    },
    /// Another live process is writing into the run directory.
    #[error(
        "{path} is in use by another run (process {pid}); wait for it or choose another directory"
    )]
    RunBusy {
        /// The run directory.
        path: PathBuf,
        /// The process holding its lock.
        pid: u32,
    },
    /// The thread pool could not be set up.
    #[error("cannot set up {threads} threads: {source}")]
    ThreadPool {
        /// The threads asked for.
        threads: usize,
        /// Why.
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    /// Training produced a non-finite loss, gradient or parameter.
    #[error(
        "training diverged in phase {phase}, epoch {epoch}, batch {batch}: {quantity} is not \
         finite (see train.skip_nonfinite_batches)"
    )]
    Diverged {
        /// 1: the train part of the split, 2: all of train.
        phase: u8,
        /// Epoch within the phase, from 1.
        epoch: usize,
        /// Batch within the epoch, from 0.
        batch: usize,
        /// What was not finite.
        quantity: String,
    },
    /// Training was stopped by its caller (e.g. Ctrl-C in the Python package) through
    /// `cardinal::engine::Engine::fit_cancellable`.
    #[error("training interrupted after {epochs} epochs")]
    Interrupted {
        /// Epochs finished, over both phases.
        epochs: usize,
    },
    /// A file or folder refused by the store: not what is read or written there
    /// (`cardinal_store::Problem`).
    #[error(transparent)]
    Store(cardinal_store::StoreError),
    /// The Section 6 model refused its data, its configuration or its saved state.
    #[error(transparent)]
    Segment(#[from] cardinal_segment::SegError),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl From<cardinal_forest::ForestError> for Error {
    /// A forest's refusal in the words of the configuration that asked for the forest.
    fn from(e: cardinal_forest::ForestError) -> Self {
        use cardinal_forest::ForestError as F;
        match e {
            F::NoRows { data } => Self::Empty { data, what: "rows" },
            F::TooLarge { what, size } => Self::OutOfRange {
                field: "model.forest".into(),
                value: format!("{size} {what}"),
                allowed: format!(
                    "fewer than {} training rows, label entries and features each (a forest \
                     stores its indices as f32)",
                    cardinal_forest::MAX_INDEX
                ),
            },
            F::Weighted => Self::NotRead {
                field: "sample weights".into(),
                system: "model.forest".into(),
                because: Unread::EveryRowOnce,
            },
            F::Cancelled => Self::Interrupted { epochs: 0 },
        }
    }
}

impl From<cardinal_store::StoreError> for Error {
    /// The store's I/O errors and busy runs as the library's own; its refusals kept whole.
    fn from(e: cardinal_store::StoreError) -> Self {
        use cardinal_store::StoreError as S;
        match e {
            S::Io { path, source } => Self::Io { path, source },
            S::RunBusy { path, pid } => Self::RunBusy { path, pid },
            other => Self::Store(other),
        }
    }
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// ` at `FIELD`` for [`Error::InvalidConfig`], or nothing.
fn field_suffix(field: &Option<String>) -> String {
    field
        .as_ref()
        .map_or(String::new(), |f| format!(" at `{f}`"))
}

/// ` at line L, column C` for [`Error::InvalidConfig`], or nothing.
fn place_suffix(line: &Option<usize>, column: &Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l}, column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}
