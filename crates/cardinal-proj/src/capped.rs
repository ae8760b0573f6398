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

use crate::util::{check_finite, desc, of, validate, validate_shape, ZRange};
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

/// τ of the exact capped-simplex projection in expected O(L): safeguarded Newton on `g`.
///
/// A bracket `[lo, hi]` with `g(lo) ≥ 0 ≥ g(hi)` is kept. Each step jumps to the root of the
/// linear piece containing the current τ, `τ + g(τ)/|F(τ)|`, falling back to bisection when the
/// jump leaves the bracket; it stops when the new τ lies in the piece it was computed from
/// (same `|U|`, `|F|`), i.e. τ is the exact root of a piece containing it. On random rows this
/// takes a handful of passes; each pass is branch-free and vectorised. A step cap with a
/// sort-based fallback guarantees termination.
pub fn capped_simplex_tau<F: Real>(v: &[F], z: F) -> Result<F, ProjError> {
    validate(v, z, v.len(), ZRange::UpToLen)?;
    Ok(tau_newton(v, z))
}

const LANES: usize = 4;
/// Float lane counters are exact below 2^24; rows are reduced in blocks well under that.
const BLOCK: usize = 1 << 20;

/// At `tau`: (Σ clip(x − τ, 0, 1), #ones, #free). Explicit lanes let LLVM vectorise without
/// reassociating float sums; everything is computed with selects, no branches, and the counts
/// are float lanes (no mask-to-integer conversions).
#[inline]
fn eval_at<F: Real>(xs: &[F], tau: F) -> (F, usize, usize) {
    let (zero, one) = (F::zero(), F::one());
    let mut s = [zero; 4];
    let mut n1 = [0u32; 4];
    let mut nf = [0u32; 4];
    let chunks = xs.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            let d = c[k] - tau;
            let lo = if d > zero { d } else { zero };
            s[k] += if lo < one { lo } else { one };
            n1[k] += (d >= one) as u32;
            nf[k] += ((d > zero) & (d < one)) as u32;
        }
    }
    for (k, &x) in rest.iter().enumerate() {
        let d = x - tau;
        s[k] += d.max(zero).min(one);
        n1[k] += (d >= one) as u32;
        nf[k] += ((d > zero) & (d < one)) as u32;
    }
    let total = (s[0] + s[1]) + (s[2] + s[3]);
    (
        total,
        n1.iter().sum::<u32>() as usize,
        nf.iter().sum::<u32>() as usize,
    )
}

#[inline]
fn lane_sum<F: Real>(s: &[F; LANES]) -> F {
    (s[0] + s[1]) + (s[2] + s[3])
}

/// Minimum, maximum and sum of a row in one vectorisable pass. A finite sum implies that every
/// entry is finite (NaN and ±∞ propagate), so callers check finiteness only when it is not.
#[derive(Clone, Copy)]
pub(crate) struct RowStats<F> {
    min: F,
    max: F,
    sum: F,
}

pub(crate) fn row_stats<F: Real>(v: &[F]) -> RowStats<F> {
    let zero = F::zero();
    let mut mn = [v[0]; LANES];
    let mut mx = [v[0]; LANES];
    let mut total = zero;
    for block in v.chunks(BLOCK) {
        let mut vs = [zero; LANES];
        let chunks = block.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for k in 0..LANES {
                let x = c[k];
                mn[k] = if x < mn[k] { x } else { mn[k] };
                mx[k] = if x > mx[k] { x } else { mx[k] };
                vs[k] += x;
            }
        }
        for (k, &x) in rest.iter().enumerate() {
            mn[k] = if x < mn[k] { x } else { mn[k] };
            mx[k] = if x > mx[k] { x } else { mx[k] };
            vs[k] += x;
        }
        total += lane_sum(&vs);
    }
    let (mut vmin, mut vmax) = (mn[0], mx[0]);
    for k in 1..LANES {
        vmin = if mn[k] < vmin { mn[k] } else { vmin };
        vmax = if mx[k] > vmax { mx[k] } else { vmax };
    }
    RowStats {
        min: vmin,
        max: vmax,
        sum: total,
    }
}

/// Size of the sample whose τ starts the Newton iteration on long rows.
const SAMPLE: usize = 32;
const SAMPLE_MIN_LEN: usize = 4 * SAMPLE;

pub(crate) fn tau_newton<F: Real>(v: &[F], z: F) -> F {
    tau_newton_with(v, z, row_stats(v))
}

fn tau_newton_with<F: Real>(v: &[F], z: F, st: RowStats<F>) -> F {
    let l = v.len();
    let (zero, one) = (F::zero(), F::one());
    let (vmin, vmax, vsum) = (st.min, st.max, st.sum);
    let (mut lo, mut hi) = (vmin - one, vmax);
    if z <= zero {
        return hi;
    }
    if z >= of(l) {
        return lo;
    }
    let half = F::from_f64(0.5).unwrap();
    let mut tau = if l >= SAMPLE_MIN_LEN {
        // Start from the root for an evenly spaced sample (cardinality scaled to the sample):
        // only a starting point, the bracket below keeps every step safe.
        let mut sample = [zero; SAMPLE];
        for (k, x) in sample.iter_mut().enumerate() {
            *x = v[k * l / SAMPLE];
        }
        let zs = z * of(SAMPLE) / of(l);
        tau_newton(&sample, zs)
    } else {
        // Guess "everything free": exact when no coordinate hits a bound.
        (vsum - z) / of(l)
    };
    tau = tau.max(lo).min(hi);
    let mut prev: Option<(usize, usize)> = None;
    for _ in 0..100 {
        let (s, n_one, n_free) = eval_at(v, tau);
        if n_free > 0 && prev == Some((n_one, n_free)) {
            return tau; // same piece as the one whose root τ is
        }
        let g = s - z;
        if g == zero {
            return tau;
        }
        if g > zero {
            lo = tau;
        } else {
            hi = tau;
        }
        // Differences x − τ keep full precision even for |v| ~ 1e6, unlike Σ_F v.
        let root = if n_free > 0 {
            tau + g / of(n_free)
        } else {
            lo - one
        };
        if hi - lo <= F::epsilon() * (one + lo.abs().max(hi.abs())) {
            // Bracket collapsed to a few ulps: settle on the local piece, or on the midpoint of a
            // flat piece where every coordinate is at a bound.
            return if n_free > 0 {
                root.max(lo).min(hi)
            } else {
                half * (lo + hi)
            };
        }
        if root > lo && root < hi {
            tau = root;
            prev = Some((n_one, n_free));
        } else {
            tau = half * (lo + hi);
            prev = None;
        }
    }
    tau_sorted(v, z, &mut Vec::new())
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
    mask.resize(v.len(), zero);
    let mut n = 0usize;
    let blocks = v
        .chunks(BLOCK)
        .zip(out.chunks_mut(BLOCK))
        .zip(mask.chunks_mut(BLOCK));
    for ((vb, ob), mb) in blocks {
        let mut cnt = [zero; LANES];
        let mut vc = vb.chunks_exact(LANES);
        let mut oc = ob.chunks_exact_mut(LANES);
        let mut mc = mb.chunks_exact_mut(LANES);
        for ((x, o), m) in (&mut vc).zip(&mut oc).zip(&mut mc) {
            for k in 0..LANES {
                let d = x[k] - tau;
                let lo = if d > zero { d } else { zero };
                o[k] = if lo < one { lo } else { one };
                let f = if d > zero { one } else { zero } - if d >= one { one } else { zero };
                m[k] = f;
                cnt[k] += f;
            }
        }
        let rest = vc
            .remainder()
            .iter()
            .zip(oc.into_remainder())
            .zip(mc.into_remainder());
        for (k, ((&x, o), m)) in rest.enumerate() {
            let d = x - tau;
            let lo = if d > zero { d } else { zero };
            *o = if lo < one { lo } else { one };
            let f = if d > zero { one } else { zero } - if d >= one { one } else { zero };
            *m = f;
            cnt[k] += f;
        }
        n += lane_sum(&cnt).to_usize().unwrap_or(0);
    }
    n
}

/// The VJP of a masked mean-projection: `gv = m ⊙ (g − mean_F g)`, returns `mean_F g`.
#[inline]
pub(crate) fn masked_centered_vjp<F: Real>(mask: &[F], n: usize, g: &[F], gv: &mut [F]) -> F {
    if n == 0 {
        gv.iter_mut().for_each(|x| *x = F::zero());
        return F::zero();
    }
    let mut acc = [F::zero(); LANES];
    let mut mc = mask.chunks_exact(LANES);
    let mut gc = g.chunks_exact(LANES);
    for (m, x) in (&mut mc).zip(&mut gc) {
        for k in 0..LANES {
            acc[k] += m[k] * x[k];
        }
    }
    for (k, (&m, &x)) in mc.remainder().iter().zip(gc.remainder()).enumerate() {
        acc[k] += m * x;
    }
    let mean = lane_sum(&acc) / of(n);
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
        validate_shape(v, z, out.len(), ZRange::UpToLen)?;
        let st = row_stats(v);
        if !(st.sum.is_finite() && st.min.is_finite() && st.max.is_finite()) {
            check_finite(v)?; // reports the entry; a sum that merely overflowed passes
        }
        let tau = tau_newton_with(v, z, st);
        tape.n_free = apply_tau(v, tau, out, &mut tape.mask);
        Ok(())
    }

    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        masked_centered_vjp(&tape.mask, tape.n_free, g, gv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_and_sort_agree_on_ties_and_bounds() {
        let cases: [(&[f64], f64); 5] = [
            (&[0.0, 0.0, 0.0, 0.0], 2.0),
            (&[3.0, 3.0, -3.0], 2.0),
            (&[0.5, 0.25], 0.0),
            (&[0.5, 0.25], 2.0),
            (&[1.0, 2.0, 3.0, 4.0, 5.0], 2.5),
        ];
        for (v, z) in cases {
            let a = tau_newton(v, z);
            let b = tau_sorted(v, z, &mut Vec::new());
            let s = |t: f64| v.iter().map(|x| (x - t).clamp(0.0, 1.0)).sum::<f64>();
            assert!(
                (s(a) - z).abs() < 1e-12 && (s(b) - z).abs() < 1e-12,
                "{v:?} {z}: {a} {b}"
            );
        }
    }

    #[test]
    fn empty_free_set_gives_zero_subgradient() {
        let mut gv = [7.0f64; 3];
        assert_eq!(
            masked_centered_vjp(&[0.0; 3], 0, &[1.0, 2.0, 3.0], &mut gv),
            0.0
        );
        assert_eq!(gv, [0.0; 3]);
    }
}
