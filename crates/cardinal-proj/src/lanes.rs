//! The paper's inference operator, soft Dykstra ([`crate::Dykstra`] over [`crate::SoftSimplex`]),
//! for [`LANES`] rows at once, one row per SIMD lane: forward only, for inference.
//!
//! Layout: a block of rows is `L` lane vectors `[F; LANES]`; entry `i` of row `w` is `x[i][w]`.
//! Every step is the same for all rows, so each loop runs over whole lane vectors:
//! * the sort is a sorting network (Batcher's odd-even merge sort, pruned to `L`), whose
//!   comparators are lane-wise max/min;
//! * the soft simplex head scan runs while any lane is still in its head (masked per lane);
//! * no permutation is needed: each Dykstra round is a coordinate-wise non-decreasing map of the
//!   input, so applying the same maps to the sorted input gives every round's sorted inner input
//!   (one sort per projection), and the output is the maps applied to the input itself.
//!
//! Floating-point rounding can make `q = c − b` non-monotone by an ulp among nearly equal
//! entries; the per-row operator repairs its order there, this one scans the mapped sorted
//! sequence as it is. The two agree to rounding (`tests/lanes.rs`).

use crate::util::of;
use crate::{ProjError, Real};

/// Rows per block: four AVX-512 registers of `f32` per entry (measured on Bibtex: 64 lanes run
/// 1.7× faster than 16 and 1.5× faster than 128, whose blocks leave the L2 cache).
pub const LANES: usize = 64;

/// One entry of each of the [`LANES`] rows of a block.
pub type Lanes<F> = [F; LANES];

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
    pub fn sort_desc<F: Real>(&self, x: &mut [Lanes<F>]) {
        assert_eq!(x.len(), self.n, "sorting network of another length");
        for &(i, j) in &self.pairs {
            let (lo, hi) = x.split_at_mut(j as usize);
            let (a, b) = (&mut lo[i as usize], &mut hi[0]);
            // Written as one max and one min of fresh values (x86 `maxps(q, p)`, `minps(p, q)`),
            // not as a conditional update, which compiles to a masked store that stalls the
            // next comparator's load of the same entry.
            let (mut hi, mut lo) = (*a, *b);
            for w in 0..LANES {
                let (p, q) = (a[w], b[w]);
                hi[w] = if q > p { q } else { p };
                lo[w] = if q > p { p } else { q };
            }
            *a = hi;
            *b = lo;
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
pub struct LanesScratch<F> {
    sorted: Vec<Lanes<F>>,
    /// Per head position: `c_j` and the softmax logit (then its weight).
    head_c: Vec<Lanes<F>>,
    head_a: Vec<Lanes<F>>,
    /// `θ` of each round so far.
    thetas: Vec<Lanes<F>>,
}

#[inline(always)]
fn splat<F: Real>(x: F) -> Lanes<F> {
    [x; LANES]
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

    /// Projects every lane of `v` (length `n`) with its count `z[w]` into `out`. Errors like the
    /// per-row operator: a non-finite entry, `z` outside `[0, n]`, a length mismatch.
    #[inline(always)]
    pub fn forward<F: Real>(
        &self,
        v: &[Lanes<F>],
        z: &Lanes<F>,
        out: &mut [Lanes<F>],
        s: &mut LanesScratch<F>,
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
        let mut finite = [true; LANES];
        for x in v {
            for w in 0..LANES {
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
            let theta = soft_theta(&s.sorted, z, &s.thetas, &mut s.head_c, &mut s.head_a);
            s.thetas.push(theta);
        }
        let (last, earlier) = s.thetas.split_last().expect("rounds > 0");
        for (o, x) in out.iter_mut().zip(v) {
            let mut c = [zero; LANES];
            inner_input(x, earlier, &mut c);
            for w in 0..LANES {
                let u = c[w] - last[w];
                o[w] = if u > zero { u } else { zero };
            }
        }
        Ok(())
    }
}

/// Dykstra's inner input `c_k` of round `k = thetas.len() + 1` for the entries `x`, given the
/// earlier rounds' thresholds: round 1 `a = min(x, 1)`, `p = x − a`, `c = a`; then per round
/// `b = relu(c − θ)`, `q = c − b`, `x = b + p`, `a = min(x, 1)`, `p = x − a`, `c = a + q`.
#[inline(always)]
fn inner_input<F: Real>(x: &Lanes<F>, thetas: &[Lanes<F>], c: &mut Lanes<F>) {
    let (zero, one) = (F::zero(), F::one());
    let mut p = [zero; LANES];
    for w in 0..LANES {
        let a = if x[w] <= one { x[w] } else { one };
        p[w] = x[w] - a;
        c[w] = a;
    }
    for theta in thetas {
        for w in 0..LANES {
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
fn soft_theta<F: Real>(
    sorted: &[Lanes<F>],
    z: &Lanes<F>,
    thetas: &[Lanes<F>],
    head_c: &mut Vec<Lanes<F>>,
    head_a: &mut Vec<Lanes<F>>,
) -> Lanes<F> {
    let l = sorted.len();
    let (zero, one) = (F::zero(), F::one());
    head_c.clear();
    head_a.clear();
    // One pass: while a lane's r_j = j μ_j − (c_j − z) > 0 (its head, a prefix), its cumsum,
    // logit j r/(1 + r) and head length advance; after it, Σ_{i ≥ head} (l − i) μ_i (0-based).
    let mut c = splat(zero);
    let mut active = splat(one);
    let mut head = splat(zero);
    let mut wsum = splat(zero);
    let mut any_head = true;
    for (k, x) in sorted.iter().enumerate() {
        let mut m = [zero; LANES];
        inner_input(x, thetas, &mut m);
        let j: F = of(k + 1);
        let weight: F = of(l - k);
        if any_head {
            let mut cs = splat(zero);
            let mut logit = splat(F::neg_infinity());
            let mut any = zero;
            for w in 0..LANES {
                let cn = c[w] + m[w];
                let r = j * m[w] - (cn - z[w]);
                let now = active[w] > zero && r > zero;
                active[w] = if now { one } else { zero };
                any += active[w];
                c[w] = if now { cn } else { c[w] };
                head[w] += active[w];
                let a = j * r * (one / (one + r));
                logit[w] = if now { a } else { F::neg_infinity() };
                cs[w] = c[w];
                let t = weight * m[w];
                wsum[w] += if now { zero } else { t };
            }
            any_head = any > zero;
            if any_head {
                head_c.push(cs);
                head_a.push(logit);
            }
        } else {
            for w in 0..LANES {
                wsum[w] += weight * m[w];
            }
        }
    }
    let lf: F = of(l);
    let mut amax = splat(F::neg_infinity());
    for w in 0..LANES {
        if head[w] < lf {
            amax[w] = zero;
        }
    }
    for a in head_a.iter() {
        for w in 0..LANES {
            amax[w] = if a[w] > amax[w] { a[w] } else { amax[w] };
        }
    }
    let cutoff = (F::min_positive_value() * F::epsilon()).ln() - one;
    let mut sum = splat(zero);
    for a in head_a.iter_mut() {
        let mut x = [zero; LANES];
        for w in 0..LANES {
            x[w] = a[w] - amax[w];
        }
        let mut e = x;
        F::exp_in_place(&mut e);
        for w in 0..LANES {
            // −∞ (past this lane's head) and underflow give exactly 0, as in the per-row scan.
            a[w] = if x[w] < cutoff { zero } else { e[w] };
            sum[w] += a[w];
        }
    }
    let mut theta = splat(zero);
    for w in 0..LANES {
        let h = head[w].to_usize().expect("a head length");
        let n_tail = l - h;
        let e_tail = if n_tail > 0 {
            (zero - amax[w]).exp()
        } else {
            zero
        };
        let s = sum[w] + of::<F>(n_tail) * e_tail;
        let inv_s = one / s;
        let (mut num, mut den) = (zero, zero);
        for (k, (a, cc)) in head_a.iter().zip(head_c.iter()).take(h).enumerate() {
            let p = a[w] * inv_s;
            num += cc[w] * p;
            den += of::<F>(k + 1) * p;
        }
        let p_tail = e_tail * inv_s;
        if n_tail > 0 && p_tail > zero {
            let ctail = of::<F>(n_tail) * c[w] + wsum[w];
            let j_tail = (l * (l + 1) - h * (h + 1)) / 2;
            num += ctail * p_tail;
            den += of::<F>(j_tail) * p_tail;
        }
        theta[w] = (num - z[w]) / den;
    }
    theta
}
