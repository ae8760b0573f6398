//! Lockstep training: for a block of rows at once, one row per SIMD lane, the forward pass
//! with its tape and loss, the backward pass, and the energy's parameter gradients.

use cardinal_proj::lanes::{
    Lanes, LanesScratch, LanesTape, LanesVjpScratch, SoftDykstraLanes, LANES,
};
use cardinal_proj::{AnyProjector, ProjError, Projector};
use ndarray::linalg::general_mat_mul;
use ndarray::Array2;

use super::lane_ops::{lane_to_row, lanes_view, row_to_lane};
use super::Unroll;
use crate::model::{c, Float};
use crate::simd;

/// What [`Unroll::forward_block_tape`] records for [`Unroll::backward_block`], its results,
/// and scratch space; reused across blocks and batches (no allocation once grown).
pub struct BlockTape<F: Float, const N: usize = LANES> {
    rows: usize,
    zl: Lanes<F, N>,
    u: Vec<Lanes<F, N>>,
    /// `y_0 = σ(u)`, then the current iterate.
    y0: Vec<Lanes<F, N>>,
    y: Vec<Lanes<F, N>>,
    x: Vec<Lanes<F, N>>,
    velocity: Vec<Lanes<F, N>>,
    act: Vec<Lanes<F, N>>,
    /// Per step: the ascent direction `g_t` (`T × L`), the energy mask (`E × T`, unit-major
    /// for the energy GEMMs), the projection's tape, and `∂ℓ/∂y_t = common + on·1[gold]` as
    /// `(common, on)`.
    gs: Vec<Lanes<F, N>>,
    masks: Vec<Lanes<F, N>>,
    proj: Vec<LanesTape<F, N>>,
    f1: Vec<[Lanes<F, N>; 2]>,
    /// Gold labels of lane `w`: `gold[gold_at[w]..gold_at[w + 1]]`.
    gold: Vec<u32>,
    gold_at: Vec<usize>,
    /// Per lane: the loss, then (backward) `∂ℓ/∂z` and `∂ℓ/∂η`.
    loss: Lanes<F, N>,
    gz: Lanes<F, N>,
    geta: Lanes<F, N>,
    /// Backward: `∂ℓ/∂u` (`L`) and the adjoints `η ḡv_t` of `g_t` (`L × T`, label-major).
    gu: Vec<Lanes<F, N>>,
    ggs: Vec<Lanes<F, N>>,
    gy: Vec<Lanes<F, N>>,
    gyp: Vec<Lanes<F, N>>,
    gv: Vec<Lanes<F, N>>,
    d: Vec<Lanes<F, N>>,
    fwd: LanesScratch<F, N>,
    bwd: LanesVjpScratch<F, N>,
    /// Per lane: the final projection's tape (if any), and a row's worth of scratch.
    final_tapes: Vec<<AnyProjector as Projector<F>>::Tape>,
    row: Vec<F>,
    row_out: Vec<F>,
    /// This block's energy gradient `∂ℓ/∂Wp` (`L × E`), from [`Unroll::energy_block`].
    pub gwp: Array2<F>,
    /// This block's energy gradient `∂ℓ/∂w2` (`E`), from [`Unroll::energy_block`].
    pub gwe: Vec<F>,
    /// Scratch of [`Unroll::energy_block`].
    energy_s: Vec<Lanes<F, N>>,
    energy_p: Array2<F>,
    /// `[L, E, T]` of the last forward pass.
    dims: [usize; 3],
}

impl<F: Float, const N: usize> Default for BlockTape<F, N> {
    fn default() -> Self {
        let zero = [F::zero(); N];
        Self {
            rows: 0,
            zl: zero,
            u: Vec::new(),
            y0: Vec::new(),
            y: Vec::new(),
            x: Vec::new(),
            velocity: Vec::new(),
            act: Vec::new(),
            gs: Vec::new(),
            masks: Vec::new(),
            proj: Vec::new(),
            f1: Vec::new(),
            gold: Vec::new(),
            gold_at: Vec::new(),
            loss: zero,
            gz: zero,
            geta: zero,
            gu: Vec::new(),
            ggs: Vec::new(),
            gy: Vec::new(),
            gyp: Vec::new(),
            gv: Vec::new(),
            d: Vec::new(),
            fwd: LanesScratch::default(),
            bwd: LanesVjpScratch::default(),
            final_tapes: Vec::new(),
            row: Vec::new(),
            row_out: Vec::new(),
            gwp: Array2::zeros((0, 0)),
            gwe: Vec::new(),
            energy_s: Vec::new(),
            energy_p: Array2::zeros((0, 0)),
            dims: [0; 3],
        }
    }
}

impl<F: Float, const N: usize> BlockTape<F, N> {
    /// Rows of the last block.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Row `r`'s loss `−Σ_t w_t F1(y_t)` of the last forward pass.
    pub fn loss(&self, r: usize) -> F {
        self.loss[r]
    }

    /// Row `r`'s `(∂ℓ/∂z, ∂ℓ/∂η)` of the last backward pass.
    pub fn grads(&self, r: usize) -> (F, F) {
        (self.gz[r], self.geta[r])
    }

    /// Multiplies row `r`'s loss and its seeds `∂ℓ/∂y_t` by `weights[r]` (per-example loss
    /// weights), between [`Unroll::forward_block_tape`] and [`Unroll::backward_block`]: the
    /// backward pass is linear in the seeds, so every gradient of row `r` is scaled too.
    pub fn scale_rows(&mut self, weights: &[F]) {
        assert_eq!(weights.len(), self.rows, "one weight per row of the block");
        for (w, &s) in weights.iter().enumerate() {
            self.loss[w] *= s;
            for [common, on] in &mut self.f1 {
                common[w] *= s;
                on[w] *= s;
            }
        }
    }

    /// Copies row `r`'s `∂ℓ/∂u` out of the lanes.
    pub fn write_gu(&self, r: usize, gu: &mut [F]) {
        lane_to_row(&self.gu, r, gu);
    }

    /// Entry `i` of row `r`'s `y_0 = σ(u)`.
    pub fn y0(&self, r: usize, i: usize) -> F {
        self.y0[i][r]
    }

    /// Copies row `r`'s results out of the lanes, in the per-row layout of
    /// [`Unroll::backward_row`]: `∂ℓ/∂u` into `gu` (`L`), the adjoints of `g_t` into `ggs`
    /// and the energy masks into `masks` (`T × L` and `T × E`, row-major). Training needs only
    /// `gu` ([`Self::write_gu`]): the energy gradients are formed in lanes
    /// ([`Unroll::energy_block`]).
    pub fn write_row(&self, r: usize, gu: &mut [F], ggs: &mut [F], masks: &mut [F]) {
        lane_to_row(&self.gu, r, gu);
        let [l, e, steps] = self.dims;
        for t in 0..steps {
            for i in 0..l {
                ggs[t * l + i] = self.ggs[i * steps + t][r];
            }
            for k in 0..e {
                masks[t * e + k] = self.masks[k * steps + t][r];
            }
        }
    }
}

impl<F: Float> Unroll<'_, F> {
    /// The training forward pass of a block of up to `N` rows in lockstep (soft Dykstra
    /// steps, `lanes` with the rounds of `self.projector`; the final projection, if any, row
    /// by row on `y_T`): records the tape and each row's loss
    /// `−Σ_t weights[t−1]·F1(y_t, gold(r))` (the relaxed F1 of
    /// [`soft_f1`](crate::loss::soft_f1)). `u` holds the rows' unary scores (`rows × L`), `z`
    /// their counts. The same numbers as [`Self::forward_row`] followed by `soft_f1`, to
    /// rounding.
    pub fn forward_block_tape<'g, const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        gold: impl Fn(usize) -> &'g [u32],
        weights: &[F],
        t: &mut BlockTape<F, N>,
    ) -> Result<(), ProjError> {
        forward_block_tape_dispatch(self, lanes, u, z, gold, weights, t)
    }

    /// The body of [`Self::forward_block_tape`], inlined into each instruction-set variant.
    #[inline(always)]
    fn forward_block_tape_impl<'g, const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        gold: impl Fn(usize) -> &'g [u32],
        weights: &[F],
        t: &mut BlockTape<F, N>,
    ) -> Result<(), ProjError> {
        let (l, e, steps) = (self.l(), self.e(), self.steps);
        let rows = z.len();
        assert!((1..=N).contains(&rows) && u.len() == rows * l && weights.len() == steps);
        let (zero, one, two) = (F::zero(), F::one(), F::one() + F::one());
        t.rows = rows;
        t.dims = [l, e, steps];
        for buf in [&mut t.u, &mut t.y0, &mut t.y, &mut t.x, &mut t.velocity] {
            buf.clear();
            buf.resize(l, [zero; N]);
        }
        t.act.clear();
        t.act.resize(e, [zero; N]);
        t.gs.resize(steps * l, [zero; N]);
        t.masks.resize(steps * e, [zero; N]);
        t.proj.resize_with(steps, Default::default);
        t.f1.resize(steps, [[zero; N]; 2]);
        // Transpose into lanes; spare lanes repeat row 0 (valid input, ignored).
        t.gold.clear();
        t.gold_at.clear();
        for w in 0..N {
            let r = if w < rows { w } else { 0 };
            t.zl[w] = z[r];
            for (i, &ui) in u[r * l..(r + 1) * l].iter().enumerate() {
                t.u[i][w] = ui;
            }
            t.gold_at.push(t.gold.len());
            t.gold.extend_from_slice(gold(r));
        }
        t.gold_at.push(t.gold.len());
        // y_0 = σ(u) as `sigmoid` computes it, with the lanes' exponential.
        for (y, u) in t.y0.iter_mut().zip(&t.u) {
            let mut ex = [zero; N];
            for w in 0..N {
                ex[w] = zero - u[w].abs();
            }
            F::exp_in_place(&mut ex);
            for w in 0..N {
                y[w] = if u[w] >= zero {
                    one / (one + ex[w])
                } else {
                    ex[w] / (one + ex[w])
                };
            }
        }
        t.y.copy_from_slice(&t.y0);
        t.loss = [zero; N];
        let wpt = self.wpt.as_slice().expect("contiguous Wpᵀ");
        for step in 0..steps {
            self.block_step(
                wpt,
                &t.u,
                &t.y,
                &mut t.act,
                &mut t.velocity,
                &mut t.x,
                Some(&mut t.gs[step * l..(step + 1) * l]),
                Some((&mut t.masks, step, steps)),
            );
            lanes.forward_tape(&t.x, &t.zl, &mut t.y, &mut t.proj[step], &mut t.fwd)?;
            if let (Some(fp), true) = (self.final_projector, step + 1 == steps) {
                // y_T replaced by its final projection, row by row (every lane: spare lanes
                // hold a valid copy of row 0).
                t.final_tapes.resize_with(N, Default::default);
                t.row.resize(l, zero);
                t.row_out.resize(l, zero);
                for w in 0..N {
                    lane_to_row(&t.y, w, &mut t.row);
                    fp.forward(&t.row, t.zl[w], &mut t.row_out, &mut t.final_tapes[w])?;
                    row_to_lane(&t.row_out, w, &mut t.y);
                }
            }
            // The relaxed F1 of y_t and its gradient's two coefficients, as `soft_f1` computes
            // them (the same order of sums).
            let mut sum_y = [zero; N];
            for y in &t.y {
                for w in 0..N {
                    sum_y[w] += y[w];
                }
            }
            let [common, on] = &mut t.f1[step];
            let scale = zero - weights[step];
            for w in 0..N {
                let gold = &t.gold[t.gold_at[w]..t.gold_at[w + 1]];
                let inter: F = gold.iter().map(|&g| t.y[g as usize][w]).sum();
                let denom = sum_y[w] + c::<F>(gold.len() as f64);
                let (f1, cm, o) = if denom <= zero {
                    (zero, zero, zero)
                } else {
                    (
                        two * inter / denom,
                        crate::loss::f1_common(inter, denom, scale),
                        two / denom * scale,
                    )
                };
                common[w] = cm;
                on[w] = o;
                t.loss[w] -= weights[step] * f1;
            }
        }
        Ok(())
    }
    /// Backward of the last [`Self::forward_block_tape`] on `t`: `∂ℓ/∂u`, the adjoints of
    /// every `g_t`, `∂ℓ/∂z` and `∂ℓ/∂η` of every row, as [`Self::backward_row`] computes them;
    /// read them with [`BlockTape::write_row`] and [`BlockTape::grads`].
    pub fn backward_block<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<F, N>,
    ) {
        backward_block_dispatch(self, lanes, t)
    }

    /// The body of [`Self::backward_block`], inlined into each instruction-set variant.
    #[inline(always)]
    fn backward_block_impl<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<F, N>,
    ) {
        let (l, steps) = (self.l(), self.steps);
        let (zero, one) = (F::zero(), F::one());
        for buf in [&mut t.gu, &mut t.gy, &mut t.gyp, &mut t.gv, &mut t.d] {
            buf.clear();
            buf.resize(l, [zero; N]);
        }
        t.ggs.resize(steps * l, [zero; N]);
        let (mut gz, mut geta) = ([zero; N], [zero; N]);
        let (eta, momentum) = (self.eta, self.momentum);
        for step in (0..steps).rev() {
            // ∂ℓ/∂y_t built as `soft_f1` adds it into zeros, then added to ḡy.
            let [common, on] = &t.f1[step];
            // One vector, then copies (written per entry, LLVM turns the loop inside out into
            // scatters).
            let mut c0 = [zero; N];
            for w in 0..N {
                c0[w] = zero + common[w];
            }
            t.d.fill(c0);
            for w in 0..N {
                for &g in &t.gold[t.gold_at[w]..t.gold_at[w + 1]] {
                    t.d[g as usize][w] += on[w];
                }
            }
            // Flat: per lane vector, LLVM would vectorise across entries with gathers.
            for (gy, &d) in t.gy.as_flattened_mut().iter_mut().zip(t.d.as_flattened()) {
                *gy += d;
            }
            if let (Some(fp), true) = (self.final_projector, step + 1 == steps) {
                // Through the final projection of y_T, row by row.
                for w in 0..N {
                    lane_to_row(&t.gy, w, &mut t.row);
                    gz[w] += fp.vjp(&t.final_tapes[w], &t.row, &mut t.row_out);
                    row_to_lane(&t.row_out, w, &mut t.gy);
                }
            }
            let gzt = lanes.vjp(&t.proj[step], &t.gy, &mut t.gyp, &mut t.bwd);
            for w in 0..N {
                gz[w] += gzt[w];
            }
            let g = &t.gs[step * l..(step + 1) * l];
            // On copies of whole lane vectors: through the fields of `t` LLVM cannot rule out
            // aliasing and would not vectorise.
            for i in 0..l {
                let (mut v, yp, gi, mut gu) = (t.gv[i], t.gyp[i], g[i], t.gu[i]);
                let mut ggi = [zero; N];
                for w in 0..N {
                    let gv = v[w] + yp[w];
                    geta[w] += gv * gi[w];
                    ggi[w] = eta * gv;
                    gu[w] += ggi[w];
                    v[w] = momentum * gv;
                }
                (t.gv[i], t.ggs[i * steps + step], t.gu[i]) = (v, ggi, gu);
            }
            std::mem::swap(&mut t.gy, &mut t.gyp);
        }
        for ((gu, gy), y0) in t.gu.iter_mut().zip(&t.gy).zip(&t.y0) {
            for w in 0..N {
                gu[w] += gy[w] * y0[w] * (one - y0[w]);
            }
        }
        t.gz = gz;
        t.geta = geta;
    }
}

impl<F: Float> Unroll<'_, F> {
    /// The energy's parameter gradients of the last [`Self::backward_block`] on `t`, over its
    /// rows and steps, into `t.gwp` and `t.gwe`: `∂Wp = Σ ḡg (w2 ⊙ m)ᵀ` and
    /// `∂w2 = Σ (Wpᵀ ḡg) ⊙ m`, as two GEMMs straight on the lanes (adjoints `L × TN`, masks
    /// `E × TN`; spare lanes are masked out).
    pub fn energy_block<const N: usize>(&self, t: &mut BlockTape<F, N>) {
        let [l, e, steps] = t.dims;
        let zero = F::zero();
        if t.gwp.dim() != (l, e) {
            t.gwp = Array2::zeros((l, e));
        }
        t.gwe.clear();
        t.gwe.resize(e, zero);
        if e == 0 || steps == 0 {
            t.gwp.fill(zero);
            return;
        }
        for m in t.masks.iter_mut() {
            m[t.rows..].fill(zero);
        }
        t.energy_s.clear();
        t.energy_s.extend_from_slice(&t.masks);
        for (k, row) in t.energy_s.chunks_exact_mut(steps).enumerate() {
            let we = self.we[k];
            for x in row.iter_mut().flatten() {
                *x *= we;
            }
        }
        let tn = steps * N;
        let (g, s, m) = (
            lanes_view(&t.ggs, l, tn),
            lanes_view(&t.energy_s, e, tn),
            lanes_view(&t.masks, e, tn),
        );
        general_mat_mul(F::one(), &g, &s.t(), zero, &mut t.gwp);
        if t.energy_p.dim() != (e, tn) {
            t.energy_p = Array2::zeros((e, tn));
        }
        general_mat_mul(F::one(), &self.wpt, &g, zero, &mut t.energy_p);
        for ((gw, p), m) in t
            .gwe
            .iter_mut()
            .zip(t.energy_p.outer_iter())
            .zip(m.outer_iter())
        {
            for (&p, &m) in p.iter().zip(m.iter()) {
                *gw += p * m;
            }
        }
    }
}

simd::dispatch! {
    features ["avx512f", "avx512bw"], ["avx2"];
    /// `Unroll::forward_block_tape_impl` compiled for the widest vectors the CPU has.
    fn forward_block_tape_dispatch<'g, F: Float, const N: usize>(
        un: &Unroll<'_, F>,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        gold: impl Fn(usize) -> &'g [u32],
        weights: &[F],
        t: &mut BlockTape<F, N>,
    ) -> Result<(), ProjError> {
        un.forward_block_tape_impl(lanes, u, z, gold, weights, t)
    }
}

simd::dispatch! {
    features ["avx512f", "avx512bw"], ["avx2"];
    /// `Unroll::backward_block_impl` compiled for the widest vectors the CPU has.
    fn backward_block_dispatch<F: Float, const N: usize>(
        un: &Unroll<'_, F>,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<F, N>,
    ) {
        un.backward_block_impl(lanes, t)
    }
}

#[cfg(test)]
mod tests;
