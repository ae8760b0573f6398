//! Lockstep inference: `y_T` and the ranking scores for a block of rows at once, one row per
//! SIMD lane, without a tape.

use cardinal_proj::lanes::{
    Lanes, LanesScratch, SmoothLanes, SmoothLanesTape, SoftDykstraLanes, LANES,
};
use cardinal_proj::{AnyProjector, Method, ProjError, Projector};

#[cfg(doc)]
use super::RowTape;
use super::Unroll;
use crate::model::Scalar;
use crate::simd;

/// Buffers of [`Unroll::forward_block`], reused across blocks.
pub struct BlockScratch<F: Scalar, const N: usize = LANES> {
    u: Vec<Lanes<F, N>>,
    y: Vec<Lanes<F, N>>,
    x: Vec<Lanes<F, N>>,
    velocity: Vec<Lanes<F, N>>,
    act: Vec<Lanes<F, N>>,
    proj: LanesScratch<F, N>,
    final_tape: <AnyProjector as Projector<F>>::Tape,
    row: Vec<F>,
    /// The smoothed final projection in lanes: its output and tape.
    fin: Vec<Lanes<F, N>>,
    smooth: SmoothLanesTape<F, N>,
}

impl<F: Scalar, const N: usize> Default for BlockScratch<F, N> {
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
            fin: Vec::new(),
            smooth: SmoothLanesTape::default(),
        }
    }
}

impl<F: Scalar> Unroll<'_, F> {
    /// `y_T` (no tape: inference only) for a block of up to `N` rows at once, one row per
    /// SIMD lane, when the step projection is soft Dykstra (`lanes`, with the same rounds as
    /// `self.projector`). `u` holds the rows' unary scores (`rows × L`), `z` their counts;
    /// `y_out` receives `y_T` and `rank_out` the ranking scores ([`RowTape::ranking`]; both
    /// `rows × L`). Agrees with [`Self::forward_row`] to rounding.
    pub fn forward_block<const N: usize>(
        &self,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        y_out: &mut [F],
        rank_out: &mut [F],
        s: &mut BlockScratch<F, N>,
    ) -> Result<(), ProjError> {
        forward_block_dispatch(self, lanes, u, z, y_out, rank_out, s)
    }

    /// The body of [`Self::forward_block`], inlined into each instruction-set variant (no FMA
    /// contraction anywhere, so every variant computes the same numbers).
    ///
    /// Contract (a SIMD kernel, exempt from the house limit on function length): `1..=N` rows,
    /// spare lanes repeat row 0 and are ignored; every lane follows [`Self::forward_row`] step
    /// for step, to rounding (the tests below check both properties).
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
        // The smoothed final projection runs in lanes (the row operator's bits); any other
        // row by row below.
        let smooth = self.final_smooth_lanes();
        if let Some(sl) = smooth {
            s.fin.clear();
            s.fin.resize(l, [zero; N]);
            sl.forward(&s.y, &zl, &mut s.fin, &mut s.smooth)?;
        }
        let y_t = if smooth.is_some() { &s.fin } else { &s.y };
        for (r, (out, rank)) in y_out
            .chunks_exact_mut(l)
            .zip(rank_out.chunks_exact_mut(l))
            .enumerate()
        {
            for (o, yi) in out.iter_mut().zip(y_t) {
                *o = yi[r];
            }
            // As `RowTape::ranking`: the last step's point before its projection.
            let last_point = if self.steps == 0 { &s.y } else { &s.x };
            for (o, xi) in rank.iter_mut().zip(last_point) {
                *o = xi[r];
            }
            if let (Some(fp), None) = (self.final_projector, smooth) {
                s.row.clear();
                s.row.extend_from_slice(out);
                fp.forward(&s.row, z[r], out, &mut s.final_tape)?;
            }
        }
        Ok(())
    }

    /// The final projection in lanes, where it is the smoothed one.
    pub(super) fn final_smooth_lanes(&self) -> Option<SmoothLanes> {
        self.final_projector
            .filter(|fp| fp.method == Method::Smooth)
            .map(|fp| SmoothLanes {
                eps: fp.params.smooth_eps,
            })
    }
}

simd::dispatch! {
    features ["avx512f", "avx512bw", "avx512vl"], ["avx2"];
    /// `Unroll::forward_block_impl` compiled for the widest vectors the CPU has.
    fn forward_block_dispatch<F: Scalar, const N: usize>(
        un: &Unroll<'_, F>,
        lanes: &SoftDykstraLanes,
        u: &[F],
        z: &[F],
        y_out: &mut [F],
        rank_out: &mut [F],
        s: &mut BlockScratch<F, N>,
    ) -> Result<(), ProjError> {
        un.forward_block_impl(lanes, u, z, y_out, rank_out, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::test_support::{block_test_unroll, uniform_pm1};
    use crate::inference::RowTape;
    use cardinal_proj::{AnyProjector, Method, ProjParams};
    use ndarray::Array2;

    /// The lockstep block solve against the per-row one: same `y_T` and ranking scores to
    /// rounding, for full and partial blocks, with and without a final projection, with and
    /// without steps.
    #[test]
    fn block_solve_equals_the_row_solve() {
        let (l, e) = (37, 5);
        let mut rnd = uniform_pm1(99u64);
        let wpt = Array2::from_shape_fn((e, l), |_| rnd());
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let projector = AnyProjector::new(Method::DykstraSoft, ProjParams::default());
        let exact = AnyProjector::new(Method::Exact, ProjParams::default());
        let smooth = AnyProjector::new(
            Method::Smooth,
            ProjParams {
                smooth_eps: 0.05,
                ..ProjParams::default()
            },
        );
        let lanes = SoftDykstraLanes::new(2, l);
        for (steps, final_projector) in [
            (6, None),
            (6, Some(&exact)),
            (0, Some(&exact)),
            (6, Some(&smooth)),
            (0, Some(&smooth)),
        ] {
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
}
