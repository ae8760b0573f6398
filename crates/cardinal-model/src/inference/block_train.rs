//! Lockstep training: for a block of rows at once, one row per SIMD lane, the forward pass
//! with its tape and loss, the backward pass, and the energy's parameter gradients.

use cardinal_proj::lanes::{
    Lanes, LanesScratch, LanesTape, LanesVjpScratch, SmoothLanesTape, SoftDykstraLanes, LANES,
};
use cardinal_proj::{AnyProjector, ProjError, Projector};
use ndarray::linalg::general_mat_mul;
use ndarray::Array2;

use super::block_step::block_step_dispatch;
use super::energy_products::{energy_products, EnergyOperands, EnergyScratch};
use super::lane_ops::{lane_to_row, lanes_view, row_to_lane};
use super::Unroll;
use crate::model::{c, Scalar};
use crate::simd;

/// What [`Unroll::forward_block_tape`] records for [`Unroll::backward_block`], its results,
/// and scratch space; reused across blocks and batches (no allocation once grown).
pub struct BlockTape<F: Scalar, const N: usize = LANES> {
    /// The block's rows in lanes.
    input: BlockInput<F, N>,
    /// What the forward pass keeps for the backward pass.
    record: ForwardRecord<F, N>,
    /// Every row's results.
    out: BlockResults<F, N>,
    /// Working buffers of the passes (nothing in them is read across calls).
    work: BlockWork<F, N>,
    /// This block's energy gradient `∂ℓ/∂Wp` (`L × E`), from [`Unroll::energy_block`].
    pub gwp: Array2<F>,
    /// This block's energy gradient `∂ℓ/∂w2` (`E`), from [`Unroll::energy_block`].
    pub gwe: Vec<F>,
}

/// A block's rows in lanes; spare lanes repeat row 0.
struct BlockInput<F, const N: usize> {
    /// Rows of the block (`1..=N`).
    rows: usize,
    /// The counts `z` and the unary scores `u` (`L`).
    zl: Lanes<F, N>,
    u: Vec<Lanes<F, N>>,
    /// Gold labels of lane `w`: `gold[gold_at[w]..gold_at[w + 1]]` ([`Self::gold`]).
    gold: Vec<u32>,
    gold_at: Vec<usize>,
    /// `[L, E, T]` of the last forward pass.
    dims: [usize; 3],
}

impl<F, const N: usize> BlockInput<F, N> {
    /// The gold labels of lane `w`.
    #[inline(always)]
    fn gold(&self, w: usize) -> &[u32] {
        &self.gold[self.gold_at[w]..self.gold_at[w + 1]]
    }
}

/// What the forward pass keeps for the backward pass.
struct ForwardRecord<F: Scalar, const N: usize> {
    /// `y_0 = σ(u)` (`L`).
    y0: Vec<Lanes<F, N>>,
    /// Per step: the ascent direction `g_t` (`T × L`), the energy mask (`E × T`, unit-major
    /// for the energy GEMMs), the projection's tape, and `∂ℓ/∂y_t = common + on·1[gold]` as
    /// `(common, on)`.
    gs: Vec<Lanes<F, N>>,
    masks: Vec<Lanes<F, N>>,
    proj: Vec<LanesTape<F, N>>,
    f1: Vec<[Lanes<F, N>; 2]>,
    /// Per lane: the final projection's tape (if any, and not the smoothed one).
    final_tapes: Vec<<AnyProjector as Projector<F>>::Tape>,
    /// The smoothed final projection's tape (it runs in lanes).
    final_smooth: SmoothLanesTape<F, N>,
}

/// Every row's results, one per lane.
struct BlockResults<F, const N: usize> {
    /// The loss (forward), then (backward) `∂ℓ/∂z` and `∂ℓ/∂η`.
    loss: Lanes<F, N>,
    gz: Lanes<F, N>,
    geta: Lanes<F, N>,
    /// Backward: `∂ℓ/∂u` (`L`) and the adjoints `η ḡv_t` of `g_t` (`T × L`, step-major: each
    /// step's are written together).
    gu: Vec<Lanes<F, N>>,
    ggs: Vec<Lanes<F, N>>,
}

/// The passes' working buffers.
struct BlockWork<F: Scalar, const N: usize> {
    /// Forward: the current iterate, the velocity, the energy's activations (the point before
    /// each projection is written into that step's tape).
    y: Vec<Lanes<F, N>>,
    velocity: Vec<Lanes<F, N>>,
    act: Vec<Lanes<F, N>>,
    /// Backward: the adjoints of `y` (before and after a projection), of `v`, and `∂ℓ/∂y_t`.
    gy: Vec<Lanes<F, N>>,
    gyp: Vec<Lanes<F, N>>,
    gv: Vec<Lanes<F, N>>,
    d: Vec<Lanes<F, N>>,
    fwd: LanesScratch<F, N>,
    bwd: LanesVjpScratch<F, N>,
    /// A row's worth of scratch (the final projection, row by row).
    row: Vec<F>,
    row_out: Vec<F>,
    /// The smoothed final projection's output (then swapped into `y`).
    fin: Vec<Lanes<F, N>>,
    /// Scratch of [`Unroll::energy_block`].
    energy_s: Vec<Lanes<F, N>>,
    energy_g: Vec<Lanes<F, N>>,
    energy_p: Array2<F>,
    energy_products: EnergyScratch,
}

impl<F: Scalar, const N: usize> Default for BlockTape<F, N> {
    fn default() -> Self {
        let zero = [F::zero(); N];
        Self {
            input: BlockInput {
                rows: 0,
                zl: zero,
                u: Vec::new(),
                gold: Vec::new(),
                gold_at: Vec::new(),
                dims: [0; 3],
            },
            record: ForwardRecord {
                y0: Vec::new(),
                gs: Vec::new(),
                masks: Vec::new(),
                proj: Vec::new(),
                f1: Vec::new(),
                final_tapes: Vec::new(),
                final_smooth: SmoothLanesTape::default(),
            },
            out: BlockResults {
                loss: zero,
                gz: zero,
                geta: zero,
                gu: Vec::new(),
                ggs: Vec::new(),
            },
            work: BlockWork {
                y: Vec::new(),
                velocity: Vec::new(),
                act: Vec::new(),
                gy: Vec::new(),
                gyp: Vec::new(),
                gv: Vec::new(),
                d: Vec::new(),
                fwd: LanesScratch::default(),
                bwd: LanesVjpScratch::default(),
                row: Vec::new(),
                row_out: Vec::new(),
                fin: Vec::new(),
                energy_s: Vec::new(),
                energy_g: Vec::new(),
                energy_p: Array2::zeros((0, 0)),
                energy_products: EnergyScratch::default(),
            },
            gwp: Array2::zeros((0, 0)),
            gwe: Vec::new(),
        }
    }
}

impl<F: Scalar, const N: usize> BlockTape<F, N> {
    /// Row `r`'s loss `−Σ_t w_t F1(y_t)` of the last forward pass.
    pub fn loss(&self, r: usize) -> F {
        self.out.loss[r]
    }

    /// Row `r`'s `(∂ℓ/∂z, ∂ℓ/∂η)` of the last backward pass.
    pub fn grads(&self, r: usize) -> (F, F) {
        (self.out.gz[r], self.out.geta[r])
    }

    /// Multiplies row `r`'s loss and its seeds `∂ℓ/∂y_t` by `weights[r]` (per-example loss
    /// weights), between [`Unroll::forward_block_tape`] and [`Unroll::backward_block`]: the
    /// backward pass is linear in the seeds, so every gradient of row `r` is scaled too.
    pub fn scale_rows(&mut self, weights: &[F]) {
        assert_eq!(
            weights.len(),
            self.input.rows,
            "one weight per row of the block"
        );
        for (w, &s) in weights.iter().enumerate() {
            self.out.loss[w] *= s;
            for [common, on] in &mut self.record.f1 {
                common[w] *= s;
                on[w] *= s;
            }
        }
    }

    /// Copies row `r`'s `∂ℓ/∂u` out of the lanes.
    pub fn write_gu(&self, r: usize, gu: &mut [F]) {
        lane_to_row(&self.out.gu, r, gu);
    }

    /// Entry `i` of row `r`'s `y_0 = σ(u)`.
    #[cfg(any(test, feature = "test-support"))]
    pub fn y0(&self, r: usize, i: usize) -> F {
        self.record.y0[i][r]
    }

    /// Copies row `r`'s results out of the lanes, in the per-row layout of
    /// [`Unroll::backward_row`]: `∂ℓ/∂u` into `gu` (`L`), the adjoints of `g_t` into `ggs`
    /// and the energy masks into `masks` (`T × L` and `T × E`, row-major). Training needs only
    /// `gu` ([`Self::write_gu`]): the energy gradients are formed in lanes
    /// ([`Unroll::energy_block`]).
    #[cfg(any(test, feature = "test-support"))]
    pub fn write_row(&self, r: usize, gu: &mut [F], ggs: &mut [F], masks: &mut [F]) {
        lane_to_row(&self.out.gu, r, gu);
        let [l, e, steps] = self.input.dims;
        for t in 0..steps {
            for i in 0..l {
                ggs[t * l + i] = self.out.ggs[t * l + i][r];
            }
            for k in 0..e {
                masks[t * e + k] = self.record.masks[k * steps + t][r];
            }
        }
    }
}

impl<F: Scalar> Unroll<'_, F> {
    /// The training forward pass of a block of up to `N` rows in lockstep (soft Dykstra
    /// steps, `lanes` with the rounds of `self.projector`; the final projection, if any, on
    /// `y_T`, in lanes if it is the smoothed one, otherwise row by row): records the tape and each row's loss
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
    ///
    /// Contract (a SIMD kernel, exempt from the house limit on function length): `1..=N` rows,
    /// spare lanes repeat row 0 and are ignored; every lane follows [`Self::forward_row`] and
    /// `soft_f1` operation for operation (the same order of sums, `σ` as `sigmoid` computes
    /// it), so it agrees with them to rounding, and no FMA is formed, so every variant gives the
    /// same bits (`block_train/tests.rs` checks both).
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
        t.input.rows = rows;
        t.input.dims = [l, e, steps];
        // Only the velocity starts from zeros; the others are written whole below (clearing
        // them too was a memset of the block per batch).
        t.work.velocity.clear();
        t.work.velocity.resize(l, [zero; N]);
        for buf in [&mut t.input.u, &mut t.record.y0, &mut t.work.y] {
            buf.resize(l, [zero; N]);
        }
        t.work.act.clear();
        t.work.act.resize(e, [zero; N]);
        t.record.gs.resize(steps * l, [zero; N]);
        t.record.masks.resize(steps * e, [zero; N]);
        t.record.proj.resize_with(steps, Default::default);
        t.record.f1.resize(steps, [[zero; N]; 2]);
        // Transpose into lanes; spare lanes repeat row 0 (valid input, ignored).
        t.input.gold.clear();
        t.input.gold_at.clear();
        for w in 0..N {
            let r = if w < rows { w } else { 0 };
            t.input.zl[w] = z[r];
            for (i, &ui) in u[r * l..(r + 1) * l].iter().enumerate() {
                t.input.u[i][w] = ui;
            }
            t.input.gold_at.push(t.input.gold.len());
            t.input.gold.extend_from_slice(gold(r));
        }
        t.input.gold_at.push(t.input.gold.len());
        // y_0 = σ(u) as `sigmoid` computes it, with the lanes' exponential.
        for (y, u) in t.record.y0.iter_mut().zip(&t.input.u) {
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
        t.work.y.copy_from_slice(&t.record.y0);
        t.out.loss = [zero; N];
        let wpt = self.wpt.as_slice().expect("contiguous Wpᵀ");
        for step in 0..steps {
            // x_t goes straight into the step's tape, which keeps it for the backward pass.
            let proj = &mut t.record.proj[step];
            block_step_dispatch(
                self,
                wpt,
                &t.input.u,
                &t.work.y,
                &mut t.work.act,
                &mut t.work.velocity,
                proj.input_mut(l),
                Some(&mut t.record.gs[step * l..(step + 1) * l]),
                Some((&mut t.record.masks, step, steps)),
            );
            lanes.forward_taped(&t.input.zl, &mut t.work.y, proj, &mut t.work.fwd)?;
            let last = step + 1 == steps;
            if let (Some(sl), true) = (self.final_smooth_lanes(), last) {
                // y_T replaced by its smoothed projection, in lanes (the rows' bits).
                t.work.fin.clear();
                t.work.fin.resize(l, [zero; N]);
                sl.forward(
                    &t.work.y,
                    &t.input.zl,
                    &mut t.work.fin,
                    &mut t.record.final_smooth,
                )?;
                std::mem::swap(&mut t.work.y, &mut t.work.fin);
            } else if let (Some(fp), true) = (self.final_projector, last) {
                // y_T replaced by its final projection, row by row (every lane: spare lanes
                // hold a valid copy of row 0).
                t.record.final_tapes.resize_with(N, Default::default);
                t.work.row.resize(l, zero);
                t.work.row_out.resize(l, zero);
                for w in 0..N {
                    lane_to_row(&t.work.y, w, &mut t.work.row);
                    fp.forward(
                        &t.work.row,
                        t.input.zl[w],
                        &mut t.work.row_out,
                        &mut t.record.final_tapes[w],
                    )?;
                    row_to_lane(&t.work.row_out, w, &mut t.work.y);
                }
            }
            // The relaxed F1 of y_t and its gradient's two coefficients, as `soft_f1` computes
            // them (the same order of sums).
            let mut sum_y = [zero; N];
            for y in &t.work.y {
                for w in 0..N {
                    sum_y[w] += y[w];
                }
            }
            let [common, on] = &mut t.record.f1[step];
            let scale = zero - weights[step];
            for w in 0..N {
                let gold = t.input.gold(w);
                let inter: F = gold.iter().map(|&g| t.work.y[g as usize][w]).sum();
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
                t.out.loss[w] -= weights[step] * f1;
            }
        }
        Ok(())
    }
    /// Backward of the last [`Self::forward_block_tape`] on `t`: `∂ℓ/∂u`, the adjoints of
    /// every `g_t`, `∂ℓ/∂z` and `∂ℓ/∂η` of every row, as [`Self::backward_row`] computes them;
    /// read them with `BlockTape::write_row` and [`BlockTape::grads`].
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
        // The accumulated adjoints start from zeros; `gyp` (the VJP's output) and `d` are
        // written whole before they are read.
        for buf in [&mut t.out.gu, &mut t.work.gy, &mut t.work.gv] {
            buf.clear();
            buf.resize(l, [zero; N]);
        }
        for buf in [&mut t.work.gyp, &mut t.work.d] {
            buf.resize(l, [zero; N]);
        }
        t.out.ggs.resize(steps * l, [zero; N]);
        let (mut gz, mut geta) = ([zero; N], [zero; N]);
        let (eta, momentum) = (self.eta, self.momentum);
        for step in (0..steps).rev() {
            // ∂ℓ/∂y_t built as `soft_f1` adds it into zeros, then added to ḡy.
            let [common, on] = &t.record.f1[step];
            // One vector, then copies (written per entry, LLVM turns the loop inside out into
            // scatters).
            let mut c0 = [zero; N];
            for w in 0..N {
                c0[w] = zero + common[w];
            }
            t.work.d.fill(c0);
            for w in 0..N {
                for &g in t.input.gold(w) {
                    t.work.d[g as usize][w] += on[w];
                }
            }
            // Flat: per lane vector, LLVM would vectorise across entries with gathers.
            for (gy, &d) in t
                .work
                .gy
                .as_flattened_mut()
                .iter_mut()
                .zip(t.work.d.as_flattened())
            {
                *gy += d;
            }
            let last = step + 1 == steps;
            if let (Some(sl), true) = (self.final_smooth_lanes(), last) {
                // Through the smoothed projection of y_T, in lanes.
                let gzf = sl.vjp(&t.record.final_smooth, &t.work.gy, &mut t.work.gyp);
                for w in 0..N {
                    gz[w] += gzf[w];
                }
                std::mem::swap(&mut t.work.gy, &mut t.work.gyp);
            } else if let (Some(fp), true) = (self.final_projector, last) {
                // Through the final projection of y_T, row by row.
                for w in 0..N {
                    lane_to_row(&t.work.gy, w, &mut t.work.row);
                    gz[w] += fp.vjp(&t.record.final_tapes[w], &t.work.row, &mut t.work.row_out);
                    row_to_lane(&t.work.row_out, w, &mut t.work.gy);
                }
            }
            let gzt = lanes.vjp(
                &t.record.proj[step],
                &t.work.gy,
                &mut t.work.gyp,
                &mut t.work.bwd,
            );
            for w in 0..N {
                gz[w] += gzt[w];
            }
            let g = &t.record.gs[step * l..(step + 1) * l];
            // On copies of whole lane vectors: through the fields of `t` LLVM cannot rule out
            // aliasing and would not vectorise.
            for i in 0..l {
                let (mut v, yp, gi, mut gu) = (t.work.gv[i], t.work.gyp[i], g[i], t.out.gu[i]);
                let mut ggi = [zero; N];
                for w in 0..N {
                    let gv = v[w] + yp[w];
                    geta[w] += gv * gi[w];
                    ggi[w] = eta * gv;
                    gu[w] += ggi[w];
                    v[w] = momentum * gv;
                }
                (t.work.gv[i], t.out.ggs[step * l + i], t.out.gu[i]) = (v, ggi, gu);
            }
            std::mem::swap(&mut t.work.gy, &mut t.work.gyp);
        }
        for ((gu, gy), y0) in t.out.gu.iter_mut().zip(&t.work.gy).zip(&t.record.y0) {
            for w in 0..N {
                gu[w] += gy[w] * y0[w] * (one - y0[w]);
            }
        }
        t.out.gz = gz;
        t.out.geta = geta;
    }
}

impl<F: Scalar> Unroll<'_, F> {
    /// The energy's parameter gradients of the last [`Self::backward_block`] on `t`, over its
    /// rows and steps, into `t.gwp` and `t.gwe`: `∂Wp = Σ ḡg (w2 ⊙ m)ᵀ` and
    /// `∂w2 = Σ (Wpᵀ ḡg) ⊙ m`, as two GEMMs straight on the lanes (adjoints `L × TN`, masks
    /// `E × TN`; spare lanes are masked out).
    pub fn energy_block<const N: usize>(&self, t: &mut BlockTape<F, N>) {
        let [l, e, steps] = t.input.dims;
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
        for m in t.record.masks.iter_mut() {
            m[t.input.rows..].fill(zero);
        }
        let tn = steps * N;
        if t.work.energy_p.dim() != (e, tn) {
            t.work.energy_p = Array2::zeros((e, tn));
        }
        let ops = EnergyOperands {
            g: &t.out.ggs,
            masks: &t.record.masks,
            we: self.we,
            wpt: self.wpt,
        };
        if !energy_products(
            &ops,
            &mut t.gwp,
            &mut t.work.energy_p,
            &mut t.work.energy_products,
        ) {
            t.work.energy_s.clear();
            t.work.energy_s.extend_from_slice(&t.record.masks);
            for (k, row) in t.work.energy_s.chunks_exact_mut(steps).enumerate() {
                let we = self.we[k];
                for x in row.iter_mut().flatten() {
                    *x *= we;
                }
            }
            // The adjoints label-major (`L × TN`), as the GEMMs read them.
            t.work.energy_g.clear();
            t.work.energy_g.extend(
                (0..l)
                    .flat_map(|i| (0..steps).map(move |step| (step, i)))
                    .map(|(step, i)| t.out.ggs[step * l + i]),
            );
            let (g, s) = (
                lanes_view(&t.work.energy_g, l, tn),
                lanes_view(&t.work.energy_s, e, tn),
            );
            general_mat_mul(F::one(), &g, &s.t(), zero, &mut t.gwp);
            general_mat_mul(F::one(), &self.wpt, &g, zero, &mut t.work.energy_p);
        }
        let m = lanes_view(&t.record.masks, e, tn);
        for ((gw, p), m) in t
            .gwe
            .iter_mut()
            .zip(t.work.energy_p.outer_iter())
            .zip(m.outer_iter())
        {
            for (&p, &m) in p.iter().zip(m.iter()) {
                *gw += p * m;
            }
        }
    }
}

simd::dispatch! {
    features ["avx512f", "avx512bw", "avx512vl"], ["avx2"];
    /// `Unroll::forward_block_tape_impl` compiled for the widest vectors the CPU has. With
    /// `avx512vl` the sort's `u16` index swaps run as masked 256-bit operations: the forward
    /// pass is a tenth faster (the backward pass and the ascent step gain nothing from it).
    fn forward_block_tape_dispatch<'g, F: Scalar, const N: usize>(
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
    fn backward_block_dispatch<F: Scalar, const N: usize>(
        un: &Unroll<'_, F>,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<F, N>,
    ) {
        un.backward_block_impl(lanes, t)
    }
}

#[cfg(test)]
mod tests;
