//! Smoothed (entropic) projection onto the capped simplex `C(z)`:
//!
//! ```text
//! u = argmax_{0 ≤ u ≤ 1, Σu = z}  vᵀu + ε Σ_i H(u_i),   H(p) = −p ln p − (1−p) ln(1−p)
//!   ⇒ u_i = σ((v_i − θ)/ε),  θ the root of  Σ_i σ((v_i − θ)/ε) = z.
//! ```
//!
//! Unlike the Euclidean projection its output always satisfies the constraint *and* is a smooth
//! function of `v` and `z`, with a dense Jacobian: every coordinate receives gradient, not only
//! the free ones. As `ε → 0` it tends to the top-`z` indicator. With `s_i = u_i(1−u_i)` and
//! `S = Σ s_i`, differentiating the constraint gives
//!
//! ```text
//! ∂ℓ/∂z = Σ_i g_i s_i / S,      ∂ℓ/∂v_j = (s_j/ε)·(g_j − ∂ℓ/∂z).
//! ```
//!
//! `θ` is found by Newton's method on the monotone `f(θ) = Σ σ((v_i − θ)/ε) − z`, safeguarded by
//! a bracket: with `t = ln(z/(L−z))`, every `σ` is `≥ z/L` at `θ = min v − εt` and `≤ z/L` at
//! `θ = max v − εt`, so the root lies between.
//!
//! Two solvers share this iteration. Rows of at most [`PLAIN_MAX_LEN`] entries with
//! `|v_i| <= PLAIN_MAX_ABS` run it in the row's own float type (the original solver; the trained
//! models depend on its results bit for bit). Longer or larger rows would miss `Σu = z` there:
//! a plain `f32` sum of millions of terms is off by ~`n·ε_F·z` (2·10⁶ entries, z = 10⁶: by 9),
//! and a single-float θ near 1e7 is only resolved to 1, so σ jumps. They run it in `f64` with
//! blocked sums, and with θ split as an anchor `c` (a float of the row's type near θ) plus an
//! `f64` offset, so that `v_i − c` is exact for every entry near θ; `Σu` then meets `z` to the
//! rounding of the outputs.

use crate::util::{validate, ZRange};
use crate::{ProjError, Projector, Real};

/// The smoothed capped-simplex projection with temperature `eps` (> 0, in units of `v`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothCappedSimplex {
    /// Temperature ε (finite, > 0); smaller is closer to the exact projection.
    pub eps: f64,
}

/// What [`SmoothCappedSimplex::vjp`] needs: the output (for `s_i`) and the temperature.
#[derive(Debug, Clone, Default)]
pub struct SmoothTape<F> {
    pub(crate) out: Vec<F>,
    /// `1/ε`, or 0 when `z` is at a bound (`u` constant, zero Jacobian).
    pub(crate) inv_eps: F,
}

#[inline]
fn sigmoid<F: Real>(x: F) -> F {
    if x >= F::zero() {
        F::one() / (F::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (F::one() + e)
    }
}

/// Longest row of the single-float solver (longer rows: [`theta_wide`]).
pub(crate) const PLAIN_MAX_LEN: usize = 8192;
/// Largest `|v_i|` of the single-float solver (`f32` resolves θ there to `2^-14`).
pub(crate) const PLAIN_MAX_ABS: f64 = 1024.0;

#[inline]
fn sigmoid_f64(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// Terms per partial sum of [`theta_wide`]'s blocked sums (the error grows with the block
/// length plus the number of blocks, not with the row length).
const SUM_BLOCK: usize = 1024;

/// `(Σ σ_i, Σ σ_i(1 − σ_i))` at θ = `c + t`, in `f64` with blocked sums.
fn sums_wide<F: Real>(v: &[F], c: f64, t: f64, inv: f64) -> (f64, f64) {
    let (mut sum, mut slope) = (0.0f64, 0.0f64);
    for block in v.chunks(SUM_BLOCK) {
        let (mut bs, mut bd) = (0.0f64, 0.0f64);
        for &x in block {
            let y = sigmoid_f64(((x.to_f64().unwrap_or(f64::NAN) - c) - t) * inv);
            bs += y;
            bd += y * (1.0 - y);
        }
        sum += bs;
        slope += bd;
    }
    (sum, slope)
}

/// θ of rows outside the single-float solver's range, as an anchor `c` (a value of the row's
/// float type) plus an `f64` offset `t`: the same safeguarded Newton iteration, in `f64` with
/// blocked sums, until `|Σσ − z| <= 1e-11·max(1, z)` or the bracket is exhausted. The first
/// solve anchors at 0 (enough while `f64` resolves θ to well below ε); otherwise it is repeated
/// anchored at the float nearest to the θ found, where `v_i − c` is exact for the entries near θ.
fn theta_wide<F: Real>(v: &[F], z: F, eps: f64, vmin: F, vmax: F) -> (F, f64) {
    let (zf, lf) = (z.to_f64().expect("finite"), v.len() as f64);
    let (vmin, vmax) = (
        vmin.to_f64().expect("finite"),
        vmax.to_f64().expect("finite"),
    );
    let inv = 1.0 / eps;
    let shift = eps * (zf / (lf - zf)).ln();
    let tol = 1e-11 * zf;
    let solve = |c: f64, t0: Option<f64>| -> f64 {
        let (mut lo, mut hi) = ((vmin - c) - shift, (vmax - c) - shift);
        let mut t = t0.map_or(0.5 * lo + 0.5 * hi, |t| t.max(lo).min(hi));
        for _ in 0..200 {
            let (sum, slope) = sums_wide(v, c, t, inv);
            let f = sum - zf;
            if f.abs() <= tol {
                break;
            }
            if f > 0.0 {
                lo = t;
            } else {
                hi = t;
            }
            let newton = t + f * eps / slope.max(f64::MIN_POSITIVE);
            t = if newton > lo && newton < hi {
                newton
            } else {
                0.5 * lo + 0.5 * hi
            };
            if hi - lo <= 4.0 * f64::EPSILON * (t.abs() + eps) {
                break;
            }
        }
        t
    };
    let theta = solve(0.0, None);
    if theta.abs() * f64::EPSILON <= 1e-9 * eps {
        return (F::zero(), theta);
    }
    // Nearest float to θ, kept inside the row's range (and finite).
    let c = F::from_f64(theta)
        .filter(|c| c.is_finite())
        .unwrap_or_else(|| F::from_f64(vmax).expect("finite"));
    let c = c
        .max(F::from_f64(vmin).expect("finite"))
        .min(F::from_f64(vmax).expect("finite"));
    let c64 = c.to_f64().expect("finite");
    (c, solve(c64, Some(theta - c64)))
}

impl SmoothCappedSimplex {
    /// The wide solver's output for `v` (`vmin ..= vmax`) into `out`; returns `1/ε` in the
    /// row's type.
    #[inline]
    fn apply_wide<F: Real>(&self, v: &[F], z: F, vmin: F, vmax: F, out: &mut [F]) -> F {
        let (c, t) = theta_wide(v, z, self.eps, vmin, vmax);
        let (c, inv) = (c.to_f64().expect("finite"), 1.0 / self.eps);
        for (o, &x) in out.iter_mut().zip(v) {
            *o = F::from_f64(sigmoid_f64(((x.to_f64().expect("finite") - c) - t) * inv))
                .expect("in [0, 1]");
        }
        F::from_f64(inv).expect("eps representable")
    }

    pub(crate) fn check_eps(&self) -> Result<(), ProjError> {
        if self.eps.is_finite() && self.eps > 0.0 {
            Ok(())
        } else {
            Err(ProjError::InvalidParameter {
                name: "eps",
                value: self.eps,
                allowed: crate::any::POSITIVE.to_string(),
            })
        }
    }
}

/// `θ` of the plain solver, in the row's own type: Newton's method on `Σ σ((v_i − θ)/ε) = z`
/// inside the bracket `[vmin − εt, vmax − εt]` (the original solver; the trained models depend
/// on its results bit for bit).
#[inline]
fn theta_plain<F: Real>(v: &[F], z: F, eps: F, vmin: F, vmax: F) -> F {
    let lf = F::from_usize(v.len()).expect("length fits");
    let inv = F::one() / eps;
    let t = (z / (lf - z)).ln();
    let (mut lo, mut hi) = (vmin - eps * t, vmax - eps * t);
    let mut theta = (lo + hi) / (F::one() + F::one());
    // Stop well below the rounding noise of f32 sums; f64 rows get close to machine precision
    // (gradient checks difference the output). The bracket test below ends the loop when the
    // sum cannot get any closer.
    // Relative to `z`: a row with no labels drives `z` towards 0, where an absolute
    // tolerance would accept a sum many times `z`.
    let tol = F::epsilon().sqrt() * F::from_f64(1e-3).expect("constant") * z;
    for _ in 0..100 {
        let (mut sum, mut slope) = (F::zero(), F::zero());
        for &x in v {
            let y = sigmoid((x - theta) * inv);
            sum += y;
            slope += y * (F::one() - y);
        }
        let f = sum - z;
        if f.abs() <= tol {
            break;
        }
        // f is decreasing in θ: keep the root bracketed.
        if f > F::zero() {
            lo = theta;
        } else {
            hi = theta;
        }
        let newton = theta + f * eps / slope.max(F::min_positive_value());
        theta = if newton > lo && newton < hi {
            newton
        } else {
            (lo + hi) / (F::one() + F::one())
        };
        if hi - lo <= F::epsilon() * (F::one() + theta.abs()) {
            break;
        }
    }
    theta
}

impl<F: Real> Projector<F> for SmoothCappedSimplex {
    type Tape = SmoothTape<F>;

    fn forward(
        &self,
        v: &[F],
        z: F,
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        self.check_eps()?;
        validate(v, z, out.len(), ZRange::UpToLen)?;
        let l = v.len();
        let lf = F::from_usize(l).expect("length fits");
        tape.out.clear();
        if z <= F::zero() || z >= lf {
            // The set is a single point.
            let fill = if z <= F::zero() { F::zero() } else { F::one() };
            out.fill(fill);
            tape.out.extend_from_slice(out);
            tape.inv_eps = F::zero();
            return Ok(());
        }
        let (mut vmin, mut vmax) = (v[0], v[0]);
        for &x in v {
            vmin = vmin.min(x);
            vmax = vmax.max(x);
        }
        let plain_abs = F::from_f64(PLAIN_MAX_ABS).expect("constant");
        let inv = if l > PLAIN_MAX_LEN || vmin < -plain_abs || vmax > plain_abs {
            self.apply_wide(v, z, vmin, vmax, out)
        } else {
            let eps = F::from_f64(self.eps).expect("eps representable");
            let theta = theta_plain(v, z, eps, vmin, vmax);
            let inv = F::one() / eps;
            for (o, &x) in out.iter_mut().zip(v) {
                *o = sigmoid((x - theta) * inv);
            }
            inv
        };
        tape.out.extend_from_slice(out);
        tape.inv_eps = inv;
        Ok(())
    }

    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        if tape.inv_eps == F::zero() {
            gv.fill(F::zero());
            return F::zero();
        }
        let (mut s_sum, mut gs) = (F::zero(), F::zero());
        for (&u, &gi) in tape.out.iter().zip(g) {
            let s = u * (F::one() - u);
            s_sum += s;
            gs += gi * s;
        }
        if s_sum <= F::zero() {
            gv.fill(F::zero());
            return F::zero();
        }
        let gz = gs / s_sum;
        for ((o, &u), &gi) in gv.iter_mut().zip(&tape.out).zip(g) {
            *o = u * (F::one() - u) * tape.inv_eps * (gi - gz);
        }
        gz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<(Vec<f64>, f64)> {
        let mut g = cardinal_testkit::Lcg::new(3);
        let mut r = || g.uniform();
        (0..30)
            .map(|i| {
                let l = 2 + i % 9;
                let v: Vec<f64> = (0..l).map(|_| 3.0 * r() - 1.0).collect();
                let z = r() * l as f64;
                (v, z)
            })
            .collect()
    }

    #[test]
    fn output_is_feasible_and_matches_the_closed_form() {
        for eps in [0.02, 0.3, 2.0] {
            let p = SmoothCappedSimplex { eps };
            for (v, z) in rows() {
                let mut out = vec![0.0; v.len()];
                let mut tape = SmoothTape::default();
                p.forward(&v, z, &mut out, &mut tape).unwrap();
                let sum: f64 = out.iter().sum();
                assert!((sum - z).abs() <= 1e-6 * z.max(1.0), "sum {sum} vs z {z}");
                assert!(out.iter().all(|&u| (0.0..=1.0).contains(&u)));
                // Stationarity: logit(u_i)·ε + θ = v_i with one θ for all interior i.
                let thetas: Vec<f64> = v
                    .iter()
                    .zip(&out)
                    .filter(|(_, &u)| u > 1e-9 && u < 1.0 - 1e-9)
                    .map(|(&x, &u)| x - eps * (u / (1.0 - u)).ln())
                    .collect();
                for w in thetas.windows(2) {
                    assert!((w[0] - w[1]).abs() < 1e-5, "θ differs: {thetas:?}");
                }
            }
        }
    }

    #[test]
    fn vjp_matches_finite_differences() {
        let p = SmoothCappedSimplex { eps: 0.25 };
        for (v, z) in rows() {
            if z < 0.05 || z > v.len() as f64 - 0.05 {
                continue;
            }
            let g: Vec<f64> = (0..v.len())
                .map(|i| ((i * 7 + 3) % 5) as f64 - 2.0)
                .collect();
            let f = |v: &[f64], z: f64| {
                let mut out = vec![0.0; v.len()];
                p.forward(v, z, &mut out, &mut SmoothTape::default())
                    .unwrap();
                out.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>()
            };
            let mut out = vec![0.0; v.len()];
            let mut tape = SmoothTape::default();
            p.forward(&v, z, &mut out, &mut tape).unwrap();
            let mut gv = vec![0.0; v.len()];
            let gz = p.vjp(&tape, &g, &mut gv);
            let h = 1e-6;
            for i in 0..v.len() {
                let (mut a, mut b) = (v.clone(), v.clone());
                a[i] += h;
                b[i] -= h;
                let fd = (f(&a, z) - f(&b, z)) / (2.0 * h);
                assert!((fd - gv[i]).abs() < 1e-5, "dv[{i}]: fd {fd} vs {}", gv[i]);
            }
            let fd = (f(&v, z + h) - f(&v, z - h)) / (2.0 * h);
            assert!((fd - gz).abs() < 1e-5, "dz: fd {fd} vs {gz}");
        }
    }

    #[test]
    fn small_eps_approaches_top_z() {
        let p = SmoothCappedSimplex { eps: 1e-3 };
        let v = [0.9, -0.2, 0.5, 0.1, 0.7];
        let mut out = [0.0f64; 5];
        p.forward(&v, 2.0, &mut out, &mut SmoothTape::default())
            .unwrap();
        let expect = [1.0, 0.0, 0.0, 0.0, 1.0];
        for (o, e) in out.iter().zip(expect) {
            assert!((o - e).abs() < 1e-3, "{out:?}");
        }
    }

    #[test]
    fn bounds_and_invalid_input() {
        let p = SmoothCappedSimplex { eps: 0.1 };
        let mut out = [9.0f64; 3];
        let mut tape = SmoothTape::default();
        p.forward(&[0.1, 0.2, 0.3], 0.0, &mut out, &mut tape)
            .unwrap();
        assert_eq!(out, [0.0; 3]);
        let mut gv = [1.0; 3];
        assert_eq!(p.vjp(&tape, &[1.0, 2.0, 3.0], &mut gv), 0.0);
        assert_eq!(gv, [0.0; 3]);
        p.forward(&[0.1, 0.2, 0.3], 3.0, &mut out, &mut tape)
            .unwrap();
        assert_eq!(out, [1.0; 3]);
        assert!(p
            .forward(&[0.1, f64::NAN], 1.0, &mut [0.0; 2], &mut tape)
            .is_err());
        assert!(p
            .forward(&[0.1, 0.2], 2.5, &mut [0.0; 2], &mut tape)
            .is_err());
        assert!(SmoothCappedSimplex { eps: 0.0 }
            .forward(&[0.1, 0.2], 1.0, &mut [0.0; 2], &mut tape)
            .is_err());
    }
}
