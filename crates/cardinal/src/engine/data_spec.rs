//! Where a run's data comes from ([`DataSpec`], saved as `run.json`) and the data folder.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::{read_mulan, resolve_dataset_noted, LoadNote, TrainTest};
use crate::error::Result;

/// Where a dataset comes from: a name or path, or three MULAN files. Saved as `run.json` in a
/// run directory, so that `--resume` reads the same data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataSpec {
    /// Dataset name (data directory, then vendored) or path (MULAN folder, ARFF with XML
    /// beside, LIBSVM or XMC file).
    pub dataset: String,
    /// Training ARFF file (with `test` and `labels`).
    pub train: Option<PathBuf>,
    /// Test ARFF file.
    pub test: Option<PathBuf>,
    /// MULAN XML label file naming the label attributes.
    pub labels: Option<PathBuf>,
    /// Folder holding datasets by name (default: the environment's `CARDINAL_DATA`).
    pub data_dir: Option<PathBuf>,
    /// For a single-file dataset: the fraction used for training in a seeded split.
    pub train_fraction: f64,
}

impl DataSpec {
    /// The dataset called (or at) `dataset`, with the default split of single files.
    pub fn named(dataset: impl Into<String>) -> Self {
        Self {
            dataset: dataset.into(),
            train: None,
            test: None,
            labels: None,
            data_dir: None,
            train_fraction: 0.8,
        }
    }

    /// The folder datasets are looked up in by name: `data_dir`, else `$CARDINAL_DATA`.
    pub fn data_dir(&self) -> Option<PathBuf> {
        data_dir_or_env(self.data_dir.as_deref())
    }

    /// Reads the train and test data.
    pub fn load(&self) -> Result<TrainTest> {
        Ok(self.load_noted()?.0)
    }

    /// [`Self::load`], with what the readers decided on the way (attributes dropped as
    /// identifiers, labels taken from a MEKA header, LIBSVM read as 0-based), for the user.
    pub fn load_noted(&self) -> Result<(TrainTest, Vec<LoadNote>)> {
        if let (Some(tr), Some(te), Some(xml)) = (&self.train, &self.test, &self.labels) {
            let train = read_mulan(tr, xml)?;
            let test = read_mulan(te, xml)?;
            return Ok((TrainTest { train, test }, Vec::new()));
        }
        let dir = self.data_dir();
        let (resolved, notes) = resolve_dataset_noted(&self.dataset, dir.as_deref())?;
        Ok((resolved.into_train_test(self.train_fraction, 0)?, notes))
    }
}

/// `explicit`, else the folder named by `$CARDINAL_DATA`.
pub fn data_dir_or_env(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("CARDINAL_DATA").map(PathBuf::from))
}
