//! Unrolled gradient ascent on `s(y) = yᵀu + E(y) [+ s_z(y)]` for one row, forward and
//! backward, for the systems that replace P&C's projection: clipping to the box (SC, and
//! SPEN-style inference) or ascent in logit space (§4).
//!
//! Box, from `y_0 = σ(u)` (or 0), `v_0 = 0`:
//! ```text
//! g_t = u + ∇E(y_{t−1}) + γ(Σ y_{t−1})·1,  v_t = μ v_{t−1} + η g_t,  y_t = clip(y_{t−1} + v_t)
//! ```
//! Logit, from `α_0 = u`, `y_t = σ(α_t)`, with an optional entropy `λ H(y)` in the score
//! (`∂H/∂y = −α`):
//! ```text
//! g_t = u + ∇E(y_{t−1}) − λ α_{t−1},  v_t = μ v_{t−1} + η σ'(α_{t−1}) ⊙ g_t,  α_t = α_{t−1} + v_t
//! ```
//! `γ` is the slope of the sigmoid cardinality potential (`cardinal_proj::sigmoid_cardinality`)
//! with per-row weights `w`. Unlike P&C's ReLU energy these steps have non-zero second
//! derivatives (the potential, a softplus energy, the sigmoid), which the backward pass carries
//! through Hessian-vector products.

use cardinal_proj::sigmoid_cardinality as scp;
use ndarray::Array2;

use super::nets::Energy;
use cardinal::parts::sigmoid;
use cardinal::parts::Float;

/// Where the iterates live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// `y` itself, clipped to `[0, 1]` after every step.
    Box,
    /// The logits `α`, `y = σ(α)`.
    Logit,
}

/// The fixed parts of an unrolled ascent.
pub struct Ascent<'a, F> {
    /// The global energy `E(y)` of the score.
    pub energy: Energy<'a, F>,
    /// Step size `η`.
    pub eta: F,
    /// Momentum `μ`.
    pub momentum: F,
    /// Number of unrolled steps `T`.
    pub steps: usize,
    /// Where the iterates live.
    pub space: Space,
    /// Box only: start at 0 instead of `σ(u)`.
    pub init_zeros: bool,
    /// Smallest count of the sigmoid cardinality potential (its weights come per row).
    pub sc_kmin: F,
    /// Logit only: weight `λ` of the entropy term.
    pub entropy: F,
}

/// What one row's forward pass records.
#[derive(Debug, Default, Clone)]
pub struct AscentTape<F> {
    /// `y_0..y_T`, `(T+1) × L`.
    pub ys: Vec<F>,
    /// Box: the unclipped points `y_{t−1} + v_t` (`t = 1..T`, stored at `t`); logit: `α_t`.
    states: Vec<F>,
    /// `g_t` at `t − 1` (`T × L`).
    gs: Vec<F>,
    /// `Wpᵀ y_{t−1}`, `T × E`.
    acts: Vec<F>,
}

impl<F: Float> AscentTape<F> {
    /// The iterate `y_t` of a row with `l` labels (`y_0` the start).
    pub fn y(&self, t: usize, l: usize) -> &[F] {
        &self.ys[t * l..(t + 1) * l]
    }
}

/// Gradients of one row's backward pass.
#[derive(Debug, Clone)]
pub struct AscentGrad<F> {
    /// Gradient of the unary scores `u` of the row.
    pub gu: Vec<F>,
    /// Gradient of the energy's projection `Wp` (`L × E`).
    pub gwp: Array2<F>,
    /// Gradient of the energy's output weights `w2`.
    pub gwe: Vec<F>,
    /// Gradient of the sigmoid-cardinality weights of the row.
    pub gsc: Vec<F>,
}

impl<F: Float> AscentGrad<F> {
    /// Zero gradients for `l` labels, `e` energy units and `k` cardinality weights.
    pub fn zeros(l: usize, e: usize, k: usize) -> Self {
        Self {
            gu: vec![F::zero(); l],
            gwp: Array2::zeros((l, e)),
            gwe: vec![F::zero(); e],
            gsc: vec![F::zero(); k],
        }
    }
}

impl<F: Float> Ascent<'_, F> {
    /// Runs the steps for one row with unary scores `u` and cardinality weights `sc` (empty:
    /// no cardinality potential).
    pub fn forward(&self, u: &[F], sc: &[F], tape: &mut AscentTape<F>) {
        let (l, e, steps) = (u.len(), self.energy.hidden(), self.steps);
        tape.ys.clear();
        tape.ys.resize((steps + 1) * l, F::zero());
        tape.states.clear();
        tape.states.resize((steps + 1) * l, F::zero());
        tape.gs.clear();
        tape.gs.resize(steps * l, F::zero());
        tape.acts.clear();
        tape.acts.resize(steps * e, F::zero());
        match self.space {
            Space::Box => {
                if !self.init_zeros {
                    for (y, &ui) in tape.ys[..l].iter_mut().zip(u) {
                        *y = sigmoid(ui);
                    }
                }
            }
            Space::Logit => {
                tape.states[..l].copy_from_slice(u);
                for (y, &ui) in tape.ys[..l].iter_mut().zip(u) {
                    *y = sigmoid(ui);
                }
            }
        }
        let mut vel = vec![F::zero(); l];
        let mut s = vec![F::zero(); e];
        for t in 1..=steps {
            let (prev, next) = tape.ys.split_at_mut(t * l);
            let y_prev = &prev[(t - 1) * l..];
            let y_next = &mut next[..l];
            let g = &mut tape.gs[(t - 1) * l..t * l];
            g.copy_from_slice(u);
            self.energy
                .add_grad(y_prev, &mut tape.acts[(t - 1) * e..t * e], &mut s, g);
            if !sc.is_empty() {
                let gamma = scp::grad(y_prev, sc, self.sc_kmin);
                g.iter_mut().for_each(|gi| *gi += gamma);
            }
            let (sp, sn) = tape.states.split_at_mut(t * l);
            let st_prev = &sp[(t - 1) * l..];
            let st = &mut sn[..l];
            if self.space == Space::Logit && self.entropy != F::zero() {
                for (gi, &a) in g.iter_mut().zip(st_prev.iter()) {
                    *gi -= self.entropy * a;
                }
            }
            for i in 0..l {
                match self.space {
                    Space::Box => {
                        vel[i] = self.momentum * vel[i] + self.eta * g[i];
                        st[i] = y_prev[i] + vel[i];
                        y_next[i] = st[i].max(F::zero()).min(F::one());
                    }
                    Space::Logit => {
                        let y = y_prev[i];
                        vel[i] = self.momentum * vel[i] + self.eta * y * (F::one() - y) * g[i];
                        st[i] = st_prev[i] + vel[i];
                        y_next[i] = sigmoid(st[i]);
                    }
                }
            }
        }
    }

    /// Backward of the last [`Self::forward`] on `tape`: `gys` holds `∂ℓ/∂y_t` for
    /// `t = 1..T` (`T × L`); adds the gradients to `out`.
    pub fn backward(
        &self,
        u: &[F],
        sc: &[F],
        tape: &AscentTape<F>,
        gys: &[F],
        out: &mut AscentGrad<F>,
    ) {
        let l = u.len();
        let mut adj = Adjoints::new(l, self.energy.hidden(), sc.len());
        for t in (1..=self.steps).rev() {
            let dl = &gys[(t - 1) * l..t * l];
            self.output_adjoint(t, tape, dl, &mut adj.gx);
            self.through_update(t, tape, &mut adj, out);
            self.through_gradient(t, sc, tape, &mut adj, out);
            std::mem::swap(&mut adj.gx, &mut adj.gprev);
        }
        self.through_start(tape, &adj.gx, out);
    }

    /// Step `t`'s adjoint of its raw output (the unclipped point, or `α_t`) into `gx`, from
    /// the adjoint carried back and the loss's `dl` at `y_t`.
    fn output_adjoint(&self, t: usize, tape: &AscentTape<F>, dl: &[F], gx: &mut [F]) {
        let l = gx.len();
        let one = F::one();
        let y_t = tape.y(t, l);
        let st = &tape.states[t * l..(t + 1) * l];
        for i in 0..l {
            match self.space {
                Space::Box => {
                    let inside = st[i] > F::zero() && st[i] < one;
                    gx[i] = if inside { gx[i] + dl[i] } else { F::zero() };
                }
                Space::Logit => gx[i] += dl[i] * y_t[i] * (one - y_t[i]),
            }
        }
    }

    /// Through step `t`'s momentum update: the velocity's adjoint, the adjoint of the score's
    /// gradient (`gg`, also into `u`), and the part of the previous iterate's adjoint that
    /// does not go through the energy.
    fn through_update(
        &self,
        t: usize,
        tape: &AscentTape<F>,
        adj: &mut Adjoints<F>,
        out: &mut AscentGrad<F>,
    ) {
        let l = adj.gx.len();
        let one = F::one();
        let y_prev = tape.y(t - 1, l);
        let g = &tape.gs[(t - 1) * l..t * l];
        for i in 0..l {
            adj.gv[i] += adj.gx[i];
            let d = self.eta * adj.gv[i];
            adj.gprev[i] = adj.gx[i];
            match self.space {
                Space::Box => adj.gg[i] = d,
                Space::Logit => {
                    let y = y_prev[i];
                    let s1 = y * (one - y);
                    adj.gg[i] = d * s1;
                    // ∂σ'(α)/∂α = σ'(1 − 2σ); the entropy term's slope −λα
                    adj.gprev[i] += d * s1 * (one - y - y) * g[i] - self.entropy * adj.gg[i];
                }
            }
            out.gu[i] += adj.gg[i];
        }
    }

    /// Through `∇E(y_{t−1})` (and the cardinality potential's gradient when `sc` is given):
    /// the parameters' gradients and the Hessian-vector product into `y_{t−1}`; then the
    /// velocity's adjoint carried one step back.
    fn through_gradient(
        &self,
        t: usize,
        sc: &[F],
        tape: &AscentTape<F>,
        adj: &mut Adjoints<F>,
        out: &mut AscentGrad<F>,
    ) {
        let (l, e) = (adj.gx.len(), adj.scratch.len());
        let one = F::one();
        let y_prev = tape.y(t - 1, l);
        let mut gy_e = vec![F::zero(); l];
        self.energy.grad_vjp(
            y_prev,
            &tape.acts[(t - 1) * e..t * e],
            &adj.gg,
            &mut adj.scratch,
            &mut gy_e,
            &mut out.gwp,
            &mut out.gwe,
        );
        if !sc.is_empty() {
            scp::grad_vjp(
                y_prev,
                sc,
                self.sc_kmin,
                &adj.gg,
                &mut adj.gy_sc,
                &mut adj.gsc,
            );
            for (o, &v) in out.gsc.iter_mut().zip(&adj.gsc) {
                *o += v;
            }
            for (a, &b) in gy_e.iter_mut().zip(&adj.gy_sc) {
                *a += b;
            }
        }
        for i in 0..l {
            match self.space {
                Space::Box => adj.gprev[i] += gy_e[i],
                Space::Logit => adj.gprev[i] += gy_e[i] * y_prev[i] * (one - y_prev[i]),
            }
            adj.gv[i] = self.momentum * adj.gv[i];
        }
    }

    /// The adjoint `gx` of the start point into `u` (nothing from a start at zeros).
    fn through_start(&self, tape: &AscentTape<F>, gx: &[F], out: &mut AscentGrad<F>) {
        let one = F::one();
        for i in 0..gx.len() {
            match self.space {
                Space::Box => {
                    if !self.init_zeros {
                        let y0 = tape.ys[i];
                        out.gu[i] += gx[i] * y0 * (one - y0);
                    }
                }
                Space::Logit => out.gu[i] += gx[i],
            }
        }
    }
}

/// The adjoints [`Ascent::backward`] carries from step to step, and its buffers.
struct Adjoints<F> {
    /// Of the current iterate (`y_t` in the box, `α_t` in logit space).
    gx: Vec<F>,
    /// Of the velocity `v_t`.
    gv: Vec<F>,
    /// Of the score's gradient at the previous iterate.
    gg: Vec<F>,
    /// Of the previous iterate, being built.
    gprev: Vec<F>,
    /// The energy's hidden-layer buffer.
    scratch: Vec<F>,
    /// The cardinality weights' gradient of one step.
    gsc: Vec<F>,
    /// The cardinality potential's Hessian-vector product of one step.
    gy_sc: Vec<F>,
}

impl<F: Float> Adjoints<F> {
    /// Zeros for `l` labels, `e` hidden units of the energy and `k` cardinality weights.
    fn new(l: usize, e: usize, k: usize) -> Self {
        Self {
            gx: vec![F::zero(); l],
            gv: vec![F::zero(); l],
            gg: vec![F::zero(); l],
            gprev: vec![F::zero(); l],
            scratch: vec![F::zero(); e],
            gsc: vec![F::zero(); k],
            gy_sc: vec![F::zero(); l],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::Activation;

    fn rnd_gen(seed: u64) -> impl FnMut() -> f64 {
        let mut g = cardinal_testkit::Lcg::new(seed);
        move || g.signed()
    }

    /// A random linear functional of every iterate, as a function of everything.
    fn loss(a: &Ascent<f64>, u: &[f64], sc: &[f64], w: &[f64], tape: &mut AscentTape<f64>) -> f64 {
        a.forward(u, sc, tape);
        let l = u.len();
        (1..=a.steps)
            .map(|t| {
                tape.y(t, l)
                    .iter()
                    .zip(&w[(t - 1) * l..t * l])
                    .map(|(p, q)| p * q)
                    .sum::<f64>()
            })
            .sum()
    }

    /// Every gradient of the unrolled ascent against central differences, for both spaces,
    /// both energy activations, with and without the cardinality potential.
    #[test]
    fn ascent_gradients_match_finite_differences() {
        let (l, e, steps) = (6, 3, 4);
        let mut rnd = rnd_gen(99);
        let wp0 = Array2::from_shape_fn((l, e), |_| rnd());
        let we0: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let u0: Vec<f64> = (0..l).map(|_| 1.5 * rnd()).collect();
        let sc0: Vec<f64> = (0..3).map(|_| 2.0 * rnd()).collect();
        let w: Vec<f64> = (0..steps * l).map(|_| rnd()).collect();
        for space in [Space::Box, Space::Logit] {
            for act in [Activation::Relu, Activation::Softplus] {
                for with_sc in [false, true] {
                    let sc: Vec<f64> = if with_sc { sc0.clone() } else { vec![] };
                    let eval = |wp: &Array2<f64>, we: &[f64], u: &[f64], sc: &[f64]| {
                        let a = Ascent {
                            energy: Energy {
                                wp: wp.view(),
                                we,
                                act,
                            },
                            eta: 0.2,
                            momentum: 0.5,
                            steps,
                            space,
                            init_zeros: false,
                            sc_kmin: 1.0,
                            entropy: if space == Space::Logit { 0.7 } else { 0.0 },
                        };
                        loss(&a, u, sc, &w, &mut AscentTape::default())
                    };
                    let a = Ascent {
                        energy: Energy {
                            wp: wp0.view(),
                            we: &we0,
                            act,
                        },
                        eta: 0.2,
                        momentum: 0.5,
                        steps,
                        space,
                        init_zeros: false,
                        sc_kmin: 1.0,
                        entropy: if space == Space::Logit { 0.7 } else { 0.0 },
                    };
                    let mut tape = AscentTape::default();
                    a.forward(&u0, &sc, &mut tape);
                    let mut g = AscentGrad::zeros(l, e, sc.len());
                    a.backward(&u0, &sc, &tape, &w, &mut g);
                    let h = 1e-6;
                    let what = format!("{space:?} {act:?} sc={with_sc}");
                    let close = |fd: f64, an: f64, name: &str| {
                        assert!(
                            (fd - an).abs() < 1e-5 * (1.0 + fd.abs()),
                            "{what} {name}: fd {fd} vs {an}"
                        );
                    };
                    for i in 0..l {
                        let (mut p, mut m) = (u0.clone(), u0.clone());
                        p[i] += h;
                        m[i] -= h;
                        let fd =
                            (eval(&wp0, &we0, &p, &sc) - eval(&wp0, &we0, &m, &sc)) / (2.0 * h);
                        close(fd, g.gu[i], &format!("u[{i}]"));
                    }
                    for i in 0..l {
                        for k in 0..e {
                            let (mut p, mut m) = (wp0.clone(), wp0.clone());
                            p[[i, k]] += h;
                            m[[i, k]] -= h;
                            let fd =
                                (eval(&p, &we0, &u0, &sc) - eval(&m, &we0, &u0, &sc)) / (2.0 * h);
                            close(fd, g.gwp[[i, k]], &format!("wp[{i},{k}]"));
                        }
                    }
                    for k in 0..e {
                        let (mut p, mut m) = (we0.clone(), we0.clone());
                        p[k] += h;
                        m[k] -= h;
                        let fd = (eval(&wp0, &p, &u0, &sc) - eval(&wp0, &m, &u0, &sc)) / (2.0 * h);
                        close(fd, g.gwe[k], &format!("we[{k}]"));
                    }
                    for k in 0..sc.len() {
                        let (mut p, mut m) = (sc.clone(), sc.clone());
                        p[k] += h;
                        m[k] -= h;
                        let fd =
                            (eval(&wp0, &we0, &u0, &p) - eval(&wp0, &we0, &u0, &m)) / (2.0 * h);
                        close(fd, g.gsc[k], &format!("sc[{k}]"));
                    }
                }
            }
        }
    }

    /// The sigmoid cardinality potential's gradient and its Hessian-vector product (the VJP of
    /// the gradient map) against central differences.
    #[test]
    fn sigmoid_cardinality_hvp_matches_finite_differences() {
        let mut rnd = rnd_gen(5);
        let y: Vec<f64> = (0..5).map(|_| 0.5 + 0.5 * rnd()).collect();
        let w: Vec<f64> = (0..4).map(|_| rnd()).collect();
        let h: Vec<f64> = (0..5).map(|_| rnd()).collect();
        let kmin = 0.0;
        let eps = 1e-6;
        for i in 0..5 {
            let (mut p, mut m) = (y.clone(), y.clone());
            p[i] += eps;
            m[i] -= eps;
            let fd = (scp::value(&p, &w, kmin) - scp::value(&m, &w, kmin)) / (2.0 * eps);
            assert!((fd - scp::grad(&y, &w, kmin)).abs() < 1e-8);
        }
        let (mut gy, mut gw) = (vec![0.0; 5], vec![0.0; 4]);
        scp::grad_vjp(&y, &w, kmin, &h, &mut gy, &mut gw);
        let dot = |y: &[f64], w: &[f64]| -> f64 { h.iter().sum::<f64>() * scp::grad(y, w, kmin) };
        for i in 0..5 {
            let (mut p, mut m) = (y.clone(), y.clone());
            p[i] += eps;
            m[i] -= eps;
            let fd = (dot(&p, &w) - dot(&m, &w)) / (2.0 * eps);
            assert!((fd - gy[i]).abs() < 1e-7, "y[{i}]: {fd} vs {}", gy[i]);
        }
        for k in 0..4 {
            let (mut p, mut m) = (w.clone(), w.clone());
            p[k] += eps;
            m[k] -= eps;
            let fd = (dot(&y, &p) - dot(&y, &m)) / (2.0 * eps);
            assert!((fd - gw[k]).abs() < 1e-7, "w[{k}]: {fd} vs {}", gw[k]);
        }
    }
}
