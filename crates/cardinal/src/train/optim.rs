//! AdaGrad with weight decay fused into the update, over whole tensors or split-form gradients.

use crate::model::{c, Decay, FirstLayerGrad, Params, Standardizer};
use crate::pipeline::{decay_coefficient, Model, Workspace};
use cardinal_model::batch::Float;
use ndarray::Array2;
use rayon::prelude::*;

/// AdaGrad, as TensorFlow's: `acc += g²; w −= lr·g/√acc`, `acc` starting at `init`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Adagrad<F: Float> {
    /// Learning rate.
    pub lr: F,
    /// Running sum of squared gradients, one per weight.
    pub acc: Params<F>,
}

impl<F: Float> Adagrad<F> {
    /// An optimiser for `params` with learning rate `lr`, every accumulator starting at `init`.
    pub(crate) fn new(params: &Params<F>, lr: f64, init: f64) -> Self {
        let mut acc = params.zeros_like();
        acc.visit_mut(|_, a, _| a.fill(c(init)));
        Self { lr: c(lr), acc }
    }

    /// One update from a split-form gradient (see `Model::loss_and_sparse_grad`), with weight
    /// decay fused in (`grad.w1` and `grad.c1` are not read: the first layers' gradients are in
    /// `ws`). Returns the weight-decay loss before the step and the first tensor holding a
    /// non-finite value after.
    pub(crate) fn step_fused(
        &mut self,
        model: &mut Model<F>,
        grad: &mut Params<F>,
        ws: &Workspace<F>,
    ) -> (f64, Option<&'static str>) {
        let cfg = &model.config;
        let (wd, mult) = (model.weight_decay(), cfg.train.unary_weight_decay_mult);
        let lr = self.lr;
        let stdz = &model.standardizer;
        let (p, a) = (&mut model.params, &mut self.acc);
        let first = [
            ("unary.w1", Decay::Unary, &mut p.w1, &mut a.w1, &ws.grad_w1),
            ("card.w1", Decay::Other, &mut p.c1, &mut a.c1, &ws.grad_c1),
        ];
        macro_rules! t {
            ($name:expr, $class:expr, $f:ident) => {
                (
                    $name,
                    $class,
                    p.$f.as_slice_mut().expect("contiguous"),
                    a.$f.as_slice_mut().expect("contiguous"),
                    grad.$f.as_slice().expect("contiguous"),
                )
            };
        }
        // In `Params::update_with`'s order.
        let others = [
            t!("unary.b1", Decay::None, b1),
            t!("unary.w2", Decay::Unary, w2),
            t!("unary.b2", Decay::None, b2),
            t!("energy.wp", Decay::Other, wp),
            t!("energy.we", Decay::Other, we),
            t!("card.b1", Decay::None, cb1),
            t!("card.w2", Decay::Other, c2),
            t!("card.b2", Decay::None, cb2),
            t!("inference.eta", Decay::None, eta),
        ];
        // The first layers (each split over threads) and the other tensors side by side; the
        // decay terms are then added in tensor order, as one pass would add them.
        let (first, others) = rayon::join(
            || {
                first.map(|(name, class, w, acc, aux)| {
                    let lambda = decay_coefficient(class, wd, mult);
                    let step = FusedStep {
                        lr,
                        lambda: c(lambda),
                        stdz,
                    };
                    let (sq, finite) = step.first_layer(w, acc, aux);
                    (name, Some(lambda * sq), finite)
                })
            },
            || {
                others.map(|(name, class, w, acc, g)| {
                    if name == "inference.eta" {
                        // A fixed hyper-parameter, never trained.
                        return (name, None, true);
                    }
                    let lambda = decay_coefficient(class, wd, mult);
                    let (sq, finite) = adagrad_plain_dispatch(w, acc, g, c(lambda), lr);
                    let term = 0.5 * lambda * sq.to_f64().unwrap_or(f64::NAN);
                    (name, Some(term), finite)
                })
            },
        );
        decay_and_first_bad(first.into_iter().chain(others))
    }

    /// One update of every tensor but `η` (a fixed hyper-parameter). Returns the name of the
    /// first tensor holding a non-finite value afterwards (a non-finite gradient always shows
    /// up here).
    #[cfg(test)]
    pub(crate) fn step(
        &mut self,
        params: &mut Params<F>,
        grad: &Params<F>,
    ) -> Option<&'static str> {
        let lr = self.lr;
        let mut bad = None;
        params.update_with(&mut self.acc, grad, |name, w, acc, g, _| {
            if name == "inference.eta" {
                return;
            }
            let mut finite = true;
            for ((w, a), &g) in w.iter_mut().zip(acc.iter_mut()).zip(g) {
                *a += g * g;
                *w -= lr * g / a.sqrt();
                finite &= w.is_finite();
            }
            if !finite && bad.is_none() {
                bad = Some(name);
            }
        });
        bad
    }
}

/// The weight-decay loss, the sum of the tensors' terms in their order, and the first tensor
/// left non-finite, from each tensor's `(name, decay term, all finite)`.
fn decay_and_first_bad(
    tensors: impl Iterator<Item = (&'static str, Option<f64>, bool)>,
) -> (f64, Option<&'static str>) {
    let mut decay = 0.0;
    let mut bad = None;
    for (name, term, finite) in tensors {
        if let Some(t) = term {
            decay += t;
        }
        if !finite && bad.is_none() {
            bad = Some(name);
        }
    }
    (decay, bad)
}

/// Settings of one fused optimiser step.
struct FusedStep<'a, F> {
    lr: F,
    /// Weight-decay coefficient of the tensor.
    lambda: F,
    stdz: &'a Standardizer,
}

impl<F: Float> FusedStep<'_, F> {
    /// AdaGrad on a first layer `w` (`D × H`) whose gradient is in split form in `aux` (the
    /// touched rows, formed here row by row, and the rank-one shift term) with weight decay —
    /// one pass over `w`, rows in parallel. Returns `(½‖w‖² before the step, all finite after)`.
    fn first_layer(
        &self,
        w: &mut Array2<F>,
        acc: &mut Array2<F>,
        aux: &FirstLayerGrad<F>,
    ) -> (f64, bool) {
        let h = w.ncols();
        let (lr, lambda, colsum) = (self.lr, self.lambda, &aux.colsum[..]);
        let chunk = 64;
        let zeros = vec![F::zero(); h];
        let parts: Vec<(f64, bool)> = w
            .as_slice_mut()
            .expect("contiguous")
            .par_chunks_mut(chunk * h)
            .zip(
                acc.as_slice_mut()
                    .expect("contiguous")
                    .par_chunks_mut(chunk * h),
            )
            .enumerate()
            .map(|(ci, (w, acc))| {
                let mut sq = F::zero();
                let mut finite = true;
                let mut row = vec![F::zero(); h];
                for (ri, (w, acc)) in w
                    .chunks_exact_mut(h)
                    .zip(acc.chunks_exact_mut(h))
                    .enumerate()
                {
                    let d = ci * chunk + ri;
                    let ms: F = c((self.stdz.mean[d] * self.stdz.scale[d]) as f64);
                    let gr: &[F] = if aux.sparse_row(d, &mut row) {
                        &row
                    } else {
                        &zeros
                    };
                    let (rsq, rfinite) = adagrad_dispatch(w, acc, gr, ms, colsum, lambda, lr);
                    sq += rsq;
                    finite &= rfinite;
                }
                (0.5 * sq.to_f64().unwrap_or(f64::NAN), finite)
            })
            .collect();
        parts
            .iter()
            .fold((0.0, true), |(s, f), &(ps, pf)| (s + ps, f && pf))
    }
}

crate::simd::dispatch! {
    features ["avx512f"];
    /// [`adagrad_lanes`] compiled for the widest vectors the CPU has (sqrt and division are
    /// exact in every width and nothing is fused into FMA, so every variant computes the same
    /// numbers).
    #[inline]
    fn adagrad_dispatch<F: Float>(
        w: &mut [F],
        acc: &mut [F],
        g: &[F],
        ms: F,
        colsum: &[F],
        lambda: F,
        lr: F,
    ) -> (F, bool) {
        adagrad_lanes::<F, true>(w, acc, g, ms, colsum, lambda, lr)
    }
}

crate::simd::dispatch! {
    features ["avx512f"];
    /// [`adagrad_dispatch`] without the shift term (the tensors other than first layers). A
    /// function of its own: one update taking the shift as an `Option` made the first layers'
    /// per-row calls slower (docs/journal/2026-11-28-ties-and-machines.md).
    #[inline]
    fn adagrad_plain_dispatch<F: Float>(
        w: &mut [F],
        acc: &mut [F],
        g: &[F],
        lambda: F,
        lr: F,
    ) -> (F, bool) {
        // `g` stands in for the absent `colsum` and is not read as one.
        adagrad_lanes::<F, false>(w, acc, g, F::zero(), g, lambda, lr)
    }
}

/// AdaGrad with weight decay on one contiguous slice: `g' = g − ms·colsum + λw` (`g + λw`
/// without `SHIFT`, the same bits as a zero shift: `g − 0·0` is `g`, signed zeros included),
/// `acc += g'²`, `w −= lr·g'/√acc` (pass zeros for an absent `g`). Without `SHIFT` there is
/// no zero vector to allocate, clear and stream (on Delicious, 0.6 MB per batch). Written over
/// fixed-width lanes of zipped slices with no branch, so that it vectorises (a plain float sum
/// would pin the loop to scalar order). Returns `(Σw² before the step, all w finite after)`.
#[inline(always)]
fn adagrad_lanes<F: Float, const SHIFT: bool>(
    w: &mut [F],
    acc: &mut [F],
    g: &[F],
    ms: F,
    colsum: &[F],
    lambda: F,
    lr: F,
) -> (F, bool) {
    const LANES: usize = 8;
    let n = w.len();
    assert!(acc.len() == n && g.len() == n && colsum.len() == n);
    let mut sq = [F::zero(); LANES];
    // x − x is 0 for finite x and NaN for ±inf or NaN: a branch-free finiteness check.
    let mut chk = [F::zero(); LANES];
    let full = n / LANES * LANES;
    let lane_step = |w: &mut F, a: &mut F, g: F, cs: F, sq: &mut F, chk: &mut F| {
        let wj = *w;
        let gj = if SHIFT {
            g - ms * cs + lambda * wj
        } else {
            g + lambda * wj
        };
        *sq += wj * wj;
        *a += gj * gj;
        let nw = wj - lr * gj / a.sqrt();
        #[allow(clippy::eq_op)] // deliberate: NaN for a non-finite value, 0 otherwise
        {
            *chk += nw - nw;
        }
        *w = nw;
    };
    for (((wc, ac), gc), cc) in w[..full]
        .chunks_exact_mut(LANES)
        .zip(acc[..full].chunks_exact_mut(LANES))
        .zip(g[..full].chunks_exact(LANES))
        .zip(colsum[..full].chunks_exact(LANES))
    {
        for k in 0..LANES {
            lane_step(
                &mut wc[k],
                &mut ac[k],
                gc[k],
                cc[k],
                &mut sq[k],
                &mut chk[k],
            );
        }
    }
    for j in full..n {
        lane_step(
            &mut w[j],
            &mut acc[j],
            g[j],
            colsum[j],
            &mut sq[0],
            &mut chk[0],
        );
    }
    let total = sq.iter().fold(F::zero(), |a, &b| a + b);
    let check = chk.iter().fold(F::zero(), |a, &b| a + b);
    (total, check == F::zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::train::fixtures::{small, tiny};
    use crate::train::init_model;

    /// The fused optimiser step (split gradient, decay folded in) equals the plain step on the
    /// complete gradient.
    #[test]
    fn fused_step_equals_plain_step() {
        let data = tiny();
        let cfg = small(Config::paper());
        let mut a = init_model(&data, &cfg).unwrap();
        let mut b = a.clone();
        let mut opt_a = Adagrad::new(&a.params, 0.1, 0.1);
        let mut opt_b = opt_a.clone();
        let (mut ws_a, mut ws_b) = (Workspace::default(), Workspace::default());
        let (mut g_a, mut g_b) = (a.params.zeros_like(), b.params.zeros_like());
        for rows in [[0usize, 3, 5, 7], [1, 2, 8, 19], [4, 6, 10, 11]] {
            let la = a
                .loss_and_grad(&data.features, &data.labels, &rows, &mut ws_a, &mut g_a)
                .unwrap();
            assert!(opt_a.step(&mut a.params, &g_a).is_none());
            let mut lb = b
                .loss_and_sparse_grad(&data.features, &data.labels, &rows, &mut ws_b, &mut g_b)
                .unwrap();
            let (decay, bad) = opt_b.step_fused(&mut b, &mut g_b, &ws_b);
            assert!(bad.is_none());
            lb.decay_loss = decay;
            assert!((la.total() - lb.total()).abs() <= 1e-5 * la.total().abs().max(1.0));
            assert!(
                g_b.w1.iter().chain(g_b.c1.iter()).all(|&v| v == 0.0),
                "sparse buffers are left zeroed"
            );
        }
        let mut worst = 0f32;
        a.params.zip_mut(&b.params, |_, x, y, _| {
            for (p, q) in x.iter().zip(y) {
                worst = worst.max((p - q).abs());
            }
        });
        assert!(worst < 1e-6, "fused and plain steps differ by {worst}");
    }

    /// The update without a shift term gives the bits of the update with a zero shift, on
    /// values that include signed zeros, in `f32` and `f64`, on lengths with and without a
    /// remainder past the vector lanes.
    #[test]
    fn the_plain_update_is_the_zero_shift_update_to_the_bit() {
        fn check<F: Float>() {
            let pool = [0.0, -0.0, 1.5, -2.25, 3e-3, -7e-5, 12.0];
            let mut g = cardinal_testkit::Lcg::new(5);
            for n in [1, 7, 8, 29, 64] {
                let mut draw =
                    || -> Vec<F> { (0..n).map(|_| c(pool[g.below(pool.len())])).collect() };
                let (w, grad) = (draw(), draw());
                let acc: Vec<F> = draw().iter().map(|a| a.abs() + c(0.5)).collect();
                let (mut w1, mut a1, mut w2, mut a2) = (w.clone(), acc.clone(), w, acc);
                let zeros = vec![F::zero(); n];
                let (lambda, lr) = (c(1e-3), c(0.1));
                let r1 = adagrad_dispatch(&mut w1, &mut a1, &grad, F::zero(), &zeros, lambda, lr);
                let r2 = adagrad_plain_dispatch(&mut w2, &mut a2, &grad, lambda, lr);
                let bits = |v: &[F]| {
                    v.iter()
                        .map(|x| x.to_f64().unwrap().to_bits())
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(&w1), bits(&w2), "n {n}");
                assert_eq!(bits(&a1), bits(&a2), "n {n}");
                assert_eq!(
                    r1.0.to_f64().unwrap().to_bits(),
                    r2.0.to_f64().unwrap().to_bits()
                );
                assert_eq!(r1.1, r2.1);
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
