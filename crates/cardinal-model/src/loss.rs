//! The training loss: the relaxed F1 of the unroll's iterates against the gold labels.

use crate::model::{c, Scalar};

/// Relaxed F1 `2⟨y, y*⟩ / (Σy + |y*|)` of one row with gold labels `gold`; if `grad` is given,
/// adds `scale · ∂F1/∂y` to it. Defined as 0 (zero gradient) when `Σy + |y*| = 0`.
pub fn soft_f1<F: Scalar>(y: &[F], gold: &[u32], grad: Option<(&mut [F], F)>) -> F {
    let sum_y: F = y.iter().copied().sum();
    let inter: F = gold.iter().map(|&g| y[g as usize]).sum();
    let denom = sum_y + c::<F>(gold.len() as f64);
    if denom <= F::zero() {
        return F::zero();
    }
    let two: F = c(2.0);
    if let Some((grad, scale)) = grad {
        // ∂F1/∂y_i = 2 y*_i / D − 2 ⟨y, y*⟩ / D²
        let common = f1_common(inter, denom, scale);
        for gi in grad.iter_mut() {
            *gi += common;
        }
        let on = two / denom * scale;
        for &g in gold {
            grad[g as usize] += on;
        }
    }
    two * inter / denom
}

/// `−2⟨y, y*⟩/D² · scale`, the part of the relaxed F1's gradient shared by every label. A row
/// with no gold labels whose iterate is nearly 0 (its count near 0) has `D = Σy` so small that
/// `D²` underflows: then it is computed as `−2(⟨y, y*⟩/D)/D`, which is 0 rather than `0/0`.
#[inline(always)]
pub fn f1_common<F: Scalar>(inter: F, denom: F, scale: F) -> F {
    let two: F = c(2.0);
    let d2 = denom * denom;
    if d2 > F::zero() {
        -two * inter / d2 * scale
    } else {
        -two * (inter / denom) / denom * scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soft_f1_gradient_matches_finite_differences() {
        let y: [f64; 4] = [0.2, 0.9, 0.0, 0.5];
        let gold = [1u32, 3];
        let mut grad = [0.0f64; 4];
        let f = soft_f1(&y, &gold, Some((&mut grad, 1.0)));
        assert!((f - 2.0 * 1.4 / (1.6 + 2.0)).abs() < 1e-12);
        for i in 0..4 {
            let h = 1e-6;
            let mut yp = y;
            yp[i] += h;
            let mut ym = y;
            ym[i] -= h;
            let fd =
                (soft_f1::<f64>(&yp, &gold, None) - soft_f1::<f64>(&ym, &gold, None)) / (2.0 * h);
            assert!((fd - grad[i]).abs() < 1e-8);
        }
        assert_eq!(soft_f1::<f64>(&[0.0; 3], &[], None), 0.0);
        // A row without gold labels whose iterate is nearly 0: D² underflows, the gradient
        // stays finite (and 0: the F1 of an empty set is 0 whatever y is).
        let tiny = [1e-30f32, 2e-30, 0.0];
        let mut grad = [0f32; 3];
        assert_eq!(soft_f1(&tiny, &[], Some((&mut grad, 1.0))), 0.0);
        assert!(grad.iter().all(|g| *g == 0.0), "{grad:?}");
    }
}
