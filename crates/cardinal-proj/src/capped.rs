//! Exact Euclidean projection onto the capped simplex `C(z) = {0 <= u <= 1, Σu = z}`.
//!
//! KKT: `u_i = clip(v_i − τ, 0, 1)` where τ solves `g(τ) = Σ_i clip(v_i − τ, 0, 1) − z = 0`.
//! `g` is continuous, non-increasing and piecewise linear with breakpoints `v_i` and `v_i − 1`;
//! on a piece with `U` = {ones} and `F` = {free: 0 < v_i − τ < 1} its root is
//! `τ = (Σ_F v_i − (z − |U|)) / |F|` (the paper's Eq. (lambda)).
//!
//! Jacobian (almost everywhere): with `m = 1_F`, `∂u/∂v = diag(m) − m mᵀ/|F|`, `∂u/∂z = m/|F|`,
//! hence the VJP `ḡ_v = m ⊙ (g − mean_F g)`, `ḡ_z = mean_F g`. If `F = ∅` (integer z with every
//! coordinate at a bound) the projection is locally constant in v and we return the zero
//! subgradient (never dividing by |F| = 0).

use crate::util::{desc, of, validate, ZRange};
use crate::{ProjError, Projector, Real};

/// Exact projection onto `C(z)`, `z ∈ [0, L]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CappedSimplex;

/// Tape of [`CappedSimplex`]: the free-set indicator (as 0/1 floats, so the VJP vectorises).
#[derive(Debug, Clone, Default)]
pub struct CappedTape<F> {
    mask: Vec<F>,
    n_free: usize,
}

impl<F: Real> CappedTape<F> {
    /// Number of free coordinates `|F|` of the last forward.
    pub fn n_free(&self) -> usize {
        self.n_free
    }
}

/// One O(L) pass: (|U|, |F|, Σ_F v) at `tau`, with U = {v−τ ≥ 1}, F = {0 < v−τ < 1}.
#[inline]
fn pieces<F: Real>(v: &[F], tau: F) -> (F, F, F) {
    let (zero, one) = (F::zero(), F::one());
    let (mut n_one, mut n_free, mut s_free) = (zero, zero, zero);
    // Counts are accumulated as floats (exact below 2^24) and with selects, not branches,
    // so that the loop vectorises; several accumulators shorten the dependency chains.
    for &x in v {
        let d = x - tau;
        let is_one = d >= one;
        let is_free = d > zero && !is_one;
        n_one += if is_one { one } else { zero };
        n_free += if is_free { one } else { zero };
        s_free += if is_free { x } else { zero };
    }
    (n_one, n_free, s_free)
}

/// τ of the exact capped-simplex projection by safeguarded Newton on `g` (expected O(L)).
///
/// Each step jumps to the root of the linear piece containing the current τ; a bracket
/// `[lo, hi]` with `g(lo) ≥ 0 ≥ g(hi)` falls back to bisection when a jump leaves it. The
/// iteration stops once the free/one sets at the new τ equal those the jump was computed from
/// (τ is then the exact root of a piece that contains it). Falls back to the sort-based method
/// after a fixed number of steps, so termination is guaranteed.
pub fn capped_simplex_tau<F: Real>(v: &[F], z: F) -> Result<F, ProjError> {
    validate(v, z, v.len(), ZRange::UpToLen)?;
    Ok(tau_newton(v, z))
}

pub(crate) fn tau_newton<F: Real>(v: &[F], z: F) -> F {
    let l = v.len();
    let (mut vmin, mut vmax, mut vsum) = (v[0], v[0], F::zero());
    for &x in v {
        vmin = vmin.min(x);
        vmax = vmax.max(x);
        vsum += x;
    }
    let (mut lo, mut hi) = (vmin - F::one(), vmax);
    if z <= F::zero() {
        return hi;
    }
    if z >= of(l) {
        return lo;
    }
    let half = F::from_f64(0.5).unwrap();
    // Guess "everything free": exact when no coordinate hits a bound.
    let mut tau = ((vsum - z) / of(l)).max(lo).min(hi);
    let mut prev: Option<(F, F)> = None;
    for _ in 0..64 {
        let (n_one, n_free, s_free) = pieces(v, tau);
        if prev == Some((n_one, n_free)) && n_free > F::zero() {
            // Same piece as the one whose root `tau` is: exact.
            return tau;
        }
        let g = n_one + s_free - n_free * tau - z;
        if g == F::zero() {
            return tau;
        }
        if g > F::zero() {
            lo = tau;
        } else {
            hi = tau;
        }
        if hi - lo <= F::epsilon() * (F::one() + lo.abs().max(hi.abs())) {
            // Bracket collapsed to a few ulps; settle on the local piece (or the midpoint of a
            // flat piece where every coordinate is at a bound).
            return if n_free > F::zero() {
                (s_free - (z - n_one)) / n_free
            } else {
                half * (lo + hi)
            };
        }
        let mut next = if n_free > F::zero() {
            (s_free - (z - n_one)) / n_free
        } else {
            lo - F::one()
        };
        if !(next > lo && next < hi) {
            next = half * (lo + hi);
            prev = None;
        } else {
            prev = Some((n_one, n_free));
        }
        tau = next;
    }
    let mut scratch = Vec::new();
    tau_sorted(v, z, &mut scratch)
}

/// τ of the exact capped-simplex projection by sorting and scanning the 2L breakpoints
/// (O(L log L), deterministic). `scratch` is reused for the sorted copy.
pub fn capped_simplex_tau_sort<F: Real>(
    v: &[F],
    z: F,
    scratch: &mut Vec<F>,
) -> Result<F, ProjError> {
    validate(v, z, v.len(), ZRange::UpToLen)?;
    Ok(tau_sorted(v, z, scratch))
}

pub(crate) fn tau_sorted<F: Real>(v: &[F], z: F, mu: &mut Vec<F>) -> F {
    let l = v.len();
    mu.clear();
    mu.extend_from_slice(v);
    mu.sort_unstable_by(desc);
    let one = F::one();
    // Walk the merged breakpoints mu_b (b-th coordinate turns positive) and mu_a − 1 (a-th turns
    // into a one) in decreasing order. Ones are mu[..a], free mu[a..b].
    let (mut a, mut b) = (0usize, 0usize);
    let mut s_free = F::zero();
    loop {
        let take_b = b < l && (a >= b || mu[b] >= mu[a] - one);
        let t = if take_b { mu[b] } else { mu[a] - one };
        let n_free = b - a;
        let g = of::<F>(a) + s_free - of::<F>(n_free) * t - z;
        if g >= F::zero() {
            if n_free == 0 {
                return t;
            }
            // Recompute the free sum directly: the running sum may have cancelled digits.
            let s: F = mu[a..b].iter().copied().sum();
            let tau = (s - (z - of(a))) / of(n_free);
            return tau.max(t);
        }
        if take_b {
            s_free += mu[b];
            b += 1;
        } else {
            s_free -= mu[a];
            a += 1;
        }
        if a == l {
            // Unreachable for z <= L (g ≥ 0 at the last breakpoint); keep a safe answer.
            return mu[l - 1] - one;
        }
    }
}

/// Writes `clip(v − τ, 0, 1)` and the free mask; returns |F|.
#[inline]
pub(crate) fn apply_tau<F: Real>(v: &[F], tau: F, out: &mut [F], mask: &mut Vec<F>) -> usize {
    let (zero, one) = (F::zero(), F::one());
    mask.clear();
    mask.resize(v.len(), zero);
    let mut n = zero;
    for ((o, m), &x) in out.iter_mut().zip(mask.iter_mut()).zip(v) {
        let u = (x - tau).max(zero).min(one);
        *o = u;
        let f = if u > zero && u < one { one } else { zero };
        *m = f;
        n += f;
    }
    n.to_usize().unwrap_or(0)
}

/// The VJP of a masked mean-projection: `gv = m ⊙ (g − mean_F g)`, returns `mean_F g`.
#[inline]
pub(crate) fn masked_centered_vjp<F: Real>(mask: &[F], n: usize, g: &[F], gv: &mut [F]) -> F {
    if n == 0 {
        gv.iter_mut().for_each(|x| *x = F::zero());
        return F::zero();
    }
    let s: F = mask.iter().zip(g).map(|(&m, &gi)| m * gi).sum();
    let mean = s / of(n);
    for ((o, &m), &gi) in gv.iter_mut().zip(mask).zip(g) {
        *o = m * (gi - mean);
    }
    mean
}

impl<F: Real> Projector<F> for CappedSimplex {
    type Tape = CappedTape<F>;

    fn forward(
        &self,
        v: &[F],
        z: F,
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::UpToLen)?;
        let tau = tau_newton(v, z);
        tape.n_free = apply_tau(v, tau, out, &mut tape.mask);
        Ok(())
    }

    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        masked_centered_vjp(&tape.mask, tape.n_free, g, gv)
    }
}
