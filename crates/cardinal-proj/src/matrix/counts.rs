//! Checking a matrix operator's input and reading the class sizes `z`.
//!
//! [`normalize`] checks the shapes and entries and rescales `z` to sum to `L` exactly
//! (`z̃ = z · L/Σz`, accepted only within [`COUNT_SUM_TOL`] of `L`); [`rescale_vjp`] is the
//! adjoint of that rescaling: with `s = L/Σz`,
//! `∂z̃_i/∂z_k = s (δ_ik − z̃_i/L)`, so `∂ℓ/∂z_k = s (ḡ_k − Σ_i ḡ_i z̃_i / L)`.

use crate::util::check_finite;
use crate::{ProjError, Real};

/// Largest relative gap `|Σz − L| / L` accepted (and closed by rescaling); larger gaps are
/// [`ProjError::InfeasibleCounts`].
pub const COUNT_SUM_TOL: f64 = 1e-3;

/// A checked input: the number of rows and the class sizes rescaled to sum to `L` (in `f64`).
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Rows `L`.
    pub rows: usize,
    /// `z̃ = z · L/Σz`.
    pub z: Vec<f64>,
    /// `L/Σz`.
    pub scale: f64,
}

/// Checks `v` (`L·M` finite entries, `L ≥ 1`), `out`'s length and `z` (`M` finite non-negative
/// entries summing to `L` within [`COUNT_SUM_TOL`]) and fills `counts`.
pub fn normalize<F: Real>(
    v: &[F],
    classes: usize,
    z: &[F],
    out_len: usize,
    counts: &mut Counts,
) -> Result<(), ProjError> {
    let shape = |what: String| Err(ProjError::MatrixShape { what });
    if classes == 0 {
        return shape("the number of classes M is 0".into());
    }
    if v.is_empty() || !v.len().is_multiple_of(classes) {
        return shape(format!(
            "the matrix has {} entries, not a positive multiple of M = {classes}",
            v.len()
        ));
    }
    if out_len != v.len() {
        return shape(format!(
            "the output buffer has {out_len} entries, the matrix {}",
            v.len()
        ));
    }
    if z.len() != classes {
        return shape(format!(
            "{} class sizes given for M = {classes} classes",
            z.len()
        ));
    }
    let rows = v.len() / classes;
    let mut sum = 0.0;
    for (class, &zj) in z.iter().enumerate() {
        let value = zj.to_f64().unwrap_or(f64::NAN);
        if !(value >= 0.0 && value.is_finite()) {
            return Err(ProjError::NegativeCount { class, value });
        }
        sum += value;
    }
    let l = rows as f64;
    // `sum` is finite: every entry was checked above.
    if (sum - l).abs() > COUNT_SUM_TOL * l {
        return Err(ProjError::InfeasibleCounts { sum, rows });
    }
    check_finite(v)?;
    let scale = l / sum;
    counts.rows = rows;
    counts.scale = scale;
    counts.z.clear();
    counts
        .z
        .extend(z.iter().map(|&zj| zj.to_f64().unwrap_or(0.0) * scale));
    Ok(())
}

/// Maps `gz = ∂ℓ/∂z̃` (the rescaled sizes) to `∂ℓ/∂z` in place.
pub fn rescale_vjp(counts: &Counts, gz: &mut [f64]) {
    let l = counts.rows as f64;
    let mean: f64 = gz.iter().zip(&counts.z).map(|(g, z)| g * z).sum::<f64>() / l;
    for g in gz.iter_mut() {
        *g = counts.scale * (*g - mean);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: &[f64], m: usize, z: &[f64]) -> Result<Counts, ProjError> {
        let mut c = Counts::default();
        normalize(v, m, z, v.len(), &mut c).map(|_| c)
    }

    #[test]
    fn refuses_bad_shapes_and_counts() {
        let v = [0.0; 6];
        assert!(matches!(
            check(&v, 0, &[]),
            Err(ProjError::MatrixShape { .. })
        ));
        assert!(matches!(
            check(&v, 4, &[1.0; 4]),
            Err(ProjError::MatrixShape { .. })
        ));
        assert!(matches!(
            check(&[], 2, &[0.0; 2]),
            Err(ProjError::MatrixShape { .. })
        ));
        assert!(matches!(
            check(&v, 2, &[3.0]),
            Err(ProjError::MatrixShape { .. })
        ));
        assert_eq!(
            check(&v, 2, &[4.0, -1.0]).unwrap_err(),
            ProjError::NegativeCount {
                class: 1,
                value: -1.0
            }
        );
        assert!(matches!(
            check(&v, 2, &[f64::NAN, 3.0]),
            Err(ProjError::NegativeCount { class: 0, .. })
        ));
        assert_eq!(
            check(&v, 2, &[2.0, 2.0]).unwrap_err(),
            ProjError::InfeasibleCounts { sum: 4.0, rows: 3 }
        );
        let mut w = v;
        w[3] = f64::NAN;
        assert!(matches!(
            check(&w, 2, &[1.5, 1.5]),
            Err(ProjError::NonFinite { index: 3, .. })
        ));
    }

    #[test]
    fn rescales_within_tolerance_and_its_vjp_matches_differences() {
        let v = [0.0; 6];
        let z = [1.0005, 1.9999];
        let c = check(&v, 2, &z).unwrap();
        assert!((c.z.iter().sum::<f64>() - 3.0).abs() < 1e-15);
        // ℓ(z) = w · z̃(z): compare the VJP with central differences.
        let w = [0.7, -1.3];
        let mut gz = w.to_vec();
        rescale_vjp(&c, &mut gz);
        let loss = |z: &[f64]| {
            let c = check(&v, 2, z).unwrap();
            c.z.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>()
        };
        for k in 0..2 {
            let h = 1e-7;
            let (mut zp, mut zm) = (z, z);
            zp[k] += h;
            zm[k] -= h;
            let fd = (loss(&zp) - loss(&zm)) / (2.0 * h);
            assert!((fd - gz[k]).abs() < 1e-6, "class {k}: {fd} vs {}", gz[k]);
        }
    }
}
