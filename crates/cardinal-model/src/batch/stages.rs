//! The stages of the model on a batch, and their parts: the two networks and the count `z`
//! (`networks_forward`, `count_of`), and the unrolled solver built from the model's energy and
//! configuration (`projector`, `final_projector`, `unroll`, `kernel`: the kernel's kind).

use cardinal_proj::{AnyProjector, Method};
use ndarray::Array2;

use super::{Stage, Workspace};
use crate::batch::Float;
use crate::config::ZMode;
use crate::data::CsrMatrix;
use crate::inference::{Kernel, Unroll};
use crate::model::expected_f1::expected_f1_count;
use crate::model::{c, Model, TwoLayer};

impl<F: Float> Model<F> {
    /// Networks forward for `rows` of `x`: fills `u`, `p` and `z` in the workspace.
    pub(super) fn networks_forward(
        &self,
        x: &CsrMatrix,
        rows: &[usize],
        ws: &mut Workspace<F>,
        train: bool,
    ) {
        let p = &self.params;
        let stdz = &self.standardizer;
        let (shift_u, shift_c) = match &ws.shifts {
            Some([u, c]) => (Some(u.as_slice()), Some(c.as_slice())),
            None => (None, None),
        };
        let dropout = self.dropout(train, ws.dropout_key);
        let (unary, card) = (TwoLayer::unary(p), TwoLayer::card(p));
        // The two networks side by side (each also splits its rows over threads).
        let (pre1, h1, u) = (&mut ws.pre1, &mut ws.h1, &mut ws.u);
        let (prec, hc, pc) = (&mut ws.prec, &mut ws.hc, &mut ws.p);
        let clock = &ws.clock;
        rayon::join(
            || {
                clock.time(Stage::UnaryForward, || {
                    unary.forward(x, rows, stdz, shift_u, dropout, pre1, h1, u)
                })
            },
            || {
                clock.time(Stage::CountForward, || {
                    card.forward(x, rows, stdz, shift_c, None, prec, hc, pc)
                })
            },
        );
        if let Some(prior) = &ws.unary_prior {
            add_prior(ws.u.as_slice_mut().expect("contiguous"), prior, rows);
        }
        ws.z.clear();
        for row in ws.p.outer_iter_mut() {
            ws.z.push(self.count_of(row, !train));
        }
        if !train && self.config.inference.expected_f1_count {
            for (i, z) in ws.z.iter_mut().enumerate() {
                let (p, u) = (ws.p.row(i), ws.u.row(i));
                *z = self.expected_f1_z(p.as_slice().unwrap(), u.as_slice().unwrap());
            }
        }
        if let (false, Some(counts)) = (train, &ws.count_override) {
            for (z, &r) in ws.z.iter_mut().zip(rows) {
                *z = counts[r];
            }
        }
    }

    /// Softmax of the cardinality logits `row` in place, and the count they give; at
    /// inference, 0 where the rule `inference.empty_at` says "no labels".
    pub(super) fn count_of(&self, mut row: ndarray::ArrayViewMut1<F>, inference: bool) -> F {
        let m = row.fold(F::neg_infinity(), |m, &v| m.max(v));
        row.mapv_inplace(|v| (v - m).exp());
        let s = row.sum();
        row.mapv_inplace(|v| v / s);
        if let (true, Some(at)) = (inference, self.config.inference.empty_at) {
            if self.counts[0] == F::zero() && row[0] >= c(at) {
                return F::zero();
            }
        }
        match self.config.model.z_mode {
            ZMode::Expectation => row.iter().zip(&self.counts).map(|(&p, &k)| p * k).sum(),
            ZMode::Argmax => {
                let mut best = 0;
                for (i, &v) in row.iter().enumerate() {
                    if v > row[best] {
                        best = i;
                    }
                }
                self.counts[best]
            }
        }
    }

    /// The count of `inference.expected_f1_count`: the set size with the highest expected
    /// example-F1 given the count distribution `p` (softmaxed, over [`Model::counts`]) and the
    /// unary scores `u` of a row (marginals `σ(u)`).
    pub(super) fn expected_f1_z(&self, p: &[F], u: &[F]) -> F {
        let to = |v: &F| v.to_f64().unwrap_or(0.0);
        let probs: Vec<f64> = p.iter().map(to).collect();
        let counts: Vec<f64> = self.counts.iter().map(to).collect();
        let marginals: Vec<f64> = u.iter().map(|v| 1.0 / (1.0 + (-to(v)).exp())).collect();
        c(expected_f1_count(&probs, &counts, &marginals) as f64)
    }

    /// The projection of the ascent steps, in training or at test time.
    pub(super) fn projector(&self, training: bool) -> AnyProjector {
        let inf = &self.config.inference;
        let method: Method = if training {
            inf.train_projection
        } else {
            inf.test_projection
        };
        AnyProjector::new(method, inf.proj)
    }

    /// The optional final projection of `y_T`.
    pub(super) fn final_projector(&self) -> Option<AnyProjector> {
        let inf = &self.config.inference;
        inf.final_projection.map(|m| AnyProjector::new(m, inf.proj))
    }

    /// The unrolled solver with this model's energy, step size and steps (`wpt` is `Wpᵀ`).
    pub(super) fn unroll<'a>(
        &'a self,
        wpt: &'a Array2<F>,
        projector: &'a AnyProjector,
        final_projector: Option<&'a AnyProjector>,
    ) -> Unroll<'a, F> {
        let inf = &self.config.inference;
        Unroll {
            wpt: wpt.view(),
            we: self.params.we.as_slice().unwrap(),
            eta: self.params.eta[0],
            momentum: c(inf.momentum),
            steps: inf.steps,
            projector,
            final_projector,
        }
    }

    /// The kind of unroll kernel of a pass: the workspace's override `choice`, else
    /// [`Kernel::choose`] (the kernel itself: [`Self::unroll_kernel`]).
    pub(super) fn kernel(&self, choice: Option<Kernel>, training: bool) -> Kernel {
        let inf = &self.config.inference;
        let method = if training {
            inf.train_projection
        } else {
            inf.test_projection
        };
        match choice {
            Some(Kernel::Row) => Kernel::Row,
            _ => Kernel::choose(method, inf.steps, self.n_labels(), training),
        }
    }
}

/// Adds to each row of the unary scores `u` (one per entry of `rows`, row-major) the prior of
/// the data row it is, `prior` holding one row of `L` per row of the data.
pub(super) fn add_prior<F: Float>(u: &mut [F], prior: &[F], rows: &[usize]) {
    let l = u.len() / rows.len().max(1);
    for (ur, &r) in u.chunks_exact_mut(l.max(1)).zip(rows) {
        for (v, &p) in ur.iter_mut().zip(&prior[r * l..(r + 1) * l]) {
            *v += p;
        }
    }
}
