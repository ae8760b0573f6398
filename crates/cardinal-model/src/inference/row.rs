//! The reference kernel: one row at a time, any projection, with the tape its backward pass
//! reads.

use cardinal_proj::{AnyProjector, ProjError, Projector};

use super::{sigmoid, Unroll};
use crate::model::Scalar;

/// What the forward pass of one row records for its backward pass, plus scratch space.
/// Reused across rows and batches: buffers grow to size once, then no allocation.
pub struct RowTape<F: Scalar> {
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
    pub spare: Vec<F>,
}

impl<F: Scalar> Default for RowTape<F> {
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

impl<F: Scalar> RowTape<F> {
    /// The iterate `y_t` (`t = 0..=T`) of the last forward pass.
    pub fn y(&self, t: usize, l: usize) -> &[F] {
        &self.ys[t * l..(t + 1) * l]
    }

    /// The ranking scores of the last forward pass: the last step's point before its
    /// projection, `x_T = y_{T−1} + v_T` (`y_0` when `T = 0`). The projections on the way to `y_T` preserve order (the soft Dykstra
    /// steps approximately: violations of ~5e-7 seen), so these order the labels as `y_T`
    /// does, without its ties where entries meet the bounds 0 and 1.
    pub fn ranking(&self, l: usize) -> &[F] {
        &self.gyp[..l]
    }
}

impl<F: Scalar> Unroll<'_, F> {
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
        if steps == 0 {
            // The ranking scores of no step: y_0 itself.
            tape.gyp.clear();
            tape.gyp.extend_from_slice(&tape.ys[..l]);
        }
        if let Some(fp) = self.final_projector {
            // `gyp` keeps the last step's point before its projection (the ranking scores).
            let last = &mut tape.ys[steps * l..(steps + 1) * l];
            tape.spare.clear();
            tape.spare.extend_from_slice(last);
            fp.forward(&tape.spare, z, last, &mut tape.final_tape)?;
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
fn dot_lanes<F: Scalar>(a: &[F], b: &[F]) -> F {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::test_support::{block_test_unroll, uniform_pm1};
    use cardinal_proj::{Method, ProjParams};
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
        let mut rnd = uniform_pm1(12345u64);
        let wp = Array2::from_shape_fn((l, e), |_| rnd());
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let u: Vec<f64> = (0..l).map(|_| 2.0 * rnd()).collect();
        let w: Vec<f64> = (0..steps * l).map(|_| rnd()).collect();
        for method in [
            Method::Exact,
            Method::DykstraSoft,
            Method::DykstraExact,
            Method::Soft,
            Method::Smooth,
        ] {
            let projector = AnyProjector::new(
                method,
                ProjParams {
                    smooth_eps: 0.3,
                    ..ProjParams::default()
                },
            );
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

    /// The ranking scores are the last step's point before its projection, rebuilt here from
    /// the tape's gradients: `x_T = y_{T−1} + v_T`; with no step, `σ(u)`. With and without a
    /// final projection, which must not touch them.
    #[test]
    fn ranking_is_the_last_point_before_its_projection() {
        let (l, e) = (23, 4);
        let mut rnd = uniform_pm1(7u64);
        let wpt = Array2::from_shape_fn((e, l), |_| rnd());
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let projector = AnyProjector::new(Method::DykstraSoft, ProjParams::default());
        let smooth = AnyProjector::new(
            Method::Smooth,
            ProjParams {
                smooth_eps: 0.05,
                ..ProjParams::default()
            },
        );
        let u: Vec<f64> = (0..l).map(|_| 3.0 * rnd()).collect();
        let z = 4.5;
        for steps in [0, 1, 4] {
            for final_projector in [None, Some(&smooth)] {
                let un = block_test_unroll(&wpt, &we, steps, &projector, final_projector);
                let mut tape = RowTape::default();
                un.forward_row(&u, z, &mut tape).unwrap();
                let mut velocity = vec![0.0; l];
                for t in 0..steps {
                    for i in 0..l {
                        velocity[i] = un.momentum * velocity[i] + un.eta * tape.gs[t * l + i];
                    }
                }
                let want: Vec<f64> = match steps {
                    0 => u.iter().map(|&v| sigmoid(v)).collect(),
                    _ => (0..l)
                        .map(|i| tape.y(steps - 1, l)[i] + velocity[i])
                        .collect(),
                };
                let fin = final_projector.is_some();
                for (i, (&a, &b)) in tape.ranking(l).iter().zip(&want).enumerate() {
                    assert!(
                        (a - b).abs() < 1e-12,
                        "T {steps} final {fin} label {i}: {a} vs {b}"
                    );
                }
            }
        }
    }
}
