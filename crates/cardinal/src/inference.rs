//! Unrolled projected gradient ascent on the relaxed labels, forward and backward, one row at a
//! time (rows are independent given the unary scores `u` and the count `z`).
//!
//! Forward, from `y_0 = σ(u)`, `v_0 = 0`, for `t = 1..T`:
//! ```text
//! a_t = Wpᵀ y_{t−1},  g_t = u + Wp (w2 ⊙ 1[a_t > 0])     (∇_y of yᵀu + w2ᵀ relu(Wpᵀ y))
//! v_t = μ v_{t−1} + η g_t,   y_t = Π(y_{t−1} + v_t, z)
//! ```
//! `∂g_t/∂y_{t−1}` is zero almost everywhere (the energy is piecewise linear in `y`), so no
//! second-order derivative is needed. Backward, for `t = T..1`, with `ḡy` the adjoint of `y_t`
//! and `ḡv` that of `v_t`:
//! ```text
//! ḡy += ∂ℓ/∂y_t;  (ḡy', ḡz_t) = Π_vjp(ḡy);  ḡv += ḡy';  ḡg_t = η ḡv;  ḡu += ḡg_t;
//! ḡη += ⟨ḡv, g_t⟩;  ḡv ← μ ḡv;  ḡy ← ḡy'
//! ```
//! and finally `ḡu += ḡy ⊙ y_0 (1 − y_0)`. The energy's parameter gradients are
//! `∂ℓ/∂Wp = Σ_t ḡg_t (w2 ⊙ m_t)ᵀ` and `∂ℓ/∂w2 = Σ_t (Wpᵀ ḡg_t) ⊙ m_t`; the per-step `ḡg_t` and
//! `m_t` are returned so the caller can form both sums for a whole batch with two GEMMs, in a
//! fixed order (bit-identical results for any thread count).

use cardinal_proj::lanes::{
    Lanes, LanesScratch, LanesTape, LanesVjpScratch, SoftDykstraLanes, LANES,
};
use cardinal_proj::{AnyProjector, Method, ProjError, Projector};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};

use crate::model::{c, Float};

/// Up to this many labels, inference runs rows in lockstep (`Unroll::forward_block`); above it,
/// a block's buffers (64 rows × L) leave the cache and the per-row path is faster (measured with
/// `bench/scaling.sh`: see docs/RESULTS.md).
pub const LOCKSTEP_MAX_LABELS: usize = 4096;

/// Which implementation of the unroll runs a pass. Both compute the same numbers (to
/// rounding; the tests compare them); [`Kernel::choose`] is the one place that picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// One row at a time ([`Unroll::forward_row`], [`Unroll::backward_row`]): any projection.
    /// The reference.
    Row,
    /// Blocks of rows in lockstep, one row per SIMD lane ([`Unroll::forward_block`],
    /// [`Unroll::forward_block_tape`], [`Unroll::backward_block`]): soft Dykstra steps
    /// (`cardinal_proj::lanes`) with any final projection. Every other projection has no
    /// lockstep form and runs on [`Kernel::Row`] (`docs/DESIGN.md`).
    Lockstep,
}

impl Kernel {
    /// The kernel for steps projected by `method` over `n_labels` labels: lockstep for soft
    /// Dykstra up to [`LOCKSTEP_MAX_LABELS`] labels (in training, only with at least one
    /// step: with none there is nothing to run in lockstep), the row kernel otherwise.
    pub fn choose(method: Method, steps: usize, n_labels: usize, training: bool) -> Self {
        if method == Method::DykstraSoft
            && n_labels <= LOCKSTEP_MAX_LABELS
            && (steps > 0 || !training)
        {
            Self::Lockstep
        } else {
            Self::Row
        }
    }

    /// Whether this kernel can run steps projected by `method`.
    pub fn supports(self, method: Method) -> bool {
        match self {
            Self::Row => true,
            Self::Lockstep => method == Method::DykstraSoft,
        }
    }
}

/// The fixed parts of one unrolled solve.
pub struct Unroll<'a, F: Float> {
    /// Energy matrix transposed, `Wpᵀ` (`E × L`, rows contiguous: both products below then
    /// run over contiguous length-`L` rows).
    pub wpt: ArrayView2<'a, F>,
    /// Energy output weights `w2`, `E`.
    pub we: &'a [F],
    pub eta: F,
    pub momentum: F,
    pub steps: usize,
    pub projector: &'a AnyProjector,
    /// An optional projection applied once more to the last iterate (e.g. the exact one after
    /// soft Dykstra steps, so that `y_T` is feasible); it replaces `y_T`.
    pub final_projector: Option<&'a AnyProjector>,
}

/// What the forward pass of one row records for its backward pass, plus scratch space.
/// Reused across rows and batches: buffers grow to size once, then no allocation.
pub struct RowTape<F: Float> {
    /// `y_0..y_T`, `(T+1) × L`.
    pub ys: Vec<F>,
    /// Ascent directions `g_1..g_T`, `T × L`.
    gs: Vec<F>,
    /// Energy masks `m_t = 1[a_t > 0]` (as 0/1), `T × E`.
    pub masks: Vec<F>,
    proj: Vec<<AnyProjector as Projector<F>>::Tape>,
    final_tape: <AnyProjector as Projector<F>>::Tape,
    z: F,
    scratch: Vec<F>,
    gy: Vec<F>,
    gv: Vec<F>,
    gyp: Vec<F>,
    /// Spare buffer lent to callers (the loss's `∂ℓ/∂y_t`), so the hot loop never allocates.
    pub(crate) spare: Vec<F>,
}

impl<F: Float> Default for RowTape<F> {
    fn default() -> Self {
        Self {
            ys: Vec::new(),
            gs: Vec::new(),
            masks: Vec::new(),
            proj: Vec::new(),
            final_tape: Default::default(),
            z: F::zero(),
            scratch: Vec::new(),
            gy: Vec::new(),
            gv: Vec::new(),
            gyp: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<F: Float> RowTape<F> {
    /// The iterate `y_t` (`t = 0..=T`) of the last forward pass.
    pub fn y(&self, t: usize, l: usize) -> &[F] {
        &self.ys[t * l..(t + 1) * l]
    }

    /// The ranking scores of the last forward pass: the last step's point before its
    /// projection, `x_T = y_{T−1} + v_T` (`y_0` when `T = 0`). The projections on the way to `y_T` preserve order (the soft Dykstra
    /// steps approximately: violations of ~5e-7 seen), so these order the labels as `y_T`
    /// does, without its ties where entries meet the bounds 0 and 1.
    pub fn ranking(&self, l: usize) -> &[F] {
        &self.gyp[..l]
    }
}

/// `σ(x)`, computed without overflow for large `|x|`.
#[inline]
pub fn sigmoid<F: Float>(x: F) -> F {
    if x >= F::zero() {
        F::one() / (F::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (F::one() + e)
    }
}

impl<F: Float> Unroll<'_, F> {
    fn l(&self) -> usize {
        self.wpt.ncols()
    }
    fn e(&self) -> usize {
        self.wpt.nrows()
    }

    /// Runs the `T` steps for one row with unary scores `u` and count `z`.
    pub fn forward_row(&self, u: &[F], z: F, tape: &mut RowTape<F>) -> Result<(), ProjError> {
        let (l, e, steps) = (self.l(), self.e(), self.steps);
        tape.ys.resize((steps + 1) * l, F::zero());
        tape.gs.resize(steps * l, F::zero());
        tape.masks.resize(steps * e, F::zero());
        tape.proj.resize_with(steps, Default::default);
        tape.scratch.resize(l.max(e), F::zero());
        tape.gv.resize(l, F::zero());
        tape.z = z;
        for (y, &u) in tape.ys[..l].iter_mut().zip(u) {
            *y = sigmoid(u);
        }
        let velocity = &mut tape.gv; // forward reuses the adjoint buffer as the velocity
        velocity.fill(F::zero());
        let wpt = self.wpt.as_slice().expect("contiguous Wpᵀ");
        for t in 0..steps {
            let (prev, next) = tape.ys.split_at_mut((t + 1) * l);
            let y_prev = &prev[t * l..];
            let y_next = &mut next[..l];
            // a = Wpᵀ y, m = 1[a > 0], s = w2 ⊙ m
            let act = &mut tape.scratch[..e];
            let mask = &mut tape.masks[t * e..(t + 1) * e];
            for k in 0..e {
                let a = dot_lanes(&wpt[k * l..(k + 1) * l], y_prev);
                mask[k] = if a > F::zero() { F::one() } else { F::zero() };
                act[k] = mask[k] * self.we[k];
            }
            // g = u + Wp s;  v = μ v + η g;  y' = y + v (written into y_next, projected in place)
            let g = &mut tape.gs[t * l..(t + 1) * l];
            g.copy_from_slice(u);
            for k in 0..e {
                let sk = act[k];
                if sk != F::zero() {
                    for (gi, &w) in g.iter_mut().zip(&wpt[k * l..(k + 1) * l]) {
                        *gi += sk * w;
                    }
                }
            }
            for i in 0..l {
                let gi = g[i];
                velocity[i] = self.momentum * velocity[i] + self.eta * gi;
                y_next[i] = y_prev[i] + velocity[i];
            }
            let pre = &mut tape.gyp;
            pre.clear();
            pre.extend_from_slice(y_next);
            self.projector.forward(pre, z, y_next, &mut tape.proj[t])?;
        }
        if steps == 0 {
            // The ranking scores of no step: y_0 itself.
            tape.gyp.clear();
            tape.gyp.extend_from_slice(&tape.ys[..l]);
        }
        if let Some(fp) = self.final_projector {
            // `gyp` keeps the last step's point before its projection (the ranking scores).
            let last = &mut tape.ys[steps * l..(steps + 1) * l];
            tape.spare.clear();
            tape.spare.extend_from_slice(last);
            fp.forward(&tape.spare, z, last, &mut tape.final_tape)?;
        }
        Ok(())
    }

    /// Backward of the last [`Self::forward_row`] on `tape`.
    ///
    /// `gys` holds `∂ℓ/∂y_t` for `t = 1..T` (`T × L`). Writes `∂ℓ/∂u` into `gu` and `η·ḡv_t`
    /// (the adjoint of `g_t`) into `ggs` (`T × L`); returns `(∂ℓ/∂z, ∂ℓ/∂η)`.
    pub fn backward_row(
        &self,
        tape: &mut RowTape<F>,
        gys: &[F],
        gu: &mut [F],
        ggs: &mut [F],
    ) -> (F, F) {
        let (l, steps) = (self.l(), self.steps);
        tape.gy.clear();
        tape.gy.resize(l, F::zero());
        tape.gv.clear();
        tape.gv.resize(l, F::zero());
        tape.gyp.resize(l, F::zero());
        gu.fill(F::zero());
        let (mut gz, mut geta) = (F::zero(), F::zero());
        for t in (0..steps).rev() {
            for (gy, &d) in tape.gy.iter_mut().zip(&gys[t * l..(t + 1) * l]) {
                *gy += d;
            }
            if let (Some(fp), true) = (self.final_projector, t + 1 == steps) {
                gz += fp.vjp(&tape.final_tape, &tape.gy, &mut tape.gyp);
                std::mem::swap(&mut tape.gy, &mut tape.gyp);
            }
            gz += self.projector.vjp(&tape.proj[t], &tape.gy, &mut tape.gyp);
            let g = &tape.gs[t * l..(t + 1) * l];
            let gg = &mut ggs[t * l..(t + 1) * l];
            for i in 0..l {
                let gv = tape.gv[i] + tape.gyp[i];
                geta += gv * g[i];
                gg[i] = self.eta * gv;
                gu[i] += gg[i];
                tape.gv[i] = self.momentum * gv;
            }
            std::mem::swap(&mut tape.gy, &mut tape.gyp);
        }
        for ((gu, &gy), &y0) in gu.iter_mut().zip(&tape.gy).zip(&tape.ys[..l]) {
            *gu += gy * y0 * (F::one() - y0);
        }
        (gz, geta)
    }
}

/// Lane `w` of `lanes` (one value per label) written out as a row.
fn lane_to_row<F: Copy, const N: usize>(lanes: &[Lanes<F, N>], w: usize, row: &mut [F]) {
    for (r, x) in row.iter_mut().zip(lanes) {
        *r = x[w];
    }
}

/// `row` written into lane `w` of `lanes`.
fn row_to_lane<F: Copy, const N: usize>(row: &[F], w: usize, lanes: &mut [Lanes<F, N>]) {
    for (x, &r) in lanes.iter_mut().zip(row) {
        x[w] = r;
    }
}

/// Buffers of [`Unroll::forward_block`], reused across blocks.
pub struct BlockScratch<F: Float, const N: usize = LANES> {
    u: Vec<Lanes<F, N>>,
    y: Vec<Lanes<F, N>>,
    x: Vec<Lanes<F, N>>,
    velocity: Vec<Lanes<F, N>>,
    act: Vec<Lanes<F, N>>,
    proj: LanesScratch<F, N>,
    final_tape: <AnyProjector as Projector<F>>::Tape,
    row: Vec<F>,
}

impl<F: Float, const N: usize> Default for BlockScratch<F, N> {
    fn default() -> Self {
        Self {
            u: Vec::new(),
            y: Vec::new(),
            x: Vec::new(),
            velocity: Vec::new(),
            act: Vec::new(),
            proj: LanesScratch::default(),
            final_tape: Default::default(),
            row: Vec::new(),
        }
    }
}

impl<F: Float> Unroll<'_, F> {
    /// `y_T` (no tape: inference only) for a block of up to `N` rows at once, one row per
    /// SIMD lane, when the step projection is soft Dykstra (`lanes`, with the same rounds as
    /// `self.projector`). `u` holds the rows' unary scores (`rows × L`), `z` their counts;
    /// `y_out` receives `y_T` and `rank_out` the ranking scores ([`RowTape::ranking`]; both
    /// `rows × L`). Agrees with [`Self::forward_row`] to rounding.
    #[allow(unsafe_code)]
    pub fn forward_block<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        y_out: &mut [F],
        rank_out: &mut [F],
        s: &mut BlockScratch<F, N>,
    ) -> Result<(), ProjError> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU supports the features the function is compiled for.
                return unsafe { self.forward_block_avx512(lanes, u, z, y_out, rank_out, s) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { self.forward_block_avx2(lanes, u, z, y_out, rank_out, s) };
            }
        }
        self.forward_block_impl(lanes, u, z, y_out, rank_out, s)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn forward_block_avx512<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        y_out: &mut [F],
        rank_out: &mut [F],
        s: &mut BlockScratch<F, N>,
    ) -> Result<(), ProjError> {
        self.forward_block_impl(lanes, u, z, y_out, rank_out, s)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn forward_block_avx2<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        y_out: &mut [F],
        rank_out: &mut [F],
        s: &mut BlockScratch<F, N>,
    ) -> Result<(), ProjError> {
        self.forward_block_impl(lanes, u, z, y_out, rank_out, s)
    }

    /// The body of [`Self::forward_block`], inlined into each instruction-set variant (no FMA
    /// contraction anywhere, so every variant computes the same numbers).
    #[inline(always)]
    fn forward_block_impl<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        y_out: &mut [F],
        rank_out: &mut [F],
        s: &mut BlockScratch<F, N>,
    ) -> Result<(), ProjError> {
        let (l, e) = (self.l(), self.e());
        let rows = z.len();
        assert!(
            (1..=N).contains(&rows)
                && u.len() == rows * l
                && y_out.len() == rows * l
                && rank_out.len() == rows * l
        );
        let zero = F::zero();
        for buf in [&mut s.u, &mut s.y, &mut s.x, &mut s.velocity] {
            buf.clear();
            buf.resize(l, [zero; N]);
        }
        s.act.clear();
        s.act.resize(e, [zero; N]);
        // Transpose into lanes; spare lanes repeat row 0 (valid input, ignored).
        let mut zl = [z[0]; N];
        for w in 0..N {
            let r = if w < rows { w } else { 0 };
            zl[w] = z[r];
            for (i, &ui) in u[r * l..(r + 1) * l].iter().enumerate() {
                s.u[i][w] = ui;
            }
        }
        // y_0 = σ(u) as `sigmoid` computes it, with the lanes' exponential.
        let one = F::one();
        for (y, u) in s.y.iter_mut().zip(&s.u) {
            let mut e = [zero; N];
            for w in 0..N {
                e[w] = zero - u[w].abs();
            }
            F::exp_in_place(&mut e);
            for w in 0..N {
                y[w] = if u[w] >= zero {
                    one / (one + e[w])
                } else {
                    e[w] / (one + e[w])
                };
            }
        }
        let wpt = self.wpt.as_slice().expect("contiguous Wpᵀ");
        for _ in 0..self.steps {
            self.block_step(
                wpt,
                &s.u,
                &s.y,
                &mut s.act,
                &mut s.velocity,
                &mut s.x,
                None,
                None,
            );
            lanes.forward(&s.x, &zl, &mut s.y, &mut s.proj)?;
        }
        for (r, (out, rank)) in y_out
            .chunks_exact_mut(l)
            .zip(rank_out.chunks_exact_mut(l))
            .enumerate()
        {
            for (o, yi) in out.iter_mut().zip(&s.y) {
                *o = yi[r];
            }
            // As `RowTape::ranking`: the last step's point before its projection.
            let last_point = if self.steps == 0 { &s.y } else { &s.x };
            for (o, xi) in rank.iter_mut().zip(last_point) {
                *o = xi[r];
            }
            if let Some(fp) = self.final_projector {
                s.row.clear();
                s.row.extend_from_slice(out);
                fp.forward(&s.row, z[r], out, &mut s.final_tape)?;
            }
        }
        Ok(())
    }
}

impl<F: Float> Unroll<'_, F> {
    /// One ascent step's update on a block, before its projection: `a = Wpᵀ y`,
    /// `act = w2 ⊙ 1[a > 0]`, `g = u + Wp act`, `v = μ v + η g`, `x = y + v`; keeps `g` and the
    /// mask `1[a > 0]` in `g_out` and `mask_out` if given (`(buffer, offset, stride)`: unit
    /// `k`'s mask goes to `buffer[offset + k·stride]`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn block_step<const N: usize>(
        &self,
        wpt: &[F],
        u: &[Lanes<F, N>],
        y: &[Lanes<F, N>],
        act: &mut [Lanes<F, N>],
        velocity: &mut [Lanes<F, N>],
        x: &mut [Lanes<F, N>],
        mut g_out: Option<&mut [Lanes<F, N>]>,
        mut mask_out: Option<(&mut [Lanes<F, N>], usize, usize)>,
    ) {
        let (l, e) = (self.l(), self.e());
        let (zero, one) = (F::zero(), F::one());
        let (eta, momentum) = (self.eta, self.momentum);
        // a = Wpᵀ y, s = w2 ⊙ 1[a > 0]: four energy units per pass over y (independent sums).
        let mut k0 = 0;
        while k0 < e {
            let kn = (e - k0).min(4);
            let mut acc = [[zero; N]; 4];
            let rows: [&[F]; 4] = std::array::from_fn(|q| &wpt[(k0 + q.min(kn - 1)) * l..][..l]);
            for (i, yi) in y.iter().enumerate() {
                for q in 0..4 {
                    axpy(&mut acc[q], rows[q][i], yi);
                }
            }
            for q in 0..kn {
                let we = self.we[k0 + q];
                for w in 0..N {
                    act[k0 + q][w] = if acc[q][w] > zero { we } else { zero };
                }
                if let Some((m, offset, stride)) = mask_out.as_mut() {
                    let m = &mut m[*offset + (k0 + q) * *stride];
                    for w in 0..N {
                        m[w] = if acc[q][w] > zero { one } else { zero };
                    }
                }
            }
            k0 += kn;
        }
        // g = u + Wp s (k ascending, as forward_row), v = μ v + η g, x = y + v; four labels
        // at a time (independent sums hide the add latency).
        let mut i0 = 0;
        while i0 < l {
            let n = (l - i0).min(4);
            let mut acc: [Lanes<F, N>; 4] = std::array::from_fn(|q| u[i0 + q.min(n - 1)]);
            for (k, sk) in act.iter().enumerate() {
                let row = &wpt[k * l..(k + 1) * l];
                for q in 0..4 {
                    axpy(&mut acc[q], row[i0 + q.min(n - 1)], sk);
                }
            }
            for (q, g) in acc.iter().take(n).enumerate() {
                let (v, x, y) = (&mut velocity[i0 + q], &mut x[i0 + q], &y[i0 + q]);
                for w in 0..N {
                    v[w] = momentum * v[w] + eta * g[w];
                    x[w] = y[w] + v[w];
                }
                if let Some(go) = g_out.as_deref_mut() {
                    go[i0 + q] = *g;
                }
            }
            i0 += n;
        }
    }
}

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
    /// This block's energy gradients `∂ℓ/∂Wp` (`L × E`) and `∂ℓ/∂w2` (`E`), and scratch.
    pub gwp: Array2<F>,
    pub gwe: Vec<F>,
    energy_s: Vec<Lanes<F, N>>,
    energy_p: Array2<F>,
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
    /// by row on `y_T`): records the
    /// tape and each row's loss `−Σ_t weights[t−1]·F1(y_t, gold(r))` (the relaxed F1 of
    /// [`soft_f1`]). `u` holds the rows' unary scores (`rows × L`), `z` their counts. The same
    /// numbers as [`Self::forward_row`] followed by `soft_f1`, to rounding.
    #[allow(unsafe_code)]
    pub fn forward_block_tape<'g, const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        gold: impl Fn(usize) -> &'g [u32],
        weights: &[F],
        t: &mut BlockTape<F, N>,
    ) -> Result<(), ProjError> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
            {
                // SAFETY: the CPU supports the features the function is compiled for.
                return unsafe { self.forward_block_tape_avx512(lanes, u, z, gold, weights, t) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { self.forward_block_tape_avx2(lanes, u, z, gold, weights, t) };
            }
        }
        self.forward_block_tape_impl(lanes, u, z, gold, weights, t)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn forward_block_tape_avx512<'g, const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        gold: impl Fn(usize) -> &'g [u32],
        weights: &[F],
        t: &mut BlockTape<F, N>,
    ) -> Result<(), ProjError> {
        self.forward_block_tape_impl(lanes, u, z, gold, weights, t)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn forward_block_tape_avx2<'g, const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        gold: impl Fn(usize) -> &'g [u32],
        weights: &[F],
        t: &mut BlockTape<F, N>,
    ) -> Result<(), ProjError> {
        self.forward_block_tape_impl(lanes, u, z, gold, weights, t)
    }

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
                        -two * inter / (denom * denom) * scale,
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
    #[allow(unsafe_code)]
    pub fn backward_block<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<F, N>,
    ) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
            {
                // SAFETY: the CPU supports the features the function is compiled for.
                return unsafe { self.backward_block_avx512(lanes, t) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { self.backward_block_avx2(lanes, t) };
            }
        }
        self.backward_block_impl(lanes, t)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn backward_block_avx512<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<F, N>,
    ) {
        self.backward_block_impl(lanes, t)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn backward_block_avx2<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        t: &mut BlockTape<F, N>,
    ) {
        self.backward_block_impl(lanes, t)
    }

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

/// `rows × cols` row-major view of lane vectors (`cols` a multiple of the width).
fn lanes_view<F: Float, const N: usize>(
    x: &[Lanes<F, N>],
    rows: usize,
    cols: usize,
) -> ArrayView2<'_, F> {
    ArrayView2::from_shape((rows, cols), x.as_flattened()).expect("lanes of that shape")
}

/// `acc += a·x` on one lane vector (mul then add, never fused: same numbers on every CPU).
#[inline(always)]
fn axpy<F: Float, const N: usize>(acc: &mut Lanes<F, N>, a: F, x: &Lanes<F, N>) {
    for w in 0..N {
        acc[w] += a * x[w];
    }
}

/// `⟨a, b⟩` over fixed-width lanes, so that it vectorises.
#[inline]
fn dot_lanes<F: Float>(a: &[F], b: &[F]) -> F {
    const LANES: usize = 8;
    let mut acc = [F::zero(); LANES];
    let full = a.len() / LANES * LANES;
    for (ca, cb) in a[..full]
        .chunks_exact(LANES)
        .zip(b[..full].chunks_exact(LANES))
    {
        for k in 0..LANES {
            acc[k] += ca[k] * cb[k];
        }
    }
    let mut s = acc.iter().fold(F::zero(), |x, &y| x + y);
    for (&x, &y) in a[full..].iter().zip(&b[full..]) {
        s += x * y;
    }
    s
}

/// Relaxed F1 `2⟨y, y*⟩ / (Σy + |y*|)` of one row with gold labels `gold`; if `grad` is given,
/// adds `scale · ∂F1/∂y` to it. Defined as 0 (zero gradient) when `Σy + |y*| = 0`.
pub fn soft_f1<F: Float>(y: &[F], gold: &[u32], grad: Option<(&mut [F], F)>) -> F {
    let sum_y: F = y.iter().copied().sum();
    let inter: F = gold.iter().map(|&g| y[g as usize]).sum();
    let denom = sum_y + c::<F>(gold.len() as f64);
    if denom <= F::zero() {
        return F::zero();
    }
    let two: F = c(2.0);
    if let Some((grad, scale)) = grad {
        // ∂F1/∂y_i = 2 y*_i / D − 2 ⟨y, y*⟩ / D²
        let common = -two * inter / (denom * denom) * scale;
        for gi in grad.iter_mut() {
            *gi += common;
        }
        let on = two / denom * scale;
        for &g in gold {
            grad[g as usize] += on;
        }
    }
    two * inter / denom
}

#[cfg(test)]
mod tests {
    use super::*;
    use cardinal_proj::Method;
    use ndarray::Array2;

    /// A deterministic stream of numbers uniform in [−1, 1) (an LCG).
    fn uniform_pm1(mut s: u64) -> impl FnMut() -> f64 {
        move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        }
    }

    fn unroll_loss(un: &Unroll<f64>, u: &[f64], z: f64, w: &[f64], tape: &mut RowTape<f64>) -> f64 {
        un.forward_row(u, z, tape).unwrap();
        let l = u.len();
        (1..=un.steps)
            .map(|t| {
                tape.y(t, l)
                    .iter()
                    .zip(&w[(t - 1) * l..t * l])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
            })
            .sum()
    }

    /// The unrolled solve's VJP against central differences of a random linear functional of
    /// all iterates, for every projection method.
    #[test]
    fn unroll_vjp_matches_finite_differences() {
        let (l, e, steps) = (7, 3, 4);
        let mut rnd = uniform_pm1(12345u64);
        let wp = Array2::from_shape_fn((l, e), |_| rnd());
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let u: Vec<f64> = (0..l).map(|_| 2.0 * rnd()).collect();
        let w: Vec<f64> = (0..steps * l).map(|_| rnd()).collect();
        for method in [
            Method::Exact,
            Method::DykstraSoft,
            Method::DykstraExact,
            Method::Soft,
            Method::Smooth,
        ] {
            let projector = AnyProjector::new(method, 2, 20).with_eps(0.3);
            let wpt = wp.t().as_standard_layout().into_owned();
            let un = Unroll {
                wpt: wpt.view(),
                we: &we,
                eta: 0.3,
                momentum: 0.9,
                steps,
                projector: &projector,
                final_projector: None,
            };
            let z = 2.3;
            let mut tape = RowTape::default();
            unroll_loss(&un, &u, z, &w, &mut tape);
            let mut gu = vec![0.0; l];
            let mut ggs = vec![0.0; steps * l];
            let (gz, geta) = un.backward_row(&mut tape, &w, &mut gu, &mut ggs);
            let h = 1e-6;
            for i in 0..l {
                let mut up = u.clone();
                up[i] += h;
                let mut um = u.clone();
                um[i] -= h;
                let fd = (unroll_loss(&un, &up, z, &w, &mut tape)
                    - unroll_loss(&un, &um, z, &w, &mut tape))
                    / (2.0 * h);
                assert!(
                    (fd - gu[i]).abs() < 1e-5 * (1.0 + fd.abs()),
                    "{method}: du[{i}] fd {fd} vs {}",
                    gu[i]
                );
            }
            let fd = (unroll_loss(&un, &u, z + h, &w, &mut tape)
                - unroll_loss(&un, &u, z - h, &w, &mut tape))
                / (2.0 * h);
            assert!(
                (fd - gz).abs() < 1e-5 * (1.0 + fd.abs()),
                "{method}: dz fd {fd} vs {gz}"
            );
            let un_p = Unroll { eta: 0.3 + h, ..un };
            let un_m = Unroll { eta: 0.3 - h, ..un };
            let fd = (unroll_loss(&un_p, &u, z, &w, &mut tape)
                - unroll_loss(&un_m, &u, z, &w, &mut tape))
                / (2.0 * h);
            assert!(
                (fd - geta).abs() < 1e-5 * (1.0 + fd.abs()),
                "{method}: deta fd {fd} vs {geta}"
            );
        }
    }

    /// The Euclidean unroll (η 0.2, momentum 0.9) that the block-against-row tests compare.
    fn block_test_unroll<'a>(
        wpt: &'a Array2<f64>,
        we: &'a [f64],
        steps: usize,
        projector: &'a AnyProjector,
        final_projector: Option<&'a AnyProjector>,
    ) -> Unroll<'a, f64> {
        Unroll {
            wpt: wpt.view(),
            we,
            eta: 0.2,
            momentum: 0.9,
            steps,
            projector,
            final_projector,
        }
    }

    /// The ranking scores are the last step's point before its projection, rebuilt here from
    /// the tape's gradients: `x_T = y_{T−1} + v_T`; with no step, `σ(u)`. With and without a
    /// final projection, which must not touch them.
    #[test]
    fn ranking_is_the_last_point_before_its_projection() {
        let (l, e) = (23, 4);
        let mut rnd = uniform_pm1(7u64);
        let wpt = Array2::from_shape_fn((e, l), |_| rnd());
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let projector = AnyProjector::new(Method::DykstraSoft, 2, 20);
        let smooth = AnyProjector::new(Method::Smooth, 2, 20).with_eps(0.05);
        let u: Vec<f64> = (0..l).map(|_| 3.0 * rnd()).collect();
        let z = 4.5;
        for steps in [0, 1, 4] {
            for final_projector in [None, Some(&smooth)] {
                let un = block_test_unroll(&wpt, &we, steps, &projector, final_projector);
                let mut tape = RowTape::default();
                un.forward_row(&u, z, &mut tape).unwrap();
                let mut velocity = vec![0.0; l];
                for t in 0..steps {
                    for i in 0..l {
                        velocity[i] = un.momentum * velocity[i] + un.eta * tape.gs[t * l + i];
                    }
                }
                let want: Vec<f64> = match steps {
                    0 => u.iter().map(|&v| sigmoid(v)).collect(),
                    _ => (0..l)
                        .map(|i| tape.y(steps - 1, l)[i] + velocity[i])
                        .collect(),
                };
                let fin = final_projector.is_some();
                for (i, (&a, &b)) in tape.ranking(l).iter().zip(&want).enumerate() {
                    assert!(
                        (a - b).abs() < 1e-12,
                        "T {steps} final {fin} label {i}: {a} vs {b}"
                    );
                }
            }
        }
    }

    /// The lockstep block solve against the per-row one: same `y_T` and ranking scores to
    /// rounding, for full and partial blocks, with and without a final projection, with and
    /// without steps.
    #[test]
    fn block_solve_equals_the_row_solve() {
        let (l, e) = (37, 5);
        let mut rnd = uniform_pm1(99u64);
        let wpt = Array2::from_shape_fn((e, l), |_| rnd());
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let projector = AnyProjector::new(Method::DykstraSoft, 2, 20);
        let exact = AnyProjector::new(Method::Exact, 2, 20);
        let lanes = SoftDykstraLanes::new(2, l);
        for (steps, final_projector) in [(6, None), (6, Some(&exact)), (0, Some(&exact))] {
            for rows in [1, 3, LANES] {
                let u: Vec<f64> = (0..rows * l).map(|_| 3.0 * rnd()).collect();
                let z: Vec<f64> = (0..rows).map(|_| 1.0 + 4.0 * (rnd() + 1.0)).collect();
                let un = block_test_unroll(&wpt, &we, steps, &projector, final_projector);
                let mut got = vec![0.0; rows * l];
                let mut got_rank = vec![0.0; rows * l];
                un.forward_block(
                    &lanes,
                    &u,
                    &z,
                    &mut got,
                    &mut got_rank,
                    &mut BlockScratch::<f64, LANES>::default(),
                )
                .unwrap();
                // The portable body computes the very same numbers as the dispatched variant.
                let mut portable = vec![0.0; rows * l];
                let mut portable_rank = vec![0.0; rows * l];
                un.forward_block_impl(
                    &lanes,
                    &u,
                    &z,
                    &mut portable,
                    &mut portable_rank,
                    &mut BlockScratch::<f64, LANES>::default(),
                )
                .unwrap();
                assert_eq!(got, portable);
                assert_eq!(got_rank, portable_rank);
                let mut tape = RowTape::default();
                for r in 0..rows {
                    un.forward_row(&u[r * l..(r + 1) * l], z[r], &mut tape)
                        .unwrap();
                    let fin = final_projector.is_some();
                    for (what, block, row) in [
                        ("y_T", &got[r * l..(r + 1) * l], tape.y(steps, l)),
                        ("ranking", &got_rank[r * l..(r + 1) * l], tape.ranking(l)),
                    ] {
                        for (i, (&a, &b)) in block.iter().zip(row).enumerate() {
                            assert!(
                                (a - b).abs() < 1e-10,
                                "final {fin} rows {rows} row {r} label {i} {what}: {a} vs {b}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The lockstep training pass (forward with tape, loss, backward) against the per-row one
    /// with `soft_f1` as the pipeline uses it: every row's loss, `∂ℓ/∂u`, adjoints of `g_t`,
    /// energy masks, `∂ℓ/∂z` and `∂ℓ/∂η` to rounding. Full and partial blocks, label counts
    /// that are not powers of two, and exact ties (duplicated labels: equal unary scores and
    /// equal columns of `Wp`, so that every iterate ties them).
    #[test]
    fn block_training_pass_equals_the_row_pass() {
        // The lane width changes nothing in any lane's arithmetic.
        block_training_pass_check::<LANES>();
        block_training_pass_check::<32>();
        block_training_pass_check::<8>();
    }

    fn block_training_pass_check<const N: usize>() {
        let mut rnd = uniform_pm1(4242u64);
        for (case, &(l, e, steps, rows, ties)) in [
            (37usize, 5usize, 6usize, 64usize, false),
            (37, 5, 6, 13, true),
            (159, 16, 15, 50, false),
            (159, 16, 15, 64, true),
            (3, 2, 4, 1, false),
            (100, 7, 3, 33, true),
        ]
        .iter()
        .enumerate()
        {
            let rows = rows.min(N);
            let mut wpt = Array2::from_shape_fn((e, l), |_| rnd());
            if ties {
                for k in 0..e {
                    for i in (1..l).step_by(2) {
                        wpt[[k, i]] = wpt[[k, i - 1]];
                    }
                }
            }
            let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
            let projector = AnyProjector::new(Method::DykstraSoft, 2, 20);
            let lanes = SoftDykstraLanes::new(2, l);
            let mut u: Vec<f64> = (0..rows * l).map(|_| 3.0 * rnd()).collect();
            if ties {
                for r in 0..rows {
                    for i in (1..l).step_by(2) {
                        u[r * l + i] = u[r * l + i - 1];
                    }
                }
            }
            let z: Vec<f64> = (0..rows)
                .map(|_| (1.0 + 4.0 * (rnd() + 1.0)).min(l as f64))
                .collect();
            let golds: Vec<Vec<u32>> = (0..rows)
                .map(|r| {
                    (0..l as u32)
                        .filter(|&i| (i as usize + r).is_multiple_of(7))
                        .collect()
                })
                .collect();
            let weights: Vec<f64> = (1..=steps).map(|t| 0.1 + t as f64 / 10.0).collect();
            // Without and with a final projection of y_T (the default's entropic one).
            let smooth = AnyProjector::new(Method::Smooth, 2, 20).with_eps(0.05);
            for final_projector in [None, Some(&smooth)] {
                let fin = final_projector.is_some();
                let un = block_test_unroll(&wpt, &we, steps, &projector, final_projector);
                let mut bt = BlockTape::<f64, N>::default();
                un.forward_block_tape(&lanes, &u, &z, |r| &golds[r], &weights, &mut bt)
                    .unwrap();
                un.backward_block(&lanes, &mut bt);
                un.energy_block(&mut bt);
                // The portable body computes the very same numbers as the dispatched variant.
                let mut portable = BlockTape::<f64, N>::default();
                un.forward_block_tape_impl(&lanes, &u, &z, |r| &golds[r], &weights, &mut portable)
                    .unwrap();
                un.backward_block_impl(&lanes, &mut portable);
                let mut tape = RowTape::default();
                // The energy gradients the pipeline forms from the per-row adjoints and masks.
                let (mut gwp, mut gwe) = (Array2::<f64>::zeros((l, e)), vec![0.0; e]);
                let (mut gu, mut ggs, mut masks) =
                    (vec![0.0; l], vec![0.0; steps * l], vec![0.0; steps * e]);
                let (mut bgu, mut bggs, mut bmasks) = (gu.clone(), ggs.clone(), masks.clone());
                let (mut pgu, mut pggs, mut pmasks) = (gu.clone(), ggs.clone(), masks.clone());
                let close = |what: &str, r: usize, a: f64, b: f64| {
                    assert!(
                        (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                        "N {N} case {case} final {fin} row {r} {what}: {a} vs {b}"
                    );
                };
                for r in 0..rows {
                    un.forward_row(&u[r * l..(r + 1) * l], z[r], &mut tape)
                        .unwrap();
                    let mut gys = vec![0.0; steps * l];
                    let mut loss = 0.0;
                    for t in 1..=steps {
                        let w = weights[t - 1];
                        let gy = &mut gys[(t - 1) * l..t * l];
                        loss -= w * soft_f1(tape.y(t, l), &golds[r], Some((gy, -w)));
                    }
                    let (gz, geta) = un.backward_row(&mut tape, &gys, &mut gu, &mut ggs);
                    masks.copy_from_slice(&tape.masks[..steps * e]);
                    bt.write_row(r, &mut bgu, &mut bggs, &mut bmasks);
                    portable.write_row(r, &mut pgu, &mut pggs, &mut pmasks);
                    assert_eq!(
                        (&bgu, &bggs, &bmasks, bt.loss(r), bt.grads(r)),
                        (&pgu, &pggs, &pmasks, portable.loss(r), portable.grads(r))
                    );
                    close("loss", r, bt.loss(r), loss);
                    close("gz", r, bt.grads(r).0, gz);
                    close("geta", r, bt.grads(r).1, geta);
                    for i in 0..l {
                        close("y0", r, bt.y0(r, i), tape.y(0, l)[i]);
                        close("gu", r, bgu[i], gu[i]);
                    }
                    for (j, (&a, &b)) in bggs.iter().zip(&ggs).enumerate() {
                        close(&format!("ggs[{j}]"), r, a, b);
                    }
                    assert_eq!(bmasks, masks, "case {case} row {r} masks");
                    for t in 0..steps {
                        for k in 0..e {
                            let m = masks[t * e + k];
                            for i in 0..l {
                                let g = ggs[t * l + i];
                                gwp[[i, k]] += g * we[k] * m;
                                gwe[k] += m * wpt[[k, i]] * g;
                            }
                        }
                    }
                }
                for ((i, k), &x) in gwp.indexed_iter() {
                    close(&format!("gwp[{i},{k}]"), 0, bt.gwp[[i, k]], x);
                }
                for k in 0..e {
                    close(&format!("gwe[{k}]"), 0, bt.gwe[k], gwe[k]);
                }
            }
        }
    }

    #[test]
    fn soft_f1_gradient_matches_finite_differences() {
        let y: [f64; 4] = [0.2, 0.9, 0.0, 0.5];
        let gold = [1u32, 3];
        let mut grad = [0.0f64; 4];
        let f = soft_f1(&y, &gold, Some((&mut grad, 1.0)));
        assert!((f - 2.0 * 1.4 / (1.6 + 2.0)).abs() < 1e-12);
        for i in 0..4 {
            let h = 1e-6;
            let mut yp = y;
            yp[i] += h;
            let mut ym = y;
            ym[i] -= h;
            let fd =
                (soft_f1::<f64>(&yp, &gold, None) - soft_f1::<f64>(&ym, &gold, None)) / (2.0 * h);
            assert!((fd - grad[i]).abs() < 1e-8);
        }
        assert_eq!(soft_f1::<f64>(&[0.0; 3], &[], None), 0.0);
    }
}
