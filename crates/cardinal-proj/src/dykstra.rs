//! Dykstra's alternating projection between `A = {u ≤ 1}` and `B(z)` (paper §3.3), in the
//! authors' form, starting from `b = v`, `p = q = 0`, for each of R rounds:
//!
//! ```text
//! a = min(b + p, 1);  p = b + p − a;  c = a + q;  b = inner(c, z);  q = c − b
//! ```
//!
//! Reverse mode of one round, given adjoints `(b̄', p̄', q̄')` of its outputs and the mask
//! `m = 1[b + p ≤ 1]` (TF/PyTorch pass the gradient of `min` at equality):
//! `c̄ = q̄' + innerᵀ(b̄' − q̄')` (plus `z̄ += ` the inner's z-gradient), `ā = c̄ − p̄'`,
//! `x̄ = p̄' + ā ⊙ m`, then `b̄ = p̄ = x̄`, `q̄ = c̄`. With R rounds done, `v̄ = b̄`.

use crate::util::{validate, ZRange};
use crate::{ProjError, Projector, Real};
use std::sync::Mutex;

/// Dykstra's algorithm with `rounds` rounds and `inner` as the projection onto `B(z)`
/// ([`crate::SoftSimplex`] in the paper, [`crate::Simplex`] for the exact variant).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dykstra<P> {
    pub rounds: usize,
    pub inner: P,
}

impl<P> Dykstra<P> {
    pub fn new(rounds: usize, inner: P) -> Self {
        Self { rounds, inner }
    }
}

/// Tape of [`Dykstra`]: each round's inner tape and cap mask, plus forward and backward buffers.
#[derive(Debug, Default)]
pub struct DykstraTape<F, T> {
    inner: Vec<T>,
    masks: Vec<Vec<F>>,
    rounds: usize,
    b: Vec<F>,
    p: Vec<F>,
    q: Vec<F>,
    c: Vec<F>,
    /// Backward scratch: `vjp` takes `&Tape`; a Mutex (uncontended: one lock per call) keeps the tape `Sync` for the batch helpers.
    scratch: Mutex<[Vec<F>; 4]>,
}

impl<F: Real, P: Projector<F>> Projector<F> for Dykstra<P> {
    type Tape = DykstraTape<F, P::Tape>;

    fn forward(&self, v: &[F], z: F, out: &mut [F], t: &mut Self::Tape) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::UpToLen)?;
        let (l, r) = (v.len(), self.rounds);
        let (zero, one) = (F::zero(), F::one());
        if t.inner.len() < r {
            t.inner.resize_with(r, Default::default);
        }
        if t.masks.len() < r {
            t.masks.resize_with(r, Vec::new);
        }
        t.rounds = r;
        t.b.clear();
        t.b.extend_from_slice(v);
        for buf in [&mut t.p, &mut t.q, &mut t.c] {
            buf.clear();
            buf.resize(l, zero);
        }
        for k in 0..r {
            let mask = &mut t.masks[k];
            mask.clear();
            mask.resize(l, zero);
            for i in 0..l {
                let x = t.b[i] + t.p[i];
                let a = x.min(one);
                mask[i] = if x <= one { one } else { zero };
                t.p[i] = x - a;
                t.c[i] = a + t.q[i];
            }
            self.inner.forward(&t.c, z, &mut t.b, &mut t.inner[k])?;
            for i in 0..l {
                t.q[i] = t.c[i] - t.b[i];
            }
        }
        out.copy_from_slice(&t.b);
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        let l = g.len();
        let zero = F::zero();
        let mut guard = t.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let [gp, gq, tin, gc] = &mut *guard;
        for buf in [&mut *gp, &mut *gq, &mut *tin, &mut *gc] {
            buf.clear();
            buf.resize(l, zero);
        }
        // gv holds b̄ throughout.
        gv.copy_from_slice(g);
        let mut gz = zero;
        for k in (0..t.rounds).rev() {
            for i in 0..l {
                tin[i] = gv[i] - gq[i];
            }
            gz += self.inner.vjp(&t.inner[k], tin, gc);
            let mask = &t.masks[k];
            for i in 0..l {
                let c = gq[i] + gc[i];
                let x = gp[i] + (c - gp[i]) * mask[i];
                gv[i] = x;
                gp[i] = x;
                gq[i] = c;
            }
        }
        gz
    }
}
