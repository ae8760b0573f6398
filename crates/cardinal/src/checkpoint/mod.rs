//! Model directories: `model.safetensors` (weights, standardisation, counts), `config.json`,
//! `meta.json` (format version, label names, sizes). Every file is written to a temporary file in
//! the same directory, synced, then renamed over the old one, so a crash never leaves a partial
//! file in its place. `meta` holds what a directory says about itself and its training data.
//! The binary model's run directory and resumable checkpoints are the engine's (`BinaryRun`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2};
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use crate::config::{Config, FOREST};
use crate::fitted::{Fitted, ForestModel};
use cardinal_store::TensorProblem;

use crate::error::{CheckpointProblem, Error, Record, Result};
use crate::model::{Params, Standardizer};
use crate::pipeline::Model;

// Generated corrupt model directories: loading never panics and names the file.
#[cfg(test)]
mod fuzz;
mod labels;
mod meta;
mod snapshot;

pub(crate) use cardinal_store::{
    commit_all, hidden_sibling, json_problem, read_model_file, recover, stage, write_tensor_file,
    Staged, SAVE_JOURNAL,
};
pub use cardinal_store::{read_model_file_if_any, write_atomic, write_output};
pub(crate) use labels::of_meta_bytes as labels_of;
pub(crate) use labels::LabelStructure;
pub(crate) use labels::{label_structure, MULTI_TARGET};
pub use meta::{Meta, TrainedOn};
pub(crate) use snapshot::{read_snapshot, Snapshot};

/// Version of the on-disk layout; bumped on any incompatible change.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The weights of a model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The configuration of a model directory (a complete [`Config`]).
pub(crate) const CONFIG_FILE: &str = "config.json";
/// What a model directory says about itself ([`Meta`]).
pub(crate) const META_FILE: &str = "meta.json";

fn f32_bytes(data: &[f32]) -> Vec<u8> {
    // Chunk by chunk rather than a flattening iterator: this compiles to a plain copy.
    let mut out = vec![0u8; 4 * data.len()];
    for (o, v) in out.chunks_exact_mut(4).zip(data) {
        o.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// Saves `model`, of whichever kind, into `dir` (created if needed): networks' weights
/// ([`save`]) or a forest alone, which holds no network tensor.
pub(crate) fn save_fitted(model: &Fitted, dir: &Path, data: &TrainedOn) -> Result<()> {
    match model {
        Fitted::Networks(m) => save(m, dir, data),
        Fitted::Forest(f) => {
            let tensors = forest_tensors(&f.forest);
            // The counts a forest chooses among: every set size.
            let counts = Counts {
                min: 0,
                max: f.n_labels,
            };
            let meta = meta_of(
                f.n_features,
                f.n_labels,
                f.train_mean_cardinality,
                counts,
                f.search.clone(),
                data,
            );
            write_model(dir, &f.config, &meta, &tensors)
        }
    }
}

/// The range of counts a model chooses among, as `meta.json` records it.
struct Counts {
    min: usize,
    max: usize,
}

fn forest_tensors(forest: &cardinal_forest::Forest) -> Vec<(String, Vec<usize>, Vec<u8>)> {
    let tensors = forest.tensors();
    let mut out = Vec::with_capacity(tensors.len());
    for (name, shape, values) in tensors {
        out.push((name, shape, f32_bytes(&values)));
    }
    out
}

/// What `meta.json` says of a model of these sizes trained on `data`.
fn meta_of(
    n_features: usize,
    n_labels: usize,
    train_mean_cardinality: f64,
    counts: Counts,
    search: Option<crate::search_record::SearchRecord>,
    data: &TrainedOn,
) -> Meta {
    Meta {
        format_version: FORMAT_VERSION,
        cardinal_version: env!("CARGO_PKG_VERSION").into(),
        dataset: data.dataset.clone(),
        n_features,
        n_labels,
        label_names: data.label_names.clone(),
        // Names only when they describe the model's columns.
        feature_names: if data.feature_names.len() == n_features {
            data.feature_names.clone()
        } else {
            Vec::new()
        },
        libsvm_feature_base: data.libsvm_base.map(|b| match b {
            crate::data::IndexBase::Zero => 0,
            crate::data::IndexBase::One => 1,
        }),
        train_mean_cardinality,
        count_min: counts.min,
        count_max: counts.max,
        search,
    }
}

/// Saves the networks `model` into `dir` (created if needed), with the forest it is combined
/// with if any. Refuses to write non-finite weights.
pub(crate) fn save(model: &Model<f32>, dir: &Path, data: &TrainedOn) -> Result<()> {
    if let Some(name) = model.params.first_nonfinite() {
        return Err(ckpt_err(
            dir,
            CheckpointProblem::NonFiniteToSave { what: name.into() },
        ));
    }
    let mut tensors = params_tensors(&model.params);
    let d = model.standardizer.mean.len();
    tensors.push((
        "standardize.mean".into(),
        vec![d],
        f32_bytes(&model.standardizer.mean),
    ));
    tensors.push((
        "standardize.scale".into(),
        vec![d],
        f32_bytes(&model.standardizer.scale),
    ));
    if let Some(forest) = &model.forest {
        tensors.extend(forest_tensors(forest));
    }
    let counts = Counts {
        min: model.counts[0] as usize,
        max: *model.counts.last().expect("at least one count") as usize,
    };
    let meta = meta_of(
        model.n_features(),
        model.n_labels(),
        model.train_mean_cardinality,
        counts,
        model.search.clone(),
        data,
    );
    write_model(dir, &model.config, &meta, &tensors)
}

/// Writes the three files of a model directory into `dir` (created if needed) as one unit.
fn write_model(
    dir: &Path,
    config: &Config,
    meta: &Meta,
    tensors: &[(String, Vec<usize>, Vec<u8>)],
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    recover(dir)?;
    // All three files are written and synced under temporary names first, and only then
    // renamed into place: a save that fails while writing (a full disk, a bad path) leaves
    // the previous model whole and loadable. Weights last: a directory whose weights exist is
    // complete.
    let bytes = |v: String| move |tmp: &Path| std::fs::write(tmp, v.as_bytes());
    let config = stage(
        &dir.join(CONFIG_FILE),
        bytes(serde_json::to_string_pretty(config).expect("serialisable")),
    )?;
    let meta = stage(
        &dir.join(META_FILE),
        bytes(serde_json::to_string_pretty(meta).expect("serialisable")),
    )?;
    let weights = stage_tensors(&dir.join(WEIGHTS_FILE), tensors)?;
    // One unit: a save killed at any instant leaves the old model or the new one, whole.
    Ok(commit_all(dir, vec![config, meta, weights])?)
}

/// `path` refused for `problem`.
pub(crate) fn ckpt_err(path: &Path, problem: impl Into<CheckpointProblem>) -> Error {
    Error::Checkpoint {
        path: path.to_path_buf(),
        problem: Box::new(problem.into()),
    }
}

/// The JSON `record` in `path` that does not parse, for `e`.
pub(crate) fn record_err(path: &Path, record: Record, e: &serde_json::Error) -> Error {
    ckpt_err(
        path,
        CheckpointProblem::Record {
            record,
            problem: json_problem(e),
        },
    )
}

/// The tensor problem `problem` of the tensor file `path`.
fn tensor_err(path: &Path, problem: TensorProblem) -> Error {
    ckpt_err(path, problem)
}

/// Loads a model directory written by [`save`] (networks), with its meta data: the meta
/// data (its format version checked), the configuration, then the weights, checked against
/// both. All three files come from one version of the folder ([`read_snapshot`]), never a
/// mix of a replaced run and its replacement. A forest alone is refused: it has no networks.
pub(crate) fn load(dir: &Path) -> Result<(Model<f32>, Meta)> {
    let (model, meta) = read_snapshot(dir, load_from)?;
    match model {
        Fitted::Networks(m) => Ok((m, meta)),
        Fitted::Forest(_) => Err(Error::ModelKind {
            system: model.config().system.clone(),
            expected: crate::fitted::NETWORKS,
            found: model.kind(),
        }),
    }
}

/// [`load`]'s reading of a model of any kind, from the open folder `snap`.
pub(crate) fn load_from(snap: &mut Snapshot) -> Result<(Fitted, Meta)> {
    let (meta_path, meta) = load_meta(snap)?;
    let (cfg_path, cfg_bytes) = snap.read_current(CONFIG_FILE)?;
    let mut config = Config::from_json(
        std::str::from_utf8(&cfg_bytes)
            .map_err(|e| ckpt_err(&cfg_path, CheckpointProblem::NotUtf8(e)))?,
    )
    .map_err(|source| Error::ConfigFile {
        path: cfg_path.clone(),
        source: Box::new(source),
    })?;
    config.name_legacy_forest();
    let (w_path, w_bytes) = snap.read_current(WEIGHTS_FILE)?;
    let st = SafeTensors::deserialize(&w_bytes)
        .map_err(|e| ckpt_err(&w_path, CheckpointProblem::NotSafetensors(e)))?;
    if let Some(disagreement) = meta.inconsistency() {
        return Err(ckpt_err(
            &meta_path,
            CheckpointProblem::Inconsistent(disagreement),
        ));
    }
    let weights = Weights {
        st: &st,
        path: &w_path,
    };
    if config.system == FOREST {
        // A forest alone reads its forest only: the folders of a forest saved before it was
        // a kind of its own also hold small untrained networks, which decide nothing.
        let model = ForestModel {
            forest: weights.forest(&meta)?,
            n_features: meta.n_features,
            n_labels: meta.n_labels,
            train_mean_cardinality: meta.train_mean_cardinality,
            search: meta.search.clone(),
            config,
        };
        return Ok((model.into(), meta));
    }
    let params = weights.params(&meta, &config)?;
    let standardizer = weights.standardizer(meta.n_features)?;
    let forest = match (&config.model.forest, &config.model.forest_prior) {
        (None, None) => None,
        _ => Some(weights.forest(&meta)?),
    };
    let model = Model {
        config,
        params,
        standardizer,
        counts: (meta.count_min..=meta.count_max)
            .map(|k| k as f32)
            .collect(),
        train_mean_cardinality: meta.train_mean_cardinality,
        forest,
        search: meta.search.clone(),
    };
    Ok((model.into(), meta))
}

/// The meta data of the model directory `snap` (a binary model's, of this format version), and
/// its path.
fn load_meta(snap: &mut Snapshot) -> Result<(PathBuf, Meta)> {
    let (meta_path, meta_bytes) = snap.read_current(META_FILE)?;
    labels::require_binary(&meta_path, &meta_bytes)?;
    let meta = Meta::parse(&meta_path, &meta_bytes)?;
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
    Ok((meta_path, meta))
}

/// The tensors of a model directory's weights file, read by name.
struct Weights<'a> {
    st: &'a SafeTensors<'a>,
    path: &'a Path,
}

impl Weights<'_> {
    /// Tensor `name`, which must be `F32` of shape `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let (found, values) = self.any(name).map_err(|p| tensor_err(self.path, p))?;
        if found != shape {
            return Err(tensor_err(
                self.path,
                TensorProblem::Shape {
                    name: name.into(),
                    found,
                    expected: format!("{shape:?}, as {META_FILE} and {CONFIG_FILE} imply"),
                },
            ));
        }
        Ok(values)
    }

    /// Tensor `name`, which must be `F32`, of whatever shape: its shape and values.
    fn any(&self, name: &str) -> std::result::Result<(Vec<usize>, Vec<f32>), TensorProblem> {
        let t = self
            .st
            .tensor(name)
            .map_err(|_| TensorProblem::Missing { name: name.into() })?;
        if t.dtype() != Dtype::F32 {
            return Err(TensorProblem::Dtype {
                name: name.into(),
                found: format!("{:?}", t.dtype()),
                expected: "F32",
            });
        }
        let values = t
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok((t.shape().to_vec(), values))
    }

    /// The forest (`forest.*` tensors) of a model of `meta`'s sizes, every index checked.
    fn forest(&self, meta: &Meta) -> Result<cardinal_forest::Forest> {
        cardinal_forest::Forest::from_tensors(
            &|name| self.any(name),
            meta.n_features,
            meta.n_labels,
        )
        .map_err(|p| tensor_err(self.path, p))
    }

    fn a2(&self, name: &str, r: usize, c: usize) -> Result<Array2<f32>> {
        Ok(Array2::from_shape_vec((r, c), self.get(name, &[r, c])?).expect("shape checked"))
    }

    fn a1(&self, name: &str, n: usize) -> Result<Array1<f32>> {
        Ok(Array1::from(self.get(name, &[n])?))
    }

    /// The model's parameters, of the sizes `meta` and `config` give, all finite.
    fn params(&self, meta: &Meta, config: &Config) -> Result<Params<f32>> {
        let m = &config.model;
        let (d, l, k) = (
            meta.n_features,
            meta.n_labels,
            meta.count_max - meta.count_min + 1,
        );
        let params = Params {
            w1: self.a2("unary.w1", d, m.hidden)?,
            b1: self.a1("unary.b1", m.hidden)?,
            w2: self.a2("unary.w2", m.hidden, l)?,
            b2: self.a1("unary.b2", l)?,
            wp: self.a2("energy.wp", l, m.energy_hidden)?,
            we: self.a1("energy.we", m.energy_hidden)?,
            c1: self.a2("card.w1", d, m.card_hidden)?,
            cb1: self.a1("card.b1", m.card_hidden)?,
            c2: self.a2("card.w2", m.card_hidden, k)?,
            cb2: self.a1("card.b2", k)?,
            eta: self.a1("inference.eta", 1)?,
        };
        if let Some(name) = params.first_nonfinite() {
            return Err(tensor_err(
                self.path,
                TensorProblem::NonFinite { name: name.into() },
            ));
        }
        Ok(params)
    }

    /// The standardisation of `d` features, finite.
    fn standardizer(&self, d: usize) -> Result<Standardizer> {
        let standardizer = Standardizer {
            mean: self.get("standardize.mean", &[d])?,
            scale: self.get("standardize.scale", &[d])?,
        };
        for (name, v) in [
            ("standardize.mean", &standardizer.mean),
            ("standardize.scale", &standardizer.scale),
        ] {
            if v.iter().any(|x| !x.is_finite()) {
                return Err(tensor_err(
                    self.path,
                    TensorProblem::NonFinite { name: name.into() },
                ));
            }
        }
        Ok(standardizer)
    }
}

/// Writes named `f32` tensors as a safetensors file (atomically).
pub(crate) fn write_tensors(path: &Path, tensors: &[(String, Vec<usize>, Vec<u8>)]) -> Result<()> {
    Ok(stage_tensors(path, tensors)?.commit()?)
}

/// Writes named `f32` tensors as a safetensors file under a temporary name.
fn stage_tensors(path: &Path, tensors: &[(String, Vec<usize>, Vec<u8>)]) -> Result<Staged> {
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(n, s, b)| {
            Ok((
                n.clone(),
                TensorView::new(Dtype::F32, s.clone(), b)
                    .map_err(|e| ckpt_err(path, CheckpointProblem::TensorLayout(e)))?,
            ))
        })
        .collect::<Result<_>>()?;
    let info = HashMap::from([("format".to_string(), format!("cardinal/{FORMAT_VERSION}"))]);
    // Straight to the file: no second in-memory copy of every tensor (a checkpoint of the
    // default on Bibtex is about 50 MB, written after every epoch).
    Ok(stage(path, |tmp| write_tensor_file(tmp, &views, &info))?)
}

pub(crate) fn params_tensors(p: &Params<f32>) -> Vec<(String, Vec<usize>, Vec<u8>)> {
    let shapes = p.shapes();
    let mut out = Vec::new();
    let mut k = 0;
    p.visit(|name, data, _| {
        out.push((name.to_string(), shapes[k].1.clone(), f32_bytes(data)));
        k += 1;
    });
    out
}

/// Reads a tensor file written by [`write_tensors`] into parameters shaped like `like`.
pub(crate) fn read_params(path: &Path, like: &Params<f32>) -> Result<Params<f32>> {
    let bytes = read_model_file(path)?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| ckpt_err(path, CheckpointProblem::NotSafetensors(e)))?;
    let shapes = like.shapes();
    let mut out = like.clone();
    let mut k = 0;
    let mut err = None;
    out.visit_mut(|name, data, _| {
        let shape = &shapes[k].1;
        k += 1;
        if err.is_some() {
            return;
        }
        match st.tensor(name) {
            Ok(t) if t.dtype() == Dtype::F32 && t.shape() == shape.as_slice() => {
                for (d, b) in data.iter_mut().zip(t.data().chunks_exact(4)) {
                    *d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            Ok(t) if t.dtype() != Dtype::F32 => {
                err = Some(tensor_err(
                    path,
                    TensorProblem::Dtype {
                        name: name.into(),
                        found: format!("{:?}", t.dtype()),
                        expected: "F32",
                    },
                ))
            }
            Ok(t) => {
                err = Some(tensor_err(
                    path,
                    TensorProblem::Shape {
                        name: name.into(),
                        found: t.shape().to_vec(),
                        expected: format!("{shape:?}"),
                    },
                ))
            }
            Err(_) => {
                err = Some(tensor_err(
                    path,
                    TensorProblem::Missing { name: name.into() },
                ))
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    if let Some(name) = out.first_nonfinite() {
        return Err(tensor_err(
            path,
            TensorProblem::NonFinite { name: name.into() },
        ));
    }
    Ok(out)
}
