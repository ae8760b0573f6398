//! A forest's label marginals as a prior of Predict and Constrain's unary scores
//! (`model.forest_prior`): on new rows from every tree, on the rows it grew on from the trees
//! whose bootstrap sample left the row out, so that a row's prior in training is never its own
//! labels read back.

use rayon::prelude::*;

use super::Forest;
use cardinal_data::data::CsrMatrix;

impl Forest {
    /// Each label's marginal under the forest's weights for every row of `x`, `n × L`
    /// row-major (the marginals [`Forest::decide`] reports).
    pub fn marginals(&self, x: &CsrMatrix) -> Vec<f32> {
        self.rows_marginals(x.n_rows, |r, t| {
            let span = x.indptr[r]..x.indptr[r + 1];
            Some(self.trees[t].leaf(&x.indices[span.clone()], &x.values[span]))
        })
    }

    /// The out-of-bag marginals of the rows the forest grew on, in their order, `n × L`: row
    /// `j`'s from the trees whose bootstrap sample did not draw it (from every tree in the
    /// rare case that each drew it).
    pub fn oob_marginals(&self) -> Vec<f32> {
        let n = self.label_indptr.len() - 1;
        let oob = self.rows_marginals(n, |r, t| {
            (self.bag[t][r] == 0).then(|| self.leaf_of_row[t][r])
        });
        let covered: Vec<bool> = (0..n)
            .map(|r| self.bag.iter().any(|drawn| drawn[r] == 0))
            .collect();
        if covered.iter().all(|&c| c) {
            return oob;
        }
        let inbag = self.rows_marginals(n, |r, t| Some(self.leaf_of_row[t][r]));
        let l = self.n_labels;
        let mut out = oob;
        for (r, _) in covered.iter().enumerate().filter(|(_, &c)| !c) {
            out[r * l..(r + 1) * l].copy_from_slice(&inbag[r * l..(r + 1) * l]);
        }
        out
    }

    /// The marginals of `n` rows, row `r`'s averaged over the trees `t` for which `leaf(r, t)`
    /// names the leaf it falls in (`None`: the tree is left out for that row); each tree's
    /// estimate is its leaf's bootstrap sample, each row as often as drawn, as in
    /// [`Forest::decide`]'s joint.
    fn rows_marginals(
        &self,
        n: usize,
        leaf: impl Fn(usize, usize) -> Option<u32> + Sync,
    ) -> Vec<f32> {
        let l = self.n_labels;
        let mut out = vec![0.0f32; n * l];
        // One accumulator per worker, reused over its rows.
        out.par_chunks_mut(l.max(1)).enumerate().for_each_init(
            || vec![0.0f64; l],
            |acc, (r, row)| {
                acc.fill(0.0);
                let mut trees = 0usize;
                for (t, ((offsets, members), drawn)) in
                    self.leaf_rows.iter().zip(&self.bag).enumerate()
                {
                    let Some(leaf) = leaf(r, t) else { continue };
                    let leaf = leaf as usize;
                    let members = &members[offsets[leaf] as usize..offsets[leaf + 1] as usize];
                    let mass: u32 = members.iter().map(|&m| drawn[m as usize]).sum();
                    if mass == 0 {
                        continue;
                    }
                    trees += 1;
                    let w = 1.0 / mass as f64;
                    for &m in members {
                        let m = m as usize;
                        let labels =
                            &self.label_indices[self.label_indptr[m]..self.label_indptr[m + 1]];
                        for &i in labels {
                            acc[i as usize] += w * drawn[m] as f64;
                        }
                    }
                }
                let share = 1.0 / trees.max(1) as f64;
                for (o, a) in row.iter_mut().zip(acc.iter()) {
                    *o = (a * share) as f32;
                }
            },
        );
        out
    }
}

/// The prior `weight · logit(clip(q))` of marginals `q`, clipped to `[clip, 1 − clip]`.
pub fn log_odds(marginals: &[f32], weight: f64, clip: f64) -> Vec<f32> {
    marginals
        .iter()
        .map(|&q| {
            let q = (q as f64).clamp(clip, 1.0 - clip);
            (weight * (q / (1.0 - q)).ln()) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests;
