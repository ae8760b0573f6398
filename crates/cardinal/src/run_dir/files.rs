//! The files that describe a run directory's data: `run.json` (where the data came from) and
//! `data.json` (what it was: a SHA-256 of its content, its data folder and sizes, recorded at
//! the start of the run). `--resume`, and evaluating a run on its own data, refuse data found
//! under the same name that is not what the run trained on (another `CARDINAL_DATA`, an
//! edited file), naming both.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{prepare, Existing, RunDir, RUN_FILE};
use crate::checkpoint::{self, write_atomic, Snapshot};
use crate::data::multi_target::MultiTargetDataset;
use crate::data::{Dataset, TrainTest};
use crate::data_spec::DataSpec;
use crate::error::{Error, Result};

/// The name of the file in a run directory that records what its data was.
pub(crate) const DATA_FILE: &str = "data.json";

/// What a run's data was, as `data.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataIdentity {
    /// SHA-256 (hex) of the train and test data's content: every feature value, label and
    /// name, in order.
    sha256: String,
    /// The data folder names were looked up in (`--data-dir`, else `CARDINAL_DATA`), made
    /// absolute; `null` when there was none.
    data_dir: Option<PathBuf>,
    /// Train and test rows.
    rows: [usize; 2],
}

/// A run's train and test data, as far as its identity goes: binary multi-label data
/// ([`TrainTest`]) or multi-target data (a train and a test [`MultiTargetDataset`]).
pub(crate) trait RunData {
    /// Feeds the content of the train and then the test data to `h`.
    fn hash_into(&self, h: &mut Sha256);
    /// Train and test rows.
    fn rows(&self) -> [usize; 2];
}

impl RunData for TrainTest {
    fn hash_into(&self, h: &mut Sha256) {
        hash_dataset(h, &self.train);
        hash_dataset(h, &self.test);
    }
    fn rows(&self) -> [usize; 2] {
        [self.train.n_rows(), self.test.n_rows()]
    }
}

impl RunData for (MultiTargetDataset, MultiTargetDataset) {
    fn hash_into(&self, h: &mut Sha256) {
        hash_multi_target(h, &self.0);
        hash_multi_target(h, &self.1);
    }
    fn rows(&self) -> [usize; 2] {
        [self.0.n_rows(), self.1.n_rows()]
    }
}

impl DataIdentity {
    fn of(spec: &DataSpec, data: &dyn RunData) -> Self {
        let mut h = Sha256::new();
        data.hash_into(&mut h);
        Self {
            sha256: h.finalize().iter().map(|b| format!("{b:02x}")).collect(),
            data_dir: spec
                .data_dir()
                .map(|d| std::path::absolute(&d).unwrap_or(d)),
            rows: data.rows(),
        }
    }

    fn describe(&self) -> String {
        let dir = self.data_dir.as_ref().map_or("no data folder".into(), |d| {
            format!("data folder {}", d.display())
        });
        format!(
            "{} train / {} test rows, {dir}, SHA-256 {}",
            self.rows[0], self.rows[1], self.sha256
        )
    }
}

/// Feeds `ds` to `h`: its shape, CSR features (values by their bits), label rows and names,
/// each length-prefixed, so that two datasets hash alike only when their contents are equal.
pub fn hash_dataset(h: &mut Sha256, ds: &Dataset) {
    let x = &ds.features;
    for n in [x.n_rows, x.n_cols, ds.labels.n_labels] {
        h.update((n as u64).to_le_bytes());
    }
    x.indptr
        .iter()
        .for_each(|&p| h.update((p as u64).to_le_bytes()));
    x.indices.iter().for_each(|&i| h.update(i.to_le_bytes()));
    x.values
        .iter()
        .for_each(|&v| h.update(v.to_bits().to_le_bytes()));
    for r in 0..ds.labels.n_rows {
        let row = ds.labels.row(r);
        h.update((row.len() as u64).to_le_bytes());
        row.iter().for_each(|&l| h.update(l.to_le_bytes()));
    }
    for names in [&ds.feature_names, &ds.label_names] {
        h.update((names.len() as u64).to_le_bytes());
        for n in names {
            h.update((n.len() as u64).to_le_bytes());
            h.update(n.as_bytes());
        }
    }
}

/// Feeds the multi-target `ds` to `h` as [`hash_dataset`] feeds binary data: its shape,
/// features (by their bits), targets and names, each length-prefixed.
fn hash_multi_target(h: &mut Sha256, ds: &MultiTargetDataset) {
    for n in [ds.n_rows(), ds.n_features(), ds.positions(), ds.classes()] {
        h.update((n as u64).to_le_bytes());
    }
    ds.features
        .iter()
        .for_each(|&v| h.update(v.to_bits().to_le_bytes()));
    ds.targets.iter().for_each(|&c| h.update(c.to_le_bytes()));
    for names in [&ds.feature_names, &ds.target_names, &ds.class_names] {
        h.update((names.len() as u64).to_le_bytes());
        for n in names {
            h.update((n.len() as u64).to_le_bytes());
            h.update(n.as_bytes());
        }
    }
}

/// Records in `dir` what the run's data `data` (read from `spec`) is.
fn record_identity(dir: &Path, spec: &DataSpec, data: &dyn RunData) -> Result<()> {
    let json = serde_json::to_string_pretty(&DataIdentity::of(spec, data)).expect("serialisable");
    Ok(write_atomic(&dir.join(DATA_FILE), json.as_bytes())?)
}

/// What a run directory records of its data: where it came from (`run.json`) and what it was
/// (`data.json`), read together, from the same version of the folder as its model when read
/// with it (`Engine::load_run`).
#[derive(Debug, Clone)]
pub struct RunRecord {
    dir: PathBuf,
    spec: DataSpec,
    /// `None`: the run has no `data.json` (from before cardinal recorded it, or removed).
    identity: Option<DataIdentity>,
}

impl RunRecord {
    /// The run's record, read from the open folder `snap`; `None` when it has no `run.json`.
    pub(crate) fn read(snap: &mut Snapshot) -> Result<Option<Self>> {
        let Some(text) = snap.read_if_any(RUN_FILE)? else {
            return Ok(None);
        };
        let spec = parse_spec(&snap.path(RUN_FILE), &text)?;
        let identity = match snap.read_if_any(DATA_FILE)? {
            Some(bytes) => Some(parse_identity(&snap.path(DATA_FILE), &bytes)?),
            None => None,
        };
        Ok(Some(Self {
            dir: snap.dir().to_path_buf(),
            spec,
            identity,
        }))
    }

    /// The run's record, `run.json` and `data.json` read as one snapshot of `dir`.
    pub(crate) fn of(dir: &Path) -> Result<Option<Self>> {
        checkpoint::read_snapshot(dir, Self::read)
    }

    /// The data source the run records (`run.json`), as given when it was created.
    pub fn spec(&self) -> &DataSpec {
        &self.spec
    }

    /// The run folder the record was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Refuses `data` (read from `spec`) when it is not what the run recorded at its start.
    /// Runs written before `data.json` was recorded are not checked (said as a warning).
    pub(crate) fn check(&self, spec: &DataSpec, data: &dyn RunData) -> Result<()> {
        let Some(recorded) = &self.identity else {
            // Runs from before the record have none; a removed one must not pass unseen.
            tracing::warn!(
                "{} has no {DATA_FILE} (a run from before cardinal recorded its data, or the \
                 file was removed): the data cannot be checked to be the data the run trained on",
                self.dir.display()
            );
            return Ok(());
        };
        let found = DataIdentity::of(spec, data);
        if found.sha256 != recorded.sha256 {
            return Err(Error::OtherData {
                dataset: spec.dataset.clone(),
                run: self.dir.clone(),
                recorded: recorded.describe(),
                found: found.describe(),
            });
        }
        Ok(())
    }
}

fn parse_identity(path: &Path, bytes: &[u8]) -> Result<DataIdentity> {
    serde_json::from_slice(bytes)
        .map_err(|e| checkpoint::record_err(path, crate::error::Record::DataIdentity, &e))
}

fn parse_spec(path: &Path, bytes: &[u8]) -> Result<DataSpec> {
    serde_json::from_slice(bytes)
        .map_err(|e| checkpoint::record_err(path, crate::error::Record::DataSource, &e))
}

/// Refuses `data` (read from `spec`) when it is not what the run in `dir` recorded at its
/// start; see [`RunRecord::check`]. A run without `run.json` is checked by its `data.json`
/// alone.
pub(crate) fn check_identity(dir: &Path, spec: &DataSpec, data: &dyn RunData) -> Result<()> {
    let identity = checkpoint::read_snapshot(dir, |snap| match snap.read_if_any(DATA_FILE)? {
        Some(bytes) => parse_identity(&snap.path(DATA_FILE), &bytes).map(Some),
        None => Ok(None),
    })?;
    RunRecord {
        dir: dir.to_path_buf(),
        spec: spec.clone(),
        identity,
    }
    .check(spec, data)
}

/// Creates the run directory `dir` (or, with `replace`, the folder that replaces its run when
/// committed) for a run on `data`, read from `located` (`spec` with the data folder it was
/// looked up in); locks it and records the data source `spec` as given in its `run.json` and
/// what the data is in its `data.json`. A directory that already holds a run is refused
/// unless `replace`.
pub(crate) fn create(
    dir: &Path,
    spec: &DataSpec,
    located: &DataSpec,
    data: &dyn RunData,
    replace: bool,
) -> Result<RunDir> {
    let existing = if replace {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let run_dir = prepare(dir, existing)?;
    // Paths made absolute: the run's data is found again from any working folder.
    let json = serde_json::to_string_pretty(&spec.anchored()).expect("serialisable");
    write_atomic(&run_dir.path().join(RUN_FILE), json.as_bytes())?;
    record_identity(run_dir.path(), located, data)?;
    Ok(run_dir)
}

/// Locks the existing run directory `dir` to continue its run, and reads its data source.
pub(crate) fn reopen(dir: &Path) -> Result<(RunDir, DataSpec)> {
    let lock = prepare(dir, Existing::Continue)?;
    let spec = read_spec(dir)?.ok_or_else(|| {
        Error::io(
            dir.join(RUN_FILE),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })?;
    Ok((lock, spec))
}

/// The data source a run directory records in `run.json`, if it has one.
fn read_spec(dir: &Path) -> Result<Option<DataSpec>> {
    let run_path = dir.join(RUN_FILE);
    let Some(text) = checkpoint::read_model_file_if_any(&run_path)? else {
        return Ok(None);
    };
    parse_spec(&run_path, &text).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic::{synthetic, SyntheticShape};

    #[test]
    fn other_data_under_the_same_name_is_refused_naming_both() {
        let dir = std::env::temp_dir().join(format!("cardinal-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = DataSpec::named("toy");
        let data = |rows: usize, seed: u64| {
            synthetic(&SyntheticShape {
                train_rows: rows,
                test_rows: 10,
                features: 20,
                labels: 5,
                density: 0.2,
                seed,
            })
        };
        // No record (a run of an earlier version): not checked.
        check_identity(&dir, &spec, &data(30, 1)).unwrap();
        record_identity(&dir, &spec, &data(30, 1)).unwrap();
        check_identity(&dir, &spec, &data(30, 1)).unwrap();
        let e = check_identity(&dir, &spec, &data(30, 2))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is not the data the run") && e.matches("SHA-256").count() == 2,
            "{e}"
        );
        assert!(check_identity(&dir, &spec, &data(31, 1)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
