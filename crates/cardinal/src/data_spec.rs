//! Where a run's data comes from ([`DataSpec`], saved as `run.json`) and the data folder.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::arff::declares_multi_target;
use crate::data::{read_mulan, resolve_dataset_noted, LoadNote, TrainTest};
use crate::error::{Error, Result};

/// Where a dataset comes from: a name or path, or three MULAN files. Saved as `run.json` in a
/// run directory, so that a resumed run reads the same data.
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
    /// Folder holding datasets by name (a front end's default: the environment's
    /// `CARDINAL_DATA`, passed in as [`crate::runtime::Runtime::data_dir`]; see
    /// [`crate::engine::Engine::locate`]).
    pub data_dir: Option<PathBuf>,
    /// For a single-file dataset: the fraction used for training in a seeded split.
    pub train_fraction: f64,
    /// For a CSV file: which columns are labels (`a,b`, `last=N` or `prefix=P`; see
    /// [`crate::data::csv::LabelColumns`]). `None` for other formats, and for a CSV file with
    /// a MULAN XML label file beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_columns: Option<String>,
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
            label_columns: None,
        }
    }

    /// The dataset called (or at) `dataset`, looked up by name in `data_dir` (when given),
    /// with the default split of single files: how every front end reads a dataset by name.
    pub fn named_in(dataset: impl Into<String>, data_dir: Option<&Path>) -> Self {
        Self {
            data_dir: data_dir.map(Path::to_path_buf),
            ..Self::named(dataset)
        }
    }

    /// The folder datasets are looked up in by name: `data_dir` (no environment variable is
    /// read here: see [`DataSpec::or_data_dir`]).
    pub(crate) fn data_dir(&self) -> Option<PathBuf> {
        self.data_dir.clone()
    }

    /// This spec, with `default` (a front end's `CARDINAL_DATA`) as its data folder when it
    /// names none.
    pub(crate) fn or_data_dir(&self, default: Option<&Path>) -> Self {
        let mut spec = self.clone();
        if spec.data_dir.is_none() {
            spec.data_dir = default.map(Path::to_path_buf);
        }
        spec
    }

    /// This spec with its paths absolute (a `dataset` that is a path that exists, the MULAN
    /// files, the data folder), as a run records it: its data is then found from any working
    /// folder. Names stay names.
    pub(crate) fn anchored(&self) -> Self {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut spec = self.clone();
        if Path::new(&spec.dataset).exists() {
            spec.dataset = abs(Path::new(&spec.dataset)).display().to_string();
        }
        for p in [
            &mut spec.train,
            &mut spec.test,
            &mut spec.labels,
            &mut spec.data_dir,
        ]
        .into_iter()
        .flatten()
        {
            *p = abs(p);
        }
        spec
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
        if let (Some(tr), Some(te), None) = (&self.train, &self.test, &self.labels) {
            // Files that say which attributes are labels themselves (a MEKA `-C n` header, or
            // an XML beside each by its stem), read as a `dataset` of one file is read.
            return Ok((read_pair(tr, te)?, Vec::new()));
        }
        let dir = self.data_dir();
        if let Some(columns) = &self.label_columns {
            return Ok((self.read_csv(columns, dir.as_deref())?, Vec::new()));
        }
        if let Some(pair) = self.train_file_with_test_sibling()? {
            return Ok(pair);
        }
        let (resolved, notes) = resolve_dataset_noted(&self.dataset, dir.as_deref())?;
        Ok((resolved.into_train_test(self.train_fraction, 0)?, notes))
    }
}

impl DataSpec {
    /// A `dataset` that is a MULAN training file (`NAME-train.arff`, `NAME-train-VARIANT.arff`)
    /// with its test file beside it (`NAME-test.arff`): the two, as the folder would give them
    /// (a training file alone would be split, and its test file silently left out), with a
    /// note saying so. `None` for anything else.
    fn train_file_with_test_sibling(&self) -> Result<Option<(TrainTest, Vec<LoadNote>)>> {
        let path = Path::new(&self.dataset);
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return Ok(None);
        };
        let Some(at) = name.rfind("-train") else {
            return Ok(None);
        };
        let sibling = format!("{}-test{}", &name[..at], &name[at + "-train".len()..]);
        let test = path.with_file_name(&sibling);
        let arff = |n: &str| n.strip_suffix(".gz").unwrap_or(n).ends_with(".arff");
        if !path.is_file() || !arff(name) || !test.is_file() {
            return Ok(None);
        }
        let single = |p: &Path| match crate::data::resolve::load_file(p)? {
            crate::data::Resolved::Single(d) => Ok::<_, Error>(d),
            crate::data::Resolved::Split(tt) => Ok(tt.train),
        };
        let (train, test_data) = (single(path)?, single(&test)?);
        if train.feature_names != test_data.feature_names
            || train.label_names != test_data.label_names
        {
            return Err(Error::OutOfRange {
                field: "dataset".into(),
                value: self.dataset.clone(),
                allowed: format!(
                    "a training file whose test file beside it, {sibling}, has the same \
                     features and labels (they differ; name the three files as `train`, `test` \
                     and `labels` instead)"
                ),
            });
        }
        let note = LoadNote {
            path: path.to_path_buf(),
            message: format!(
                "its test file {sibling} beside it is the test split (as for the folder); \
                 the fraction for training (`train_fraction`) does not apply"
            ),
            kind: crate::data::NoteKind::TestSibling,
        };
        Ok(Some((
            TrainTest {
                train,
                test: test_data,
            },
            vec![note],
        )))
    }

    /// The CSV file `dataset` names (a path, else a file in the data folder `dir`), its label
    /// columns `columns`, split by `train_fraction`.
    fn read_csv(&self, columns: &str, dir: Option<&Path>) -> Result<TrainTest> {
        use crate::data::csv::{is_csv_name, read_csv_path, CsvLabels, LabelColumns};
        let columns: LabelColumns = columns.parse().map_err(|why| Error::OutOfRange {
            field: "label_columns".into(),
            value: columns.to_string(),
            allowed: why,
        })?;
        let given = PathBuf::from(&self.dataset);
        let path = match dir.map(|d| d.join(&self.dataset)) {
            Some(p) if !given.exists() && p.is_file() => p,
            _ => given,
        };
        if !path.is_file() || (!is_csv_name(&path) && path.extension().is_some()) {
            return Err(Error::OutOfRange {
                field: "label_columns".into(),
                value: columns.to_string(),
                allowed: format!(
                    "a CSV file to read it from; `{}` is not one (`label_columns` names \
                     the label columns of a CSV file)",
                    self.dataset
                ),
            });
        }
        let data = read_csv_path(&path, &columns, CsvLabels::Required)?;
        Ok(crate::data::Resolved::Single(data).into_train_test(self.train_fraction, 0)?)
    }
}

/// The train file `train` and test file `test`, each read as a `dataset` of one file is read, with
/// the same features and labels.
fn read_pair(train: &Path, test: &Path) -> Result<TrainTest> {
    let single = |p: &Path| match crate::data::resolve::load_file(p)? {
        crate::data::Resolved::Single(d) => Ok::<_, Error>(d),
        crate::data::Resolved::Split(tt) => Ok(tt.train),
    };
    let (train_data, test_data) = (single(train)?, single(test)?);
    if train_data.feature_names != test_data.feature_names
        || train_data.label_names != test_data.label_names
    {
        return Err(Error::OutOfRange {
            field: "test".into(),
            value: test.display().to_string(),
            allowed: format!(
                "a test file with the features and labels of the training file {}",
                train.display()
            ),
        });
    }
    Ok(TrainTest {
        train: train_data,
        test: test_data,
    })
}

/// The multi-target ARFF files of a [`DataSpec`] whose data is multi-target (MEKA's `-C L`
/// over nominal targets with classes other than `{0, 1}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MultiTargetFiles {
    /// A folder's `train.arff` and `test.arff` (as `cardinal data synth-seg` writes them).
    Split {
        /// The training file.
        train: PathBuf,
        /// The test file.
        test: PathBuf,
    },
    /// One file, split by the spec's `train_fraction` (seeded, as binary single files are).
    Single(PathBuf),
}

impl DataSpec {
    /// Whether `dataset` names multi-target data: a folder with `train.arff` and `test.arff`,
    /// or one ARFF file, whose targets are nominal with classes other than `{0, 1}` (only
    /// headers are read).
    pub fn is_multi_target(&self) -> Result<bool> {
        Ok(self.multi_target_files()?.is_some())
    }

    /// The multi-target files `dataset` names (a folder with `train.arff` and `test.arff`, or
    /// one ARFF file; a path, else a name in the data folder), if its data is multi-target;
    /// `None` for anything else, which the binary readers take (and report on). Only headers
    /// are read.
    pub(crate) fn multi_target_files(&self) -> Result<Option<MultiTargetFiles>> {
        if self.train.is_some() || self.test.is_some() || self.labels.is_some() {
            return Ok(None);
        }
        let given = PathBuf::from(&self.dataset);
        let path = match (given.exists(), self.data_dir()) {
            (true, _) => given,
            (false, Some(dir)) if dir.join(&self.dataset).exists() => dir.join(&self.dataset),
            _ => return Ok(None),
        };
        // A device, FIFO or socket is no multi-target file: the binary readers refuse it by
        // name (reading its "header" could block or never end).
        if !(path.is_dir() || path.is_file()) {
            return Ok(None);
        }
        let files = if path.is_dir() {
            let (train, test) = (path.join("train.arff"), path.join("test.arff"));
            if !(train.is_file() && test.is_file()) {
                return Ok(None);
            }
            MultiTargetFiles::Split { train, test }
        } else {
            MultiTargetFiles::Single(path)
        };
        let header = match &files {
            MultiTargetFiles::Split { train, .. } => train,
            MultiTargetFiles::Single(p) => p,
        };
        let file = std::fs::File::open(header).map_err(|e| Error::io(header, e))?;
        // An unreadable header is left to the binary readers, whose errors name its line.
        let multi = declares_multi_target(std::io::BufReader::new(file)).unwrap_or(false);
        Ok(multi.then_some(files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data folder is the spec's own, else the one passed in (a front end's
    /// `CARDINAL_DATA`): whatever the process environment holds, the library does not read it.
    #[test]
    fn the_data_folder_is_passed_in_never_read_from_the_environment() {
        let spec = DataSpec::named("bibtex");
        assert_eq!(spec.data_dir(), None);
        let given = Path::new("/data/sets");
        assert_eq!(
            spec.or_data_dir(Some(given)).data_dir(),
            Some(given.to_path_buf())
        );
        let own = DataSpec {
            data_dir: Some("/own".into()),
            ..DataSpec::named("bibtex")
        };
        assert_eq!(
            own.or_data_dir(Some(given)).data_dir(),
            Some(PathBuf::from("/own"))
        );
        assert_eq!(spec.or_data_dir(None), spec);
    }
}
