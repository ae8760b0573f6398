//! The data a run trained on, found again from what its folder records (`run.json`,
//! `data.json`), checked to be that data.

use std::path::Path;

use super::{DataSpec, Engine, RUN_FILE};
use crate::data::TrainTest;
use crate::error::{Error, Result};
use crate::run_dir::RunRecord;

impl Engine {
    /// The data the run in `dir` trained on, split exactly as it was: read from the data
    /// source its `run.json` records. `None` when the directory has no `run.json`.
    pub fn run_data(&self, dir: &Path) -> Result<Option<TrainTest>> {
        match RunRecord::of(dir)? {
            Some(record) => self.recorded_data(&record).map(Some),
            None => Ok(None),
        }
    }

    /// The data a run trained on, split exactly as it was, read from the data source its
    /// `record` names and refused when it is not what the run recorded. The recorded paths
    /// come from an untrusted directory: an error reading them names the recorded source,
    /// never the content of what it points at.
    pub fn recorded_data(&self, record: &RunRecord) -> Result<TrainTest> {
        self.recorded_data_in(record, None)
    }

    /// [`Engine::recorded_data`], names looked up in `data_dir` where one is given (a user's
    /// `--data-dir`: the data has moved since the run, or the run came from elsewhere), else
    /// as the run recorded them.
    pub fn recorded_data_in(
        &self,
        record: &RunRecord,
        data_dir: Option<&Path>,
    ) -> Result<TrainTest> {
        let spec = match data_dir {
            Some(d) => DataSpec {
                data_dir: Some(d.to_path_buf()),
                ..record.spec().clone()
            },
            None => self.locate(record.spec()),
        };
        let data = spec.load().map_err(|source| Error::Checkpoint {
            path: record.dir().join(RUN_FILE),
            problem: Box::new(crate::error::CheckpointProblem::RecordedDataUnreadable {
                data: spec
                    .train
                    .as_ref()
                    .map_or(spec.dataset.clone(), |p| p.display().to_string()),
                source: Box::new(source),
            }),
        })?;
        record.check(&spec, &data)?;
        Ok(data)
    }
}
