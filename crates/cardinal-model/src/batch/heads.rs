//! The two networks alone on every row, without the unroll: the unary scores and the count
//! distribution, which a forest blended with the networks (`crate::forest`) turns into a
//! joint distribution of label sets.

use rayon::prelude::*;

use crate::batch::Float;
use crate::data::CsrMatrix;
use crate::model::{first_layer_shift, Model, TwoLayer};

/// Rows per unit of work: enough to amortise a unit's buffers, few enough to spread over threads.
const UNIT_ROWS: usize = 64;

/// The networks' outputs on every row of an input, row-major.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Heads {
    /// The unary scores `u(x)`, `n × L`.
    pub unary: Vec<f64>,
    /// The count network's distribution over [`Model::counts`], `n × K`.
    pub count_probs: Vec<f64>,
}

impl<F: Float> Model<F> {
    /// The unary scores and the count distribution of every row of `x`, rows in parallel
    /// (each row's numbers are those of a batch-by-batch pass: no dropout, the same sums).
    pub fn heads(&self, x: &CsrMatrix) -> Heads {
        let p = &self.params;
        let stdz = &self.standardizer;
        let shifts = [
            first_layer_shift(stdz, p.w1.view()),
            first_layer_shift(stdz, p.c1.view()),
        ];
        let (unary, card) = (TwoLayer::unary(p), TwoLayer::card(p));
        let (l, k, h, hc) = (
            self.n_labels(),
            self.counts.len(),
            p.w1.ncols(),
            p.c1.ncols(),
        );
        let rows: Vec<usize> = (0..x.n_rows).collect();
        let parts: Vec<(Vec<F>, Vec<F>)> = rows
            .par_chunks(UNIT_ROWS)
            .map(|unit| {
                let nb = unit.len();
                let (mut pre, mut hidden) = (vec![F::zero(); nb * h], vec![F::zero(); nb * h]);
                let mut u = vec![F::zero(); nb * l];
                unary.forward_rows(
                    x,
                    unit,
                    stdz,
                    &shifts[0],
                    None,
                    &mut pre,
                    &mut hidden,
                    &mut u,
                );
                let (mut prec, mut hidden_c) = (vec![F::zero(); nb * hc], vec![F::zero(); nb * hc]);
                let mut logits = vec![F::zero(); nb * k];
                card.forward_rows(
                    x,
                    unit,
                    stdz,
                    &shifts[1],
                    None,
                    &mut prec,
                    &mut hidden_c,
                    &mut logits,
                );
                (u, logits)
            })
            .collect();
        let to = |v: &F| v.to_f64().unwrap_or(0.0);
        let mut out = Heads::default();
        for (u, logits) in parts {
            out.unary.extend(u.iter().map(to));
            for row in logits.chunks_exact(k) {
                out.count_probs.extend(softmax(row.iter().map(to)));
            }
        }
        out
    }
}

/// The softmax of `logits`, computed from their maximum so no term overflows.
fn softmax(logits: impl Iterator<Item = f64> + Clone) -> Vec<f64> {
    let m = logits.clone().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}
