//! Exact Euclidean projection onto the positive simplex `B(z) = {u ≥ 0, Σu = z}`
//! (Duchi et al. 2008, sort-based).
//!
//! With `μ` = v sorted descending and `c_j = Σ_{i≤j} μ_i`, `ρ = max{j : μ_j − (c_j − z)/j > 0}`,
//! `θ = (c_ρ − z)/ρ` and `u = max(v − θ, 0)`. On the support `S = {u_i > 0}`,
//! `u_i = v_i − (Σ_S v − z)/|S|`, so `∂u_S/∂v_S = I − 11ᵀ/|S|`, `∂u_S/∂z = 1/|S|`, and the VJP
//! is `ḡ_v = s ⊙ (g − mean_S g)`, `ḡ_z = mean_S g` (s = 1_S). `z = 0` gives `u = 0`, S = ∅ and
//! the zero gradient.

use crate::capped::masked_centered_vjp;
use crate::util::{desc, of, repair_order, validate, validate_shape, ZRange};
use crate::{ProjError, Projector, Real};

/// Exact projection onto `B(z)`, `z ≥ 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Simplex;

/// Tape of [`Simplex`]: support indicator and a sort buffer.
#[derive(Debug, Clone, Default)]
pub struct SimplexTape<F> {
    mask: Vec<F>,
    n_support: usize,
    sorted: Vec<F>,
    /// Order repaired by `forward_ordered` (scratch).
    perm: Vec<u32>,
}

/// θ of the simplex projection (`u = max(v − θ, 0)`); `mu` is a reusable sort buffer.
pub(crate) fn simplex_theta<F: Real>(v: &[F], z: F, mu: &mut Vec<F>) -> F {
    mu.clear();
    mu.extend_from_slice(v);
    mu.sort_unstable_by(desc);
    theta_sorted(mu, z)
}

/// θ from the row sorted descending.
fn theta_sorted<F: Real>(mu: &[F], z: F) -> F {
    let mut c = F::zero();
    let mut theta = mu[0]; // z = 0: nothing is positive
    for (j, &m) in mu.iter().enumerate() {
        c += m;
        let t = (c - z) / of(j + 1);
        // The condition μ_j > (c_j − z)/j holds on a prefix of j, so the last hit is ρ.
        if m > t {
            theta = t;
        } else {
            break;
        }
    }
    theta
}

impl<F: Real> Projector<F> for Simplex {
    type Tape = SimplexTape<F>;

    fn forward(
        &self,
        v: &[F],
        z: F,
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::NonNegative)?;
        let theta = simplex_theta(v, z, &mut tape.sorted);
        apply(v, theta, out, tape);
        Ok(())
    }

    fn uses_order(&self) -> bool {
        true
    }

    fn forward_ordered(
        &self,
        v: &[F],
        z: F,
        order: &[u32],
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        validate_shape(v, z, out.len(), ZRange::NonNegative)?;
        if order.len() != v.len() {
            return self.forward(v, z, out, tape);
        }
        let mu = &mut tape.sorted;
        mu.clear();
        mu.extend(order.iter().map(|&i| v[i as usize]));
        let sorted = mu.windows(2).all(|w| w[1] <= w[0]);
        if !(sorted && mu[0].is_finite() && mu[mu.len() - 1].is_finite()) {
            // Nearly sorted (Dykstra's `q = c − b` moves entries by an ulp): repair a copy.
            tape.perm.clear();
            tape.perm.extend_from_slice(order);
            if !repair_order(v, &mut tape.perm, mu) {
                return self.forward(v, z, out, tape);
            }
        }
        let theta = theta_sorted(mu, z);
        apply(v, theta, out, tape);
        Ok(())
    }

    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        masked_centered_vjp(&tape.mask, tape.n_support, g, gv)
    }
}

/// `out = max(v − θ, 0)` and the support mask.
fn apply<F: Real>(v: &[F], theta: F, out: &mut [F], tape: &mut SimplexTape<F>) {
    let (zero, one) = (F::zero(), F::one());
    tape.mask.resize(v.len(), zero);
    let mut n = zero;
    for ((o, m), &x) in out.iter_mut().zip(tape.mask.iter_mut()).zip(v) {
        let u = x - theta;
        let pos = u > zero;
        *o = if pos { u } else { zero };
        let f = if pos { one } else { zero };
        *m = f;
        n += f;
    }
    tape.n_support = n.to_usize().unwrap_or(0);
}
