//! Metrics of a Section 6 model on a multi-target test set: pixel accuracy, mean IoU over the
//! classes, per-class count errors and time.

use super::model::SegModel;
use super::predict::predict_rows;
use crate::Result;
use cardinal_data::data::multi_target::MultiTargetDataset;
use serde::Serialize;

/// Test-set metrics.
#[derive(Debug, Clone, Serialize)]
pub struct SegMetrics {
    /// Fraction of positions labelled correctly (argmax of `Y`).
    pub pixel_accuracy: f64,
    /// IoU per class over the whole test set, averaged over the classes.
    pub mean_iou: f64,
    /// IoU per class.
    pub class_iou: Vec<f64>,
    /// Per class, the mean over images of `|#predicted − #gold|` of the argmax labelling.
    pub count_error: Vec<f64>,
    /// Per class, the mean over images of `|z_j − #gold|` of the counts used (empty for the
    /// unary model).
    pub z_error: Vec<f64>,
    /// Seconds of inference over the test set.
    pub seconds: f64,
}

/// Evaluates `model` on `test`.
pub fn evaluate(model: &SegModel, test: &MultiTargetDataset) -> Result<SegMetrics> {
    let m = test.classes();
    let start = std::time::Instant::now();
    let preds = predict_rows(model, test)?;
    let seconds = start.elapsed().as_secs_f64();
    let (mut right, mut total) = (0usize, 0usize);
    let (mut inter, mut union) = (vec![0usize; m], vec![0usize; m]);
    let (mut count_error, mut z_error) = (vec![0.0; m], vec![0.0; m]);
    let n = test.n_rows().max(1) as f64;
    for (i, p) in preds.into_iter().enumerate() {
        let (labels, z) = (p.classes, p.z.unwrap_or_default());
        let gold = test.row_targets(i);
        let mut pred_n = vec![0.0; m];
        for (&a, &g) in labels.iter().zip(gold) {
            right += usize::from(a == g);
            total += 1;
            pred_n[a as usize] += 1.0;
            if a == g {
                inter[a as usize] += 1;
                union[a as usize] += 1;
            } else {
                union[a as usize] += 1;
                union[g as usize] += 1;
            }
        }
        let gold_n = test.class_counts(i);
        for j in 0..m {
            count_error[j] += (pred_n[j] - gold_n[j] as f64).abs() / n;
            if let Some(zj) = z.get(j) {
                z_error[j] += (zj - gold_n[j] as f64).abs() / n;
            }
        }
    }
    let class_iou: Vec<f64> = inter
        .iter()
        .zip(&union)
        .map(|(&i, &u)| if u == 0 { 1.0 } else { i as f64 / u as f64 })
        .collect();
    if !model.mode.uses_counts() {
        z_error.clear();
    }
    Ok(SegMetrics {
        pixel_accuracy: right as f64 / total.max(1) as f64,
        mean_iou: class_iou.iter().sum::<f64>() / m as f64,
        class_iou,
        count_error,
        z_error,
        seconds,
    })
}
