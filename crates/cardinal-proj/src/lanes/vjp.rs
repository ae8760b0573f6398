//! Training: the forward pass that records a tape, and the VJP that reads it.

use super::forward::{LanesScratch, SoftDykstraLanes};
use super::network::order_ties;
use super::soft_round::{inner_input, room_for_head, soft_theta};
use super::{splat, Lanes, LANES};
use crate::util::of;
use crate::{ProjError, Real};

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
        t.v.clear();
        t.v.extend_from_slice(v);
        self.forward_taped(z, out, t, s)
    }

    /// [`Self::forward_tape`] of the input already in the tape ([`LanesTape::input_mut`]):
    /// the caller writes the input where the tape keeps it, and no copy is made.
    #[inline(always)]
    pub fn forward_taped<F: Real, const N: usize>(
        &self,
        z: &Lanes<F, N>,
        out: &mut [Lanes<F, N>],
        t: &mut LanesTape<F, N>,
        s: &mut LanesScratch<F, N>,
    ) -> Result<(), ProjError> {
        let v = &t.v;
        self.check(v, z, out)?;
        let n = self.net.len();
        t.rounds.clear();
        if self.rounds == 0 {
            out.copy_from_slice(v);
            return Ok(());
        }
        let zero = F::zero();
        s.sorted.resize(n, splat::<F, N>(zero));
        t.perm.resize(n, [0; N]);
        self.net.sort_desc_indexed(v, &mut s.sorted, &mut t.perm);
        order_ties(v, &mut s.sorted, &mut t.perm);
        s.thetas.clear();
        // The rounds' heads one after another in the tape's buffers (which only grow).
        let mut start = 0;
        for _ in 0..self.rounds {
            for buf in [&mut t.hc, &mut t.hrho, &mut t.hr] {
                room_for_head(buf, start, n);
            }
            let r = soft_theta(
                &s.sorted,
                z,
                &s.thetas,
                &mut t.hc[start..],
                &mut t.hrho[start..],
                Some(&mut t.hr[start..]),
            );
            s.thetas.push(r.theta);
            t.rounds.push(RoundTape {
                theta: r.theta,
                n: r.n,
                d: r.d,
                rho_tail: r.rho_tail,
                head: r.head,
                start,
                len: r.len,
            });
            start += r.len;
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
    /// in closed form (the tail), in original coordinates through the recorded order.
    ///
    /// Fused: one pass per round over the entries (and one before them), each recomputing the
    /// rounds' inner inputs and cap masks from the input, finishing round `k` (tail, head and
    /// Dykstra's combination) and starting round `k − 1` (its masked adjoint and that sum). Every
    /// entry sees the unfused sequence's operations in its order, and every sum runs over the
    /// entries in order, so the numbers are those of the round-by-round passes; it streams the
    /// block about half as often.
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
        // l − rank of every entry, for the tail in original coordinates: scattered from the
        // recorded order into scratch that stays in cache. (Kept in the tape, it was a scatter
        // into memory the cache had not seen, and a tenth of the training forward pass.)
        s.tailw.resize(n, splat::<F, N>(zero));
        for (k, p) in t.perm.iter().enumerate() {
            let wk: F = of(n - k);
            for w in 0..N {
                s.tailw[p[w] as usize][w] = wk;
            }
        }
        s.thetas.clear();
        s.thetas.extend(t.rounds.iter().map(|rt| rt.theta));
        for buf in [&mut s.masked, &mut s.gq] {
            buf.resize(n, splat::<F, N>(zero));
        }
        // The last round's masked adjoint `g ⊙ 1[c − θ > 0]` and its sum (b̄ = g, p̄ = q̄ = 0).
        let last = r - 1;
        let mut sum = splat::<F, N>(zero);
        {
            let theta = &s.thetas[last];
            for ((o, x), gi) in s.masked.iter_mut().zip(&t.v).zip(g) {
                let st = entry_state(x, &s.thetas, last);
                let mut ov = [zero; N];
                for w in 0..N {
                    let a = if st.c[w] - theta[w] > zero {
                        gi[w]
                    } else {
                        zero
                    };
                    ov[w] = a;
                    sum[w] += a;
                }
                *o = ov;
            }
        }
        let mut gz = splat::<F, N>(zero);
        for k in (0..r).rev() {
            let round = round_scalars(t, k, n, &sum, &mut s.dh);
            if k == last {
                gz = round.gz;
            } else {
                for w in 0..N {
                    gz[w] += round.gz[w];
                }
            }
            sum = splat::<F, N>(zero);
            let prev_theta = if k > 0 { s.thetas[k - 1] } else { splat(zero) };
            let lh = round.lh;
            for (i, x) in t.v.iter().enumerate() {
                let st = entry_state(x, &s.thetas, k);
                let (tw, dh, mut o) = (s.tailw[i], s.dh[i], s.masked[i]);
                // Round k's input adjoint: the masked adjoint, the tail's closed form, and
                // the head's term (scattered into `dh` at the head's entries).
                for w in 0..N {
                    let tail = tw[w] <= lh[w];
                    o[w] += if tail { tw[w] * round.step[w] } else { zero };
                    o[w] = if tail { o[w] } else { o[w] + dh[w] };
                }
                // Dykstra's combination: q̄ accumulates, b̄ − q̄ feeds round k − 1.
                let (mut out, mut q) = ([zero; N], [zero; N]);
                if k == last {
                    for w in 0..N {
                        out[w] = if st.m[w] > zero { o[w] } else { zero };
                        q[w] = o[w];
                    }
                } else {
                    let (gq, prev) = (s.gq[i], gv[i]);
                    for w in 0..N {
                        let c = gq[w] + o[w];
                        out[w] = if st.m[w] > zero { c } else { prev[w] };
                        q[w] = c;
                    }
                }
                gv[i] = out;
                if k > 0 {
                    s.gq[i] = q;
                    let mut ov = [zero; N];
                    for w in 0..N {
                        let tin = out[w] - q[w];
                        let a = if st.c_prev[w] - prev_theta[w] > zero {
                            tin
                        } else {
                            zero
                        };
                        ov[w] = a;
                        sum[w] += a;
                    }
                    s.masked[i] = ov;
                }
            }
        }
        gz
    }
}

/// One entry's Dykstra state at round `k`: its inner input `c_k`, cap mask `1[x_k ≤ 1]`, and
/// the previous round's inner input `c_{k−1}` (unspecified for `k = 0`), recomputed from the
/// input as the forward pass computes them (cheaper than storing them).
struct EntryState<F, const N: usize> {
    c: Lanes<F, N>,
    m: Lanes<F, N>,
    c_prev: Lanes<F, N>,
}

#[inline(always)]
fn entry_state<F: Real, const N: usize>(
    x: &Lanes<F, N>,
    thetas: &[Lanes<F, N>],
    k: usize,
) -> EntryState<F, N> {
    let (zero, one) = (F::zero(), F::one());
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
    let mut c_prev = c;
    for theta in &thetas[..k] {
        c_prev = c;
        // b = relu(c − θ), q = c − b, x = b + p, a = min(x, 1), p = x − a, c = a + q.
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
    }
    EntryState { c, m, c_prev }
}

/// Round `k`'s per-lane numbers of the soft simplex VJP, given `sum` = Σ of its masked
/// adjoint: `∂ℓ/∂z` (with the head's terms), the tail's step and bound `l − head`, and the
/// head's terms into `dh` at their entries (other entries of `dh` hold anything, and are never
/// read). The per-row `SoftSimplex::vjp`, lane by lane.
#[inline(always)]
fn round_scalars<F: Real, const N: usize>(
    t: &LanesTape<F, N>,
    k: usize,
    l: usize,
    sum: &Lanes<F, N>,
    dh: &mut Vec<Lanes<F, N>>,
) -> RoundScalars<F, N> {
    let zero = F::zero();
    let rt = &t.rounds[k];
    let mut out = RoundScalars {
        gz: splat::<F, N>(zero),
        step: splat::<F, N>(zero),
        lh: splat::<F, N>(zero),
    };
    let (mut dn, mut dd, mut dot, mut suffix) = (
        splat::<F, N>(zero),
        splat::<F, N>(zero),
        splat::<F, N>(zero),
        splat::<F, N>(zero),
    );
    for w in 0..N {
        // θ̄ = −Σ g ⊙ 1[c − θ > 0].
        let dtheta = zero - sum[w];
        dn[w] = dtheta / rt.d[w];
        dd[w] = -dtheta * rt.theta[w] / rt.d[w];
        out.gz[w] = -dtheta / rt.d[w];
        dot[w] = dn[w] * rt.n[w] + dd[w] * rt.d[w];
        out.step[w] = dn[w] * rt.rho_tail[w];
        // Past every lane's head: c̄'s suffix sum in closed form, (l − i) N̄ ρ_t at rank i.
        suffix[w] = of::<F>(l - rt.head[w] as usize) * out.step[w];
        out.lh[w] = of(l - rt.head[w] as usize);
    }
    let hmax = rt.len;
    let (hc, hrho, hr) = (
        &t.hc[rt.start..rt.start + hmax],
        &t.hrho[rt.start..rt.start + hmax],
        &t.hr[rt.start..rt.start + hmax],
    );
    dh.resize(l, splat::<F, N>(zero));
    for i in (0..hmax).rev() {
        let j: F = of(i + 1);
        let mut d = splat::<F, N>(zero);
        for w in 0..N {
            // Head: r̄ = j ā/(1 + r)², ā = ρ (N̄ c + D̄ j − ⟨ρ, ρ̄⟩). Past a lane's head ρ and
            // the factor are 0 (so is what is added), and its term is never read.
            let rho = hrho[i][w];
            let da = rho * (dn[w] * hc[i][w] + dd[w] * j - dot[w]);
            let dr = da * hr[i][w];
            out.gz[w] += dr;
            suffix[w] += dn[w] * rho - dr;
            d[w] = j * dr + suffix[w];
        }
        // Into every lane, without a branch: past a lane's head, position `i` is an entry the
        // round's pass never reads `dh` at (it is not in that lane's head), and no head entry
        // of the lane is at another position. (A branch per lane was mispredicted half the time.)
        let perm = &t.perm[i];
        for w in 0..N {
            dh[perm[w] as usize][w] = d[w];
        }
    }
    out
}

/// See [`round_scalars`].
struct RoundScalars<F, const N: usize> {
    gz: Lanes<F, N>,
    step: Lanes<F, N>,
    lh: Lanes<F, N>,
}

/// Tape of [`SoftDykstraLanes::forward_tape`]; reused across calls (no allocation once grown).
#[derive(Debug, Clone, Default)]
pub struct LanesTape<F, const N: usize = LANES> {
    v: Vec<Lanes<F, N>>,
    /// `perm[k][w]`: the index of lane `w`'s `k`-th largest input.
    perm: Vec<Lanes<u16, N>>,
    rounds: Vec<RoundTape<F, N>>,
    /// Head positions `0..len` of every round (at `start`): `c_j`, `ρ_j`, `j/(1 + r_j)²`
    /// (buffers that only grow: what lies past the last round's head is stale).
    hc: Vec<Lanes<F, N>>,
    hrho: Vec<Lanes<F, N>>,
    hr: Vec<Lanes<F, N>>,
}

impl<F: Real, const N: usize> LanesTape<F, N> {
    /// The tape's buffer for the projection's input, `n` entries (their values unspecified):
    /// fill it, then call [`SoftDykstraLanes::forward_taped`].
    pub fn input_mut(&mut self, n: usize) -> &mut [Lanes<F, N>] {
        self.v.resize(n, splat::<F, N>(F::zero()));
        &mut self.v
    }
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
    /// `l − rank` of every input entry (`l` for the largest).
    tailw: Vec<Lanes<F, N>>,
    /// Every round's `θ`.
    thetas: Vec<Lanes<F, N>>,
    /// The current round's masked adjoint `b̄ ⊙ 1[c − θ > 0]`, and Dykstra's `q̄`.
    masked: Vec<Lanes<F, N>>,
    gq: Vec<Lanes<F, N>>,
    /// The current round's head terms, at their entries (stale elsewhere, never read there).
    dh: Vec<Lanes<F, N>>,
}
