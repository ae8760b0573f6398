//! One ascent step on a block of rows in lockstep, shared by lockstep inference and training.

use cardinal_proj::lanes::Lanes;

use super::lane_ops::axpy;
use super::Unroll;
use crate::model::Scalar;
use crate::simd;

impl<F: Scalar> Unroll<'_, F> {
    /// One ascent step's update on a block, before its projection: `a = Wpᵀ y`,
    /// `act = w2 ⊙ 1[a > 0]`, `g = u + Wp act`, `v = μ v + η g`, `x = y + v`; keeps `g` and the
    /// mask `1[a > 0]` in `g_out` and `mask_out` if given (`(buffer, offset, stride)`: unit
    /// `k`'s mask goes to `buffer[offset + k·stride]`).
    ///
    /// Inlined into its caller; the training pass calls it through [`block_step_dispatch`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn block_step<const N: usize>(
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
        assert_eq!(y.len(), l, "one entry of y per label");
        // a = Wpᵀ y, s = w2 ⊙ 1[a > 0]: four energy units per pass over y (independent sums).
        // The rows of Wpᵀ are zipped with y, not indexed: with bounds checks in the loop, LLVM
        // kept some of the sums on the stack (a store per entry; the ascent step ran slower).
        let mut k0 = 0;
        while k0 < e {
            let kn = (e - k0).min(4);
            let mut acc = [[zero; N]; 4];
            let [r0, r1, r2, r3]: [&[F]; 4] =
                std::array::from_fn(|q| &wpt[(k0 + q.min(kn - 1)) * l..][..l]);
            for ((((yi, &w0), &w1), &w2), &w3) in y.iter().zip(r0).zip(r1).zip(r2).zip(r3) {
                let w = [w0, w1, w2, w3];
                for q in 0..4 {
                    axpy(&mut acc[q], w[q], yi);
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
            // Each row of Wpᵀ read as one slice of four (a bounds check per unit, not per
            // label); a last group of fewer than four repeats its last label.
            let last = i0 + n - 1;
            for (sk, row) in act.iter().zip(wpt.chunks_exact(l)) {
                let w: [F; 4] = if n == 4 {
                    row[i0..i0 + 4].try_into().expect("four labels")
                } else {
                    std::array::from_fn(|q| row[(i0 + q).min(last)])
                };
                for q in 0..4 {
                    axpy(&mut acc[q], w[q], sk);
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

simd::dispatch! {
    features ["avx512f", "avx512bw"], ["avx2"];
    /// [`Unroll::block_step`] as a function of its own, compiled for the widest vectors the
    /// CPU has. Inside the training forward pass's large body, LLVM's register allocation has
    /// kept the accumulators of `Wpᵀ y` on the stack, making that pass a fifth slower; on its
    /// own it keeps them in registers. (Inference keeps the step inlined: it is faster so.)
    #[allow(clippy::too_many_arguments)]
    pub(super) fn block_step_dispatch<'a, F: Scalar, const N: usize>(
        un: &Unroll<'_, F>,
        wpt: &[F],
        u: &[Lanes<F, N>],
        y: &[Lanes<F, N>],
        act: &mut [Lanes<F, N>],
        velocity: &mut [Lanes<F, N>],
        x: &mut [Lanes<F, N>],
        g_out: Option<&'a mut [Lanes<F, N>]>,
        mask_out: Option<(&'a mut [Lanes<F, N>], usize, usize)>,
    ) {
        un.block_step(wpt, u, y, act, velocity, x, g_out, mask_out)
    }
}
