//! Multi-target model directories, with the conventions of [`crate::checkpoint`]:
//! `model.safetensors` (the parameters as `F64`, so a load is bit-identical), `config.json`
//! (a [`SegConfig`]) and `meta.json` ([`SegMeta`], which says `"labels": "multi_target"`).
//! All three are staged under temporary names and renamed into place, weights last.

use std::collections::HashMap;
use std::path::Path;

use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;
use serde::{Deserialize, Serialize};

use crate::checkpoint::{
    ckpt_err, stage, LabelStructure, Staged, CONFIG_FILE, FORMAT_VERSION, META_FILE, WEIGHTS_FILE,
};
use crate::data::multi_target::MultiTargetDataset;
use crate::data::multi_target_inputs::MultiTargetSchema;
use crate::error::{CheckpointProblem, Disagreement, Error, Record, Result};
use cardinal_segment::{GlobalEnergy, GridEnergy, SegConfig, SegModel};
use cardinal_store::TensorProblem;

/// What a multi-target model directory says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegMeta {
    /// The version of the on-disk layout of the writer (bumped on any incompatible change).
    pub format_version: u32,
    /// Version of the `cardinal` crate that wrote it.
    pub cardinal_version: String,
    /// The label structure: always `"multi_target"`.
    pub labels: String,
    /// Positions `L` per row.
    pub positions: usize,
    /// Classes `M`.
    pub classes: usize,
    /// Features per position `C`.
    pub channels: usize,
    /// Name of the training data.
    pub dataset: String,
    /// The classes' names (empty when the data had none).
    pub class_names: Vec<String>,
    /// The targets' names, by which new data's targets are matched (empty in models of
    /// earlier versions, whose data is matched by position).
    #[serde(default)]
    pub target_names: Vec<String>,
    /// The features' names, by which new data's features are matched (empty as above).
    #[serde(default)]
    pub feature_names: Vec<String>,
}

impl SegMeta {
    /// Why this meta data cannot describe a model, if it cannot.
    fn inconsistency(&self) -> Option<Disagreement> {
        let disagree = |found: String, expected: String| Some(Disagreement { found, expected });
        if self.labels != crate::checkpoint::MULTI_TARGET {
            disagree(
                "labels is another label structure".into(),
                format!("\"{}\"", crate::checkpoint::MULTI_TARGET),
            )
        } else if self.positions == 0 || self.classes == 0 || self.channels == 0 {
            disagree(
                format!(
                    "positions = {}, classes = {}, channels = {}",
                    self.positions, self.classes, self.channels
                ),
                "each >= 1".into(),
            )
        } else if !self.class_names.is_empty() && self.class_names.len() != self.classes {
            disagree(
                format!("{} class names", self.class_names.len()),
                format!("classes = {}", self.classes),
            )
        } else if !self.target_names.is_empty() && self.target_names.len() != self.positions {
            disagree(
                format!("{} target names", self.target_names.len()),
                format!("positions = {}", self.positions),
            )
        } else if !self.feature_names.is_empty()
            && self.feature_names.len() != self.positions * self.channels
        {
            disagree(
                format!("{} feature names", self.feature_names.len()),
                format!("positions × channels = {}", self.positions * self.channels),
            )
        } else {
            None
        }
    }

    /// Whether `data` has this model's shape (positions, classes, features per position).
    pub(crate) fn check_data(&self, data: &MultiTargetDataset) -> Result<()> {
        let (l, m, d) = (data.positions(), data.classes(), data.n_features());
        if l != self.positions || m != self.classes || d != self.positions * self.channels {
            return Err(Error::Shape {
                what: format!("`{}`", data.name),
                found: format!("{l} positions, {m} classes and {d} features"),
                expected: format!(
                    "the model's {} positions, {} classes and {} features ({} per position)",
                    self.positions,
                    self.classes,
                    self.positions * self.channels,
                    self.channels
                ),
            });
        }
        Ok(())
    }

    /// `data` laid out as this model's inputs: features, targets and classes matched by name
    /// where the model records names (models of earlier versions: by position), then its
    /// shape checked. Data without targets gets placeholder targets (class 0) and `false`;
    /// only a prediction that does not read them may use it.
    pub fn align(&self, data: MultiTargetDataset) -> Result<(MultiTargetDataset, bool)> {
        let mut data = match self.feature_names.is_empty() || self.target_names.is_empty() {
            true => data,
            false => {
                let name = data.name.clone();
                let schema = MultiTargetSchema {
                    feature_names: &self.feature_names,
                    target_names: &self.target_names,
                    class_names: &self.class_names,
                };
                data.aligned_to(&schema, &name)?
            }
        };
        let has_targets = data.positions() > 0;
        if !has_targets {
            let n = data.n_rows();
            data.target_names = match self.target_names.is_empty() {
                true => (0..self.positions)
                    .map(|k| format!("position {k}"))
                    .collect(),
                false => self.target_names.clone(),
            };
            data.class_names = match self.class_names.is_empty() {
                true => (0..self.classes).map(|k| k.to_string()).collect(),
                false => self.class_names.clone(),
            };
            data.targets = vec![0; n * self.positions];
        }
        self.check_data(&data)?;
        Ok((data, has_targets))
    }
}

/// The parameters' names and shapes in `model.safetensors` (the energies' only when on).
fn shapes(meta: &SegMeta, energy: usize, grid: bool) -> Vec<(&'static str, Vec<usize>)> {
    let (c, m) = (meta.channels, meta.classes);
    let mut v = vec![
        ("unary.w", vec![c, m]),
        ("unary.b", vec![m]),
        ("count.v", vec![m, c]),
        ("count.c", vec![m]),
    ];
    if energy > 0 {
        v.push(("energy.b", vec![energy, meta.positions * m]));
        v.push(("energy.w", vec![energy]));
    }
    if grid {
        v.push(("grid.c", vec![m, m]));
    }
    v
}

/// The model's parameter tensors, in the order of [`shapes`].
fn tensors_mut(model: &mut SegModel) -> Vec<&mut Vec<f64>> {
    let mut v = vec![&mut model.w, &mut model.b, &mut model.v, &mut model.c];
    if model.energy.terms() > 0 {
        v.push(&mut model.energy.b);
        v.push(&mut model.energy.w);
    }
    if let Some(g) = &mut model.grid {
        v.push(&mut g.c);
    }
    v
}

fn f64_bytes(data: &[f64]) -> Vec<u8> {
    let mut out = vec![0u8; 8 * data.len()];
    for (o, v) in out.chunks_exact_mut(8).zip(data) {
        o.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// Stages `tensors` (name, shape, values) as an `F64` safetensors file at `path`.
pub(super) fn stage_f64(path: &Path, tensors: &[(&str, Vec<usize>, &[f64])]) -> Result<Staged> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|(_, _, v)| f64_bytes(v)).collect();
    let views: Vec<(&str, TensorView)> = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, shape, _), b)| {
            Ok((
                *name,
                TensorView::new(Dtype::F64, shape.clone(), b)
                    .map_err(|e| ckpt_err(path, CheckpointProblem::TensorLayout(e)))?,
            ))
        })
        .collect::<Result<_>>()?;
    let info = HashMap::from([(
        "format".to_string(),
        format!("cardinal/{FORMAT_VERSION}/multi_target"),
    )]);
    Ok(stage(path, |tmp| {
        crate::checkpoint::write_tensor_file(tmp, &views, &info)
    })?)
}

/// The `F64` tensor `name` of `shape` from the safetensors file `path` (bytes `st`), refused
/// when missing, of another type or shape, or not finite.
pub(super) fn read_f64(
    st: &SafeTensors,
    path: &Path,
    name: &str,
    shape: &[usize],
    dest: &mut [f64],
) -> Result<()> {
    let t = st
        .tensor(name)
        .map_err(|_| ckpt_err(path, TensorProblem::Missing { name: name.into() }))?;
    if t.dtype() != Dtype::F64 {
        return Err(ckpt_err(
            path,
            TensorProblem::Dtype {
                name: name.into(),
                found: format!("{:?}", t.dtype()),
                expected: "F64",
            },
        ));
    }
    if t.shape() != shape {
        return Err(ckpt_err(
            path,
            TensorProblem::Shape {
                name: name.into(),
                found: t.shape().to_vec(),
                expected: format!("{shape:?}, as {META_FILE} implies"),
            },
        ));
    }
    for (d, b) in dest.iter_mut().zip(t.data().chunks_exact(8)) {
        *d = f64::from_le_bytes(b.try_into().expect("8 bytes"));
    }
    if dest.iter().any(|x| !x.is_finite()) {
        return Err(ckpt_err(
            path,
            TensorProblem::NonFinite { name: name.into() },
        ));
    }
    Ok(())
}

/// Saves `model`, trained by `cfg` on `train`, into `dir` (created if needed).
pub(crate) fn save(
    model: &SegModel,
    cfg: &SegConfig,
    dir: &Path,
    train: &MultiTargetDataset,
) -> Result<SegMeta> {
    let mut params = vec![&model.w, &model.b, &model.v, &model.c];
    if model.energy.terms() > 0 {
        params.extend([&model.energy.b, &model.energy.w]);
    }
    if let Some(g) = &model.grid {
        params.push(&g.c);
    }
    if params.iter().any(|p| p.iter().any(|x| !x.is_finite())) {
        return Err(ckpt_err(
            dir,
            CheckpointProblem::NonFiniteToSave {
                what: "the parameters".into(),
            },
        ));
    }
    let meta = SegMeta {
        format_version: FORMAT_VERSION,
        cardinal_version: env!("CARGO_PKG_VERSION").into(),
        labels: crate::checkpoint::MULTI_TARGET.into(),
        positions: train.positions(),
        classes: model.classes,
        channels: model.channels,
        dataset: train.name.clone(),
        class_names: train.class_names.clone(),
        target_names: train.target_names.clone(),
        feature_names: train.feature_names.clone(),
    };
    if let Some(disagreement) = meta.inconsistency() {
        return Err(ckpt_err(
            dir,
            CheckpointProblem::InconsistentToSave(disagreement),
        ));
    }
    meta.check_data(train)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    crate::checkpoint::recover(dir)?;
    let tensors: Vec<_> = shapes(&meta, model.energy.terms(), model.grid.is_some())
        .into_iter()
        .zip(params)
        .map(|((name, shape), p)| (name, shape, p.as_slice()))
        .collect();
    let text = |v: String| move |tmp: &Path| std::fs::write(tmp, v.as_bytes());
    let config = stage(&dir.join(CONFIG_FILE), text(cfg.to_json()))?;
    let meta_file = stage(
        &dir.join(META_FILE),
        text(serde_json::to_string_pretty(&meta).expect("serialisable")),
    )?;
    let weights = stage_f64(&dir.join(WEIGHTS_FILE), &tensors)?;
    crate::checkpoint::commit_all(dir, vec![config, meta_file, weights])?;
    Ok(meta)
}

/// Loads a directory written by [`save`]: the model, its configuration and its meta data.
/// A binary model's directory, a tampered `meta.json`, a configuration out of range and
/// weights of the wrong shape or not finite are refused, naming the file.
/// All three files come from one version of the folder, never a mix of a replaced run and
/// its replacement.
pub(crate) fn load(dir: &Path) -> Result<(SegModel, SegConfig, SegMeta)> {
    crate::checkpoint::read_snapshot(dir, load_from)
}

/// [`load`]'s reading, from the open folder `snap`.
pub(crate) fn load_from(
    snap: &mut crate::checkpoint::Snapshot,
) -> Result<(SegModel, SegConfig, SegMeta)> {
    let mut read = |name: &str| snap.read_current(name);
    let (meta_path, meta_bytes) = read(META_FILE)?;
    if crate::checkpoint::labels_of(&meta_path, &meta_bytes)? == LabelStructure::Binary {
        return Err(ckpt_err(
            &meta_path,
            CheckpointProblem::OtherLabels {
                found: LabelStructure::Binary.to_string(),
                expected: "a multi-target one",
                load_with: "`Engine::load`",
            },
        ));
    }
    let meta: SegMeta = serde_json::from_slice(&meta_bytes)
        .map_err(|e| crate::checkpoint::record_err(&meta_path, Record::Meta, &e))?;
    if meta.format_version != FORMAT_VERSION {
        return Err(ckpt_err(
            &meta_path,
            CheckpointProblem::FormatVersion {
                found: meta.format_version,
                written_by: meta.cardinal_version.clone(),
                reader: env!("CARGO_PKG_VERSION"),
                reads: FORMAT_VERSION,
            },
        ));
    }
    if let Some(disagreement) = meta.inconsistency() {
        return Err(ckpt_err(
            &meta_path,
            CheckpointProblem::Inconsistent(disagreement),
        ));
    }
    let (cfg_path, cfg_bytes) = read(CONFIG_FILE)?;
    let cfg = SegConfig::from_json(
        std::str::from_utf8(&cfg_bytes)
            .map_err(|e| ckpt_err(&cfg_path, CheckpointProblem::NotUtf8(e)))?,
    )
    .map_err(|source| Error::ConfigFile {
        path: cfg_path.clone(),
        source: Box::new(source.into()),
    })?;
    let (w_path, w_bytes) = read(WEIGHTS_FILE)?;
    let st = SafeTensors::deserialize(&w_bytes)
        .map_err(|e| ckpt_err(&w_path, CheckpointProblem::NotSafetensors(e)))?;
    let mut model = SegModel::new(meta.channels, meta.classes, cfg.mode, cfg.proj);
    model.steps = cfg.steps;
    model.eta = cfg.eta;
    model.count_weight = cfg.count_weight;
    if cfg.energy > 0 {
        model.energy = GlobalEnergy::zeros(cfg.energy, meta.positions * meta.classes);
    }
    if cfg.grid_energy {
        model.grid = Some(
            GridEnergy::zeros(meta.positions, meta.classes).ok_or_else(|| {
                ckpt_err(
                    &cfg_path,
                    CheckpointProblem::NotAGrid {
                        positions: meta.positions,
                    },
                )
            })?,
        );
    }
    for ((name, shape), dest) in shapes(&meta, cfg.energy, cfg.grid_energy)
        .into_iter()
        .zip(tensors_mut(&mut model))
    {
        read_f64(&st, &w_path, name, &shape, dest)?;
    }
    Ok((model, cfg, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synth_seg::{synth_seg, SynthSegSpec};
    use cardinal_proj::matrix::{AnyMatrixProjector, MatrixMethod};
    use cardinal_segment::{fit, predict_rows, Mode};
    use std::path::PathBuf;

    /// A fresh directory under the system's temporary folder, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let d = std::env::temp_dir()
                .join(format!("cardinal-segsave-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            Scratch(d)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn trained(mode: Mode) -> (SegModel, SegConfig, MultiTargetDataset, MultiTargetDataset) {
        let spec = SynthSegSpec {
            size: 6,
            classes: 3,
            noise: 0.7,
            train: 24,
            test: 10,
            seed: 2,
        };
        let (train, test) = synth_seg(&spec).unwrap();
        let cfg = SegConfig {
            mode,
            proj: AnyMatrixProjector::new(MatrixMethod::Dykstra, 2),
            steps: 3,
            eta: 1.0,
            count_weight: 1.0,
            energy: if mode == Mode::Unary { 0 } else { 2 },
            grid_energy: mode != Mode::Unary,
            epochs: 2,
            batch: 8,
            lr: 0.05,
            seed: 3,
        };
        (fit(&train, &cfg).unwrap(), cfg, train, test)
    }

    #[test]
    fn a_saved_model_loads_back_bit_identically() {
        for mode in Mode::ALL {
            let (model, cfg, train, test) = trained(mode);
            let dir = Scratch::new(mode.name());
            let meta = save(&model, &cfg, dir.path(), &train).unwrap();
            let (back, back_cfg, back_meta) = load(dir.path()).unwrap();
            assert_eq!(back_meta, meta);
            assert_eq!(back_cfg.to_json(), cfg.to_json());
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for (a, b) in [
                (&back.w, &model.w),
                (&back.b, &model.b),
                (&back.v, &model.v),
            ] {
                assert_eq!(bits(a), bits(b));
            }
            assert_eq!(bits(&back.c), bits(&model.c));
            assert_eq!(bits(&back.energy.b), bits(&model.energy.b));
            assert_eq!(bits(&back.energy.w), bits(&model.energy.w));
            assert_eq!(back.energy.terms(), cfg.energy);
            assert_eq!(back.grid, model.grid);
            assert_eq!(back.grid.is_some(), mode != Mode::Unary);
            assert_eq!(
                predict_rows(&back, &test).unwrap(),
                predict_rows(&model, &test).unwrap()
            );
            // The binary loader says what this is.
            let e = crate::checkpoint::load(dir.path()).unwrap_err().to_string();
            assert!(
                e.contains("multi-target (Section 6) model of 36 positions and 3 classes"),
                "{e}"
            );
        }
    }

    #[test]
    fn tampered_directories_are_refused() {
        let (model, cfg, train, _) = trained(Mode::Predicted);
        let dir = Scratch::new("tampered");
        save(&model, &cfg, dir.path(), &train).unwrap();
        let meta_path = dir.path().join(META_FILE);
        let good = std::fs::read_to_string(&meta_path).unwrap();
        let tamper = |from: &str, to: &str| {
            assert!(good.contains(from), "{from}");
            std::fs::write(&meta_path, good.replace(from, to)).unwrap();
            let e = load(dir.path()).unwrap_err().to_string();
            std::fs::write(&meta_path, &good).unwrap();
            e
        };
        let e = tamper("\"channels\": 3", "\"channels\": 4");
        assert!(
            e.contains("108 feature names: expected positions × channels = 144"),
            "{e}"
        );
        // Without names (a model of an earlier version), the tensors' shapes still tell.
        let mut unnamed: serde_json::Value = serde_json::from_str(&good).unwrap();
        unnamed["channels"] = 4.into();
        unnamed["feature_names"] = serde_json::json!([]);
        std::fs::write(&meta_path, unnamed.to_string()).unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        std::fs::write(&meta_path, &good).unwrap();
        assert!(
            e.contains("tensor `unary.w` has shape [3, 3], expected [4, 3], as meta.json implies"),
            "{e}"
        );
        let e = tamper("\"classes\": 3", "\"classes\": 0");
        assert!(
            e.contains("`classes` is missing or not a positive integer"),
            "{e}"
        );
        let e = tamper("\"multi_target\"", "\"binary\"");
        assert!(
            e.contains("binary multi-label model, not a multi-target one"),
            "{e}"
        );
        let e = tamper("\"dataset\"", "\"extra\": 1, \"dataset\"");
        assert!(
            e.contains("is not one this version writes") && !e.contains("extra"),
            "{e}"
        );
        let cfg_path = dir.path().join(CONFIG_FILE);
        std::fs::write(
            &cfg_path,
            cfg.to_json().replace("\"steps\": 3", "\"steps\": 0"),
        )
        .unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("config.json") && e.contains("steps = 0 is out of range: expected 1..=100"),
            "{e}"
        );
        std::fs::write(&cfg_path, cfg.to_json()).unwrap();
        assert!(load(dir.path()).is_ok());
    }
}
