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
//!
//! Implementation notes: `q = c − b` is only read by the next round's `c`, so it is fused into
//! the cap step and never stored; the last round's inner projection writes straight into `out`.
//! Every map above is coordinate-wise non-decreasing in `v` (also in floating point: rounding is
//! monotone), so one descending argsort of `v` also sorts every round's `c`; sort-based inner
//! projections get it through `Projector::forward_ordered` (they verify it and sort themselves if
//! it fails). Backward, `p̄ = b̄` after the first reverse round, so only `b̄` (in `gv`) and `q̄`
//! are carried; the mask selects instead of multiplying.

use crate::util::{argsort_desc, validate, SortScratch, ZRange};
use crate::{ProjError, Projector, Real};
use std::sync::Mutex;

/// Dykstra's algorithm with `rounds` rounds and `inner` as the projection onto `B(z)`
/// ([`crate::SoftSimplex`] in the authors' released code, [`crate::SoftSimplexPrinted`] for the
/// paper's printed Algorithm 1, [`crate::Simplex`] for the exact variant).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dykstra<P> {
    /// Number of rounds R. 0 is accepted and degenerate: the output is the input (not
    /// projected) and the VJP the identity; the CLI and configurations require `1..=1000`.
    pub rounds: usize,
    /// The projection onto `B(z)` of each round.
    pub inner: P,
}

impl<P> Dykstra<P> {
    /// Dykstra's algorithm with `rounds` rounds over `inner` (see [`Dykstra::rounds`] for 0).
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
    /// Descending argsort of the input row (only for inner projections that use an order).
    order: Vec<u32>,
    sort: SortScratch,
    b: Vec<F>,
    p: Vec<F>,
    c: Vec<F>,
    /// Backward scratch (q̄, the inner's input and output): `vjp` takes `&Tape`; a Mutex
    /// (uncontended: one lock per call) keeps the tape `Sync` for the batch helpers.
    scratch: Mutex<[Vec<F>; 3]>,
}

impl<F: Real, P: Projector<F>> Projector<F> for Dykstra<P> {
    type Tape = DykstraTape<F, P::Tape>;

    fn forward(&self, v: &[F], z: F, out: &mut [F], t: &mut Self::Tape) -> Result<(), ProjError> {
        validate(v, z, out.len(), ZRange::UpToLen)?;
        let (l, r) = (v.len(), self.rounds);
        let (zero, one) = (F::zero(), F::one());
        t.rounds = r;
        if r == 0 {
            out.copy_from_slice(v);
            return Ok(());
        }
        if t.inner.len() < r {
            t.inner.resize_with(r, Default::default);
        }
        if t.masks.len() < r {
            t.masks.resize_with(r, Vec::new);
        }
        let ordered = self.inner.uses_order();
        if ordered {
            argsort_desc(v, &mut t.order, &mut t.sort);
        }
        // Every entry is written before it is read: no clearing needed.
        t.b.resize(l, zero);
        t.p.resize(l, zero);
        t.c.resize(l, zero);
        for k in 0..r {
            let mask = &mut t.masks[k];
            mask.resize(l, zero);
            if k == 0 {
                // b = v, p = q = 0.
                for (((&x, m), p), c) in v.iter().zip(mask.iter_mut()).zip(&mut t.p).zip(&mut t.c) {
                    let capped = x <= one;
                    let a = if capped { x } else { one };
                    *m = if capped { one } else { zero };
                    *p = x - a;
                    *c = a;
                }
            } else {
                for (((&b, m), p), c) in t.b.iter().zip(mask.iter_mut()).zip(&mut t.p).zip(&mut t.c)
                {
                    let q = *c - b;
                    let x = b + *p;
                    let capped = x <= one;
                    let a = if capped { x } else { one };
                    *m = if capped { one } else { zero };
                    *p = x - a;
                    *c = a + q;
                }
            }
            let dst: &mut [F] = if k + 1 == r { out } else { &mut t.b };
            if ordered {
                self.inner
                    .forward_ordered(&t.c, z, &t.order, dst, &mut t.inner[k])?;
            } else {
                self.inner.forward(&t.c, z, dst, &mut t.inner[k])?;
            }
        }
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        let l = g.len();
        let zero = F::zero();
        let r = t.rounds;
        if r == 0 {
            gv.copy_from_slice(g);
            return zero;
        }
        let mut guard = t.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let [gq, tin, gc] = &mut *guard;
        for buf in [&mut *gq, &mut *tin, &mut *gc] {
            buf.resize(l, zero);
        }
        // Last round first: b̄ = g, p̄ = q̄ = 0.
        let mut gz = self.inner.vjp(&t.inner[r - 1], g, gc);
        for (((o, q), &c), &m) in gv
            .iter_mut()
            .zip(gq.iter_mut())
            .zip(gc.iter())
            .zip(&t.masks[r - 1])
        {
            *o = if m > zero { c } else { zero };
            *q = c;
        }
        // gv holds b̄ (= p̄) from here on.
        for k in (0..r - 1).rev() {
            for ((ti, &b), &q) in tin.iter_mut().zip(gv.iter()).zip(gq.iter()) {
                *ti = b - q;
            }
            gz += self.inner.vjp(&t.inner[k], tin, gc);
            for (((o, q), &c), &m) in gv
                .iter_mut()
                .zip(gq.iter_mut())
                .zip(gc.iter())
                .zip(&t.masks[k])
            {
                let c = *q + c;
                *o = if m > zero { c } else { *o };
                *q = c;
            }
        }
        gz
    }
}
