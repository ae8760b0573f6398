//! The unary and the cardinality networks on rows of a batch: each a standardised sparse first
//! layer, a ReLU hidden layer and a linear output (the count `z` from the cardinality net's
//! softmax, and the pass over a whole batch, are in `crate::batch`).

use ndarray::linalg::general_mat_mul;
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

use super::dropout::Dropout;
use super::{
    first_layer_row_dispatch, first_layer_shift, sparse_first_layer_backward, FirstLayerGrad,
    Params, Scalar, Standardizer,
};
use crate::data::CsrMatrix;

/// A standardised sparse input → ReLU hidden layer → linear output (the unary and the
/// cardinality networks).
pub struct TwoLayer<'a, F> {
    w1: &'a Array2<F>,
    b1: &'a Array1<F>,
    w2: &'a Array2<F>,
    b2: &'a Array1<F>,
}

/// Where [`TwoLayer::backward`] writes (`W1`'s gradient in split form in `aux`, see
/// `FirstLayerGrad`).
pub struct TwoLayerGrad<'a, F> {
    /// The first layer's bias.
    pub b1: &'a mut Array1<F>,
    /// The second layer's weights.
    pub w2: &'a mut Array2<F>,
    /// The second layer's bias.
    pub b2: &'a mut Array1<F>,
    /// The first layer's weights, in split form.
    pub aux: &'a mut FirstLayerGrad<F>,
}

impl<'a, F: Scalar> TwoLayer<'a, F> {
    /// The unary network `x → H → L`.
    pub fn unary(p: &'a Params<F>) -> Self {
        Self {
            w1: &p.w1,
            b1: &p.b1,
            w2: &p.w2,
            b2: &p.b2,
        }
    }

    /// The cardinality network `x → Hc → K`.
    pub fn card(p: &'a Params<F>) -> Self {
        Self {
            w1: &p.c1,
            b1: &p.cb1,
            w2: &p.c2,
            b2: &p.cb2,
        }
    }

    /// `pre = x̃W1 + b1`, `hidden = relu(pre)`, `out = hidden·W2 + b2` for `rows` of `x`;
    /// `shift` is [`first_layer_shift`] of `W1` if the caller has it.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        stdz: &Standardizer,
        shift: Option<&[F]>,
        dropout: Option<Dropout>,
        pre: &mut Array2<F>,
        hidden: &mut Array2<F>,
        out: &mut Array2<F>,
    ) {
        let b = rows.len();
        ensure_shape(pre, b, self.w1.ncols());
        ensure_shape(hidden, b, self.w1.ncols());
        ensure_shape(out, b, self.w2.ncols());
        let computed;
        let shift = match shift {
            Some(s) => s,
            None => {
                computed = first_layer_shift(stdz, self.w1.view());
                &computed
            }
        };
        // Row chunks in parallel, one per thread, each through the first layer, the ReLU,
        // dropout and its own output GEMM: every output is computed as in a whole-batch pass
        // (a GEMM's entry does not depend on how the rows are split), so the numbers do not
        // depend on the thread count.
        let (hdim, odim) = (self.w1.ncols(), self.w2.ncols());
        let chunk = row_chunk(b);
        pre.as_slice_mut()
            .unwrap()
            .par_chunks_mut(chunk * hdim)
            .zip(hidden.as_slice_mut().unwrap().par_chunks_mut(chunk * hdim))
            .zip(out.as_slice_mut().unwrap().par_chunks_mut(chunk * odim))
            .zip(rows.par_chunks(chunk))
            .for_each(|(((pre, hid), out), rows)| {
                self.forward_rows(x, rows, stdz, shift, dropout, pre, hid, out)
            });
    }

    /// [`Self::forward`] on `rows` in this thread, into row-major slices `pre`, `hidden`
    /// (`rows × H`) and `out` (`rows × O`).
    #[allow(clippy::too_many_arguments)]
    pub fn forward_rows(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        stdz: &Standardizer,
        shift: &[F],
        dropout: Option<Dropout>,
        pre: &mut [F],
        hidden: &mut [F],
        out: &mut [F],
    ) {
        let (hdim, odim) = (self.w1.ncols(), self.w2.ncols());
        let (w1, b1) = (self.w1.view(), self.b1.as_slice().unwrap());
        for ((p, hr), &r) in pre
            .chunks_exact_mut(hdim)
            .zip(hidden.chunks_exact_mut(hdim))
            .zip(rows)
        {
            let (idx, val) = x.row(r);
            first_layer_row_dispatch(p, b1, shift, idx, val, &stdz.scale, &w1);
            for (hv, &pv) in hr.iter_mut().zip(p.iter()) {
                *hv = pv.max(F::zero());
            }
            if let Some(d) = dropout {
                d.apply_row(r, hr);
            }
        }
        let n = rows.len();
        let hid = ArrayView2::from_shape((n, hdim), &*hidden).unwrap();
        let mut out = ArrayViewMut2::from_shape((n, odim), out).unwrap();
        out.assign(&self.b2.broadcast((n, odim)).unwrap());
        general_mat_mul(F::one(), &hid, self.w2, F::one(), &mut out);
    }

    /// Backward from `dout = ∂ℓ/∂out`; `dh` is scratch for `∂ℓ/∂pre`.
    pub fn backward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        stdz: &Standardizer,
        dropout: Option<Dropout>,
        dout: &Array2<F>,
        pre: &Array2<F>,
        hidden: &Array2<F>,
        dh: &mut Array2<F>,
        grad: TwoLayerGrad<'_, F>,
    ) {
        // ∂W2 and ∂pre are two GEMMs of the same size: one per thread.
        let (w2, dw2, db2) = (self.w2, grad.w2, grad.b2);
        ensure_shape(dh, rows.len(), self.w1.ncols());
        rayon::join(
            || {
                db2.assign(&dout.sum_axis(Axis(0)));
                general_mat_mul(F::one(), &hidden.t(), dout, F::zero(), dw2);
            },
            || {
                general_mat_mul(F::one(), dout, &w2.t(), F::zero(), dh);
                relu_dropout_backward(dh, pre, hidden, dropout);
            },
        );
        sparse_first_layer_backward(x, rows, stdz, dh.view(), grad.b1, grad.aux);
    }
}

/// `dh ← dh ⊙ 1[pre > 0]`, then times the dropout mask and scale, in one branch-free pass.
/// The mask is read off `hidden` rather than hashed again: where `pre > 0` the forward pass
/// left `hidden = pre·scale > 0` for a kept unit and exactly 0 for a dropped one.
fn relu_dropout_backward<F: Scalar>(
    dh: &mut Array2<F>,
    pre: &Array2<F>,
    hidden: &Array2<F>,
    dropout: Option<Dropout>,
) {
    let (dh, pre, hidden) = (
        dh.as_slice_mut().expect("contiguous"),
        pre.as_slice().expect("contiguous"),
        hidden.as_slice().expect("contiguous"),
    );
    relu_dropout_backward_dispatch(dh, pre, hidden, dropout.map(|d| d.scale()));
}

crate::simd::dispatch! {
    features ["avx512f", "avx512bw"], ["avx2"];
    /// The pass of [`relu_dropout_backward`] compiled for the widest vectors the CPU has
    /// (compiled for baseline x86-64 it was a twentieth of Bibtex's default epoch; selects and
    /// one multiply give the same numbers at every width).
    fn relu_dropout_backward_dispatch<F: Scalar>(
        dh: &mut [F],
        pre: &[F],
        hidden: &[F],
        scale: Option<F>,
    ) {
        let zero = F::zero();
        match scale {
            Some(scale) => {
                for ((g, &a), &h) in dh.iter_mut().zip(pre).zip(hidden) {
                    *g = if (a > zero) & (h > zero) {
                        *g * scale
                    } else {
                        zero
                    };
                }
            }
            None => {
                for (g, &a) in dh.iter_mut().zip(pre) {
                    *g = if a > zero { *g } else { zero };
                }
            }
        }
    }
}

/// Rows per parallel chunk of a batch of `b` rows in the networks: one chunk per thread, but
/// not so few rows that repacking the second layer per chunk dominates.
fn row_chunk(b: usize) -> usize {
    b.div_ceil(rayon::current_num_threads())
        .max(16)
        .min(b.max(1))
}

/// Makes `a` a `rows × cols` array (zeros when it is reallocated).
pub fn ensure_shape<F: Scalar>(a: &mut Array2<F>, rows: usize, cols: usize) {
    if a.dim() != (rows, cols) {
        *a = Array2::zeros((rows, cols));
    }
}
