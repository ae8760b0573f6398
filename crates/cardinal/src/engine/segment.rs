//! The front door to the paper's Section 6 model (non-binary labels): train, evaluate,
//! predict, save and load a multi-target model, and tell which label structure a model
//! directory holds so that `eval` and `predict` can dispatch on it.

use std::path::Path;

use super::Engine;
use crate::checkpoint::{self, LabelStructure};
use crate::data::arff::{read_multi_target_arff, read_multi_target_inputs};
use crate::data::multi_target::MultiTargetDataset;
use crate::error::{Error, Result};
use crate::segment::{self, SegConfig, SegMeta, SegMetrics, SegModel, SegRow};
use cardinal_segment::{evaluate, predict_rows};

impl Engine {
    /// Reads a multi-target (MEKA) ARFF file, naming it in errors.
    pub(crate) fn read_multi_target(&self, path: &Path) -> Result<MultiTargetDataset> {
        read_named(path, read_multi_target_arff)
    }

    /// New data for the multi-target model `model` (described by `meta`) from the MEKA ARFF
    /// file `path`, laid out as the model's inputs: features, targets and classes matched by
    /// name ([`SegMeta::align`]). The targets may be left out (no `-C` option, or `-C 0`)
    /// unless `need_targets` (evaluation) or the model reads the gold class sizes.
    pub fn multi_target_inputs(
        &self,
        path: &Path,
        model: &SegModel,
        meta: &SegMeta,
        need_targets: bool,
    ) -> Result<MultiTargetDataset> {
        let data = read_named(path, |r| read_multi_target_inputs(r, &meta.target_names))?;
        let (data, has_targets) = meta.align(data)?;
        if !has_targets {
            let why = match (need_targets, model.mode) {
                (true, _) => "evaluation compares with them",
                (false, segment::Mode::Gold) => {
                    "this model reads the gold class sizes (mode gold) when it predicts"
                }
                (false, _) => return Ok(data),
            };
            return Err(Error::NoTargets {
                path: path.to_path_buf(),
                why,
            });
        }
        Ok(data)
    }

    /// Pixel accuracy, mean IoU and count errors of `model` on `test`.
    pub fn evaluate_segmentation(
        &self,
        model: &SegModel,
        test: &MultiTargetDataset,
    ) -> Result<SegMetrics> {
        Ok(evaluate(model, test)?)
    }

    /// The class of every position and the class sizes `z`, for every row of `data`.
    pub fn predict_segmentation(
        &self,
        model: &SegModel,
        data: &MultiTargetDataset,
    ) -> Result<Vec<SegRow>> {
        Ok(predict_rows(model, data)?)
    }

    /// Loads a multi-target model directory (written by [`Engine::finish_segmentation_run`]).
    pub fn load_segmentation(&self, dir: &Path) -> Result<(SegModel, SegConfig, SegMeta)> {
        segment::saved::load(dir)
    }

    /// Loads a multi-target model directory as [`Engine::load_segmentation`] does, with what
    /// its run records of its data (`None` without `run.json`), all from one version of the
    /// folder.
    #[allow(clippy::type_complexity)]
    pub fn load_segmentation_run(
        &self,
        dir: &Path,
    ) -> Result<(
        SegModel,
        SegConfig,
        SegMeta,
        Option<crate::run_dir::RunRecord>,
    )> {
        crate::checkpoint::read_snapshot(dir, |snap| {
            let (model, config, meta) = segment::saved::load_from(snap)?;
            Ok((model, config, meta, crate::run_dir::RunRecord::read(snap)?))
        })
    }

    /// Whether the model directory `dir` holds a multi-target model, by its `meta.json`;
    /// `false` when that is unreadable (the binary loader then names the problem).
    pub fn is_multi_target_model(&self, dir: &Path) -> bool {
        checkpoint::label_structure(dir).is_ok_and(LabelStructure::is_multi_target)
    }
}

/// Reads the multi-target ARFF file `path` with `read`, naming the file in errors and naming
/// the data after it when its relation has no name.
fn read_named(
    path: &Path,
    read: impl FnOnce(
        std::io::BufReader<std::fs::File>,
    ) -> std::result::Result<MultiTargetDataset, crate::data::DataError>,
) -> Result<MultiTargetDataset> {
    if path.is_dir() {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            what: "a folder",
            expected: "a multi-target ARFF file (such as its test.arff)",
        });
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut data = read(std::io::BufReader::new(file)).map_err(|source| Error::DataFile {
        path: path.to_path_buf(),
        source: Box::new(source),
    })?;
    if data.name.is_empty() {
        data.name = path.display().to_string();
    }
    Ok(data)
}
