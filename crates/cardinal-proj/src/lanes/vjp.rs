//! Training: the forward pass that records a tape, and the VJP that reads it.

use super::forward::{LanesScratch, SoftDykstraLanes};
use super::network::order_ties;
use super::soft_round::{inner_input, soft_theta};
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
        let mut gz = soft_vjp(t, &s.tailw, r - 1, &s.c[(r - 1) * n..r * n], g, &mut s.gc);
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
            let gzk = soft_vjp(t, &s.tailw, k, &s.c[k * n..(k + 1) * n], &s.tin, &mut s.gc);
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
/// `SoftSimplex::vjp`, lane by lane, with the order from the tape (`tailw`: `l − rank` of
/// every entry).
#[inline(always)]
fn soft_vjp<F: Real, const N: usize>(
    t: &LanesTape<F, N>,
    tailw: &[Lanes<F, N>],
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
    for (o, tw) in gv.iter_mut().zip(tailw) {
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
    rounds: Vec<RoundTape<F, N>>,
    /// Head positions `0..len` of every round (at `start`): `c_j`, `ρ_j`, `j/(1 + r_j)²`.
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
    c: Vec<Lanes<F, N>>,
    m: Vec<Lanes<F, N>>,
    gq: Vec<Lanes<F, N>>,
    tin: Vec<Lanes<F, N>>,
    gc: Vec<Lanes<F, N>>,
}
