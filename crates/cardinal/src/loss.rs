//! The training loss: the relaxed F1 of the unroll's iterates against the gold labels.

use crate::model::{c, Float};

/// Relaxed F1 `2⟨y, y*⟩ / (Σy + |y*|)` of one row with gold labels `gold`; if `grad` is given,
/// adds `scale · ∂F1/∂y` to it. Defined as 0 (zero gradient) when `Σy + |y*| = 0`.
pub fn soft_f1<F: Float>(y: &[F], gold: &[u32], grad: Option<(&mut [F], F)>) -> F {
    let sum_y: F = y.iter().copied().sum();
    let inter: F = gold.iter().map(|&g| y[g as usize]).sum();
    let denom = sum_y + c::<F>(gold.len() as f64);
    if denom <= F::zero() {
        return F::zero();
    }
    let two: F = c(2.0);
    if let Some((grad, scale)) = grad {
        // ∂F1/∂y_i = 2 y*_i / D − 2 ⟨y, y*⟩ / D²
        let common = -two * inter / (denom * denom) * scale;
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
    }
}
