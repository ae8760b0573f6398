//! The trainable parameters, their scalar type and their initialisation.

use ndarray::{Array1, Array2, Axis};
use rand::Rng;
use rand_distr::StandardNormal;

/// Scalar type of the networks and the unroll: `f32` for training, `f64` for gradient checks.
/// The batch passes take `batch::Float`, which adds the lockstep kernels
/// compiled once in this crate.
pub trait Scalar: cardinal_proj::Real + ndarray::LinalgScalar + ndarray::ScalarOperand {}
impl Scalar for f32 {}
impl Scalar for f64 {}

/// Converts an `f64` constant to `F`.
#[inline]
pub fn c<F: Scalar>(x: f64) -> F {
    F::from_f64(x).expect("constant representable")
}

/// Trainable parameters; the same type holds their gradients and optimiser state.
#[derive(Debug, Clone, PartialEq)]
pub struct Params<F> {
    /// Unary net, first layer `D × H`.
    pub w1: Array2<F>,
    /// Unary net, first-layer bias `H`.
    pub b1: Array1<F>,
    /// Unary net, second layer `H × L`.
    pub w2: Array2<F>,
    /// Unary net, second-layer bias `L`.
    pub b2: Array1<F>,
    /// Global energy, `L × E`.
    pub wp: Array2<F>,
    /// Global energy output weights, `E`.
    pub we: Array1<F>,
    /// Cardinality net, first layer `D × Hc`.
    pub c1: Array2<F>,
    /// Cardinality net, first-layer bias `Hc`.
    pub cb1: Array1<F>,
    /// Cardinality net, second layer `Hc × K`.
    pub c2: Array2<F>,
    /// Cardinality net, second-layer bias `K`.
    pub cb2: Array1<F>,
    /// Inner step size `η` (one entry; a fixed hyper-parameter, kept with the weights).
    pub eta: Array1<F>,
}

/// How a tensor is treated by the optimiser's weight decay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decay {
    /// Not decayed (biases, `η`).
    None,
    /// A weight matrix of the unary net (decayed `unary_weight_decay_mult` times).
    Unary,
    /// Any other weight matrix.
    Other,
}

macro_rules! for_each_tensor {
    ($m:ident) => {
        $m!(w1, "unary.w1", Decay::Unary);
        $m!(b1, "unary.b1", Decay::None);
        $m!(w2, "unary.w2", Decay::Unary);
        $m!(b2, "unary.b2", Decay::None);
        $m!(wp, "energy.wp", Decay::Other);
        $m!(we, "energy.we", Decay::Other);
        $m!(c1, "card.w1", Decay::Other);
        $m!(cb1, "card.b1", Decay::None);
        $m!(c2, "card.w2", Decay::Other);
        $m!(cb2, "card.b2", Decay::None);
        $m!(eta, "inference.eta", Decay::None);
    };
}

impl<F: Scalar> Params<F> {
    /// All-zero parameters of the given sizes.
    pub fn zeros(d: usize, h: usize, l: usize, e: usize, hc: usize, k: usize) -> Self {
        Self {
            w1: Array2::zeros((d, h)),
            b1: Array1::zeros(h),
            w2: Array2::zeros((h, l)),
            b2: Array1::zeros(l),
            wp: Array2::zeros((l, e)),
            we: Array1::zeros(e),
            c1: Array2::zeros((d, hc)),
            cb1: Array1::zeros(hc),
            c2: Array2::zeros((hc, k)),
            cb2: Array1::zeros(k),
            eta: Array1::zeros(1),
        }
    }

    /// Zeros shaped like `self`.
    pub fn zeros_like(&self) -> Self {
        Self::zeros(
            self.w1.nrows(),
            self.w1.ncols(),
            self.w2.ncols(),
            self.wp.ncols(),
            self.c1.ncols(),
            self.c2.ncols(),
        )
    }

    /// Glorot-normal weights (truncated at two standard deviations, variance-corrected, as
    /// TensorFlow's initialiser), zero biases, and `η = eta`.
    pub fn glorot(
        d: usize,
        h: usize,
        l: usize,
        e: usize,
        hc: usize,
        k: usize,
        eta: f64,
        rng: &mut impl Rng,
    ) -> Self {
        let mut p = Self::zeros(d, h, l, e, hc, k);
        glorot_fill(&mut p.w1, rng);
        glorot_fill(&mut p.w2, rng);
        glorot_fill(&mut p.wp, rng);
        {
            // A vector is a `E × 1` matrix for the fan computation.
            let mut col = p.we.clone().insert_axis(Axis(1));
            glorot_fill(&mut col, rng);
            p.we.assign(&col.index_axis(Axis(1), 0));
        }
        glorot_fill(&mut p.c1, rng);
        glorot_fill(&mut p.c2, rng);
        p.eta[0] = c(eta);
        p
    }

    /// Visits every tensor with its name, flat data and decay class.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &[F], Decay)) {
        macro_rules! v {
            ($field:ident, $name:expr, $decay:expr) => {
                f($name, self.$field.as_slice().expect("contiguous"), $decay)
            };
        }
        for_each_tensor!(v);
    }

    /// Visits every tensor mutably.
    pub fn visit_mut(&mut self, mut f: impl FnMut(&'static str, &mut [F], Decay)) {
        macro_rules! v {
            ($field:ident, $name:expr, $decay:expr) => {
                f(
                    $name,
                    self.$field.as_slice_mut().expect("contiguous"),
                    $decay,
                )
            };
        }
        for_each_tensor!(v);
    }

    /// Visits every tensor of `self` mutably together with the same tensor of `other`.
    pub fn zip_mut(
        &mut self,
        other: &Self,
        mut f: impl FnMut(&'static str, &mut [F], &[F], Decay),
    ) {
        macro_rules! v {
            ($field:ident, $name:expr, $decay:expr) => {
                f(
                    $name,
                    self.$field.as_slice_mut().expect("contiguous"),
                    other.$field.as_slice().expect("contiguous"),
                    $decay,
                )
            };
        }
        for_each_tensor!(v);
    }

    /// Visits every tensor of `self` and `state` mutably together with the same tensor of
    /// `grad` (an optimiser step).
    pub fn update_with(
        &mut self,
        state: &mut Self,
        grad: &Self,
        mut f: impl FnMut(&'static str, &mut [F], &mut [F], &[F], Decay),
    ) {
        macro_rules! v {
            ($field:ident, $name:expr, $decay:expr) => {
                f(
                    $name,
                    self.$field.as_slice_mut().expect("contiguous"),
                    state.$field.as_slice_mut().expect("contiguous"),
                    grad.$field.as_slice().expect("contiguous"),
                    $decay,
                )
            };
        }
        for_each_tensor!(v);
    }

    /// Shapes by tensor name (for checkpoints).
    pub fn shapes(&self) -> Vec<(&'static str, Vec<usize>)> {
        let mut out = Vec::new();
        macro_rules! v {
            ($field:ident, $name:expr, $decay:expr) => {
                out.push(($name, self.$field.shape().to_vec()))
            };
        }
        for_each_tensor!(v);
        out
    }

    /// Converts every entry to another float type.
    pub fn cast<G: Scalar>(&self) -> Params<G> {
        let cv2 = |a: &Array2<F>| a.mapv(|x| c::<G>(x.to_f64().unwrap_or(f64::NAN)));
        let cv1 = |a: &Array1<F>| a.mapv(|x| c::<G>(x.to_f64().unwrap_or(f64::NAN)));
        Params {
            w1: cv2(&self.w1),
            b1: cv1(&self.b1),
            w2: cv2(&self.w2),
            b2: cv1(&self.b2),
            wp: cv2(&self.wp),
            we: cv1(&self.we),
            c1: cv2(&self.c1),
            cb1: cv1(&self.cb1),
            c2: cv2(&self.c2),
            cb2: cv1(&self.cb2),
            eta: cv1(&self.eta),
        }
    }

    /// The name of the first tensor holding a non-finite entry, if any.
    pub fn first_nonfinite(&self) -> Option<&'static str> {
        let mut bad = None;
        self.visit(|name, data, _| {
            if bad.is_none() && data.iter().any(|x| !x.is_finite()) {
                bad = Some(name);
            }
        });
        bad
    }
}

pub(super) fn glorot_fill<F: Scalar>(w: &mut Array2<F>, rng: &mut impl Rng) {
    let (fan_in, fan_out) = (w.nrows() as f64, w.ncols() as f64);
    // Truncation at 2σ shrinks the standard deviation by this factor; undo it.
    let std = (2.0 / (fan_in + fan_out)).sqrt() / 0.879_625_661_034_239_8;
    for x in w.iter_mut() {
        let n: f64 = loop {
            let n: f64 = rng.sample(StandardNormal);
            if n.abs() <= 2.0 {
                break n;
            }
        };
        *x = c(n * std);
    }
}
