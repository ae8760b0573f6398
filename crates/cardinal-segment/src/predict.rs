//! Predictions of a Section 6 model on a multi-target dataset: the class of every position
//! (the argmax of its row of `Y`) and the class sizes `z` the unroll used.

use super::model::SegModel;
use super::train::{channels, image};
use crate::{Result, SegError};
use cardinal_data::data::multi_target::MultiTargetDataset;
use rayon::prelude::*;
use serde::Serialize;

/// The prediction for one row (image).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SegRow {
    /// The row's index in the data, from 0.
    pub row: usize,
    /// The predicted class of each position (`L` entries, each in `0..M`).
    pub classes: Vec<u32>,
    /// The class sizes `z` of the unroll (`M` entries, summing to `L`); `None` for the unary
    /// model, which has none.
    pub z: Option<Vec<f64>>,
}

/// Predicts every row of `data` (in row order). Its gold targets are read only by
/// [`super::Mode::Gold`], the oracle.
pub fn predict_rows(model: &SegModel, data: &MultiTargetDataset) -> Result<Vec<SegRow>> {
    let c = channels(data)?;
    let m = data.classes();
    if c != model.channels || m != model.classes {
        return Err(SegError::Shape {
            what: data.name.clone(),
            found: format!("{c} features per position and {m} classes"),
            expected: format!("the model's {} and {}", model.channels, model.classes),
        });
    }
    (0..data.n_rows())
        .into_par_iter()
        .map(|i| {
            let p = model
                .predict(&image(data, i), data.row_targets(i))
                .map_err(|source| SegError::Image {
                    data: data.name.clone(),
                    image: i,
                    source,
                })?;
            let classes =
                p.y.chunks_exact(m)
                    .map(|r| (0..m).max_by(|&a, &b| r[a].total_cmp(&r[b])).unwrap_or(0) as u32)
                    .collect();
            let z = model.mode.uses_counts().then_some(p.z);
            Ok(SegRow { row: i, classes, z })
        })
        .collect()
}
