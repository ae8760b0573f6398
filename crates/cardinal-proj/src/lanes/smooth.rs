//! The smoothed projection ([`SmoothCappedSimplex`]) for a block of rows, one row per lane,
//! with the per-row operator's numbers bit for bit.
//!
//! Every lane runs the per-row solver's safeguarded Newton iteration on its own `θ`, with the
//! same operations in the same order: its sums run over the entries in order within the lane,
//! so only the lanes are interleaved, never the terms of one sum. A lane leaves the iteration
//! where its row stops; the others go on. The exponential is the one the row calls (per lane,
//! and only for the lanes still iterating), so the outputs equal the row's to the bit on any
//! platform. Lanes outside the single-float solver's range (long rows, large entries) and lanes
//! whose `z` is at a bound or whose input is invalid are handed to the per-row operator itself.

use super::{splat, Lanes, LANES};
use crate::smooth::{PLAIN_MAX_ABS, PLAIN_MAX_LEN};
use crate::{ProjError, Projector, Real, SmoothCappedSimplex, SmoothTape};

/// [`SmoothCappedSimplex`] for blocks of rows in lanes (`L` lane vectors `[F; N]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothLanes {
    /// Temperature ε (finite, > 0), as [`SmoothCappedSimplex::eps`].
    pub eps: f64,
}

/// What [`SmoothLanes::vjp`] needs (the output and each lane's `1/ε`, 0 where `z` is at a
/// bound), and the buffers of the lanes handed to the per-row operator; reused across calls.
#[derive(Debug, Clone)]
pub struct SmoothLanesTape<F, const N: usize = LANES> {
    out: Vec<Lanes<F, N>>,
    inv: Lanes<F, N>,
    row: Vec<F>,
    row_out: Vec<F>,
    row_tape: SmoothTape<F>,
    /// Lanes that run the Newton iteration, and those of them still iterating.
    newton: Vec<usize>,
    active: Vec<usize>,
}

impl<F: Real, const N: usize> Default for SmoothLanesTape<F, N> {
    fn default() -> Self {
        Self {
            out: Vec::new(),
            inv: splat(F::zero()),
            row: Vec::new(),
            row_out: Vec::new(),
            row_tape: SmoothTape::default(),
            newton: Vec::new(),
            active: Vec::new(),
        }
    }
}

/// `−|a|` into `e`, then `e ← exp(e)` for the lanes in `lanes`: the exponential `sigmoid`
/// takes of `a` on either side of 0.
#[inline(always)]
fn neg_abs_exp<F: Real, const N: usize>(a: &Lanes<F, N>, e: &mut Lanes<F, N>, lanes: &[usize]) {
    for w in 0..N {
        e[w] = -a[w].abs();
    }
    // The row's own exponential, one call per lane: the same bits as the row.
    for &w in lanes {
        e[w] = e[w].exp();
    }
}

/// `sigmoid(a)` from `e = exp(−|a|)`, as the row's `sigmoid` forms it.
#[inline(always)]
fn sigmoid_from<F: Real>(a: F, e: F) -> F {
    if a >= F::zero() {
        F::one() / (F::one() + e)
    } else {
        e / (F::one() + e)
    }
}

/// Per lane: `θ`, the bracket, the tolerance, and whether it is still iterating.
struct Newton<F, const N: usize> {
    theta: Lanes<F, N>,
    lo: Lanes<F, N>,
    hi: Lanes<F, N>,
    tol: Lanes<F, N>,
}

impl SmoothLanes {
    /// The per-row operator with this temperature.
    fn row(&self) -> SmoothCappedSimplex {
        SmoothCappedSimplex { eps: self.eps }
    }

    /// Projects every lane of `v` (length `L`) with its count `z[w]` into `out` and records
    /// `t` for [`Self::vjp`]: lane `w` of `out` is bit for bit what
    /// [`SmoothCappedSimplex::forward`] writes for row `w`. Errors as the per-row operator
    /// does, for the first lane (in lane order) that it refuses.
    #[inline(always)]
    pub fn forward<F: Real, const N: usize>(
        &self,
        v: &[Lanes<F, N>],
        z: &Lanes<F, N>,
        out: &mut [Lanes<F, N>],
        t: &mut SmoothLanesTape<F, N>,
    ) -> Result<(), ProjError> {
        let row = self.row();
        row.check_eps()?;
        let l = v.len();
        if l == 0 {
            return Err(ProjError::Empty);
        }
        if out.len() != l {
            return Err(ProjError::LengthMismatch {
                input: l,
                output: out.len(),
            });
        }
        let (zero, one) = (F::zero(), F::one());
        let (mut vmin, mut vmax, mut finite) = (v[0], v[0], [true; N]);
        for x in v {
            for w in 0..N {
                vmin[w] = vmin[w].min(x[w]);
                vmax[w] = vmax[w].max(x[w]);
                finite[w] &= x[w].is_finite();
            }
        }
        let lf = F::from_usize(l).expect("length fits");
        let plain_abs = F::from_f64(PLAIN_MAX_ABS).expect("constant");
        let eps = F::from_f64(self.eps).expect("eps representable");
        let inv = one / eps;
        // Lanes the row operator handles: invalid input (it reports the error), `z` at a bound,
        // the wide solver's range.
        let mut by_row = [false; N];
        for w in 0..N {
            let zf = z[w].to_f64().unwrap_or(f64::NAN);
            let valid = zf >= 0.0 && zf <= l as f64 && finite[w];
            by_row[w] = !valid
                || z[w] <= zero
                || z[w] >= lf
                || l > PLAIN_MAX_LEN
                || vmin[w] < -plain_abs
                || vmax[w] > plain_abs;
        }
        t.newton.clear();
        t.newton.extend((0..N).filter(|&w| !by_row[w]));
        t.active.clone_from(&t.newton);
        let theta = self.theta_lanes(v, z, vmin, vmax, &mut t.active);
        for (o, x) in out.iter_mut().zip(v) {
            let mut a = [zero; N];
            for w in 0..N {
                a[w] = (x[w] - theta[w]) * inv;
            }
            let mut e = [zero; N];
            neg_abs_exp(&a, &mut e, &t.newton);
            let mut y = [zero; N];
            for w in 0..N {
                y[w] = sigmoid_from(a[w], e[w]);
            }
            *o = y;
        }
        t.inv = splat(inv);
        for w in (0..N).filter(|&w| by_row[w]) {
            t.row.clear();
            t.row.extend(v.iter().map(|x| x[w]));
            t.row_out.resize(l, zero);
            row.forward(&t.row, z[w], &mut t.row_out, &mut t.row_tape)?;
            for (o, &y) in out.iter_mut().zip(&t.row_out) {
                o[w] = y;
            }
            t.inv[w] = t.row_tape.inv_eps;
        }
        t.out.clear();
        t.out.extend_from_slice(out);
        Ok(())
    }

    /// `θ` of the lanes in `active` (each removed where it stops): the per-row solver's Newton iteration
    /// (`theta_plain` in `smooth.rs`), operation for operation, each lane stopping where its
    /// row stops.
    #[inline(always)]
    fn theta_lanes<F: Real, const N: usize>(
        &self,
        v: &[Lanes<F, N>],
        z: &Lanes<F, N>,
        vmin: Lanes<F, N>,
        vmax: Lanes<F, N>,
        active: &mut Vec<usize>,
    ) -> Lanes<F, N> {
        let (zero, one) = (F::zero(), F::one());
        let two = one + one;
        let lf = F::from_usize(v.len()).expect("length fits");
        let eps = F::from_f64(self.eps).expect("eps representable");
        let inv = one / eps;
        let tol_unit = F::epsilon().sqrt() * F::from_f64(1e-3).expect("constant");
        let mut s = Newton {
            theta: splat(zero),
            lo: splat(zero),
            hi: splat(zero),
            tol: splat(zero),
        };
        for &w in active.iter() {
            let t = (z[w] / (lf - z[w])).ln();
            s.lo[w] = vmin[w] - eps * t;
            s.hi[w] = vmax[w] - eps * t;
            s.theta[w] = (s.lo[w] + s.hi[w]) / two;
            s.tol[w] = tol_unit * z[w];
        }
        for _ in 0..100 {
            if active.is_empty() {
                break;
            }
            let (mut sum, mut slope) = ([zero; N], [zero; N]);
            for x in v {
                let mut a = [zero; N];
                for w in 0..N {
                    a[w] = (x[w] - s.theta[w]) * inv;
                }
                let mut e = [zero; N];
                neg_abs_exp(&a, &mut e, active);
                for w in 0..N {
                    let y = sigmoid_from(a[w], e[w]);
                    sum[w] += y;
                    slope[w] += y * (one - y);
                }
            }
            active.retain(|&w| {
                let f = sum[w] - z[w];
                if f.abs() <= s.tol[w] {
                    return false;
                }
                // f is decreasing in θ: keep the root bracketed.
                if f > zero {
                    s.lo[w] = s.theta[w];
                } else {
                    s.hi[w] = s.theta[w];
                }
                let newton = s.theta[w] + f * eps / slope[w].max(F::min_positive_value());
                s.theta[w] = if newton > s.lo[w] && newton < s.hi[w] {
                    newton
                } else {
                    (s.lo[w] + s.hi[w]) / two
                };
                s.hi[w] - s.lo[w] > F::epsilon() * (one + s.theta[w].abs())
            });
        }
        s.theta
    }

    /// Given `g = ∂ℓ/∂out` of the [`Self::forward`] that filled `t`, writes `∂ℓ/∂v` into `gv`
    /// and returns `∂ℓ/∂z`, lane by lane: [`SmoothCappedSimplex::vjp`]'s numbers bit for bit.
    #[inline(always)]
    pub fn vjp<F: Real, const N: usize>(
        &self,
        t: &SmoothLanesTape<F, N>,
        g: &[Lanes<F, N>],
        gv: &mut [Lanes<F, N>],
    ) -> Lanes<F, N> {
        let (zero, one) = (F::zero(), F::one());
        let (mut s_sum, mut gs) = ([zero; N], [zero; N]);
        for (u, gi) in t.out.iter().zip(g) {
            for w in 0..N {
                let s = u[w] * (one - u[w]);
                s_sum[w] += s;
                gs[w] += gi[w] * s;
            }
        }
        // A lane with `z` at a bound or no slope gets zeros, as the row does.
        let mut live = [false; N];
        let mut gz = [zero; N];
        for w in 0..N {
            live[w] = t.inv[w] != zero && s_sum[w] > zero;
            gz[w] = if live[w] { gs[w] / s_sum[w] } else { zero };
        }
        for (o, (u, gi)) in gv.iter_mut().zip(t.out.iter().zip(g)) {
            let mut d = [zero; N];
            for w in 0..N {
                let x = u[w] * (one - u[w]) * t.inv[w] * (gi[w] - gz[w]);
                d[w] = if live[w] { x } else { zero };
            }
            *o = d;
        }
        gz
    }
}

#[cfg(test)]
mod tests;
