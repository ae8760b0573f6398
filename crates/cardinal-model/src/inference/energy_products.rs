//! The two products behind a lockstep block's energy gradients, `∂Wp = ḡg sᵀ` and
//! `P = Wpᵀ ḡg` (with `s = w2 ⊙ m`), in AVX-512 where the CPU has it: the numbers of
//! `general_mat_mul` to the bit, without its packing.
//!
//! Why not the GEMM: matrixmultiply copies both operands into panels on every call. Here both
//! products pack the same adjoints (Delicious: 983 labels × 15 steps × 32 lanes, 1.9 MB) for only
//! 16 energy units, and the packing took as long as the multiply-adds. These loops read the
//! adjoints where they lie and run at about the machine's FMA rate (docs/results/speed.md).
//!
//! Why the same bits: matrixmultiply's `f32` kernels on a CPU with FMA (the AVX2 one and the
//! AVX-512 one) form every output as a chain of fused multiply-adds from `+0` over each block
//! of [`KC`] along the contracted dimension, in order, and add the blocks' chains in order
//! (`c = ab₁`, then `c + ab₂`, …). So do these loops. On a CPU without AVX-512, and for `f64`,
//! the caller keeps the GEMM, so a trained model is the same on every machine as before.
//! `energy_products_equal_the_gemm` checks the bits against `general_mat_mul`.

use std::any::Any;

use cardinal_proj::lanes::Lanes;
use ndarray::{Array2, ArrayView2};

use crate::model::Scalar;

/// matrixmultiply's block along the contracted dimension for `f32` (`S_KC`).
const KC: usize = 256;

/// `f32` lanes in an AVX-512 vector: the energy units are taken sixteen at a time.
const W: usize = 16;

/// The operands of [`energy_products`], as [`super::Unroll::energy_block`] holds them:
/// the adjoints `g` (`T × l` lane vectors, step-major, as the backward pass writes them: entry
/// `(i, t·N + w)` of the `l × tn` matrix is lane `w` of `g[t·l + i]`), the masks `m`
/// (`e × tn`), `w2` (`e`) and `Wpᵀ` (`e × l`).
pub(super) struct EnergyOperands<'a, F: Scalar, const N: usize> {
    pub(super) g: &'a Vec<Lanes<F, N>>,
    pub(super) masks: &'a Vec<Lanes<F, N>>,
    pub(super) we: &'a [F],
    pub(super) wpt: ArrayView2<'a, F>,
}

/// [`energy_products`]' buffers: `sᵀ` and `Wp` with the units padded to whole vectors, and
/// the first product's sums.
#[derive(Debug, Clone, Default)]
pub(super) struct EnergyScratch {
    st: Vec<[f32; W]>,
    wp: Vec<[f32; W]>,
    /// The first product's running sums and total, a vector per label.
    sums: Vec<[f32; W]>,
    total: Vec<[f32; W]>,
}

/// `gwp = g sᵀ` (`l × e`) and `p = Wpᵀ g` (`e × tn`), overwritten, as `general_mat_mul` with
/// `α = 1`, `β = 0` computes them on the `l × tn` matrix `g`. False, with nothing written, where
/// this kernel does not run (no AVX-512, `f64`, `N` other than 16, 32 or 64: whole vectors
/// and whole steps per [`KC`] block): the caller then runs the GEMMs.
pub(super) fn energy_products<F: Scalar, const N: usize>(
    ops: &EnergyOperands<'_, F, N>,
    gwp: &mut Array2<F>,
    p: &mut Array2<F>,
    scratch: &mut EnergyScratch,
) -> bool {
    let (e, l) = ops.wpt.dim();
    let (Some(g), Some(masks), Some(gwp), Some(p)) = (
        downcast::<_, Vec<Lanes<f32, N>>>(ops.g),
        downcast::<_, Vec<Lanes<f32, N>>>(ops.masks),
        downcast_mut::<_, Array2<f32>>(gwp),
        downcast_mut::<_, Array2<f32>>(p),
    ) else {
        return false;
    };
    let (g, masks) = (g.as_flattened(), masks.as_flattened());
    if l == 0 || e == 0 || g.len() % l != 0 {
        return false;
    }
    let tn = g.len() / l;
    if tn == 0 || ![16, 32, 64].contains(&N) || masks.len() != e * tn || !has_kernel() {
        return false;
    }
    assert_eq!(gwp.dim(), (l, e), "∂Wp is l × e");
    assert_eq!(p.dim(), (e, tn), "P is e × tn");
    // `F` is `f32` here (the downcasts succeeded), so these conversions are exact copies.
    let f32_of = |x: F| x.to_f32().expect("an f32");
    // sᵀ and Wp (`[unit vector][tn or l]`), the units padded with zeros (their sums dropped).
    let nv = e.div_ceil(W);
    scratch.st.clear();
    scratch.st.resize(nv * tn, [0.0; W]);
    scratch.wp.clear();
    scratch.wp.resize(nv * l, [0.0; W]);
    for k in 0..e {
        let (v, q) = (k / W, k % W);
        let we = f32_of(ops.we[k]);
        for (s, &m) in scratch.st[v * tn..][..tn]
            .iter_mut()
            .zip(&masks[k * tn..][..tn])
        {
            s[q] = m * we;
        }
        for (w, &x) in scratch.wp[v * l..][..l].iter_mut().zip(ops.wpt.row(k)) {
            w[q] = f32_of(x);
        }
    }
    let shape = Shape { l, e, n: N, tn };
    let (gwp, p) = (
        gwp.as_slice_mut().expect("standard layout"),
        p.as_slice_mut().expect("standard layout"),
    );
    // Written before they are read (the first step of a block, the first block): no clearing.
    scratch.sums.resize(l, [0.0; W]);
    scratch.total.resize(l, [0.0; W]);
    #[cfg(target_arch = "x86_64")]
    return kernel::products(g, scratch, shape, gwp, p).is_some();
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (g, shape, gwp, p);
        false
    }
}

/// The products' dimensions: labels, energy units, lanes, steps × lanes.
#[derive(Debug, Clone, Copy)]
struct Shape {
    l: usize,
    e: usize,
    n: usize,
    tn: usize,
}

fn downcast<T: Any, U: Any>(x: &T) -> Option<&U> {
    (x as &dyn Any).downcast_ref::<U>()
}

fn downcast_mut<T: Any, U: Any>(x: &mut T) -> Option<&mut U> {
    (x as &mut dyn Any).downcast_mut::<U>()
}

/// Whether [`kernel::products`] runs here. It must also be where matrixmultiply uses an FMA
/// kernel (FMA and AVX2), which every CPU with AVX-512 has.
fn has_kernel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    use std::arch::x86_64::{
        __m512, _mm512_add_ps, _mm512_fmadd_ps, _mm512_set1_ps, _mm512_setzero_ps,
    };

    use super::{EnergyScratch, Shape, KC, W};
    use crate::simd;

    /// Rows of `g` per pass of the first product: eight independent chains per unit vector
    /// hide the FMA latency.
    const ROWS: usize = 8;

    simd::require! {
        features ["avx512f", "fma", "avx2"];
        /// Both products: `gwp[i][k] = Σ_t g[i][t] s[k][t]` and `p[k][t] = Σ_i Wpᵀ[k][i] g[i][t]`,
        /// each sum a chain of FMAs in `KC` blocks (see the module's docs).
        pub(super) fn products(
            g: &[f32],
            scratch: &mut EnergyScratch,
            shape: Shape,
            gwp: &mut [f32],
            p: &mut [f32],
        ) {
            // The lanes as a constant: the inner loops then have no bounds checks.
            match shape.n {
                16 => products_of::<16>(g, scratch, shape, gwp, p),
                32 => products_of::<32>(g, scratch, shape, gwp, p),
                64 => products_of::<64>(g, scratch, shape, gwp, p),
                n => unreachable!("{n} lanes: energy_products declines them"),
            }
        }
    }

    /// [`products`] for blocks of `N` lanes.
    #[target_feature(enable = "avx512f,fma,avx2")]
    fn products_of<const N: usize>(
        g: &[f32],
        scratch: &mut EnergyScratch,
        shape: Shape,
        gwp: &mut [f32],
        p: &mut [f32],
    ) {
        let EnergyScratch {
            st,
            wp,
            sums,
            total,
        } = scratch;
        first_product::<N>(g, st, sums, total, shape, gwp);
        second_product::<N>(g, wp, shape, p);
    }

    fn load(x: &[f32; W]) -> __m512 {
        bytemuck::cast(*x)
    }

    fn store(x: __m512) -> [f32; W] {
        bytemuck::cast(x)
    }

    /// `gwp = g sᵀ`, one step at a time over all labels (the adjoints are read in the order
    /// they lie), `ROWS` labels at a time against one vector of units. Each label's chain runs
    /// on across the steps of a `KC` block through `sums`; the blocks are added in `total`.
    #[target_feature(enable = "avx512f,fma,avx2")]
    fn first_product<const N: usize>(
        g: &[f32],
        st: &[[f32; W]],
        sums: &mut [[f32; W]],
        total: &mut [[f32; W]],
        shape: Shape,
        gwp: &mut [f32],
    ) {
        let Shape { l, e, tn, .. } = shape;
        let steps = tn / N;
        for (v, st) in st.chunks_exact(tn).enumerate() {
            for (b, s0) in (0..steps).step_by(KC / N).enumerate() {
                for s in s0..(s0 + KC / N).min(steps) {
                    let st: &[[f32; W]; N] = st[s * N..][..N].try_into().expect("a step");
                    let step = &g[s * l * N..][..l * N];
                    let mut groups = sums.chunks_exact_mut(ROWS);
                    for (i0, sums) in (&mut groups).enumerate() {
                        let lanes = &step[i0 * ROWS * N..][..ROWS * N];
                        step_into::<N, ROWS>(lanes, st, sums, s == s0);
                    }
                    let rest = groups.into_remainder();
                    let lanes = &step[(l - rest.len()) * N..];
                    for (lanes, sum) in lanes.chunks_exact(N).zip(rest.chunks_exact_mut(1)) {
                        step_into::<N, 1>(lanes, st, sum, s == s0);
                    }
                }
                for (t, s) in total.iter_mut().zip(sums.iter()) {
                    *t = if b == 0 {
                        *s
                    } else {
                        store(_mm512_add_ps(load(t), load(s)))
                    };
                }
            }
            let units = (e - v * W).min(W);
            for (i, t) in total.iter().enumerate() {
                gwp[i * e + v * W..][..units].copy_from_slice(&t[..units]);
            }
        }
    }

    /// One step's terms of `R` labels' chains: `sums[r] += Σ_w lanes[r][w] st[w]`, fused and in
    /// order, from `+0` if `first`.
    #[target_feature(enable = "avx512f,fma,avx2")]
    fn step_into<const N: usize, const R: usize>(
        lanes: &[f32],
        st: &[[f32; W]; N],
        sums: &mut [[f32; W]],
        first: bool,
    ) {
        let labels: [&[f32; N]; R] =
            std::array::from_fn(|r| lanes[r * N..][..N].try_into().expect("a lane vector"));
        let mut acc: [__m512; R] = std::array::from_fn(|r| {
            if first {
                _mm512_setzero_ps()
            } else {
                load(&sums[r])
            }
        });
        for w in 0..N {
            let sv = load(&st[w]);
            for r in 0..R {
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(labels[r][w]), sv, acc[r]);
            }
        }
        for r in 0..R {
            sums[r] = store(acc[r]);
        }
    }

    /// `p = Wpᵀ g`: sixteen lanes of a step at a time against all sixteen units of a vector,
    /// each unit's sum a chain along the labels.
    #[target_feature(enable = "avx512f,fma,avx2")]
    fn second_product<const N: usize>(g: &[f32], wp: &[[f32; W]], shape: Shape, p: &mut [f32]) {
        let Shape { l, e, tn, .. } = shape;
        let n = N;
        for (v, wp) in wp.chunks_exact(l).enumerate() {
            let units = (e - v * W).min(W);
            for (s, step) in g.chunks_exact(l * n).enumerate() {
                for w0 in (0..n).step_by(W) {
                    let mut c = [_mm512_setzero_ps(); W];
                    for (b, i0) in (0..l).step_by(KC).enumerate() {
                        let i1 = (i0 + KC).min(l);
                        let mut acc = [_mm512_setzero_ps(); W];
                        for (lanes, w) in step[i0 * n..i1 * n].chunks_exact(n).zip(&wp[i0..i1]) {
                            let lanes: &[f32; N] = lanes.try_into().expect("a lane vector");
                            let gv = load(lanes[w0..w0 + W].try_into().expect("a vector"));
                            for k in 0..W {
                                acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(w[k]), gv, acc[k]);
                            }
                        }
                        for k in 0..W {
                            c[k] = if b == 0 {
                                acc[k]
                            } else {
                                _mm512_add_ps(c[k], acc[k])
                            };
                        }
                    }
                    for (k, c) in c.iter().enumerate().take(units) {
                        p[(v * W + k) * tn + s * n + w0..][..W].copy_from_slice(&store(*c));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use cardinal_testkit::Lcg;
    use ndarray::linalg::general_mat_mul;
    use ndarray::{Array2, ArrayView2};

    use super::*;

    /// Adjoints with exact zeros (masked-out lanes) and a spread of magnitudes and signs.
    fn draw<const N: usize>(rng: &mut Lcg, n: usize) -> Vec<Lanes<f32, N>> {
        (0..n)
            .map(|_| {
                std::array::from_fn(|_| {
                    let u = rng.uniform();
                    if u < 0.2 {
                        0.0
                    } else {
                        (rng.signed() * 10f64.powf(4.0 * u - 2.0)) as f32
                    }
                })
            })
            .collect()
    }

    /// The products as `energy_block` computes them without the kernel.
    fn by_gemm<const N: usize>(ops: &EnergyOperands<'_, f32, N>) -> (Array2<f32>, Array2<f32>) {
        let (e, l) = ops.wpt.dim();
        let tn = ops.g.len() * N / l;
        let s: Vec<f32> = ops
            .masks
            .as_flattened()
            .chunks_exact(tn)
            .zip(ops.we)
            .flat_map(|(row, &we)| row.iter().map(move |&m| m * we))
            .collect();
        let g = Array2::from_shape_fn((l, tn), |(i, t)| ops.g[(t / N) * l + i][t % N]);
        let s = ArrayView2::from_shape((e, tn), &s[..]).unwrap();
        let (mut gwp, mut p) = (Array2::zeros((l, e)), Array2::zeros((e, tn)));
        general_mat_mul(1.0, &g, &s.t(), 0.0, &mut gwp);
        general_mat_mul(1.0, &ops.wpt, &g, 0.0, &mut p);
        (gwp, p)
    }

    fn check<const N: usize>(
        l: usize,
        e: usize,
        steps: usize,
        seed: u64,
        scratch: &mut EnergyScratch,
    ) {
        let mut rng = Lcg::new(seed);
        let g = draw::<N>(&mut rng, l * steps);
        let masks: Vec<Lanes<f32, N>> = draw::<N>(&mut rng, e * steps)
            .into_iter()
            .map(|v| v.map(|x| if x > 0.0 { 1.0 } else { 0.0 }))
            .collect();
        let we: Vec<f32> = (0..e).map(|_| rng.signed() as f32).collect();
        let wpt = Array2::from_shape_fn((e, l), |_| rng.signed() as f32);
        let ops = EnergyOperands {
            g: &g,
            masks: &masks,
            we: &we,
            wpt: wpt.view(),
        };
        // Start the outputs as garbage: every entry must be written.
        let tn = steps * N;
        let (mut gwp, mut p) = (
            Array2::from_elem((l, e), f32::NAN),
            Array2::from_elem((e, tn), f32::NAN),
        );
        if !energy_products(&ops, &mut gwp, &mut p, scratch) {
            assert!(
                !has_kernel(),
                "l {l} e {e} tn {tn}: the kernel should have run here"
            );
            return;
        }
        let (want_gwp, want_p) = by_gemm(&ops);
        for (name, got, want) in [("∂Wp", &gwp, &want_gwp), ("P", &p, &want_p)] {
            for ((idx, a), b) in got.indexed_iter().zip(want.iter()) {
                assert!(
                    a.to_bits() == b.to_bits(),
                    "l {l} e {e} tn {tn}: {name}{idx:?} = {a:e} against the GEMM's {b:e}"
                );
            }
        }
    }

    /// The products equal `general_mat_mul` bit for bit: Delicious's and Bibtex's shapes, ragged
    /// row counts, units across several vectors, contracted lengths across several blocks of 256
    /// in both products, one scratch reused across shapes.
    #[test]
    fn energy_products_equal_the_gemm() {
        let mut scratch = EnergyScratch::default();
        for (seed, &(l, e, steps)) in [
            (983, 16, 15),
            (159, 16, 15),
            (37, 5, 2),
            (600, 20, 9),
            (1, 1, 1),
            (257, 17, 17),
            (8, 33, 1),
        ]
        .iter()
        .enumerate()
        {
            check::<32>(l, e, steps, seed as u64, &mut scratch);
            check::<16>(l, e, steps, 100 + seed as u64, &mut scratch);
            check::<64>(l, e, steps, 200 + seed as u64, &mut scratch);
        }
    }

    /// `energy_products` on ones (`e` units, `l` labels, `steps` steps of `N` lanes) declines
    /// and leaves the outputs as they were.
    fn declines<F: Scalar, const N: usize>(e: usize, l: usize, steps: usize) {
        let (g, masks) = (
            vec![[F::one(); N]; l * steps],
            vec![[F::one(); N]; e * steps],
        );
        let (wpt, we) = (Array2::<F>::ones((e, l)), vec![F::one(); e]);
        let ops = EnergyOperands {
            g: &g,
            masks: &masks,
            we: &we,
            wpt: wpt.view(),
        };
        let seven = F::from_f64(7.0).unwrap();
        let mut gwp = Array2::from_elem((l, e), seven);
        let mut p = Array2::from_elem((e, steps * N), seven);
        let mut scratch = EnergyScratch::default();
        assert!(!energy_products(&ops, &mut gwp, &mut p, &mut scratch));
        assert!(gwp.iter().chain(p.iter()).all(|&x| x == seven));
    }

    /// Where the kernel cannot run it writes nothing and says so: rows of 8 lanes (not whole
    /// vectors), 48 lanes (not whole steps per block of 256) and `f64`.
    #[test]
    fn energy_products_decline_what_they_do_not_cover() {
        declines::<f32, 8>(2, 3, 1);
        declines::<f32, 48>(2, 3, 2);
        declines::<f64, 16>(2, 2, 2);
    }
}
