//! What is wrong with a model folder, a checkpoint or a run directory: the typed "what" of
//! [`Error::Checkpoint`](super::Error::Checkpoint), with the reader's error kept as the source
//! where there is one.

use std::path::PathBuf;

use cardinal_store::{JsonProblem, TensorProblem};

/// Why a model folder, a checkpoint or a run directory's file is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointProblem {
    /// A JSON record that does not parse as its kind.
    #[error("invalid {record}: {problem}")]
    Record {
        /// Which record.
        record: Record,
        /// What is wrong with it, and where (never quoting the file).
        problem: JsonProblem,
    },
    /// A JSON record with a field this version does not write, named by position (never
    /// quoted: the file may be someone else's).
    #[error(
        "invalid {record}: its field number {number} is not one this version writes (it writes \
         only {})",
        known.join(", ")
    )]
    UnknownField {
        /// Which record.
        record: Record,
        /// The field's position in the object, from 1.
        number: usize,
        /// The fields this version writes.
        known: &'static [&'static str],
    },
    /// A line of `metrics.jsonl` that is not an epoch record.
    #[error("line {line}: not an epoch record ({source})")]
    EpochRecord {
        /// The line, from 1.
        line: usize,
        /// The JSON reader's refusal.
        #[source]
        source: serde_json::Error,
    },
    /// An `eval.json` that is not an evaluation report.
    #[error("not an evaluation report ({source})")]
    EvalReport {
        /// The JSON reader's refusal.
        #[source]
        source: serde_json::Error,
    },
    /// A text file that is not UTF-8.
    #[error("not UTF-8 text: {0}")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// A tensor file the tensor reader refuses.
    #[error("not a valid safetensors file: {0}")]
    NotSafetensors(#[source] safetensors::SafeTensorError),
    /// Tensors to save that the tensor writer cannot lay out (not expected: the sizes are the
    /// model's own).
    #[error("cannot lay out the tensors to save: {0}")]
    TensorLayout(#[source] safetensors::SafeTensorError),
    /// A tensor of the file that is missing, of another type or shape, or holds values its
    /// reader cannot take.
    #[error(transparent)]
    Tensor(#[from] TensorProblem),
    /// A save refused before anything is written: the model holds non-finite values.
    #[error("refusing to save: {what} holds non-finite values")]
    NonFiniteToSave {
        /// What holds them (a tensor's name, `the parameters`).
        what: String,
    },
    /// A save refused before anything is written: what it would record disagrees with itself.
    #[error("refusing to save: {0}")]
    InconsistentToSave(Disagreement),
    /// Meta data whose fields disagree with one another.
    #[error("inconsistent meta data: {0}")]
    Inconsistent(Disagreement),
    /// A model folder of another format version.
    #[error(
        "model format version {found} (written by cardinal {written_by}), but this is cardinal \
         {reader} reading format {reads}"
    )]
    FormatVersion {
        /// The version the folder records.
        found: u32,
        /// The cardinal that wrote it.
        written_by: String,
        /// This cardinal's version.
        reader: &'static str,
        /// The format version this cardinal reads.
        reads: u32,
    },
    /// A size that a multi-target model's meta data must give.
    #[error(
        "`{field}` is missing or not a positive integer, expected one for labels = \
         \"multi_target\""
    )]
    MetaSize {
        /// The field (`positions`, `classes`).
        field: &'static str,
    },
    /// A `labels` value that names no label structure.
    #[error("`labels` names no label structure: expected \"binary\" or \"multi_target\"")]
    LabelStructure,
    /// A model of another label structure than the loader reads.
    #[error("this is {found}, not {expected}: load it with {load_with}")]
    OtherLabels {
        /// What the folder holds (`a multi-target (Section 6) model of 4 positions and 3
        /// classes`).
        found: String,
        /// What the loader reads.
        expected: &'static str,
        /// The loader that reads it.
        load_with: &'static str,
    },
    /// A run that averages its weights, whose checkpoint has no average.
    #[error("missing: the run averages its weights (train.average_epochs)")]
    NoAverage,
    /// A progress record whose epochs are not numbered from 1, or are too many.
    #[error("expected epochs numbered 1, 2, ... and at most {max} of them")]
    EpochNumbers {
        /// The epochs the configuration runs.
        max: usize,
    },
    /// A Section 6 model with a grid energy over positions that form no square grid.
    #[error("grid_energy = true, but {positions} positions do not form a square grid")]
    NotAGrid {
        /// The positions.
        positions: usize,
    },
    /// A folder replaced or saved into over and over while it was read.
    #[error(
        "changed {attempts} times while it was being read (a run being saved or replaced \
         there); try again when it is done"
    )]
    Unsettled {
        /// The reads tried.
        attempts: u32,
    },
    /// A `checkpoints/LATEST` that names no checkpoint of its folder.
    #[error("names no checkpoint of this directory: expected `epoch-` and digits")]
    NotACheckpointName,
    /// A run whose recorded data is not multi-target data (any more).
    #[error("the data it records (`{data}`) is not multi-target data (any more)")]
    RecordedDataNotMultiTarget {
        /// The data's name.
        data: String,
    },
    /// A run whose recorded data cannot be read where it was.
    #[error(
        "the data it records (`{data}`) cannot be read (moved, or the run came from another \
         machine): {source}"
    )]
    RecordedDataUnreadable {
        /// The data's name or file.
        data: String,
        /// Why it cannot be read (boxed: errors travel in every `Result`).
        #[source]
        source: Box<super::Error>,
    },
    /// A folder asked for a model that holds none.
    #[error(
        "holds no model (no meta.json){}",
        if model_folders.is_empty() {
            ": pass the folder a training wrote its model to".to_string()
        } else {
            format!(
                " but model folders: pass one of them: {}{}",
                model_folders.join(", "),
                if *more > 0 { format!(" and {more} more") } else { String::new() }
            )
        }
    )]
    NoModel {
        /// The first model folders inside it, by name.
        model_folders: Vec<String>,
        /// How many more there are.
        more: usize,
    },
    /// A replacement's staging folder left by an interrupted replacement, holding files
    /// cardinal did not write.
    #[error(
        "is what an interrupted replacement of {} left, and it holds files cardinal did not \
         write ({}); move them out and remove the folder",
        target.display(),
        files.join(", ")
    )]
    StagingHoldsForeign {
        /// The run being replaced.
        target: PathBuf,
        /// The first of the foreign files.
        files: Vec<String>,
    },
    /// Something other than a folder where a replacement's staging folder goes.
    #[error(
        "is in the way of replacing {} (cardinal writes the new run there first); remove it",
        target.display()
    )]
    StagingInTheWay {
        /// The run being replaced.
        target: PathBuf,
    },
    /// A run whose replacement cannot be written beside it.
    #[error(
        "cannot be replaced: a replacement is written beside it first, in {}, which cannot be \
         written ({source}); make that folder writable, or train into a new folder inside one \
         you can write",
        parent.display()
    )]
    CannotStage {
        /// The folder the replacement would be written in.
        parent: PathBuf,
        /// The operating system's refusal.
        #[source]
        source: std::io::Error,
    },
    /// A run folder that is a mount point, which cannot be exchanged with its replacement.
    #[error(
        "is a mount point (another filesystem than its parent folder): a run there is replaced \
         by exchanging it with a new folder beside it, which a mount point cannot be; train \
         into a folder inside it, or empty it and train into it without replacing it"
    )]
    MountPoint,
}

/// The JSON records of model folders and run directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record {
    /// `meta.json`.
    Meta,
    /// A checkpoint's `progress.json`.
    Progress,
    /// A run's record of its data's identity.
    DataIdentity,
    /// A run's record of where its data comes from (`run.json`).
    DataSource,
}

impl std::fmt::Display for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Meta => "meta data",
            Self::Progress => "progress record",
            Self::DataIdentity => "data record",
            Self::DataSource => "data source record",
        })
    }
}

/// Two recorded values that cannot both hold: what was found, and what it must agree with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{found}: expected {expected}")]
pub struct Disagreement {
    /// The values found (`count_min = 3, count_max = 2`).
    pub found: String,
    /// What they must satisfy (`count_min <= count_max <= n_labels = 4`).
    pub expected: String,
}
