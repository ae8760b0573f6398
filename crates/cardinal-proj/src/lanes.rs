//! The paper's inference operator, soft Dykstra ([`crate::Dykstra`] over [`crate::SoftSimplex`]),
//! for [`LANES`] rows at once, one row per SIMD lane: forward ([`SoftDykstraLanes::forward`],
//! inference) and forward with tape plus VJP ([`SoftDykstraLanes::forward_tape`],
//! [`SoftDykstraLanes::vjp`], training).
//!
//! Layout: a block of rows is `L` lane vectors `[F; N]` (`N` = [`LANES`] unless chosen
//! otherwise); entry `i` of row `w` is `x[i][w]`.
//! Every step is the same for all rows, so each loop runs over whole lane vectors:
//! * the sort is a sorting network (Batcher's odd-even merge sort, pruned to `L`), whose
//!   comparators are lane-wise max/min;
//! * the soft simplex head scan runs while any lane is still in its head (masked per lane);
//! * the forward pass needs no permutation: each Dykstra round is a coordinate-wise non-decreasing map of the
//!   input, so applying the same maps to the sorted input gives every round's sorted inner input
//!   (one sort per projection), and the output is the maps applied to the input itself.
//!
//! For the VJP the sort carries indices (ties put in the per-row argsort's order), and the soft
//! projection's VJP is taken in sorted coordinates over the head only; the tail's closed form
//! is added in original coordinates from a rank table.
//!
//! Floating-point rounding can make `q = c − b` non-monotone by an ulp among nearly equal
//! entries; the per-row operator repairs its order there, this one scans the mapped sorted
//! sequence as it is. The two agree to rounding (`tests/lanes.rs`); their VJPs agree wherever
//! the repair does not reorder entries (then they rank two entries an ulp apart differently).

use crate::util::of;
use crate::{ProjError, Real};

/// Rows per block: four AVX-512 registers of `f32` per entry (measured on Bibtex: 64 lanes run
/// 1.7× faster than 16 and 1.5× faster than 128, whose blocks leave the L2 cache).
pub const LANES: usize = 64;

/// One entry of each of the [`LANES`] rows of a block.
pub type Lanes<F, const N: usize = LANES> = [F; N];

/// A descending sorting network for `n` entries: Batcher's odd-even merge sort pruned to `n`.
#[derive(Debug, Clone)]
pub struct SortingNetwork {
    n: usize,
    /// Comparators `(i, j)`, `i < j`: afterwards `x[i] >= x[j]`.
    pairs: Vec<(u32, u32)>,
}

impl SortingNetwork {
    pub fn new(n: usize) -> Self {
        let mut pairs = Vec::new();
        let mut p = 1;
        while p < n {
            let mut k = p;
            while k >= 1 {
                let mut j = k % p;
                while j + k < n {
                    for i in 0..k.min(n - j - k) {
                        if (i + j) / (2 * p) == (i + j + k) / (2 * p) {
                            pairs.push(((i + j) as u32, (i + j + k) as u32));
                        }
                    }
                    j += 2 * k;
                }
                k /= 2;
            }
            p *= 2;
        }
        Self { n, pairs }
    }

    /// Number of entries it sorts.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of comparators.
    pub fn comparators(&self) -> usize {
        self.pairs.len()
    }

    /// Sorts every lane of `x` (length `n`, no NaN) descending.
    #[inline(always)]
    pub fn sort_desc<F: Real, const N: usize>(&self, x: &mut [Lanes<F, N>]) {
        assert_eq!(x.len(), self.n, "sorting network of another length");
        for &(i, j) in &self.pairs {
            let (lo, hi) = x.split_at_mut(j as usize);
            let (a, b) = (&mut lo[i as usize], &mut hi[0]);
            // Written as one max and one min of fresh values (x86 `maxps(q, p)`, `minps(p, q)`),
            // not as a conditional update, which compiles to a masked store that stalls the
            // next comparator's load of the same entry.
            let (mut hi, mut lo) = (*a, *b);
            for w in 0..N {
                let (p, q) = (a[w], b[w]);
                hi[w] = if q > p { q } else { p };
                lo[w] = if q > p { p } else { q };
            }
            *a = hi;
            *b = lo;
        }
    }

    /// [`Self::sort_desc`] carrying each entry's index in `idx` along (the same comparisons, so
    /// `x` ends up exactly as `sort_desc` leaves it). Tied entries end in no particular order.
    #[inline(always)]
    pub fn sort_desc_indexed<F: Real, const N: usize>(
        &self,
        x: &mut [Lanes<F, N>],
        idx: &mut [Lanes<u16, N>],
    ) {
        assert!(
            x.len() == self.n && idx.len() == self.n,
            "sorting network of another length"
        );
        for &(i, j) in &self.pairs {
            let (i, j) = (i as usize, j as usize);
            let (a, b, ia, ib) = (x[i], x[j], idx[i], idx[j]);
            let (mut hi, mut lo, mut ihi, mut ilo) = (a, b, ia, ib);
            // Values as in `sort_desc`; indices swapped by a bit mask (a select of the indices
            // compiles to a select of their addresses and gathers).
            for w in 0..N {
                let (p, q) = (a[w], b[w]);
                hi[w] = if q > p { q } else { p };
                lo[w] = if q > p { p } else { q };
                let m = (q > p) as u16;
                let flip = (ia[w] ^ ib[w]) & m.wrapping_neg();
                ihi[w] = ia[w] ^ flip;
                ilo[w] = ib[w] ^ flip;
            }
            x[i] = hi;
            x[j] = lo;
            idx[i] = ihi;
            idx[j] = ilo;
        }
    }
}

/// Puts tied entries of the sorted lanes `sorted` (indices `idx` into `v`) in the order of the
/// per-row argsort (`util::argsort_desc`: descending order key, then ascending index), so that
/// the VJP ranks tied entries as the per-row operator does. Runs of equal values are rare
/// outside constructed inputs: one vector pass finds them, a scalar pass fixes their lanes.
fn order_ties<F: Real, const N: usize>(
    v: &[Lanes<F, N>],
    sorted: &mut [Lanes<F, N>],
    idx: &mut [Lanes<u16, N>],
) {
    let n = sorted.len();
    let mut tied = [false; N];
    for k in 1..n {
        for w in 0..N {
            tied[w] |= sorted[k][w] == sorted[k - 1][w];
        }
    }
    let key = |w: usize, i: u16| (!v[i as usize][w].order_key(), i);
    for w in (0..N).filter(|&w| tied[w]) {
        let mut s = 0;
        while s < n {
            let mut e = s + 1;
            while e < n && sorted[e][w] == sorted[s][w] {
                e += 1;
            }
            // Insertion sort of the run by (key, index).
            for k in s + 1..e {
                let mut m = k;
                while m > s && key(w, idx[m][w]) < key(w, idx[m - 1][w]) {
                    let t = idx[m][w];
                    idx[m][w] = idx[m - 1][w];
                    idx[m - 1][w] = t;
                    m -= 1;
                }
            }
            for k in s..e {
                sorted[k][w] = v[idx[k][w] as usize][w];
            }
            s = e;
        }
    }
}

/// Soft Dykstra with `rounds` rounds on blocks of rows of length `n`.
#[derive(Debug, Clone)]
pub struct SoftDykstraLanes {
    rounds: usize,
    net: SortingNetwork,
}

/// Buffers of [`SoftDykstraLanes::forward`], reused across calls.
#[derive(Debug, Clone, Default)]
pub struct LanesScratch<F, const N: usize = LANES> {
    sorted: Vec<Lanes<F, N>>,
    /// Per head position: `c_j` and the softmax logit (then its weight).
    head_c: Vec<Lanes<F, N>>,
    head_a: Vec<Lanes<F, N>>,
    /// `θ` of each round so far.
    thetas: Vec<Lanes<F, N>>,
}

#[inline(always)]
fn splat<F: Real, const N: usize>(x: F) -> Lanes<F, N> {
    [x; N]
}

impl SoftDykstraLanes {
    pub fn new(rounds: usize, n: usize) -> Self {
        Self {
            rounds,
            net: SortingNetwork::new(n),
        }
    }

    /// Row length.
    pub fn len(&self) -> usize {
        self.net.len()
    }

    pub fn is_empty(&self) -> bool {
        self.net.is_empty()
    }

    /// The per-row operator's input errors: a non-finite entry, `z` outside `[0, n]`, a length
    /// mismatch.
    #[inline(always)]
    fn check<F: Real, const N: usize>(
        &self,
        v: &[Lanes<F, N>],
        z: &Lanes<F, N>,
        out: &[Lanes<F, N>],
    ) -> Result<(), ProjError> {
        let n = self.net.len();
        if n == 0 || v.len() != n || out.len() != n {
            return Err(if n == 0 || v.is_empty() {
                ProjError::Empty
            } else {
                ProjError::LengthMismatch {
                    input: v.len(),
                    output: out.len().min(n),
                }
            });
        }
        let len: F = of(n);
        for &zw in z {
            if !(zw >= F::zero() && zw <= len) {
                return Err(ProjError::InvalidZ {
                    z: zw.to_f64().unwrap_or(f64::NAN),
                    len: n,
                });
            }
        }
        let mut finite = [true; N];
        for x in v {
            for w in 0..N {
                finite[w] &= x[w].is_finite();
            }
        }
        if finite.iter().any(|&f| !f) {
            let (index, value) = v
                .iter()
                .enumerate()
                .find_map(|(i, x)| x.iter().find(|a| !a.is_finite()).map(|&a| (i, a)))
                .expect("a non-finite entry");
            return Err(ProjError::NonFinite {
                index,
                value: value.to_f64().unwrap_or(f64::NAN),
            });
        }
        Ok(())
    }

    /// Projects every lane of `v` (length `n`) with its count `z[w]` into `out`. Errors like the
    /// per-row operator: a non-finite entry, `z` outside `[0, n]`, a length mismatch.
    #[inline(always)]
    pub fn forward<F: Real, const N: usize>(
        &self,
        v: &[Lanes<F, N>],
        z: &Lanes<F, N>,
        out: &mut [Lanes<F, N>],
        s: &mut LanesScratch<F, N>,
    ) -> Result<(), ProjError> {
        self.check(v, z, out)?;
        if self.rounds == 0 {
            out.copy_from_slice(v);
            return Ok(());
        }
        let zero = F::zero();
        s.sorted.clear();
        s.sorted.extend_from_slice(v);
        self.net.sort_desc(&mut s.sorted);
        // Each round's inner input c_k is a coordinate-wise map of the input given the earlier
        // rounds' θ: computed on the fly from the sorted input inside each scan, and from the
        // input itself in the one output pass. No per-round buffers.
        s.thetas.clear();
        for _ in 0..self.rounds {
            let round = soft_theta(&s.sorted, z, &s.thetas, &mut s.head_c, &mut s.head_a, None);
            s.thetas.push(round.theta);
        }
        let (last, earlier) = s.thetas.split_last().expect("rounds > 0");
        for (o, x) in out.iter_mut().zip(v) {
            let mut c = [zero; N];
            inner_input(x, earlier, &mut c);
            // Into a local vector, stored whole: stores through `o` lane by lane would have
            // to respect a possible overlap with the input and stay scalar.
            let mut y = [zero; N];
            for w in 0..N {
                let u = c[w] - last[w];
                y[w] = if u > zero { u } else { zero };
            }
            *o = y;
        }
        Ok(())
    }
}

impl SoftDykstraLanes {
    /// [`Self::forward`] that also records in `t` what [`Self::vjp`] needs: the input, the
    /// descending order of every lane (ties ranked as the per-row argsort ranks them) and, per
    /// round, `θ`, `N`, `D`, the tail weight and the head's `c_j`, `ρ_j`, `j/(1 + r_j)²`.
    #[inline(always)]
    pub fn forward_tape<F: Real, const N: usize>(
        &self,
        v: &[Lanes<F, N>],
        z: &Lanes<F, N>,
        out: &mut [Lanes<F, N>],
        t: &mut LanesTape<F, N>,
        s: &mut LanesScratch<F, N>,
    ) -> Result<(), ProjError> {
        self.check(v, z, out)?;
        let n = self.net.len();
        t.v.clear();
        t.v.extend_from_slice(v);
        t.rounds.clear();
        t.hc.clear();
        t.hrho.clear();
        t.hr.clear();
        if self.rounds == 0 {
            out.copy_from_slice(v);
            return Ok(());
        }
        let zero = F::zero();
        s.sorted.clear();
        s.sorted.extend_from_slice(v);
        t.perm.clear();
        assert!(
            n <= 1 << 16,
            "lockstep projections take rows of up to 65536 entries"
        );
        t.perm.extend((0..n).map(|i| [i as u16; N]));
        self.net.sort_desc_indexed(&mut s.sorted, &mut t.perm);
        order_ties(v, &mut s.sorted, &mut t.perm);
        // l − rank of every entry, for the VJP's tail in original coordinates.
        t.tailw.resize(n, splat::<F, N>(zero));
        for (k, p) in t.perm.iter().enumerate() {
            let wk: F = of(n - k);
            for w in 0..N {
                t.tailw[p[w] as usize][w] = wk;
            }
        }
        s.thetas.clear();
        for _ in 0..self.rounds {
            let start = t.hc.len();
            let r = soft_theta(
                &s.sorted,
                z,
                &s.thetas,
                &mut s.head_c,
                &mut s.head_a,
                Some(&mut t.hr),
            );
            t.hc.extend_from_slice(&s.head_c);
            t.hrho.extend_from_slice(&s.head_a);
            s.thetas.push(r.theta);
            t.rounds.push(RoundTape {
                theta: r.theta,
                n: r.n,
                d: r.d,
                rho_tail: r.rho_tail,
                head: r.head,
                start,
                len: s.head_c.len(),
            });
        }
        let (last, earlier) = s.thetas.split_last().expect("rounds > 0");
        for (o, x) in out.iter_mut().zip(v) {
            let mut c = [zero; N];
            inner_input(x, earlier, &mut c);
            // Into a local vector, stored whole: stores through `o` lane by lane would have
            // to respect a possible overlap with the input and stay scalar.
            let mut y = [zero; N];
            for w in 0..N {
                let u = c[w] - last[w];
                y[w] = if u > zero { u } else { zero };
            }
            *o = y;
        }
        Ok(())
    }

    /// Given `g = ∂ℓ/∂out` of the [`Self::forward_tape`] that filled `t`, writes `∂ℓ/∂v` into
    /// `gv` and returns `∂ℓ/∂z`, lane by lane: the per-row `Dykstra<SoftSimplex>::vjp` with the
    /// same arithmetic, the soft projection's VJP computed in sorted coordinates (the head) and
    /// in closed form (the tail), then scattered through the recorded order.
    #[inline(always)]
    pub fn vjp<F: Real, const N: usize>(
        &self,
        t: &LanesTape<F, N>,
        g: &[Lanes<F, N>],
        gv: &mut [Lanes<F, N>],
        s: &mut LanesVjpScratch<F, N>,
    ) -> Lanes<F, N> {
        let n = self.net.len();
        let zero = F::zero();
        let r = t.rounds.len();
        assert!(g.len() == n && gv.len() == n && t.v.len() == n);
        if r == 0 {
            gv.copy_from_slice(g);
            return splat::<F, N>(zero);
        }
        // Each round's inner input c_k and cap mask 1[x ≤ 1], recomputed from the input as the
        // forward pass computes them (elementwise, cheaper than storing them). Every buffer
        // entry is written before it is read: no clearing.
        let one = F::one();
        for buf in [&mut s.c, &mut s.m] {
            buf.resize(r * n, splat::<F, N>(zero));
        }
        for (i, x) in t.v.iter().enumerate() {
            // Round 1: a = min(x, 1), p = x − a, c = a.
            let (mut p, mut c, mut m) = (
                splat::<F, N>(zero),
                splat::<F, N>(zero),
                splat::<F, N>(zero),
            );
            for w in 0..N {
                let capped = x[w] <= one;
                let a = if capped { x[w] } else { one };
                m[w] = if capped { one } else { zero };
                p[w] = x[w] - a;
                c[w] = a;
            }
            s.c[i] = c;
            s.m[i] = m;
            for k in 1..r {
                // b = relu(c − θ), q = c − b, x = b + p, a = min(x, 1), p = x − a, c = a + q.
                let theta = &t.rounds[k - 1].theta;
                for w in 0..N {
                    let u = c[w] - theta[w];
                    let b = if u > zero { u } else { zero };
                    let q = c[w] - b;
                    let x = b + p[w];
                    let capped = x <= one;
                    let a = if capped { x } else { one };
                    m[w] = if capped { one } else { zero };
                    p[w] = x - a;
                    c[w] = a + q;
                }
                s.c[k * n + i] = c;
                s.m[k * n + i] = m;
            }
        }
        for buf in [&mut s.gq, &mut s.tin, &mut s.gc] {
            buf.resize(n, splat::<F, N>(zero));
        }
        // Last round first: b̄ = g, p̄ = q̄ = 0. The elementwise passes run over the flattened
        // lanes: written per lane vector, LLVM unrolls the inner lane loop (32 lanes) and then
        // vectorises across entries, with gathers and scatters.
        let mut gz = soft_vjp(t, r - 1, &s.c[(r - 1) * n..r * n], g, &mut s.gc);
        // Each combining pass also forms the next (earlier) round's inner adjoint b̄ − q̄.
        let more = r > 1;
        for ((((o, q), &c), &m), ti) in gv
            .as_flattened_mut()
            .iter_mut()
            .zip(s.gq.as_flattened_mut())
            .zip(s.gc.as_flattened())
            .zip(s.m[(r - 1) * n..r * n].as_flattened())
            .zip(s.tin.as_flattened_mut())
        {
            *o = if m > zero { c } else { zero };
            *q = c;
            if more {
                *ti = *o - c;
            }
        }
        for k in (0..r - 1).rev() {
            let gzk = soft_vjp(t, k, &s.c[k * n..(k + 1) * n], &s.tin, &mut s.gc);
            for w in 0..N {
                gz[w] += gzk[w];
            }
            let more = k > 0;
            for ((((o, q), &c), &m), ti) in gv
                .as_flattened_mut()
                .iter_mut()
                .zip(s.gq.as_flattened_mut())
                .zip(s.gc.as_flattened())
                .zip(s.m[k * n..(k + 1) * n].as_flattened())
                .zip(s.tin.as_flattened_mut())
            {
                let c = *q + c;
                *o = if m > zero { c } else { *o };
                *q = c;
                if more {
                    *ti = *o - c;
                }
            }
        }
        gz
    }
}

/// The VJP of round `k`'s soft simplex projection (input `c`, in original coordinates) for
/// the output adjoint `g`: writes the input adjoint into `gv`, returns `∂ℓ/∂z`. The per-row
/// `SoftSimplex::vjp`, lane by lane, with the order from the tape.
#[inline(always)]
fn soft_vjp<F: Real, const N: usize>(
    t: &LanesTape<F, N>,
    k: usize,
    c: &[Lanes<F, N>],
    g: &[Lanes<F, N>],
    gv: &mut [Lanes<F, N>],
) -> Lanes<F, N> {
    let l = c.len();
    let zero = F::zero();
    let rt = &t.rounds[k];
    // ḡ_v = g ⊙ 1[c − θ > 0], θ̄ = −Σ g ⊙ 1[c − θ > 0].
    let mut sum = splat::<F, N>(zero);
    for ((o, c), g) in gv.iter_mut().zip(c).zip(g) {
        for w in 0..N {
            let x = if c[w] - rt.theta[w] > zero {
                g[w]
            } else {
                zero
            };
            o[w] = x;
            sum[w] += x;
        }
    }
    let (mut dn, mut dd, mut gz, mut dot, mut step, mut suffix) = (
        splat::<F, N>(zero),
        splat::<F, N>(zero),
        splat::<F, N>(zero),
        splat::<F, N>(zero),
        splat::<F, N>(zero),
        splat::<F, N>(zero),
    );
    for w in 0..N {
        let dtheta = zero - sum[w];
        dn[w] = dtheta / rt.d[w];
        dd[w] = -dtheta * rt.theta[w] / rt.d[w];
        gz[w] = -dtheta / rt.d[w];
        dot[w] = dn[w] * rt.n[w] + dd[w] * rt.d[w];
        step[w] = dn[w] * rt.rho_tail[w];
        suffix[w] = of::<F>(l - rt.head[w] as usize) * step[w];
    }
    // Past every lane's head: c̄'s suffix sum in closed form, (l − i) N̄ ρ_t at rank i, added
    // in original coordinates (no scatter).
    let mut lh = splat::<F, N>(zero);
    for w in 0..N {
        lh[w] = of(l - rt.head[w] as usize);
    }
    for (o, tw) in gv.iter_mut().zip(&t.tailw) {
        for w in 0..N {
            o[w] += if tw[w] <= lh[w] {
                tw[w] * step[w]
            } else {
                zero
            };
        }
    }
    let hmax = rt.len;
    let (hc, hrho, hr) = (
        &t.hc[rt.start..rt.start + hmax],
        &t.hrho[rt.start..rt.start + hmax],
        &t.hr[rt.start..rt.start + hmax],
    );
    for i in (0..hmax).rev() {
        let j: F = of(i + 1);
        let mut d = splat::<F, N>(zero);
        let mut head = [false; N];
        for w in 0..N {
            // Head: r̄ = j ā/(1 + r)², ā = ρ (N̄ c + D̄ j − ⟨ρ, ρ̄⟩). Past a lane's head ρ and
            // the factor are 0 (so is what is added), and nothing is scattered.
            head[w] = (i as u32) < rt.head[w];
            let rho = hrho[i][w];
            let da = rho * (dn[w] * hc[i][w] + dd[w] * j - dot[w]);
            let dr = da * hr[i][w];
            gz[w] += dr;
            suffix[w] += dn[w] * rho - dr;
            d[w] = j * dr + suffix[w];
        }
        let perm = &t.perm[i];
        for w in 0..N {
            if head[w] {
                gv[perm[w] as usize][w] += d[w];
            }
        }
    }
    gz
}

/// Tape of [`SoftDykstraLanes::forward_tape`]; reused across calls (no allocation once grown).
#[derive(Debug, Clone, Default)]
pub struct LanesTape<F, const N: usize = LANES> {
    v: Vec<Lanes<F, N>>,
    /// `perm[k][w]`: the index of lane `w`'s `k`-th largest input.
    perm: Vec<Lanes<u16, N>>,
    /// `l − rank` of every input entry (`l` for the largest).
    tailw: Vec<Lanes<F, N>>,
    rounds: Vec<RoundTape<F, N>>,
    /// Head positions `0..len` of every round (at `start`): `c_j`, `ρ_j`, `j/(1 + r_j)²`.
    hc: Vec<Lanes<F, N>>,
    hrho: Vec<Lanes<F, N>>,
    hr: Vec<Lanes<F, N>>,
}

#[derive(Debug, Clone)]
struct RoundTape<F, const N: usize> {
    theta: Lanes<F, N>,
    n: Lanes<F, N>,
    d: Lanes<F, N>,
    rho_tail: Lanes<F, N>,
    head: Lanes<u32, N>,
    start: usize,
    len: usize,
}

/// Buffers of [`SoftDykstraLanes::vjp`], reused across calls.
#[derive(Debug, Clone, Default)]
pub struct LanesVjpScratch<F, const N: usize = LANES> {
    c: Vec<Lanes<F, N>>,
    m: Vec<Lanes<F, N>>,
    gq: Vec<Lanes<F, N>>,
    tin: Vec<Lanes<F, N>>,
    gc: Vec<Lanes<F, N>>,
}

/// Dykstra's inner input `c_k` of round `k = thetas.len() + 1` for the entries `x`, given the
/// earlier rounds' thresholds: round 1 `a = min(x, 1)`, `p = x − a`, `c = a`; then per round
/// `b = relu(c − θ)`, `q = c − b`, `x = b + p`, `a = min(x, 1)`, `p = x − a`, `c = a + q`.
#[inline(always)]
fn inner_input<F: Real, const N: usize>(
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
#[inline(always)]
fn soft_theta<F: Real, const N: usize>(
    sorted: &[Lanes<F, N>],
    z: &Lanes<F, N>,
    thetas: &[Lanes<F, N>],
    head_c: &mut Vec<Lanes<F, N>>,
    head_a: &mut Vec<Lanes<F, N>>,
    mut head_r: Option<&mut Vec<Lanes<F, N>>>,
) -> SoftRound<F, N> {
    let l = sorted.len();
    let (zero, one) = (F::zero(), F::one());
    head_c.clear();
    head_a.clear();
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
                head_c.push(cs);
                head_a.push(logit);
                if let Some(hr) = head_r.as_deref_mut() {
                    hr.push(rfac);
                }
            }
        } else {
            for w in 0..N {
                wsum[w] += weight * m[w];
            }
        }
    }
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

/// What one soft simplex projection of a block computes besides its head: the threshold `θ`,
/// `N`, `D`, the tail's softmax weight and the head length, per lane.
struct SoftRound<F, const N: usize> {
    theta: Lanes<F, N>,
    n: Lanes<F, N>,
    d: Lanes<F, N>,
    rho_tail: Lanes<F, N>,
    head: Lanes<u32, N>,
}
