//! One soft Dykstra round over a block: the inner input of the round (a coordinate-wise map of
//! the input given the earlier rounds' thresholds) and the soft simplex threshold scan over it.

use super::{splat, Lanes};
use crate::util::of;
use crate::Real;

/// Dykstra's inner input `c_k` of round `k = thetas.len() + 1` for the entries `x`, given the
/// earlier rounds' thresholds: round 1 `a = min(x, 1)`, `p = x − a`, `c = a`; then per round
/// `b = relu(c − θ)`, `q = c − b`, `x = b + p`, `a = min(x, 1)`, `p = x − a`, `c = a + q`.
#[inline(always)]
pub(super) fn inner_input<F: Real, const N: usize>(
    x: &Lanes<F, N>,
    thetas: &[Lanes<F, N>],
    c: &mut Lanes<F, N>,
) {
    let (zero, one) = (F::zero(), F::one());
    let mut p = [zero; N];
    for w in 0..N {
        let a = if x[w] <= one { x[w] } else { one };
        p[w] = x[w] - a;
        c[w] = a;
    }
    for theta in thetas {
        for w in 0..N {
            let u = c[w] - theta[w];
            let b = if u > zero { u } else { zero };
            let q = c[w] - b;
            let x = b + p[w];
            let a = if x <= one { x } else { one };
            p[w] = x - a;
            c[w] = a + q;
        }
    }
}

/// The threshold `θ` of the soft simplex projection (see `soft.rs`) of every lane of the inner
/// input `c` of the round after `thetas` (mapped on the fly from the descending input
/// `sorted`): the same arithmetic as the per-row scan, lane by lane, except that the tail's
/// weighted sum is accumulated in one pass with the head instead of in eight partial sums.
///
/// The head's `c_j`, softmax weights and (if asked) `j/(1 + r_j)²` go to the first
/// [`SoftRound::len`] entries of `head_c`, `head_a` and `head_r` (each at least `L` long; see
/// [`room_for_head`]): written by position, with no `push` whose reallocation call would make
/// LLVM save the scan's vector registers on every step, and straight where the caller keeps
/// them (the tape), with no copy.
#[inline(always)]
pub(super) fn soft_theta<F: Real, const N: usize>(
    sorted: &[Lanes<F, N>],
    z: &Lanes<F, N>,
    thetas: &[Lanes<F, N>],
    head_c: &mut [Lanes<F, N>],
    head_a: &mut [Lanes<F, N>],
    mut head_r: Option<&mut [Lanes<F, N>]>,
) -> SoftRound<F, N> {
    let l = sorted.len();
    let (zero, one) = (F::zero(), F::one());
    let (head_c, head_a) = (&mut head_c[..l], &mut head_a[..l]);
    let mut len = 0;
    // One pass: while a lane's r_j = j μ_j − (c_j − z) > 0 (its head, a prefix), its cumsum,
    // logit j r/(1 + r) and head length advance; after it, Σ_{i ≥ head} (l − i) μ_i (0-based).
    let mut c = splat::<F, N>(zero);
    let mut active = splat::<F, N>(one);
    let mut head = splat::<F, N>(zero);
    let mut wsum = splat::<F, N>(zero);
    let mut any_head = true;
    for (k, x) in sorted.iter().enumerate() {
        let mut m = [zero; N];
        inner_input(x, thetas, &mut m);
        let j: F = of(k + 1);
        let weight: F = of(l - k);
        if any_head {
            let mut cs = splat::<F, N>(zero);
            let mut logit = splat::<F, N>(F::neg_infinity());
            let mut rfac = splat::<F, N>(zero);
            for w in 0..N {
                let cn = c[w] + m[w];
                let r = j * m[w] - (cn - z[w]);
                let now = (active[w] > zero) & (r > zero);
                active[w] = if now { one } else { zero };
                c[w] = if now { cn } else { c[w] };
                head[w] += active[w];
                let iq = one / (one + r);
                let a = j * r * iq;
                logit[w] = if now { a } else { F::neg_infinity() };
                rfac[w] = if now { j * iq * iq } else { zero };
                cs[w] = c[w];
                let t = weight * m[w];
                wsum[w] += if now { zero } else { t };
            }
            // A separate pass, not a count in the loop: a float sum over lanes is an ordered
            // reduction that keeps LLVM from vectorising the loop.
            any_head = active.iter().any(|&a| a > zero);
            if any_head {
                head_c[len] = cs;
                head_a[len] = logit;
                if let Some(hr) = head_r.as_deref_mut() {
                    hr[len] = rfac;
                }
                len += 1;
            }
        } else {
            for w in 0..N {
                wsum[w] += weight * m[w];
            }
        }
    }
    let (head_c, head_a) = (&head_c[..len], &mut head_a[..len]);
    let lf: F = of(l);
    let mut amax = splat::<F, N>(F::neg_infinity());
    for w in 0..N {
        if head[w] < lf {
            amax[w] = zero;
        }
    }
    for a in head_a.iter() {
        for w in 0..N {
            amax[w] = if a[w] > amax[w] { a[w] } else { amax[w] };
        }
    }
    let cutoff = (F::min_positive_value() * F::epsilon()).ln() - one;
    let mut sum = splat::<F, N>(zero);
    for a in head_a.iter_mut() {
        let mut x = [zero; N];
        for w in 0..N {
            x[w] = a[w] - amax[w];
        }
        let mut e = x;
        F::exp_in_place(&mut e);
        for w in 0..N {
            // −∞ (past this lane's head) and underflow give exactly 0, as in the per-row scan.
            a[w] = if x[w] < cutoff { zero } else { e[w] };
            sum[w] += a[w];
        }
    }
    // Per lane as in the per-row scan, written over whole lane vectors (a lane past its head
    // adds exact zeros), so that it vectorises: the tail weight e^{−amax}, the softmax
    // normaliser, N = Σ c_j ρ_j and D = Σ j ρ_j, the head's ρ normalised in place (the tape
    // keeps them). `n_tail` and Σ_{j>h} j = (l(l+1) − h(h+1))/2 are exact in `F` for the lengths
    // we handle.
    let mut e_tail = splat::<F, N>(zero);
    for w in 0..N {
        e_tail[w] = zero - amax[w];
    }
    F::exp_in_place(&mut e_tail);
    let (mut inv_s, mut num, mut den) = (
        splat::<F, N>(zero),
        splat::<F, N>(zero),
        splat::<F, N>(zero),
    );
    let half: F = of::<F>(1) / of::<F>(2);
    for w in 0..N {
        let n_tail = lf - head[w];
        e_tail[w] = if n_tail > zero { e_tail[w] } else { zero };
        inv_s[w] = one / (sum[w] + n_tail * e_tail[w]);
    }
    for (k, (a, cc)) in head_a.iter_mut().zip(head_c.iter()).enumerate() {
        let j: F = of(k + 1);
        // On a local copy of the lane vector (stores through `a` lane by lane get vectorised
        // across positions, with gathers and scatters).
        let mut av = *a;
        for w in 0..N {
            let p = av[w] * inv_s[w];
            av[w] = p;
            let inh = j <= head[w];
            num[w] += if inh { cc[w] * p } else { zero };
            den[w] += if inh { j * p } else { zero };
        }
        *a = av;
    }
    let mut out = SoftRound {
        theta: splat::<F, N>(zero),
        n: splat::<F, N>(zero),
        d: splat::<F, N>(zero),
        rho_tail: splat::<F, N>(zero),
        head: [0; N],
        len,
    };
    for w in 0..N {
        let n_tail = lf - head[w];
        let p_tail = e_tail[w] * inv_s[w];
        let ctail = n_tail * c[w] + wsum[w];
        let j_tail = (lf * (lf + one) - head[w] * (head[w] + one)) * half;
        let tail = (n_tail > zero) & (p_tail > zero);
        num[w] += if tail { ctail * p_tail } else { zero };
        den[w] += if tail { j_tail * p_tail } else { zero };
        out.theta[w] = (num[w] - z[w]) / den[w];
        out.rho_tail[w] = p_tail;
    }
    out.n = num;
    out.d = den;
    for w in 0..N {
        out.head[w] = head[w].to_u32().expect("a head length");
    }
    out
}

/// Grows `buf` (never shrinks it) so that a head of up to `l` positions fits from `start`.
pub(super) fn room_for_head<F: Real, const N: usize>(
    buf: &mut Vec<Lanes<F, N>>,
    start: usize,
    l: usize,
) {
    if buf.len() < start + l {
        buf.resize(start + l, splat(F::zero()));
    }
}

/// What one soft simplex projection of a block computes besides its head: the threshold `θ`,
/// `N`, `D`, the tail's softmax weight and the head length, per lane.
pub(super) struct SoftRound<F, const N: usize> {
    pub(super) theta: Lanes<F, N>,
    pub(super) n: Lanes<F, N>,
    pub(super) d: Lanes<F, N>,
    pub(super) rho_tail: Lanes<F, N>,
    pub(super) head: Lanes<u32, N>,
    /// Head positions written (the longest head over the lanes).
    pub(super) len: usize,
}
