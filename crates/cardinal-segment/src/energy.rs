//! The optional global energy over the label matrix `Y` of the Section 6 model:
//! `E(Y) = Σ_k w_k softplus(⟨B_k, Y⟩)`, `k = 1..K`, each `B_k` an `L × M` matrix over the
//! whole of `vec(Y)`.
//!
//! It is the binary model's global energy `w2ᵀ act(Wpᵀ y)` carried over to `L × M` labels, with
//! softplus for ReLU: the unroll differentiates through the ascent step `Y + η(S + ∇E(Y))`,
//! and with ReLU that step's Jacobian `I + η ∇²E` would be `I` almost everywhere, so the energy
//! would learn only through `∇E` and never through its curvature. It needs no structure on the
//! positions (an image grid or anything else), so it applies to any multi-target data; its
//! `K · L · M` weights tie it to one number of positions `L`, as the binary energy is tied to
//! one number of labels.
//!
//! The backward pass needs, for `ḡ = ∂ℓ/∂A` of a step `A = Y + η(S + ∇E(Y))`:
//! * the Hessian-vector product `∇²E(Y) ḡ = Σ_k w_k σ'(u_k) ⟨B_k, ḡ⟩ B_k`, `u_k = ⟨B_k, Y⟩`;
//! * `∂⟨∇E(Y), ḡ⟩/∂w_k = σ(u_k) ⟨B_k, ḡ⟩`;
//! * `∂⟨∇E(Y), ḡ⟩/∂B_k = w_k (σ(u_k) ḡ + σ'(u_k) ⟨B_k, ḡ⟩ Y)`.

/// The logistic function `σ = softplus'`.
fn sigmoid(u: f64) -> f64 {
    1.0 / (1.0 + (-u).exp())
}

/// `softplus(u) = log(1 + eᵘ)`, without overflow.
#[cfg(test)]
fn softplus(u: f64) -> f64 {
    u.max(0.0) + (-u.abs()).exp().ln_1p()
}

/// `⟨a, b⟩`.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The energy's parameters: `B` (`K × (L·M)`, row `k` is `vec(B_k)`) and `w` (`K`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalEnergy {
    /// `vec(B_k)` for each `k`, row-major `K × (L·M)`.
    pub b: Vec<f64>,
    /// Output weights `w` (`K`).
    pub w: Vec<f64>,
}

/// What a forward evaluation of `∇E` at one `Y` keeps for the backward pass.
#[derive(Debug, Clone, Default)]
pub(crate) struct EnergyTape {
    /// `Y` at which the gradient was taken.
    pub y: Vec<f64>,
    /// `σ(u_k)` for each `k`.
    pub sig: Vec<f64>,
}

impl GlobalEnergy {
    /// `K` terms over matrices of `len = L·M` entries, all zero (`w = 0`: no energy).
    pub fn zeros(terms: usize, len: usize) -> Self {
        Self {
            b: vec![0.0; terms * len],
            w: vec![0.0; terms],
        }
    }

    /// Number of terms `K`.
    pub fn terms(&self) -> usize {
        self.w.len()
    }

    /// `vec(B_k)` rows.
    fn rows(&self, len: usize) -> std::slice::ChunksExact<'_, f64> {
        self.b.chunks_exact(len)
    }

    /// `E(Y)`.
    #[cfg(test)]
    pub(crate) fn value(&self, y: &[f64]) -> f64 {
        self.rows(y.len())
            .zip(&self.w)
            .map(|(bk, wk)| wk * softplus(dot(bk, y)))
            .sum()
    }

    /// Adds `scale · ∇E(Y)` into `out`, and returns what the backward pass needs.
    pub(crate) fn add_grad(&self, y: &[f64], scale: f64, out: &mut [f64]) -> EnergyTape {
        let sig: Vec<f64> = self.rows(y.len()).map(|bk| sigmoid(dot(bk, y))).collect();
        for ((bk, wk), s) in self.rows(y.len()).zip(&self.w).zip(&sig) {
            let c = scale * wk * s;
            out.iter_mut().zip(bk).for_each(|(o, b)| *o += c * b);
        }
        EnergyTape { y: y.to_vec(), sig }
    }

    /// Backward through `scale · ∇E(Y)` at `tape` for the upstream gradient `g`: adds
    /// `scale · ∇²E(Y) g` into `gy` and the parameters' gradients into `grad`.
    pub(crate) fn backward(
        &self,
        tape: &EnergyTape,
        g: &[f64],
        scale: f64,
        gy: &mut [f64],
        grad: &mut GlobalEnergy,
    ) {
        let len = g.len();
        let rows = self.rows(len).zip(&self.w).zip(&tape.sig);
        let grows = grad.b.chunks_exact_mut(len).zip(grad.w.iter_mut());
        for (((bk, wk), s), (gbk, gwk)) in rows.zip(grows) {
            let c = dot(bk, g);
            let ds = s * (1.0 - s);
            *gwk += scale * s * c;
            let (a, h) = (scale * wk * s, scale * wk * ds * c);
            for ((gb, gi), yi) in gbk.iter_mut().zip(g).zip(&tape.y) {
                *gb += a * gi + h * yi;
            }
            gy.iter_mut().zip(bk).for_each(|(o, b)| *o += h * b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{assert_central_differences, test_values as values};
    use super::*;

    fn energy(k: usize, len: usize) -> GlobalEnergy {
        GlobalEnergy {
            b: values(1, k * len),
            w: values(2, k),
        }
    }

    /// `add_grad` is the gradient of `value`, by central differences.
    #[test]
    fn the_gradient_matches_finite_differences_of_the_energy() {
        let (k, len) = (3, 12);
        let e = energy(k, len);
        let y = values(3, len);
        let mut g = vec![0.0; len];
        e.add_grad(&y, 1.0, &mut g);
        assert_central_differences(|y| e.value(y), &y, &g, "entry");
    }

    /// `backward` is the derivative of `⟨scale ∇E(Y), g⟩` in `Y`, `B` and `w`, by central
    /// differences of `add_grad`.
    #[test]
    fn the_backward_pass_matches_finite_differences_of_the_gradient() {
        let (k, len, scale) = (3, 12, 0.7);
        let e = energy(k, len);
        let (y, g) = (values(3, len), values(4, len));
        let probe = |e: &GlobalEnergy, y: &[f64]| {
            let mut out = vec![0.0; len];
            e.add_grad(y, scale, &mut out);
            dot(&out, &g)
        };
        let mut out = vec![0.0; len];
        let tape = e.add_grad(&y, scale, &mut out);
        let mut gy = vec![0.0; len];
        let mut grad = GlobalEnergy::zeros(k, len);
        e.backward(&tape, &g, scale, &mut gy, &mut grad);
        assert_central_differences(|y| probe(&e, y), &y, &gy, "y");
        let with_b = |b: &[f64]| {
            let mut up = e.clone();
            up.b.copy_from_slice(b);
            probe(&up, &y)
        };
        assert_central_differences(with_b, &e.b, &grad.b, "B");
        let with_w = |w: &[f64]| {
            let mut up = e.clone();
            up.w.copy_from_slice(w);
            probe(&up, &y)
        };
        assert_central_differences(with_w, &e.w, &grad.w, "w");
        // The Hessian term is not zero here (a test of it that cannot fail would be no test).
        assert!(gy.iter().any(|v| v.abs() > 1e-3));
    }
}
