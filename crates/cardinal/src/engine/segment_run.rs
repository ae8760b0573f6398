//! Run directories of the Section 6 model: the binary model's ([`crate::run_dir`]: `run.json`,
//! `data.json`, the lock, the replacement, per-epoch `metrics.jsonl`, resumable checkpoints
//! under `checkpoints/`, the model and `eval.json`), with the model plugged in as a
//! [`SegmentRun`]. A resumed run ends bit-identical to an uninterrupted one.

use std::path::{Path, PathBuf};

use super::{Checkpoints, DataSpec, Engine, RUN_FILE};
use crate::checkpoint::{self, LabelStructure};
use crate::data::multi_target::MultiTargetDataset;
use crate::data_spec::MultiTargetFiles;
use crate::error::{Error, Result};
use crate::run_dir::{self, Checkpointer, MetricsLog, RunDir, RunModel, RunRecord};
use crate::segment::checkpoint::SegmentRun;
use crate::segment::{SegConfig, SegMetrics, SegModel};
use cardinal_segment::{fit_from, start, SegEpoch, SegState};

/// A multi-target run directory ready to train.
#[derive(Debug)]
pub struct SegRun {
    /// The run directory.
    pub dir: PathBuf,
    /// The training data.
    pub train: MultiTargetDataset,
    /// The test data.
    pub test: MultiTargetDataset,
    /// The configuration the run trains.
    pub config: SegConfig,
    /// Where training starts: the initial state, or the interrupted run's.
    pub state: SegState,
    /// Held until the run is finished: no other process writes into `dir` meanwhile. The
    /// run's files go to its [`RunDir::path`], which becomes `dir` when the run is finished.
    pub(crate) run_dir: RunDir,
}

/// What a finished multi-target run produced (all of it also written to its directory).
#[derive(Debug)]
pub struct SegOutcome {
    /// The trained model.
    pub model: SegModel,
    /// Every epoch's record, resumed ones included.
    pub history: Vec<SegEpoch>,
    /// The evaluation on the test data (`eval.json`).
    pub metrics: SegMetrics,
}

impl Engine {
    /// The train and test data of multi-target `files`; a single file is split by
    /// `train_fraction` (seeded, as binary single files are).
    pub(crate) fn read_multi_target_files(
        &self,
        files: &MultiTargetFiles,
        train_fraction: f64,
    ) -> Result<(MultiTargetDataset, MultiTargetDataset)> {
        match files {
            MultiTargetFiles::Split { train, test } => Ok((
                self.read_multi_target(train)?,
                self.read_multi_target(test)?,
            )),
            MultiTargetFiles::Single(path) => {
                if !(0.0..=1.0).contains(&train_fraction) {
                    return Err(Error::OutOfRange {
                        field: "train_fraction".into(),
                        value: train_fraction.to_string(),
                        allowed: "[0, 1]".into(),
                    });
                }
                let all = self.read_multi_target(path)?;
                let n_train = (all.n_rows() as f64 * train_fraction).round() as usize;
                all.train_test_split(n_train, all.n_rows() - n_train, 0)
                    .map_err(|source| Error::DataFile {
                        path: path.clone(),
                        source: Box::new(source),
                    })
            }
        }
    }

    /// The train and test data the multi-target run in `dir` trained on, read from the data
    /// source its `run.json` records and split as it was; `None` without `run.json`.
    pub fn segmentation_run_data(
        &self,
        dir: &Path,
    ) -> Result<Option<(MultiTargetDataset, MultiTargetDataset)>> {
        match RunRecord::of(dir)? {
            Some(record) => self.segmentation_recorded_data(&record).map(Some),
            None => Ok(None),
        }
    }

    /// The train and test data of the multi-target run whose `record` names its source
    /// ([`Engine::load_segmentation_run`]), split as it was; refused when it is not the data
    /// the run trained on.
    pub fn segmentation_recorded_data(
        &self,
        record: &RunRecord,
    ) -> Result<(MultiTargetDataset, MultiTargetDataset)> {
        let (spec, data) = self.multi_target_data(record.dir(), record.spec())?;
        record.check(&spec, &data)?;
        Ok(data)
    }

    /// The data of `spec`, which the run directory `dir` records, named in errors; refused
    /// when it is not the data the run trained on (its `data.json`).
    fn recorded_multi_target(
        &self,
        dir: &Path,
        spec: &DataSpec,
    ) -> Result<(MultiTargetDataset, MultiTargetDataset)> {
        let (spec, data) = self.multi_target_data(dir, spec)?;
        run_dir::check_identity(dir, &spec, &data)?;
        Ok(data)
    }

    /// The data of `spec`, which the run directory `dir` records (named in errors), with the
    /// spec located in the data folder.
    fn multi_target_data(
        &self,
        dir: &Path,
        spec: &DataSpec,
    ) -> Result<(DataSpec, (MultiTargetDataset, MultiTargetDataset))> {
        let spec = self.locate(spec);
        let files = spec
            .multi_target_files()?
            .ok_or_else(|| Error::Checkpoint {
                path: dir.join(RUN_FILE),
                problem: Box::new(
                    crate::error::CheckpointProblem::RecordedDataNotMultiTarget {
                        data: spec.dataset.clone(),
                    },
                ),
            })?;
        let data = self.read_multi_target_files(&files, spec.train_fraction)?;
        Ok((spec, data))
    }

    /// Whether the run directory `dir` holds a multi-target run: what its latest checkpoint
    /// (or, without one, its model) records. `false` when neither says (the binary path then
    /// reports what is missing).
    pub fn is_multi_target_run(&self, dir: &Path) -> bool {
        let holder = crate::run_dir::latest_checkpoint(dir)
            .ok()
            .flatten()
            .unwrap_or_else(|| dir.to_path_buf());
        checkpoint::label_structure(&holder).is_ok_and(LabelStructure::is_multi_target)
    }

    /// Creates the run directory `dir` for the Section 6 model `cfg` on the multi-target data
    /// of `spec`, and records the data source in it. A directory that already holds a run is
    /// refused unless `replace`; then the old run stays whole until the new one replaces it.
    pub fn start_segmentation_run(
        &self,
        dir: &Path,
        spec: &DataSpec,
        cfg: SegConfig,
        replace: bool,
    ) -> Result<SegRun> {
        cfg.validate()?;
        let located = self.locate(spec);
        let files = located
            .multi_target_files()?
            .ok_or_else(|| Error::NotMultiTarget {
                dataset: spec.dataset.clone(),
            })?;
        let (train, test) = self.read_multi_target_files(&files, spec.train_fraction)?;
        if train.n_rows() == 0 {
            return Err(Error::Empty {
                data: train.name.clone(),
                what: "rows",
            });
        }
        let state = start(&train, &cfg)?;
        let data = (train, test);
        let run_dir = run_dir::create(dir, spec, &located, &data, replace)?;
        let (train, test) = data;
        Ok(SegRun {
            dir: dir.to_path_buf(),
            train,
            test,
            config: cfg,
            state,
            run_dir,
        })
    }

    /// Reopens the interrupted multi-target run in `dir` at its latest checkpoint, with the
    /// same data and configuration.
    pub fn resume_segmentation_run(&self, dir: &Path) -> Result<SegRun> {
        let (run_dir, spec) = run_dir::reopen(dir)?;
        let (train, test) = self.recorded_multi_target(dir, &spec)?;
        let (state, config, meta) = run_dir::load_checkpoint::<SegmentRun>(dir)?;
        let (train, _) = meta.align(train)?;
        tracing::info!(
            dir = %dir.display(),
            epochs_run = state.epochs_run(),
            "resuming from the latest checkpoint"
        );
        Ok(SegRun {
            dir: dir.to_path_buf(),
            train,
            test,
            config,
            state,
            run_dir,
        })
    }

    /// Trains a prepared multi-target run to the end: `metrics.jsonl` after every epoch,
    /// resumable checkpoints as `checkpoints` says, then the model and its evaluation on the
    /// test data as `eval.json`. `on_epoch` sees every new epoch's record.
    pub fn finish_segmentation_run(
        &self,
        run: SegRun,
        checkpoints: Checkpoints,
        on_epoch: &mut dyn FnMut(&SegEpoch),
    ) -> Result<SegOutcome> {
        let SegRun {
            train,
            test,
            config,
            state,
            run_dir,
            ..
        } = run;
        let dir = run_dir.path().to_path_buf();
        let kind = SegmentRun {
            config: &config,
            train: &train,
        };
        let mut metrics = MetricsLog::new(&dir, SegmentRun::history(&state));
        let mut checkpointer = Checkpointer::new(&kind, &dir, checkpoints);
        let mut after_epoch = |st: &SegState| -> Result<()> {
            let rec = st.history.last().expect("an epoch was run");
            metrics.push(rec)?;
            on_epoch(rec);
            checkpointer.after_epoch(st)
        };
        let state = fit_from(&train, &config, state, &mut after_epoch)?;
        run_dir.save_model(&kind, &state.model)?;
        tracing::info!(dir = %dir.display(), epochs = state.history.len(), "model saved");
        let metrics = self.evaluate_segmentation(&state.model, &test)?;
        run_dir.finish(&metrics)?;
        Ok(SegOutcome {
            model: state.model,
            history: state.history,
            metrics,
        })
    }
}
