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
//!
//! Scale: `u_i` needs τ to an absolute precision near 1, which one float lacks once `|τ|` is
//! large (the `f32` spacing at 1e7 is 1). Thresholds with `|τ| > 1024` are therefore kept as an
//! anchor (a float near τ) plus a small offset ([`tau_anchored`]), so that the projection is
//! correct at any scale of finite input; below, the single-float τ is used as it always was.
//! Rows longer than [`LONG_ROW`] sum `g` with compensation ([`eval_wide`]) and keep the last
//! sub-ulp step of τ as an offset, so that `Σu` meets `z` to the rounding of the outputs
//! however long the row; shorter rows keep their results bit for bit.

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
///
/// Where τ is too large for one float to resolve the output (`|τ| > 1024`), the
/// projection works with τ as an anchor plus a small offset; this returns their rounded sum,
/// the float nearest to τ (the projection itself does not round it).
pub fn capped_simplex_tau<F: Real>(v: &[F], z: F) -> Result<F, ProjError> {
    validate(v, z, v.len(), ZRange::UpToLen)?;
    Ok(match threshold(v, z, row_stats(v)) {
        Threshold::One(tau) => tau,
        Threshold::Anchored(c, t) => c + t,
    })
}

/// τ as [`CappedSimplex`] applies it.
enum Threshold<F> {
    /// One float: `u = clip(v − τ, 0, 1)`.
    One(F),
    /// Anchor and offset: `u = clip((v − c) − t, 0, 1)`.
    Anchored(F, F),
}

/// Rows longer than this sum their residuals with compensation ([`eval_wide`]) and keep τ as
/// the float the iteration ends on plus the remaining offset; shorter rows with `|τ| <= 1024`
/// keep the single-float τ bit for bit.
const LONG_ROW: usize = 8192;

fn threshold<F: Real>(v: &[F], z: F, st: RowStats<F>) -> Threshold<F> {
    if v.len() <= LONG_ROW {
        let (tau, _) = tau_newton_with::<F, false>(v, z, st);
        if fits_one_float(tau) {
            return Threshold::One(tau);
        }
        let (c, t) = tau_anchored::<F, false>(v, z, st, tau);
        return Threshold::Anchored(c, t);
    }
    let (tau, rest) = tau_newton_with::<F, true>(v, z, st);
    if fits_one_float(tau) {
        return Threshold::Anchored(tau, rest);
    }
    let (c, t) = tau_anchored::<F, true>(v, z, st, tau);
    Threshold::Anchored(c, t)
}

const LANES: usize = 4;
/// Float lane counters are exact below 2^24; rows are reduced in blocks well under that.
const BLOCK: usize = 1 << 20;

/// At `tau`: (Σ clip(x − τ, 0, 1), #ones, #free). Explicit lanes let LLVM vectorise without
/// reassociating float sums; everything is computed with selects, no branches, and the counts
/// are float lanes (no mask-to-integer conversions).
///
/// With `A` (anchored), the threshold is `c + τ` and the differences are `(x − c) − τ` (see
/// [`tau_anchored`]); without, `c` is unused and the code is the plain `x − τ`.
#[inline]
fn eval_at<F: Real, const A: bool>(xs: &[F], c: F, tau: F) -> (F, usize, usize) {
    let (zero, one) = (F::zero(), F::one());
    let mut s = [zero; 4];
    let mut n1 = [0u32; 4];
    let mut nf = [0u32; 4];
    let chunks = xs.chunks_exact(4);
    let rest = chunks.remainder();
    for ch in chunks {
        for k in 0..4 {
            let d = diff::<F, A>(ch[k], c, tau);
            let lo = if d > zero { d } else { zero };
            s[k] += if lo < one { lo } else { one };
            n1[k] += (d >= one) as u32;
            nf[k] += ((d > zero) & (d < one)) as u32;
        }
    }
    for (k, &x) in rest.iter().enumerate() {
        let d = diff::<F, A>(x, c, tau);
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

/// `x − τ`, or with `A` the anchored `(x − c) − τ`.
#[inline(always)]
fn diff<F: Real, const A: bool>(x: F, c: F, tau: F) -> F {
    if A {
        (x - c) - tau
    } else {
        x - tau
    }
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
    tau_newton_with::<F, false>(v, z, row_stats(v)).0
}

/// τ by [`newton`] in `F`, and with `W` the remaining offset (see there).
fn tau_newton_with<F: Real, const W: bool>(v: &[F], z: F, st: RowStats<F>) -> (F, F) {
    let l = v.len();
    let (zero, one) = (F::zero(), F::one());
    let (vmin, vmax, vsum) = (st.min, st.max, st.sum);
    let (lo, hi) = (vmin - one, vmax);
    if z <= zero {
        return (hi, zero);
    }
    if z >= of(l) {
        return (lo, zero);
    }
    let tau = if l >= SAMPLE_MIN_LEN {
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
    newton::<F, false, W>(v, z, zero, lo, hi, tau.max(lo).min(hi))
}

/// The safeguarded Newton iteration of [`capped_simplex_tau`] from `tau` in the bracket
/// `[lo, hi]`; with `A`, on the anchored differences `(v_i − c) − τ` (τ relative to `c`).
///
/// Returns τ and, with `W` (long rows: compensated residuals, [`eval_wide`]), the
/// remaining step `g(τ)/|F|` of the piece τ ends on, too small to add to τ in `F` (0 without
/// `W`): the root is their exact sum.
fn newton<F: Real, const A: bool, const W: bool>(
    v: &[F],
    z: F,
    c: F,
    mut lo: F,
    mut hi: F,
    mut tau: F,
) -> (F, F) {
    let (zero, one) = (F::zero(), F::one());
    let mut prev: Option<(usize, usize)> = None;
    for _ in 0..100 {
        let (g, n_one, n_free) = if W {
            eval_wide::<F, A>(v, c, tau, z)
        } else {
            let (s, n_one, n_free) = eval_at::<F, A>(v, c, tau);
            (s - z, n_one, n_free)
        };
        if n_free > 0 && prev == Some((n_one, n_free)) {
            // Same piece as the one whose root τ is (up to rounding τ).
            return (tau, if W { g / of(n_free) } else { zero });
        }
        if W && n_free > 0 && tau + g / of(n_free) == tau {
            // The root is closer to τ than F resolves: the step is the remaining offset (an
            // entry it would move across a breakpoint is off by less than the step).
            return (tau, g / of(n_free));
        }
        if g == zero {
            return (tau, zero);
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
            let tau = if n_free > 0 {
                root.max(lo).min(hi)
            } else {
                mid::<F, A>(lo, hi)
            };
            return (tau, zero);
        }
        if root > lo && root < hi {
            tau = root;
            prev = Some((n_one, n_free));
        } else {
            tau = mid::<F, A>(lo, hi);
            prev = None;
        }
    }
    let tau = if A {
        let w: Vec<F> = v.iter().map(|&x| x - c).collect();
        tau_sorted(&w, z, &mut Vec::new())
    } else {
        tau_sorted(v, z, &mut Vec::new())
    };
    (tau, zero)
}

/// Midpoint of the bracket; the anchored bracket may span most of the float range, so its
/// halves are added instead of its ends (which could overflow).
#[inline]
fn mid<F: Real, const A: bool>(lo: F, hi: F) -> F {
    let half = F::from_f64(0.5).unwrap();
    if A {
        half * lo + half * hi
    } else {
        half * (lo + hi)
    }
}

/// Whether `tau` is small enough to be used as one float: `|τ| <= 1024`, where its rounding
/// moves each `u_i` by at most half an ulp of 1024 (`2^-14` in `f32`, `2^-43` in `f64`).
/// Larger thresholds go through [`tau_anchored`]. (The limit keeps every row with
/// `|v_i| <= 1000` on the single-float path, bit for bit as before the anchored path existed.)
#[inline]
fn fits_one_float<F: Real>(tau: F) -> bool {
    tau.abs() <= F::from_f64(ONE_FLOAT_TAU).unwrap()
}

/// The largest `|τ|` of [`fits_one_float`].
const ONE_FLOAT_TAU: f64 = 1024.0;

/// The threshold as `c + t` with an anchor `c` near τ and `|t| <= 1`, for rows where τ is so
/// large that one float cannot resolve `u_i = clip(v_i − τ, 0, 1)` (at `v ≈ 1e7` the `f32`
/// spacing is 1: `v = (1e7, 1e7, 0)`, `z = 1` has τ = 1e7 − 0.5, and rounding τ gave `u = 0`).
///
/// Newton runs on `g(t) = Σ clip((v_i − c) − t, 0, 1) − z`. Every entry that can be free lies
/// within 2 of `c`, so `v_i − c` is exact for it (Sterbenz, once `|c| >= 4`; below, the
/// rounding is at most a few ulps of 1), and `t` is a small number with full relative
/// precision: the output is as accurate as for a row near 0. Entries far from `c` only need
/// the side of the bracket they are on, which rounding cannot change. `estimate` (the
/// single-float τ) is usually within a few ulps of τ; if not, the anchor moves to `c + t`
/// until `|t| <= 1` (each move shrinks the distance by a factor ε_F).
///
/// With `W` (long rows), the iteration sums with compensation, and a last solve re-anchors at
/// the float nearest to τ, so that the offset is as tiny as on the single-float path of long
/// rows.
fn tau_anchored<F: Real, const W: bool>(v: &[F], z: F, st: RowStats<F>, estimate: F) -> (F, F) {
    let (zero, one) = (F::zero(), F::one());
    let (vmin, vmax) = (st.min, st.max);
    let big = F::max_value();
    let clamp = |x: F| {
        if x.is_finite() {
            x.max(vmin).min(vmax)
        } else {
            vmax
        }
    };
    // τ − c as (offset, remaining offset): the bracket of g's root in the offset (infinite
    // differences capped, so that midpoints stay finite), then the iteration from `t0`.
    let solve = |c: F, t0: F| -> (F, F) {
        let lo = ((vmin - c) - one).max(-big);
        let hi = (vmax - c).min(big);
        if z <= zero {
            (hi, zero)
        } else if z >= of(v.len()) {
            (lo, zero)
        } else {
            newton::<F, true, W>(v, z, c, lo, hi, t0.max(lo).min(hi))
        }
    };
    let mut c = clamp(estimate);
    let (mut t, mut rest) = (zero, zero);
    for _ in 0..16 {
        (t, rest) = solve(c, zero);
        if t.abs() <= one {
            break;
        }
        let next = clamp(c + t);
        if next == c {
            break;
        }
        c = next;
    }
    if W && z > zero && z < of(v.len()) {
        // c + t rounded, and its exact rounding error (|t| <= 1 < |c|: Fast2Sum).
        let next = clamp(c + t);
        let err = t - (next - c);
        if next != c && err.abs() <= one {
            c = next;
            (t, rest) = solve(c, err);
        }
    }
    (c, t + rest)
}

/// [`eval_at`] for rows longer than [`LONG_ROW`], with compensated (Kahan) lane sums; returns
/// (g = Σ clip(x − τ, 0, 1) − z, #ones, #free), g formed in `f64`. The plain `F` lane sums of
/// [`eval_at`] lose the small terms of long rows (with 10⁵ `f32` entries, a lane sum near
/// 25 000 is only resolved to 0.002, and τ inherits that error divided by |F|); compensated,
/// the error stays a few ulps of the sum whatever the length. (Kahan's recurrence in `F`
/// lanes vectorises; a conversion to `f64` per entry did not.)
fn eval_wide<F: Real, const A: bool>(xs: &[F], c: F, tau: F, z: F) -> (F, usize, usize) {
    // More lanes than `eval_at`: each step of Kahan's recurrence is a chain of four dependent
    // additions, so 16 independent lanes keep the vector units busy.
    const LANES: usize = 16;
    let (zero, one) = (F::zero(), F::one());
    let mut s = [zero; LANES];
    let mut comp = [zero; LANES];
    let mut n1 = [0u32; LANES];
    let mut nf = [0u32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for ch in chunks {
        for k in 0..LANES {
            let d = diff::<F, A>(ch[k], c, tau);
            let lo = if d > zero { d } else { zero };
            let y = (if lo < one { lo } else { one }) - comp[k];
            let t = s[k] + y;
            comp[k] = (t - s[k]) - y;
            s[k] = t;
            n1[k] += (d >= one) as u32;
            nf[k] += ((d > zero) & (d < one)) as u32;
        }
    }
    for (k, &x) in rest.iter().enumerate() {
        let d = diff::<F, A>(x, c, tau);
        let y = d.max(zero).min(one) - comp[k];
        let t = s[k] + y;
        comp[k] = (t - s[k]) - y;
        s[k] = t;
        n1[k] += (d >= one) as u32;
        nf[k] += ((d > zero) & (d < one)) as u32;
    }
    let wide = |x: F| x.to_f64().unwrap_or(f64::NAN);
    let total: f64 = (0..LANES).map(|k| wide(s[k]) - wide(comp[k])).sum();
    (
        F::from_f64(total - wide(z)).unwrap_or(F::nan()),
        n1.iter().map(|&n| n as usize).sum(),
        nf.iter().map(|&n| n as usize).sum(),
    )
}

/// τ of the exact capped-simplex projection by sorting and scanning the 2L breakpoints
/// (O(L log L), deterministic). `scratch` is reused for the sorted copy. τ is one float here:
/// at large scales (`|τ| > 1024`) it is rounded, and `clip(v − τ, 0, 1)` can then be far from
/// the projection, which [`CappedSimplex`] computes with an anchored τ instead.
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

/// Writes `clip(v − τ, 0, 1)` (with `A`, `clip((v − c) − τ, 0, 1)`) and the free mask;
/// returns |F|. (Not inlined: inlined twice into `forward`, once per `A`, its loops stopped
/// being vectorised.)
#[inline(never)]
pub(crate) fn apply_tau<F: Real, const A: bool>(
    v: &[F],
    c: F,
    tau: F,
    out: &mut [F],
    mask: &mut Vec<F>,
) -> usize {
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
                let d = diff::<F, A>(x[k], c, tau);
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
            let d = diff::<F, A>(x, c, tau);
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
        tape.n_free = match threshold(v, z, st) {
            Threshold::One(tau) => apply_tau::<F, false>(v, F::zero(), tau, out, &mut tape.mask),
            Threshold::Anchored(c, t) => apply_tau::<F, true>(v, c, t, out, &mut tape.mask),
        };
        Ok(())
    }

    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        masked_centered_vjp(&tape.mask, tape.n_free, g, gv)
    }
}

#[cfg(test)]
mod tests;
