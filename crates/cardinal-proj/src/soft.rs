//! The paper's Algorithm 1 (soft projection onto `B(z)`) as the authors' released code computes
//! it, including the ReLU inside the softsign:
//!
//! ```text
//! μ = sort_desc(v), c = cumsum(μ), j = 1..L,
//! r_j = j μ_j − (c_j − z),  δ_j = softsign(relu(r_j)),  ρ = softmax(j δ_j),
//! N = Σ c_j ρ_j,  D = Σ j ρ_j (≥ 1),  θ = (N − z)/D,  out = relu(v − θ).
//! ```
//!
//! Backward (reverse mode, `a = 1[v − θ > 0]`): `ḡ_v ← g⊙a`, `θ̄ = −Σ g⊙a`;
//! `N̄ = θ̄/D`, `D̄ = −θ̄ θ/D`, `z̄ = −θ̄/D`; `ρ̄_j = N̄ c_j + D̄ j` and, since
//! `Σ ρ_j ρ̄_j = N̄ N + D̄ D`, the softmax adjoint is `ā_j = ρ_j (ρ̄_j − N̄N − D̄D)`;
//! `r̄_j = j ā_j 1[r_j > 0]/(1 + r_j)²`; `r` feeds `μ̄_j += j r̄_j`, `c̄_j −= r̄_j`, `z̄ += r̄_j`;
//! `c̄_j += N̄ ρ_j`; the cumsum adjoint is a suffix sum, `μ̄_k += Σ_{j≥k} c̄_j`; finally μ̄ is
//! scattered back through the sort permutation.

//!
//! Implementation: let `h` be one past the last `j` with `r_j > 0`. For `j > h` the logit
//! `j δ_j` is exactly 0, so the tail shares one softmax weight `ρ_t`; only the head needs
//! exponentials, and the tail enters `N` and `D` through `Σ_{j>h} c_j` (a running sum) and
//! `Σ_{j>h} j` (closed form). In the backward pass the tail has `r̄_j = 0`, leaving only the
//! suffix sum. The sort compares packed integer keys (see `util::argsort_desc`).

use crate::util::{
    argsort_desc, masked_copy_sum, of, repair_order, validate, validate_shape, SortScratch, ZRange,
};
use crate::{ProjError, Projector, Real};

/// Algorithm 1 of the paper (authors' variant with relu inside softsign), `z ≥ 0`;
/// [`crate::SoftSimplexPrinted`] is the algorithm as printed, without the relu.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoftSimplex;

/// Tape of [`SoftSimplex`].
#[derive(Debug, Clone, Default)]
pub struct SoftTape<F> {
    perm: Vec<u32>,
    sort: SortScratch,
    /// `c_j` and `j/(1 + r_j)²` over the head `r_j > 0`.
    c: Vec<F>,
    r: Vec<F>,
    /// Softmax weights of the head `j ≤ h`; `rho_tail` is the weight of every later j.
    rho: Vec<F>,
    rho_tail: F,
    active: Vec<F>,
    theta: F,
    n: F,
    d: F,
}

/// Lanes of the tail loops (independent partial sums, so that they pipeline).
const LANES: usize = 8;

/// Cumsum pass over `v` in the order `t.perm`: fills the head's `c`, `r` and softmax weights, the
/// tail weight and `N`, `D`. Returns `false` (computing nothing further) if `t.perm` does not
/// sort `v` descending or the row is not finite.
///
/// `r_{j+1} − r_j = j (μ_{j+1} − μ_j) ≤ 0`, so the head `{r_j > 0}` is a prefix: the serial
/// cumsum stops at the first `r_j ≤ 0` and the tail needs only
/// `Σ_{j>h} c_j = (L − h) c_h + Σ_{i>h} (L − i + 1) μ_i`, an independent weighted sum.
///
/// Contract (a hand-pipelined loop, exempt from the house limit on function length): `trusted`
/// skips the order and finiteness checks only for a `t.perm` this module sorted itself; the
/// tail's partial sums run in [`LANES`] fixed lanes, so the result does not depend on the
/// target's vector width.
fn scan<F: Real>(v: &[F], z: F, t: &mut SoftTape<F>, trusted: bool) -> bool {
    let l = v.len();
    let (zero, one) = (F::zero(), F::one());
    t.c.clear();
    t.r.clear();
    let mut c = zero;
    let mut prev = F::infinity();
    let mut sorted = true;
    for (k, &i) in t.perm.iter().enumerate() {
        let m = v[i as usize];
        let j: F = of(k + 1);
        let cn = c + m;
        let r = j * m - (cn - z);
        // `r <= 0` or NaN ends the head.
        if r.partial_cmp(&zero) != Some(std::cmp::Ordering::Greater) {
            break;
        }
        sorted &= m <= prev;
        prev = m;
        c = cn;
        t.c.push(c);
        t.r.push(r);
    }
    let head = t.c.len();
    let n_tail = l - head;
    // Head logits; `r` is then replaced by the VJP's factor j/(1 + r_j)².
    // Tail logits are exactly 0, so they take part in the max (stable softmax).
    let mut amax = if n_tail > 0 { zero } else { F::neg_infinity() };
    t.rho.clear();
    for (k, r) in t.r.iter_mut().enumerate() {
        let j: F = of(k + 1);
        let iq = one / (one + *r);
        let a = j * *r * iq;
        amax = amax.max(a);
        t.rho.push(a);
        *r = j * iq * iq;
    }
    // exp of anything below `cutoff` is exactly 0 (under the smallest subnormal): skip it.
    let cutoff = (F::min_positive_value() * F::epsilon()).ln() - one;
    let mut s = zero;
    for a in t.rho.iter_mut() {
        let x = *a - amax;
        *a = if x < cutoff { zero } else { x.exp() };
        s += *a;
    }
    let e_tail = if n_tail > 0 {
        (zero - amax).exp()
    } else {
        zero
    };
    // Tail: Σ_{i ≥ head} (l − i) μ_i (0-based i) and the order check, in independent lanes.
    // With a zero tail weight neither matters, except the check for an order we were given.
    let mut wsum = zero;
    if n_tail > 0 && (e_tail > zero || !trusted) {
        let mut acc = [zero; LANES];
        let mut w0: F = of(n_tail);
        let tail = &t.perm[head..];
        let mut chunks = tail.chunks_exact(LANES);
        for ch in &mut chunks {
            let mut ms = [zero; LANES];
            for q in 0..LANES {
                ms[q] = v[ch[q] as usize];
            }
            sorted &= ms[0] <= prev;
            for q in 1..LANES {
                sorted &= ms[q] <= ms[q - 1];
            }
            prev = ms[LANES - 1];
            for q in 0..LANES {
                acc[q] += (w0 - of(q)) * ms[q];
            }
            w0 -= of(LANES);
        }
        for (q, &i) in chunks.remainder().iter().enumerate() {
            let m = v[i as usize];
            sorted &= m <= prev;
            prev = m;
            acc[q] += (w0 - of(q)) * m;
        }
        wsum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    if !(sorted && prev.is_finite() && v[t.perm[0] as usize].is_finite()) {
        return false;
    }
    s += of::<F>(n_tail) * e_tail;
    let (mut n, mut d) = (zero, zero);
    let inv_s = one / s;
    for (k, (p, &ck)) in t.rho.iter_mut().zip(&t.c).enumerate() {
        *p *= inv_s;
        n += ck * *p;
        d += of::<F>(k + 1) * *p;
    }
    let p_tail = e_tail * inv_s;
    if n_tail > 0 && p_tail > zero {
        let ctail = of::<F>(n_tail) * c + wsum;
        // Σ_{j=head+1}^{l} j, exact in integers.
        let j_tail = (l * (l + 1) - head * (head + 1)) / 2;
        n += ctail * p_tail;
        d += of::<F>(j_tail) * p_tail;
    }
    t.rho_tail = p_tail;
    t.n = n;
    t.d = d;
    true
}

/// `out = relu(v − θ)` and the active mask, from the `N`, `D` of [`scan`].
fn finish<F: Real>(v: &[F], z: F, out: &mut [F], t: &mut SoftTape<F>) {
    let (zero, one) = (F::zero(), F::one());
    let theta = (t.n - z) / t.d;
    t.active.resize(v.len(), zero);
    for ((o, a), &x) in out.iter_mut().zip(t.active.iter_mut()).zip(v) {
        let u = x - theta;
        let pos = u > zero;
        *o = if pos { u } else { zero };
        *a = if pos { one } else { zero };
    }
    t.theta = theta;
}

impl<F: Real> Projector<F> for SoftSimplex {
    type Tape = SoftTape<F>;

    fn forward(&self, v: &[F], z: F, out: &mut [F], t: &mut Self::Tape) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::NonNegative)?;
        argsort_desc(v, &mut t.perm, &mut t.sort);
        let ok = scan(v, z, t, true);
        debug_assert!(ok, "a fresh argsort must sort a finite row");
        finish(v, z, out, t);
        Ok(())
    }

    fn uses_order(&self) -> bool {
        true
    }

    fn forward_ordered(
        &self,
        v: &[F],
        z: F,
        order: &[u32],
        out: &mut [F],
        t: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        validate_shape(v, z, out.len(), ZRange::NonNegative)?;
        if order.len() != v.len() {
            return self.forward(v, z, out, t);
        }
        t.perm.clear();
        t.perm.extend_from_slice(order);
        if !scan(v, z, t, false) {
            // Not sorted: in Dykstra, `q = c − b` can move entries by an ulp, so repair the
            // nearly sorted order; else (or if not finite) sort here, where `forward` also
            // reports non-finite input.
            if !(repair_order(v, &mut t.perm, &mut t.c) && scan(v, z, t, true)) {
                return self.forward(v, z, out, t);
            }
        }
        finish(v, z, out, t);
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        let zero = F::zero();
        let dtheta = -masked_copy_sum(&t.active, g, gv);
        let dn = dtheta / t.d;
        let dd = -dtheta * t.theta / t.d;
        let gz = -dtheta / t.d;
        let dot = dn * t.n + dd * t.d;
        let head = t.rho.len();
        // Tail: r̄ = 0, only the suffix sum of c̄_j = N̄ ρ_t remains; at 0-based position i it is
        // (l − i) N̄ ρ_t (closed form, no serial chain).
        let l = t.perm.len();
        let step = dn * t.rho_tail;
        if step != zero {
            let tail = &t.perm[head..];
            let mut w0: F = of(l - head);
            let mut chunks = tail.chunks_exact(LANES);
            for ch in &mut chunks {
                for q in 0..LANES {
                    gv[ch[q] as usize] += (w0 - of(q)) * step;
                }
                w0 -= of(LANES);
            }
            for (q, &i) in chunks.remainder().iter().enumerate() {
                gv[i as usize] += (w0 - of(q)) * step;
            }
        }
        let mut suffix = of::<F>(l - head) * step;
        let mut gz = gz;
        for k in (0..head).rev() {
            let j: F = of(k + 1);
            let rho = t.rho[k];
            // Head entries have r > 0: r̄ = j ā/(1 + r)².
            let da = rho * (dn * t.c[k] + dd * j - dot);
            let dr = da * t.r[k];
            gz += dr;
            suffix += dn * rho - dr;
            gv[t.perm[k] as usize] += j * dr + suffix;
        }
        gz
    }
}
