//! Pieces the baseline systems share: a two-layer network over the standardised sparse input
//! with a choice of hidden activation, the global energy `w2ᵀ act(Wpᵀ y)` with its gradient in
//! `y`, the products needed to differentiate through that gradient, and the optimisers.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array1, Array2, ArrayView2, Axis};

use super::{Activation, Optimizer};
use cardinal::config::Config;
use cardinal::data::CsrMatrix;
use cardinal::parts::{decay_coefficient, Dropout};
use cardinal::parts::{
    sparse_first_layer, sparse_first_layer_grad, Decay, Float, Params, Standardizer,
};

/// `act(x)`, `act'(x)`, `act''(x)`.
#[inline]
pub fn act3<F: Float>(a: Activation, x: F) -> (F, F, F) {
    match a {
        Activation::Relu => {
            if x > F::zero() {
                (x, F::one(), F::zero())
            } else {
                (F::zero(), F::zero(), F::zero())
            }
        }
        Activation::Softplus => {
            // log(1 + e^x) = max(x, 0) + log(1 + e^{−|x|})
            let v = x.max(F::zero()) + (-x.abs()).exp().ln_1p();
            let s = cardinal::parts::sigmoid(x);
            (v, s, s * (F::one() - s))
        }
    }
}

/// Reusable buffers of a [`Mlp`] forward pass.
#[derive(Debug, Default, Clone)]
pub struct MlpCache<F> {
    /// Hidden pre-activations `x̃W1 + b1` (`b × H`).
    pub pre: Array2<F>,
    /// Hidden activations, after dropout when the network has it (`b × H`).
    pub hidden: Array2<F>,
    /// Outputs (`b × O`).
    pub out: Array2<F>,
    dh: Array2<F>,
}

/// `x → act(x̃W1 + b1) → ·W2 + b2`, the unary (or cardinality) network of a baseline.
pub struct Mlp<'a, F> {
    /// First-layer weights (`D × H`), applied to the standardised input.
    pub w1: &'a Array2<F>,
    /// First-layer bias (`H`).
    pub b1: &'a Array1<F>,
    /// Second-layer weights (`H × O`).
    pub w2: &'a Array2<F>,
    /// Second-layer bias (`O`).
    pub b2: &'a Array1<F>,
    /// Hidden activation.
    pub act: Activation,
    /// Dropout on the hidden layer (unary pre-training only); the same mask in the backward.
    pub dropout: Option<Dropout>,
}

/// Where [`Mlp::backward`] adds its gradients (complete, dense).
pub struct MlpGrad<'a, F> {
    /// Gradient of [`Mlp::w1`].
    pub w1: &'a mut Array2<F>,
    /// Gradient of [`Mlp::b1`].
    pub b1: &'a mut Array1<F>,
    /// Gradient of [`Mlp::w2`].
    pub w2: &'a mut Array2<F>,
    /// Gradient of [`Mlp::b2`].
    pub b2: &'a mut Array1<F>,
}

impl<'a, F: Float> MlpGrad<'a, F> {
    /// The gradient slots of the unary network in `g` (as [`Mlp::unary`] reads its weights).
    pub fn unary(g: &'a mut Params<F>) -> Self {
        Self {
            w1: &mut g.w1,
            b1: &mut g.b1,
            w2: &mut g.w2,
            b2: &mut g.b2,
        }
    }

    /// The gradient slots of the cardinality network in `g`.
    pub fn card(g: &'a mut Params<F>) -> Self {
        Self {
            w1: &mut g.c1,
            b1: &mut g.cb1,
            w2: &mut g.c2,
            b2: &mut g.cb2,
        }
    }
}

fn ensure<F: Float>(a: &mut Array2<F>, r: usize, c: usize) {
    if a.dim() != (r, c) {
        *a = Array2::zeros((r, c));
    }
}

impl<'a, F: Float> Mlp<'a, F> {
    /// The unary network of `p`.
    pub fn unary(p: &'a Params<F>, act: Activation) -> Self {
        Self {
            w1: &p.w1,
            b1: &p.b1,
            w2: &p.w2,
            b2: &p.b2,
            act,
            dropout: None,
        }
    }

    /// The cardinality network of `p` (ReLU, as P&C's).
    pub fn card(p: &'a Params<F>) -> Self {
        Self {
            w1: &p.c1,
            b1: &p.cb1,
            w2: &p.c2,
            b2: &p.cb2,
            act: Activation::Relu,
            dropout: None,
        }
    }

    /// Runs the network on `rows` of `x` (standardised by `stdz`), recording into `m`; the
    /// outputs are `m.out`.
    pub fn forward(&self, x: &CsrMatrix, rows: &[usize], stdz: &Standardizer, m: &mut MlpCache<F>) {
        let (b, h, o) = (rows.len(), self.w1.ncols(), self.w2.ncols());
        ensure(&mut m.pre, b, h);
        ensure(&mut m.hidden, b, h);
        ensure(&mut m.out, b, o);
        sparse_first_layer(
            x,
            rows,
            stdz,
            self.w1.view(),
            self.b1.as_slice().expect("contiguous"),
            m.pre.view_mut(),
        );
        let act = self.act;
        m.hidden.zip_mut_with(&m.pre, |o, &a| *o = act3(act, a).0);
        if let Some(d) = &self.dropout {
            d.apply(rows, &mut m.hidden);
        }
        m.out.assign(&self.b2.broadcast((b, o)).expect("broadcast"));
        general_mat_mul(F::one(), &m.hidden, self.w2, F::one(), &mut m.out);
    }

    /// Adds the gradient of `⟨dout, out⟩` (for the last forward on `m`) to `g`.
    pub fn backward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        stdz: &Standardizer,
        m: &mut MlpCache<F>,
        dout: ArrayView2<F>,
        g: MlpGrad<'_, F>,
    ) {
        *g.b2 += &dout.sum_axis(Axis(0));
        general_mat_mul(F::one(), &m.hidden.t(), &dout, F::one(), g.w2);
        ensure(&mut m.dh, rows.len(), self.w1.ncols());
        general_mat_mul(F::one(), &dout, &self.w2.t(), F::zero(), &mut m.dh);
        if let Some(d) = &self.dropout {
            d.apply(rows, &mut m.dh);
        }
        let act = self.act;
        m.dh.zip_mut_with(&m.pre, |d, &a| *d *= act3(act, a).1);
        // The first layer's gradient whole in a zeroed buffer, then added.
        let mut dw = Array2::zeros(self.w1.dim());
        let mut db = Array1::zeros(self.w1.ncols());
        sparse_first_layer_grad(x, rows, stdz, m.dh.view(), &mut db, &mut dw);
        *g.w1 += &dw;
        *g.b1 += &db;
    }
}

/// The global energy `E(y) = w2ᵀ act(Wpᵀ y)` over the labels, not conditioned on `x`.
pub struct Energy<'a, F> {
    /// `L × E`.
    pub wp: ArrayView2<'a, F>,
    /// `w2`, the output weights (`E`).
    pub we: &'a [F],
    /// The activation `act`.
    pub act: Activation,
}

impl<F: Float> Energy<'_, F> {
    /// Number of energy units `E`.
    pub fn hidden(&self) -> usize {
        self.we.len()
    }

    /// `a = Wpᵀ y` into `a`.
    pub fn preact(&self, y: &[F], a: &mut [F]) {
        a.fill(F::zero());
        for (i, &yi) in y.iter().enumerate() {
            if yi != F::zero() {
                for (ak, &w) in a.iter_mut().zip(self.wp.row(i)) {
                    *ak += yi * w;
                }
            }
        }
    }

    /// `E(y)`; `a` is scratch of length `E`.
    pub fn value(&self, y: &[F], a: &mut [F]) -> F {
        self.preact(y, a);
        a.iter()
            .zip(self.we)
            .map(|(&ak, &w)| w * act3(self.act, ak).0)
            .sum()
    }

    /// Adds `∇_y E(y) = Wp (w2 ⊙ act'(a))` to `out`; returns `a` in `a`.
    pub fn add_grad(&self, y: &[F], a: &mut [F], s: &mut [F], out: &mut [F]) {
        self.preact(y, a);
        for k in 0..a.len() {
            s[k] = self.we[k] * act3(self.act, a[k]).1;
        }
        for (o, row) in out.iter_mut().zip(self.wp.outer_iter()) {
            let mut acc = F::zero();
            for (&w, &sk) in row.iter().zip(s.iter()) {
                acc += w * sk;
            }
            *o += acc;
        }
    }

    /// With `a = Wpᵀ y` given and `h` the adjoint of `g = ∇_y E(y)`: adds `∂⟨h, g⟩/∂y`
    /// (the Hessian-vector product `Wp diag(w2 ⊙ act''(a)) Wpᵀ h`) to `gy`, and the parameter
    /// gradients `∂⟨h, g⟩/∂Wp`, `∂⟨h, g⟩/∂w2` to `gwp`, `gwe`. `t` is scratch of length `E`.
    pub fn grad_vjp(
        &self,
        y: &[F],
        a: &[F],
        h: &[F],
        t: &mut [F],
        gy: &mut [F],
        gwp: &mut Array2<F>,
        gwe: &mut [F],
    ) {
        let e = a.len();
        // t = Wpᵀ h
        self.preact(h, t);
        let mut s1 = vec![F::zero(); e];
        let mut s2 = vec![F::zero(); e];
        for k in 0..e {
            let (_, d1, d2) = act3(self.act, a[k]);
            gwe[k] += d1 * t[k];
            s1[k] = self.we[k] * d1;
            s2[k] = self.we[k] * d2 * t[k];
        }
        let has2 = s2.iter().any(|&v| v != F::zero());
        for i in 0..y.len() {
            let mut row = gwp.row_mut(i);
            let (hi, yi) = (h[i], y[i]);
            for k in 0..e {
                row[k] += hi * s1[k] + s2[k] * yi;
            }
            if has2 {
                let mut acc = F::zero();
                for (&w, &sk) in self.wp.row(i).iter().zip(&s2) {
                    acc += w * sk;
                }
                gy[i] += acc;
            }
        }
    }

    /// Adds `scale · ∂E(y)/∂(Wp, w2)` to `gwp`, `gwe`; `a` is scratch.
    pub fn add_param_grad(
        &self,
        y: &[F],
        scale: F,
        a: &mut [F],
        gwp: &mut Array2<F>,
        gwe: &mut [F],
    ) {
        self.preact(y, a);
        let e = a.len();
        let mut s = vec![F::zero(); e];
        for k in 0..e {
            let (v, d1, _) = act3(self.act, a[k]);
            gwe[k] += scale * v;
            s[k] = scale * self.we[k] * d1;
        }
        for (i, &yi) in y.iter().enumerate() {
            if yi != F::zero() {
                let mut row = gwp.row_mut(i);
                for k in 0..e {
                    row[k] += yi * s[k];
                }
            }
        }
    }
}

/// The optimiser state of a baseline.
#[derive(Debug, Clone)]
pub struct Opt {
    kind: Optimizer,
    /// The learning rate of the next step.
    pub lr: f64,
    /// AdaGrad's accumulators or Adam's second moments.
    v: Params<f32>,
    /// Adam's first moments, one vector per tensor in [`Params::visit`] order.
    m: Vec<Vec<f32>>,
    t: i32,
}

impl Opt {
    /// A fresh optimiser of `kind` for `params` with learning rate `lr`; AdaGrad's
    /// accumulators start at `adagrad_init`.
    pub fn new(kind: Optimizer, params: &Params<f32>, lr: f64, adagrad_init: f64) -> Self {
        let mut v = params.zeros_like();
        if kind == Optimizer::Adagrad {
            v.visit_mut(|_, a, _| a.fill(adagrad_init as f32));
        }
        let mut m = Vec::new();
        if kind == Optimizer::Adam {
            params.visit(|_, a, _| m.push(vec![0.0; a.len()]));
        }
        Self {
            kind,
            lr,
            v,
            m,
            t: 0,
        }
    }

    /// One step on the complete gradient `g` plus weight decay (`train.weight_decay`, the
    /// unary multiplier, as the P&C trainer); tensors named in `frozen` are left alone.
    /// Returns the name of a tensor holding a non-finite value afterwards, if any.
    pub fn step(
        &mut self,
        params: &mut Params<f32>,
        g: &Params<f32>,
        cfg: &Config,
        frozen: &[&str],
    ) -> Option<&'static str> {
        self.t += 1;
        let (wd, mult) = (cfg.train.weight_decay, cfg.train.unary_weight_decay_mult);
        let lr = self.lr as f32;
        let (b1, b2) = (0.9f32, 0.999f32);
        let bc1 = 1.0 - b1.powi(self.t);
        let bc2 = 1.0 - b2.powi(self.t);
        let kind = self.kind;
        let mut bad = None;
        let mut idx = 0;
        let moments = &mut self.m;
        params.update_with(&mut self.v, g, |name, w, v, g, class| {
            let i = idx;
            idx += 1;
            if name == "inference.eta" || frozen.contains(&name) {
                return;
            }
            let lambda = decay_coefficient(class, wd, mult) as f32;
            let mut finite = true;
            for j in 0..w.len() {
                let gj = g[j] + lambda * w[j];
                match kind {
                    Optimizer::Sgd => w[j] -= lr * gj,
                    Optimizer::Adagrad => {
                        v[j] += gj * gj;
                        w[j] -= lr * gj / v[j].sqrt();
                    }
                    Optimizer::Adam => {
                        let m = &mut moments[i][j];
                        *m = b1 * *m + (1.0 - b1) * gj;
                        v[j] = b2 * v[j] + (1.0 - b2) * gj * gj;
                        w[j] -= lr * (*m / bc1) / ((v[j] / bc2).sqrt() + 1e-8);
                    }
                }
                finite &= w[j].is_finite();
            }
            if !finite && bad.is_none() {
                bad = Some(name);
            }
        });
        bad
    }
}

/// The squared-norm weight-decay loss of `p` as [`Opt::step`] applies it.
pub fn decay_loss(p: &Params<f32>, cfg: &Config) -> f64 {
    let (wd, mult) = (cfg.train.weight_decay, cfg.train.unary_weight_decay_mult);
    let mut total = 0.0;
    p.visit(|_, w, class: Decay| {
        let l = decay_coefficient(class, wd, mult);
        if l > 0.0 {
            total += 0.5 * l * w.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>();
        }
    });
    total
}

/// An `f64` constant as `F`.
#[inline]
pub fn c<F: Float>(x: f64) -> F {
    F::from_f64(x).expect("constant representable")
}

/// Shorthand for an `f64` constant as `F`.
#[inline]
pub fn k<F: Float>(x: f64) -> F {
    c(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The MLP's backward with a dropout mask is the gradient of `⟨dout, out⟩` under the same
    /// mask, by central finite differences in f64, for every tensor; and the mask drops units.
    #[test]
    fn dropout_backward_matches_finite_differences() {
        let (d, h, l) = (7, 6, 4);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let mut p: Params<f64> = Params::glorot(d, h, l, 2, 3, 2, 0.005, &mut rng);
        p.b1.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = 0.1 * i as f64 - 0.2);
        let mut x = CsrMatrix::new(d);
        for r in 0..5u32 {
            let idx: Vec<u32> = (0..d as u32).filter(|j| (j + r) % 3 != 0).collect();
            let vals: Vec<f32> = idx.iter().map(|&j| 0.3 + 0.1 * j as f32).collect();
            x.push_row(&idx, &vals);
        }
        let rows = [0, 2, 3, 4];
        // No standardisation.
        let stdz = Standardizer {
            mean: vec![0.0; d],
            scale: vec![1.0; d],
        };
        let dout = Array2::from_shape_fn((rows.len(), l), |(i, j)| ((i * l + j) as f64).sin());
        let drop = Dropout { rate: 0.4, key: 11 };
        let value = |p: &Params<f64>| -> f64 {
            let mut mlp = Mlp::unary(p, Activation::Softplus);
            mlp.dropout = Some(drop);
            let mut m = MlpCache::default();
            mlp.forward(&x, &rows, &stdz, &mut m);
            (&m.out * &dout).sum()
        };
        let mut g = p.zeros_like();
        let mut mlp = Mlp::unary(&p, Activation::Softplus);
        mlp.dropout = Some(drop);
        let mut m = MlpCache::default();
        mlp.forward(&x, &rows, &stdz, &mut m);
        let dropped = m.hidden.iter().filter(|&&v| v == 0.0).count();
        assert!(dropped > 0 && dropped < m.hidden.len(), "{dropped} dropped");
        mlp.backward(
            &x,
            &rows,
            &stdz,
            &mut m,
            dout.view(),
            MlpGrad::unary(&mut g),
        );
        let checked = crate::systems::tests::check_central_differences(
            &p,
            &g,
            &["unary.w1", "unary.b1", "unary.w2", "unary.b2"],
            1e-6,
            value,
        );
        assert_eq!(checked, d * h + h + h * l + l);
    }
}
