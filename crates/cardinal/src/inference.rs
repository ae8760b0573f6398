//! Unrolled projected gradient ascent on the relaxed labels, forward and backward, one row at a
//! time (rows are independent given the unary scores `u` and the count `z`).
//!
//! Forward, from `y_0 = σ(u)`, `v_0 = 0`, for `t = 1..T`:
//! ```text
//! a_t = Wpᵀ y_{t−1},  g_t = u + Wp (w2 ⊙ 1[a_t > 0])     (∇_y of yᵀu + w2ᵀ relu(Wpᵀ y))
//! v_t = μ v_{t−1} + η g_t,   y_t = Π(y_{t−1} + v_t, z)
//! ```
//! `∂g_t/∂y_{t−1}` is zero almost everywhere (the energy is piecewise linear in `y`), so no
//! second-order derivative is needed. Backward, for `t = T..1`, with `ḡy` the adjoint of `y_t`
//! and `ḡv` that of `v_t`:
//! ```text
//! ḡy += ∂ℓ/∂y_t;  (ḡy', ḡz_t) = Π_vjp(ḡy);  ḡv += ḡy';  ḡg_t = η ḡv;  ḡu += ḡg_t;
//! ḡη += ⟨ḡv, g_t⟩;  ḡv ← μ ḡv;  ḡy ← ḡy'
//! ```
//! and finally `ḡu += ḡy ⊙ y_0 (1 − y_0)`. The energy's parameter gradients are
//! `∂ℓ/∂Wp = Σ_t ḡg_t (w2 ⊙ m_t)ᵀ` and `∂ℓ/∂w2 = Σ_t (Wpᵀ ḡg_t) ⊙ m_t`; the per-step `ḡg_t` and
//! `m_t` are returned so the caller can form both sums for a whole batch with two GEMMs, in a
//! fixed order (bit-identical results for any thread count).

use cardinal_proj::{AnyProjector, ProjError, Projector};
use ndarray::ArrayView2;

use crate::model::{c, Float};

/// The fixed parts of one unrolled solve.
pub struct Unroll<'a, F: Float> {
    /// Energy matrix transposed, `Wpᵀ` (`E × L`, rows contiguous: both products below then
    /// run over contiguous length-`L` rows).
    pub wpt: ArrayView2<'a, F>,
    /// Energy output weights `w2`, `E`.
    pub we: &'a [F],
    pub eta: F,
    pub momentum: F,
    pub steps: usize,
    pub projector: &'a AnyProjector,
    /// An optional projection applied once more to the last iterate (e.g. the exact one after
    /// soft Dykstra steps, so that `y_T` is feasible); it replaces `y_T`.
    pub final_projector: Option<&'a AnyProjector>,
}

/// What the forward pass of one row records for its backward pass, plus scratch space.
/// Reused across rows and batches: buffers grow to size once, then no allocation.
pub struct RowTape<F: Float> {
    /// `y_0..y_T`, `(T+1) × L`.
    pub ys: Vec<F>,
    /// Ascent directions `g_1..g_T`, `T × L`.
    gs: Vec<F>,
    /// Energy masks `m_t = 1[a_t > 0]` (as 0/1), `T × E`.
    pub masks: Vec<F>,
    proj: Vec<<AnyProjector as Projector<F>>::Tape>,
    final_tape: <AnyProjector as Projector<F>>::Tape,
    z: F,
    scratch: Vec<F>,
    gy: Vec<F>,
    gv: Vec<F>,
    gyp: Vec<F>,
    /// Spare buffer lent to callers (the loss's `∂ℓ/∂y_t`), so the hot loop never allocates.
    pub(crate) spare: Vec<F>,
}

impl<F: Float> Default for RowTape<F> {
    fn default() -> Self {
        Self {
            ys: Vec::new(),
            gs: Vec::new(),
            masks: Vec::new(),
            proj: Vec::new(),
            final_tape: Default::default(),
            z: F::zero(),
            scratch: Vec::new(),
            gy: Vec::new(),
            gv: Vec::new(),
            gyp: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<F: Float> RowTape<F> {
    /// The iterate `y_t` (`t = 0..=T`) of the last forward pass.
    pub fn y(&self, t: usize, l: usize) -> &[F] {
        &self.ys[t * l..(t + 1) * l]
    }
}

/// `σ(x)`, computed without overflow for large `|x|`.
#[inline]
pub fn sigmoid<F: Float>(x: F) -> F {
    if x >= F::zero() {
        F::one() / (F::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (F::one() + e)
    }
}

impl<F: Float> Unroll<'_, F> {
    fn l(&self) -> usize {
        self.wpt.ncols()
    }
    fn e(&self) -> usize {
        self.wpt.nrows()
    }

    /// Runs the `T` steps for one row with unary scores `u` and count `z`.
    pub fn forward_row(&self, u: &[F], z: F, tape: &mut RowTape<F>) -> Result<(), ProjError> {
        let (l, e, steps) = (self.l(), self.e(), self.steps);
        tape.ys.resize((steps + 1) * l, F::zero());
        tape.gs.resize(steps * l, F::zero());
        tape.masks.resize(steps * e, F::zero());
        tape.proj.resize_with(steps, Default::default);
        tape.scratch.resize(l.max(e), F::zero());
        tape.gv.resize(l, F::zero());
        tape.z = z;
        for (y, &u) in tape.ys[..l].iter_mut().zip(u) {
            *y = sigmoid(u);
        }
        let velocity = &mut tape.gv; // forward reuses the adjoint buffer as the velocity
        velocity.fill(F::zero());
        let wpt = self.wpt.as_slice().expect("contiguous Wpᵀ");
        for t in 0..steps {
            let (prev, next) = tape.ys.split_at_mut((t + 1) * l);
            let y_prev = &prev[t * l..];
            let y_next = &mut next[..l];
            // a = Wpᵀ y, m = 1[a > 0], s = w2 ⊙ m
            let act = &mut tape.scratch[..e];
            let mask = &mut tape.masks[t * e..(t + 1) * e];
            for k in 0..e {
                let a = dot_lanes(&wpt[k * l..(k + 1) * l], y_prev);
                mask[k] = if a > F::zero() { F::one() } else { F::zero() };
                act[k] = mask[k] * self.we[k];
            }
            // g = u + Wp s;  v = μ v + η g;  y' = y + v (written into y_next, projected in place)
            let g = &mut tape.gs[t * l..(t + 1) * l];
            g.copy_from_slice(u);
            for k in 0..e {
                let sk = act[k];
                if sk != F::zero() {
                    for (gi, &w) in g.iter_mut().zip(&wpt[k * l..(k + 1) * l]) {
                        *gi += sk * w;
                    }
                }
            }
            for i in 0..l {
                let gi = g[i];
                velocity[i] = self.momentum * velocity[i] + self.eta * gi;
                y_next[i] = y_prev[i] + velocity[i];
            }
            let pre = &mut tape.gyp;
            pre.clear();
            pre.extend_from_slice(y_next);
            self.projector.forward(pre, z, y_next, &mut tape.proj[t])?;
        }
        if let Some(fp) = self.final_projector {
            let last = &mut tape.ys[steps * l..(steps + 1) * l];
            tape.gyp.clear();
            tape.gyp.extend_from_slice(last);
            fp.forward(&tape.gyp, z, last, &mut tape.final_tape)?;
        }
        Ok(())
    }

    /// Backward of the last [`Self::forward_row`] on `tape`.
    ///
    /// `gys` holds `∂ℓ/∂y_t` for `t = 1..T` (`T × L`). Writes `∂ℓ/∂u` into `gu` and `η·ḡv_t`
    /// (the adjoint of `g_t`) into `ggs` (`T × L`); returns `(∂ℓ/∂z, ∂ℓ/∂η)`.
    pub fn backward_row(
        &self,
        tape: &mut RowTape<F>,
        gys: &[F],
        gu: &mut [F],
        ggs: &mut [F],
    ) -> (F, F) {
        let (l, steps) = (self.l(), self.steps);
        tape.gy.clear();
        tape.gy.resize(l, F::zero());
        tape.gv.clear();
        tape.gv.resize(l, F::zero());
        tape.gyp.resize(l, F::zero());
        gu.fill(F::zero());
        let (mut gz, mut geta) = (F::zero(), F::zero());
        for t in (0..steps).rev() {
            for (gy, &d) in tape.gy.iter_mut().zip(&gys[t * l..(t + 1) * l]) {
                *gy += d;
            }
            if let (Some(fp), true) = (self.final_projector, t + 1 == steps) {
                gz += fp.vjp(&tape.final_tape, &tape.gy, &mut tape.gyp);
                std::mem::swap(&mut tape.gy, &mut tape.gyp);
            }
            gz += self.projector.vjp(&tape.proj[t], &tape.gy, &mut tape.gyp);
            let g = &tape.gs[t * l..(t + 1) * l];
            let gg = &mut ggs[t * l..(t + 1) * l];
            for i in 0..l {
                let gv = tape.gv[i] + tape.gyp[i];
                geta += gv * g[i];
                gg[i] = self.eta * gv;
                gu[i] += gg[i];
                tape.gv[i] = self.momentum * gv;
            }
            std::mem::swap(&mut tape.gy, &mut tape.gyp);
        }
        for ((gu, &gy), &y0) in gu.iter_mut().zip(&tape.gy).zip(&tape.ys[..l]) {
            *gu += gy * y0 * (F::one() - y0);
        }
        (gz, geta)
    }
}

/// `⟨a, b⟩` over fixed-width lanes, so that it vectorises.
#[inline]
fn dot_lanes<F: Float>(a: &[F], b: &[F]) -> F {
    const LANES: usize = 8;
    let mut acc = [F::zero(); LANES];
    let full = a.len() / LANES * LANES;
    for (ca, cb) in a[..full]
        .chunks_exact(LANES)
        .zip(b[..full].chunks_exact(LANES))
    {
        for k in 0..LANES {
            acc[k] += ca[k] * cb[k];
        }
    }
    let mut s = acc.iter().fold(F::zero(), |x, &y| x + y);
    for (&x, &y) in a[full..].iter().zip(&b[full..]) {
        s += x * y;
    }
    s
}

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
    use cardinal_proj::Method;
    use ndarray::Array2;

    fn unroll_loss(un: &Unroll<f64>, u: &[f64], z: f64, w: &[f64], tape: &mut RowTape<f64>) -> f64 {
        un.forward_row(u, z, tape).unwrap();
        let l = u.len();
        (1..=un.steps)
            .map(|t| {
                tape.y(t, l)
                    .iter()
                    .zip(&w[(t - 1) * l..t * l])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
            })
            .sum()
    }

    /// The unrolled solve's VJP against central differences of a random linear functional of
    /// all iterates, for every projection method.
    #[test]
    fn unroll_vjp_matches_finite_differences() {
        let (l, e, steps) = (7, 3, 4);
        let mut s = 12345u64;
        let mut rnd = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let wp = Array2::from_shape_fn((l, e), |_| rnd());
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let u: Vec<f64> = (0..l).map(|_| 2.0 * rnd()).collect();
        let w: Vec<f64> = (0..steps * l).map(|_| rnd()).collect();
        for method in [
            Method::Exact,
            Method::DykstraSoft,
            Method::DykstraExact,
            Method::Soft,
        ] {
            let projector = AnyProjector::new(method, 2, 20).with_eps(0.3);
            let wpt = wp.t().as_standard_layout().into_owned();
            let un = Unroll {
                wpt: wpt.view(),
                we: &we,
                eta: 0.3,
                momentum: 0.9,
                steps,
                projector: &projector,
                final_projector: None,
            };
            let z = 2.3;
            let mut tape = RowTape::default();
            unroll_loss(&un, &u, z, &w, &mut tape);
            let mut gu = vec![0.0; l];
            let mut ggs = vec![0.0; steps * l];
            let (gz, geta) = un.backward_row(&mut tape, &w, &mut gu, &mut ggs);
            let h = 1e-6;
            for i in 0..l {
                let mut up = u.clone();
                up[i] += h;
                let mut um = u.clone();
                um[i] -= h;
                let fd = (unroll_loss(&un, &up, z, &w, &mut tape)
                    - unroll_loss(&un, &um, z, &w, &mut tape))
                    / (2.0 * h);
                assert!(
                    (fd - gu[i]).abs() < 1e-5 * (1.0 + fd.abs()),
                    "{method}: du[{i}] fd {fd} vs {}",
                    gu[i]
                );
            }
            let fd = (unroll_loss(&un, &u, z + h, &w, &mut tape)
                - unroll_loss(&un, &u, z - h, &w, &mut tape))
                / (2.0 * h);
            assert!(
                (fd - gz).abs() < 1e-5 * (1.0 + fd.abs()),
                "{method}: dz fd {fd} vs {gz}"
            );
            let un_p = Unroll { eta: 0.3 + h, ..un };
            let un_m = Unroll { eta: 0.3 - h, ..un };
            let fd = (unroll_loss(&un_p, &u, z, &w, &mut tape)
                - unroll_loss(&un_m, &u, z, &w, &mut tape))
                / (2.0 * h);
            assert!(
                (fd - geta).abs() < 1e-5 * (1.0 + fd.abs()),
                "{method}: deta fd {fd} vs {geta}"
            );
        }
    }

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
