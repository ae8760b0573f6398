//! The standardised sparse first layer `x̃ W + b` of both networks, and its gradient.
//!
//! The standardisation is folded into the layer, so the sparse input stays sparse:
//! `x̃ W = Σ_{d ∈ nz(x)} x_d scale_d W_d − (mean ⊙ scale)ᵀ W`. The kernels run under CPU-feature
//! dispatch (`*_dispatch`) that never changes the numbers.

use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

use super::{c, Scalar, Standardizer};
use crate::data::CsrMatrix;

/// A standardised sparse first layer `x̃ W + b` for the rows `rows` of `x`, written into `out`.
pub fn sparse_first_layer<F: Scalar>(
    x: &CsrMatrix,
    rows: &[usize],
    stdz: &Standardizer,
    w: ArrayView2<F>,
    b: &[F],
    mut out: ArrayViewMut2<F>,
) {
    let shift = first_layer_shift(stdz, w);
    let shift = shift.as_slice();
    let h = out.ncols();
    let out = out.as_slice_mut().expect("contiguous output");
    // Rows in parallel (each writes its own output row: the same numbers for any thread count),
    // in chunks large enough to amortise the scheduling.
    out.par_chunks_mut(h)
        .with_min_len(32)
        .zip(rows.par_iter())
        .for_each(|(o, &row)| {
            let (idx, val) = x.row(row);
            first_layer_row_dispatch(o, b, shift, idx, val, &stdz.scale, &w);
        });
}

/// One output row of [`sparse_first_layer`]: `o = b − shift + Σ_d (x_d scale_d) W_d` over the
/// row's non-zeros `idx`, `val`.
#[inline(always)]
fn first_layer_row<F: Scalar>(
    o: &mut [F],
    b: &[F],
    shift: &[F],
    idx: &[u32],
    val: &[f32],
    scale: &[f32],
    w: &ArrayView2<F>,
) {
    for ((o, &b), &s) in o.iter_mut().zip(b).zip(shift) {
        *o = b - s;
    }
    let h = o.len();
    let ws = w.as_slice().expect("contiguous");
    // Up to four non-zeros' products per pass over `o` (loaded and stored once, not once per
    // non-zero); each output still adds them one by one in non-zero order.
    let mut pend = [(ws, F::zero()); 4];
    let mut np = 0;
    for (&d, &v) in idx.iter().zip(val) {
        let a: F = c((v * scale[d as usize]) as f64);
        if a == F::zero() {
            continue;
        }
        pend[np] = (&ws[d as usize * h..][..h], a);
        np += 1;
        if np == 4 {
            add_products(o, &pend);
            np = 0;
        }
    }
    add_products(o, &pend[..np]);
}

/// `o += a_1 w_1`, then `+= a_2 w_2`, … for the `(w_m, a_m)` of `terms` (up to four), in one
/// pass over `o`.
#[inline(always)]
fn add_products<F: Scalar>(o: &mut [F], terms: &[(&[F], F)]) {
    let n = o.len();
    match *terms {
        [] => {}
        [(w0, a0)] => {
            for (o, &x0) in o.iter_mut().zip(&w0[..n]) {
                *o += a0 * x0;
            }
        }
        [(w0, a0), (w1, a1)] => {
            let (w0, w1) = (&w0[..n], &w1[..n]);
            for j in 0..n {
                o[j] = o[j] + a0 * w0[j] + a1 * w1[j];
            }
        }
        [(w0, a0), (w1, a1), (w2, a2)] => {
            let (w0, w1, w2) = (&w0[..n], &w1[..n], &w2[..n]);
            for j in 0..n {
                o[j] = o[j] + a0 * w0[j] + a1 * w1[j] + a2 * w2[j];
            }
        }
        [(w0, a0), (w1, a1), (w2, a2), (w3, a3)] => {
            let (w0, w1, w2, w3) = (&w0[..n], &w1[..n], &w2[..n], &w3[..n]);
            for j in 0..n {
                o[j] = o[j] + a0 * w0[j] + a1 * w1[j] + a2 * w2[j] + a3 * w3[j];
            }
        }
        _ => unreachable!("at most four terms"),
    }
}

crate::simd::dispatch! {
    features ["avx512f"];
    /// `first_layer_row` compiled for AVX-512 when the CPU has it (each output is a mul then
    /// an add per non-zero, in the same order in every width, never fused: the same numbers).
    pub fn first_layer_row_dispatch<F: Scalar>(
        o: &mut [F],
        b: &[F],
        shift: &[F],
        idx: &[u32],
        val: &[f32],
        scale: &[f32],
        w: &ArrayView2<F>,
    ) {
        first_layer_row(o, b, shift, idx, val, scale, w)
    }
}

/// `(mean ⊙ scale)ᵀ W`, the constant part of a standardised first layer.
pub fn first_layer_shift<F: Scalar>(stdz: &Standardizer, w: ArrayView2<F>) -> Vec<F> {
    let h = w.ncols();
    let mut shift = vec![F::zero(); h];
    // Column groups in parallel (one per thread): every column is still summed over the rows
    // in order, so the numbers do not depend on the thread count.
    let group = h
        .div_ceil(rayon::current_num_threads())
        .next_multiple_of(16);
    shift
        .par_chunks_mut(group.max(1))
        .enumerate()
        .for_each(|(gi, s)| shift_columns_dispatch(s, gi * group, stdz, &w));
    shift
}

/// Columns `c0..c0 + s.len()` of [`first_layer_shift`], added into `s`.
#[inline(always)]
fn shift_columns<F: Scalar>(s: &mut [F], c0: usize, stdz: &Standardizer, w: &ArrayView2<F>) {
    let n = s.len();
    let ws = w.as_slice().expect("contiguous");
    let h = w.ncols();
    // Up to four rows' products per pass over `s` (see `add_products`), rows in order.
    let mut pend = [(ws, F::zero()); 4];
    let mut np = 0;
    for d in 0..w.nrows() {
        let ms: F = c((stdz.mean[d] * stdz.scale[d]) as f64);
        if ms == F::zero() {
            continue;
        }
        pend[np] = (&ws[d * h + c0..][..n], ms);
        np += 1;
        if np == 4 {
            add_products(s, &pend);
            np = 0;
        }
    }
    add_products(s, &pend[..np]);
}

crate::simd::dispatch! {
    features ["avx512f"];
    /// [`shift_columns`] compiled for AVX-512 when the CPU has it (a mul then an add per row,
    /// in row order, never fused: the same numbers in every width).
    fn shift_columns_dispatch<F: Scalar>(s: &mut [F], c0: usize, stdz: &Standardizer, w: &ArrayView2<F>) {
        shift_columns(s, c0, stdz, w)
    }
}

/// The gradient of a standardised sparse first layer, split for speed: the batch touches few
/// rows of `W`, whose sparse part is kept as the batch's non-zeros grouped by feature together
/// with `∂ℓ/∂pre` (a row is formed where it is consumed, see `Self::sparse_row`), while the
/// standardisation shift adds a dense rank-one term `−(mean ⊙ scale) ⊗ colsum(∂ℓ/∂pre)`, also
/// applied where the gradient is consumed (see [`FirstLayerGrad::densify`]).
#[derive(Debug, Clone, Default)]
pub struct FirstLayerGrad<F> {
    /// Rows of `W` holding a sparse contribution, sorted, distinct.
    pub touched: Vec<u32>,
    /// `colsum(∂ℓ/∂pre)`, which is also `∂ℓ/∂b`.
    pub colsum: Vec<F>,
    /// `∂ℓ/∂pre` of the batch, `rows × H` row-major.
    dpre: Vec<F>,
    /// End of each feature's run in `entries` (its start is the previous feature's end; one
    /// more entry, unused, at the end).
    end: Vec<u32>,
    /// `(row of the batch, x_d·scale_d)` of every non-zero product, by feature, rows in order.
    entries: Vec<(u32, F)>,
}

impl<F: Scalar> FirstLayerGrad<F> {
    /// Writes row `d` of the sparse part of `∂ℓ/∂W` into `out` (length `H`) and returns true,
    /// or returns false (leaving `out` alone) if the batch does not touch row `d`. The row
    /// receives the batch rows' products in batch order, starting from zero.
    pub fn sparse_row(&self, d: usize, out: &mut [F]) -> bool {
        let start = if d == 0 { 0 } else { self.end[d - 1] as usize };
        let end = self.end[d] as usize;
        if start == end {
            return false;
        }
        sparse_row_dispatch(out, &self.entries[start..end], &self.dpre);
        true
    }

    /// Adds the sparse part and the rank-one shift term to `dw`, making a zero `dw` the full
    /// gradient.
    pub fn densify(&self, stdz: &Standardizer, dw: &mut Array2<F>) {
        let mut row = vec![F::zero(); dw.ncols()];
        for (d, mut wr) in dw.outer_iter_mut().enumerate() {
            if self.sparse_row(d, &mut row) {
                for (o, &g) in wr.iter_mut().zip(&row) {
                    *o += g;
                }
            }
            let ms: F = c((stdz.mean[d] * stdz.scale[d]) as f64);
            if ms == F::zero() {
                continue;
            }
            for (o, &cs) in wr.iter_mut().zip(&self.colsum) {
                *o -= ms * cs;
            }
        }
    }
}

/// Backward of [`sparse_first_layer`] for `∂ℓ/∂pre = dpre`: sets `∂ℓ/∂b` in `db` and adds
/// `∂ℓ/∂W` to `dw` (a zero `dw` receives the gradient itself).
pub fn sparse_first_layer_grad<F: Scalar>(
    x: &CsrMatrix,
    rows: &[usize],
    stdz: &Standardizer,
    dpre: ArrayView2<F>,
    db: &mut Array1<F>,
    dw: &mut Array2<F>,
) {
    let mut aux = FirstLayerGrad::default();
    sparse_first_layer_backward(x, rows, stdz, dpre, db, &mut aux);
    aux.densify(stdz, dw);
}

/// Backward of [`sparse_first_layer`]: sets `∂ℓ/∂b` and records the gradient of `W` in split
/// form in `aux` (no dense buffer is written).
pub fn sparse_first_layer_backward<F: Scalar>(
    x: &CsrMatrix,
    rows: &[usize],
    stdz: &Standardizer,
    dpre: ArrayView2<F>,
    db: &mut Array1<F>,
    aux: &mut FirstLayerGrad<F>,
) {
    let colsum = dpre.sum_axis(Axis(0));
    db.assign(&colsum);
    aux.colsum.clear();
    aux.colsum.extend(colsum.iter().copied());
    aux.dpre.clear();
    aux.dpre.extend(dpre.iter().copied());
    // Counting sort of the batch's non-zero products by feature (rows in batch order): counts
    // in `end[d + 1]`, their prefix sums, then `end[d]` as feature d's cursor.
    let n_feat = stdz.scale.len();
    let end = &mut aux.end;
    end.clear();
    end.resize(n_feat + 1, 0);
    for &row in rows {
        let (idx, val) = x.row(row);
        for (&d, &v) in idx.iter().zip(val) {
            if v * stdz.scale[d as usize] != 0.0 {
                end[d as usize + 1] += 1;
            }
        }
    }
    for d in 0..n_feat {
        end[d + 1] += end[d];
    }
    aux.entries.clear();
    aux.entries.resize(end[n_feat] as usize, (0, F::zero()));
    for (r, &row) in rows.iter().enumerate() {
        let (idx, val) = x.row(row);
        for (&d, &v) in idx.iter().zip(val) {
            if v * stdz.scale[d as usize] != 0.0 {
                let slot = &mut end[d as usize];
                aux.entries[*slot as usize] = (r as u32, c((v * stdz.scale[d as usize]) as f64));
                *slot += 1;
            }
        }
    }
    // `end[d]` is now the end of feature d's run.
    aux.touched.clear();
    let mut start = 0;
    for (d, &e) in end[..n_feat].iter().enumerate() {
        if e != start {
            aux.touched.push(d as u32);
        }
        start = e;
    }
}

/// One row of [`FirstLayerGrad::sparse_row`]: `out = Σ a·∂pre_r` over `entries`, from zero.
#[inline(always)]
fn sparse_row<F: Scalar>(out: &mut [F], entries: &[(u32, F)], dpre: &[F]) {
    let h = out.len();
    out.fill(F::zero());
    // Up to four rows' products per pass over `out` (see `add_products`), in batch order.
    for group in entries.chunks(4) {
        let mut terms = [(dpre, F::zero()); 4];
        for (t, &(r, a)) in terms.iter_mut().zip(group) {
            *t = (&dpre[r as usize * h..][..h], a);
        }
        add_products(out, &terms[..group.len()]);
    }
}

crate::simd::dispatch! {
    features ["avx512f"];
    /// [`sparse_row`] compiled for AVX-512 when the CPU has it (a mul then an add per product,
    /// never fused: the same numbers in every width).
    fn sparse_row_dispatch<F: Scalar>(out: &mut [F], entries: &[(u32, F)], dpre: &[F]) {
        sparse_row(out, entries, dpre)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::params::glorot_fill;
    use rand::SeedableRng;

    #[test]
    fn sparse_first_layer_equals_dense_standardised_product() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut x = CsrMatrix::new(5);
        x.push_row(&[0, 3], &[1.0, 1.0]);
        x.push_row(&[1, 2, 4], &[1.0, 2.0, 1.0]);
        x.push_row(&[3], &[1.0]);
        let s = Standardizer::fit(&x);
        let mut w = Array2::<f64>::zeros((5, 4));
        glorot_fill(&mut w, &mut rng);
        let b = Array1::from(vec![0.1, -0.2, 0.3, 0.0]);
        let mut out = Array2::zeros((3, 4));
        sparse_first_layer(
            &x,
            &[0, 1, 2],
            &s,
            w.view(),
            b.as_slice().unwrap(),
            out.view_mut(),
        );
        for r in 0..3 {
            let mut dense = [0f64; 5];
            let (i, v) = x.row(r);
            for (&i, &v) in i.iter().zip(v) {
                dense[i as usize] = v as f64;
            }
            for h in 0..4 {
                let mut e = b[h];
                for d in 0..5 {
                    e += (dense[d] - s.mean[d] as f64) * s.scale[d] as f64 * w[[d, h]];
                }
                // mean and scale are stored in f32: agreement to f32 precision
                assert!(
                    (out[[r, h]] - e).abs() < 1e-5 * (1.0 + e.abs()),
                    "row {r} unit {h}: {} vs {e}",
                    out[[r, h]]
                );
            }
        }
    }
}
