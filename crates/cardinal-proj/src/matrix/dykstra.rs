//! The paper's projection onto `Z̃(z)`: `R` rounds of Dykstra's algorithm between
//! `C = {rows on the unit simplex}` and `D = {columns on the simplex of size z_j}`, each step a
//! row operator of the crate applied to every row (`z = 1`) or every column (`z = z̃_j`) —
//! [`crate::SoftSimplex`] (Algorithm 1) in the paper, [`crate::Simplex`] for the exact variant,
//! which converges to [`super::ExactMatrix`]'s projection as `R` grows.
//!
//! From `X = V`, `P = Q = 0`, each round
//!
//! ```text
//! A = X + P;  Y = P_C(A);  P = A − Y;  B = Y + Q;  X = P_D(B);  Q = B − X,
//! ```
//!
//! and the output is the last `X`, as the paper's binary operator ends on `B(z)`. With the exact
//! inner projection its column sums are `z̃` and its rows are on the simplex approximately; with
//! Algorithm 1, whose `θ` is itself a soft estimate, both hold only approximately (the output is
//! non-negative). That is the paper's operator: a differentiable approximation, not a projection. Reverse mode of
//! a round, given the adjoints `(X̄, P̄, Q̄)` of its outputs:
//! `B̄ = Q̄ + P_Dᵀ(X̄ − Q̄)` (and `z̄ +=` the columns' `z`-gradients), `Ȳ = Q̄ ← B̄`,
//! `Ā = P̄ + P_Cᵀ(Ȳ − P̄)`, `X̄ = P̄ ← Ā`; finally `V̄ = X̄`.

use super::counts::{normalize, rescale_vjp, Counts};
use super::MatrixProjector;
use crate::{ProjError, Projector, Real};
use std::sync::Mutex;

/// Dykstra's algorithm over rows and columns with `rounds` rounds and `inner` as each row's and
/// column's simplex projection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DykstraMatrix<P> {
    /// Rounds `R` (at least 1; 0 is refused).
    pub rounds: usize,
    /// The simplex projection of each row and column.
    pub inner: P,
}

impl<P> DykstraMatrix<P> {
    /// `rounds` rounds of Dykstra's algorithm with `inner`.
    pub fn new(rounds: usize, inner: P) -> Self {
        Self { rounds, inner }
    }
}

/// Tape of [`DykstraMatrix`]: every round's row and column tapes, and buffers.
#[derive(Debug, Default)]
pub struct DykstraMatrixTape<F, T> {
    counts: Counts,
    classes: usize,
    rounds: usize,
    /// `rows[k][i]`: round `k`, row `i`; `cols[k][j]`: round `k`, column `j`.
    rows: Vec<Vec<T>>,
    cols: Vec<Vec<T>>,
    z: Vec<F>,
    x: Vec<F>,
    p: Vec<F>,
    q: Vec<F>,
    a: Vec<F>,
    col_in: Vec<F>,
    col_out: Vec<F>,
    /// Backward buffers (`vjp` takes `&Tape`; an uncontended Mutex keeps the tape `Sync`).
    scratch: Mutex<Vec<Vec<F>>>,
}

/// Gathers column `j` of the `L × M` matrix `src` into `col`.
fn gather<F: Real>(src: &[F], m: usize, j: usize, col: &mut [F]) {
    for (c, row) in col.iter_mut().zip(src.chunks_exact(m)) {
        *c = row[j];
    }
}

/// Writes `col` into column `j` of `dst`.
fn scatter<F: Real>(col: &[F], m: usize, j: usize, dst: &mut [F]) {
    for (&c, row) in col.iter().zip(dst.chunks_exact_mut(m)) {
        row[j] = c;
    }
}

impl<F: Real, P: Projector<F>> MatrixProjector<F> for DykstraMatrix<P> {
    type Tape = DykstraMatrixTape<F, P::Tape>;

    fn forward(
        &self,
        v: &[F],
        classes: usize,
        z: &[F],
        out: &mut [F],
        t: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        normalize(v, classes, z, out.len(), &mut t.counts)?;
        if self.rounds == 0 {
            return Err(ProjError::InvalidParameter {
                name: "rounds",
                value: 0.0,
                allowed: "at least 1".to_string(),
            });
        }
        let (m, l, r, n) = (classes, t.counts.rows, self.rounds, v.len());
        let zero = F::zero();
        t.classes = m;
        t.rounds = r;
        t.z.clear();
        t.z.extend(t.counts.z.iter().map(|&x| F::from_f64(x).unwrap_or(zero)));
        if t.rows.len() < r {
            t.rows.resize_with(r, Vec::new);
            t.cols.resize_with(r, Vec::new);
        }
        for k in 0..r {
            t.rows[k].resize_with(l, Default::default);
            t.cols[k].resize_with(m, Default::default);
        }
        t.x.clear();
        t.x.extend_from_slice(v);
        for buf in [&mut t.p, &mut t.q, &mut t.a] {
            buf.clear();
            buf.resize(n, zero);
        }
        t.col_in.resize(l, zero);
        t.col_out.resize(l, zero);
        for k in 0..r {
            // A = X + P; Y = P_C(A) (into x); P = A − Y.
            for ((a, &x), &p) in t.a.iter_mut().zip(&t.x).zip(&t.p) {
                *a = x + p;
            }
            for ((ai, yi), tape) in
                t.a.chunks_exact(m)
                    .zip(t.x.chunks_exact_mut(m))
                    .zip(&mut t.rows[k])
            {
                self.inner.forward(ai, F::one(), yi, tape)?;
            }
            for ((p, &a), &y) in t.p.iter_mut().zip(&t.a).zip(&t.x) {
                *p = a - y;
            }
            // B = Y + Q (into a); X = P_D(B); Q = B − X.
            for ((a, &y), &q) in t.a.iter_mut().zip(&t.x).zip(&t.q) {
                *a = y + q;
            }
            for j in 0..m {
                gather(&t.a, m, j, &mut t.col_in);
                self.inner
                    .forward(&t.col_in, t.z[j], &mut t.col_out, &mut t.cols[k][j])?;
                scatter(&t.col_out, m, j, &mut t.x);
            }
            for ((q, &b), &x) in t.q.iter_mut().zip(&t.a).zip(&t.x) {
                *q = b - x;
            }
        }
        out.copy_from_slice(&t.x);
        Ok(())
    }

    fn vjp(&self, t: &Self::Tape, g: &[F], gv: &mut [F], gz: &mut [F]) {
        let (m, l, n) = (t.classes, t.counts.rows, g.len());
        let zero = F::zero();
        let mut guard = t.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if guard.len() < 4 {
            guard.resize_with(4, Vec::new);
        }
        let [gp, gq, tmp, col] = &mut guard[..4] else {
            unreachable!("four buffers were just made")
        };
        for buf in [&mut *gp, &mut *gq, &mut *tmp] {
            buf.clear();
            buf.resize(n, zero);
        }
        col.clear();
        col.resize(2 * l, zero);
        let (cin, cout) = col.split_at_mut(l);
        gv.copy_from_slice(g); // X̄
        let mut gzd = vec![0.0f64; m];
        for k in (0..t.rounds).rev() {
            // B̄ = Q̄ + P_Dᵀ(X̄ − Q̄), column by column, into tmp.
            for ((d, &x), &q) in tmp.iter_mut().zip(gv.iter()).zip(gq.iter()) {
                *d = x - q;
            }
            for j in 0..m {
                gather(tmp, m, j, cin);
                let dz = self.inner.vjp(&t.cols[k][j], cin, cout);
                gzd[j] += dz.to_f64().unwrap_or(0.0);
                scatter(cout, m, j, gv); // gv is free: it holds P_Dᵀ(X̄ − Q̄) now
            }
            for (q, &d) in gq.iter_mut().zip(gv.iter()) {
                *q += d; // Q̄ ← B̄ = Ȳ
            }
            // Ā = P̄ + P_Cᵀ(Ȳ − P̄), row by row.
            for ((d, &y), &p) in tmp.iter_mut().zip(gq.iter()).zip(gp.iter()) {
                *d = y - p;
            }
            for ((di, oi), tape) in tmp
                .chunks_exact(m)
                .zip(gv.chunks_exact_mut(m))
                .zip(&t.rows[k])
            {
                self.inner.vjp(tape, di, oi);
            }
            for (p, o) in gp.iter_mut().zip(gv.iter_mut()) {
                *o += *p; // X̄ ← Ā
                *p = *o; // P̄ ← Ā
            }
        }
        rescale_vjp(&t.counts, &mut gzd);
        for (o, &d) in gz.iter_mut().zip(&gzd) {
            *o = F::from_f64(d).unwrap_or(zero);
        }
    }
}
