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

use crate::model::Float;

/// matrixmultiply's block along the contracted dimension for `f32` (`S_KC`).
const KC: usize = 256;

/// `f32` lanes in an AVX-512 vector: the energy units are taken sixteen at a time.
const W: usize = 16;

/// The operands of [`energy_products`], as [`super::Unroll::energy_block`] holds them:
/// the adjoints `g` (`l × tn`, lane vectors), the masks `m` (`e × tn`), `w2` (`e`) and `Wpᵀ`
/// (`e × l`).
pub(super) struct EnergyOperands<'a, F: Float, const N: usize> {
    pub(super) g: &'a Vec<Lanes<F, N>>,
    pub(super) masks: &'a Vec<Lanes<F, N>>,
    pub(super) we: &'a [F],
    pub(super) wpt: ArrayView2<'a, F>,
}

/// [`energy_products`]' buffers: `sᵀ` and `Wp` with the units padded to whole vectors.
#[derive(Debug, Clone, Default)]
pub(super) struct EnergyScratch {
    st: Vec<[f32; W]>,
    wp: Vec<[f32; W]>,
}

/// `gwp = g sᵀ` (`l × e`) and `p = Wpᵀ g` (`e × tn`), overwritten, as `general_mat_mul` with
/// `α = 1`, `β = 0` computes them. False, with nothing written, where this kernel does not run
/// (no AVX-512, `f64`, a row length `tn` not a multiple of 16): the caller then runs the GEMMs.
pub(super) fn energy_products<F: Float, const N: usize>(
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
    if tn == 0 || tn % W != 0 || masks.len() != e * tn || !has_kernel() {
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
    let shape = Shape { l, e, tn };
    let (gwp, p) = (
        gwp.as_slice_mut().expect("standard layout"),
        p.as_slice_mut().expect("standard layout"),
    );
    kernel::products(g, &scratch.st, &scratch.wp, shape, gwp, p).is_some()
}

/// The products' dimensions: labels, energy units, steps × lanes.
#[derive(Debug, Clone, Copy)]
struct Shape {
    l: usize,
    e: usize,
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

    use super::{Shape, KC, W};
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
            st: &[[f32; W]],
            wp: &[[f32; W]],
            shape: Shape,
            gwp: &mut [f32],
            p: &mut [f32],
        ) {
            first_product(g, st, shape, gwp);
            second_product(g, wp, shape, p);
        }
    }

    fn load(x: &[f32; W]) -> __m512 {
        bytemuck::cast(*x)
    }

    fn store(x: __m512) -> [f32; W] {
        bytemuck::cast(x)
    }

    /// `gwp = g sᵀ`: `ROWS` rows of `g` at a time against one vector of units.
    #[target_feature(enable = "avx512f,fma,avx2")]
    fn first_product(g: &[f32], st: &[[f32; W]], shape: Shape, gwp: &mut [f32]) {
        let Shape { l, e, tn } = shape;
        let full = l / ROWS * ROWS;
        for (v, st) in st.chunks_exact(tn).enumerate() {
            let units = (e - v * W).min(W);
            for (i0, block) in g[..full * tn].chunks_exact(ROWS * tn).enumerate() {
                let rows: [&[f32]; ROWS] = std::array::from_fn(|r| &block[r * tn..][..tn]);
                let c = rows_times(rows, st);
                for (r, c) in c.iter().enumerate() {
                    gwp[(i0 * ROWS + r) * e + v * W..][..units]
                        .copy_from_slice(&store(*c)[..units]);
                }
            }
            for i in full..l {
                let c = rows_times([&g[i * tn..][..tn]], st);
                gwp[i * e + v * W..][..units].copy_from_slice(&store(c[0])[..units]);
            }
        }
    }

    /// `Σ_t row[t] st[t]` for each row: one chain per row and `KC` block, the blocks added in
    /// order.
    #[target_feature(enable = "avx512f,fma,avx2")]
    fn rows_times<const R: usize>(rows: [&[f32]; R], st: &[[f32; W]]) -> [__m512; R] {
        let tn = st.len();
        let mut c = [_mm512_setzero_ps(); R];
        for (b, t0) in (0..tn).step_by(KC).enumerate() {
            let t1 = (t0 + KC).min(tn);
            let rows: [&[f32]; R] = std::array::from_fn(|r| &rows[r][t0..t1]);
            let mut acc = [_mm512_setzero_ps(); R];
            for (j, s) in st[t0..t1].iter().enumerate() {
                let s = load(s);
                for r in 0..R {
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(rows[r][j]), s, acc[r]);
                }
            }
            for r in 0..R {
                c[r] = if b == 0 {
                    acc[r]
                } else {
                    _mm512_add_ps(c[r], acc[r])
                };
            }
        }
        c
    }

    /// `p = Wpᵀ g`: sixteen columns of `g` at a time against all sixteen units of a vector,
    /// each unit's sum a chain along the labels.
    #[target_feature(enable = "avx512f,fma,avx2")]
    fn second_product(g: &[f32], wp: &[[f32; W]], shape: Shape, p: &mut [f32]) {
        let Shape { l, e, tn } = shape;
        for (v, wp) in wp.chunks_exact(l).enumerate() {
            let units = (e - v * W).min(W);
            for off in (0..tn).step_by(W) {
                let mut c = [_mm512_setzero_ps(); W];
                for (b, i0) in (0..l).step_by(KC).enumerate() {
                    let i1 = (i0 + KC).min(l);
                    let mut acc = [_mm512_setzero_ps(); W];
                    for (row, w) in g[i0 * tn..i1 * tn].chunks_exact(tn).zip(&wp[i0..i1]) {
                        let gv = load(row[off..off + W].try_into().expect("a vector"));
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
                    p[(v * W + k) * tn + off..][..W].copy_from_slice(&store(*c));
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod kernel {
    use super::{Shape, W};

    /// Never runs: [`super::has_kernel`] is false off x86-64.
    pub(super) fn products(
        _g: &[f32],
        _st: &[[f32; W]],
        _wp: &[[f32; W]],
        _shape: Shape,
        _gwp: &mut [f32],
        _p: &mut [f32],
    ) -> Option<()> {
        None
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
        let g = ArrayView2::from_shape((l, tn), ops.g.as_flattened()).unwrap();
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
        }
    }

    /// Where the kernel cannot run it writes nothing and says so: rows of 8 lanes (not whole
    /// vectors) and `f64`.
    #[test]
    fn energy_products_decline_what_they_do_not_cover() {
        // Three labels, one step of eight lanes.
        let g = vec![[1.0f32; 8]; 3];
        let masks = vec![[1.0f32; 8]; 2];
        let wpt = Array2::<f32>::ones((2, 3));
        let ops = EnergyOperands {
            g: &g,
            masks: &masks,
            we: &[1.0, 1.0],
            wpt: wpt.view(),
        };
        let (mut gwp, mut p) = (
            Array2::from_elem((3, 2), 7.0),
            Array2::from_elem((2, 8), 7.0),
        );
        assert!(!energy_products(
            &ops,
            &mut gwp,
            &mut p,
            &mut EnergyScratch::default()
        ));
        assert!(gwp.iter().chain(p.iter()).all(|&x| x == 7.0));
        let g64 = vec![[1.0f64; 16]; 4];
        let wpt64 = Array2::<f64>::ones((2, 2));
        let ops = EnergyOperands {
            g: &g64,
            masks: &g64,
            we: &[1.0, 1.0],
            wpt: wpt64.view(),
        };
        let (mut gwp, mut p) = (Array2::zeros((2, 2)), Array2::zeros((2, 32)));
        assert!(!energy_products(
            &ops,
            &mut gwp,
            &mut p,
            &mut EnergyScratch::default()
        ));
    }
}
