//! Per-feature standardisation of the sparse input with training statistics.

use crate::data::CsrMatrix;

/// Per-feature standardisation with training statistics: `x̃_d = (x_d − mean_d)·scale_d`.
#[derive(Debug, Clone, PartialEq)]
pub struct Standardizer {
    /// Mean of each feature on the training data.
    pub mean: Vec<f32>,
    /// `1 / (std + 1e-6)` as in the released code; 0 for a feature constant on the training
    /// data, which would otherwise turn an unseen test value into ±10⁶.
    pub scale: Vec<f32>,
}

impl Standardizer {
    /// Statistics of `x` (population standard deviation, over all rows including zeros).
    pub fn fit(x: &CsrMatrix) -> Self {
        let n = x.n_rows.max(1) as f64;
        let mut sum = vec![0f64; x.n_cols];
        let mut sq = vec![0f64; x.n_cols];
        for (&i, &v) in x.indices.iter().zip(&x.values) {
            sum[i as usize] += v as f64;
            sq[i as usize] += (v as f64) * (v as f64);
        }
        let mut mean = Vec::with_capacity(x.n_cols);
        let mut scale = Vec::with_capacity(x.n_cols);
        for d in 0..x.n_cols {
            let m = sum[d] / n;
            let var = (sq[d] / n - m * m).max(0.0);
            mean.push(m as f32);
            scale.push(if var > 0.0 {
                (1.0 / (var.sqrt() + 1e-6)) as f32
            } else {
                0.0
            });
        }
        Self { mean, scale }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardizer_matches_dense_statistics() {
        let mut x = CsrMatrix::new(3);
        x.push_row(&[0, 2], &[1.0, 2.0]);
        x.push_row(&[0], &[3.0]);
        x.push_row(&[], &[]);
        let s = Standardizer::fit(&x);
        // column 0: values 1, 3, 0 -> mean 4/3, population std sqrt(14/9)
        assert!((s.mean[0] - 4.0 / 3.0).abs() < 1e-6);
        let std0 = (10.0f64 / 3.0 - 16.0 / 9.0).sqrt();
        assert!((s.scale[0] as f64 - 1.0 / (std0 + 1e-6)).abs() < 1e-5);
        assert_eq!(s.scale[1], 0.0, "a constant feature is switched off");
    }
}
