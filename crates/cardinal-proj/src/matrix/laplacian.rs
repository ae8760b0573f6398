//! The linear system shared by the matrix operators' Newton steps and VJPs.
//!
//! For non-negative weights `W` (`L × M`) with row sums `r` and column sums `c`, the system
//!
//! ```text
//! [diag(r)  W      ] [x]   [a]
//! [Wᵀ       diag(c)] [y] = [b]
//! ```
//!
//! is the Gram matrix `AAᵀ` of the constraints "row sums" and "column sums" restricted to the
//! weighted entries; it is singular (`(1, −1)` is in its kernel, one such vector per connected
//! component of the bipartite graph of `W`), and every right-hand side the operators form is
//! consistent (on each component, `Σ a = Σ b`). Eliminating `x = (a − W y)/r` leaves the
//! `M × M` weighted Laplacian `Λ = diag(c) − Wᵀ diag(1/r) W` with `Λ y = b − Wᵀ (a/r)`, solved
//! per connected component with one column grounded (`y = 0`), where `Λ` is positive definite.
//! Any solution gives the same `x_i + y_j`, which is all the operators use (and the same
//! `∂ℓ/∂z` after [`super::counts::rescale_vjp`], which removes a common shift of `y`).

/// Couplings below this fraction of the largest diagonal entry count as disconnected (keeps
/// nearly separate components, e.g. from underflowing entropic weights, well conditioned).
const COUPLING_TOL: f64 = 1e-13;

/// `Λ = diag(c) − Wᵀ diag(1/r) W` (row-major `M × M`) for weights `w` (`L × M`, row-major).
/// Rows with no weight contribute nothing.
pub(crate) fn laplacian(w: &[f64], m: usize, lap: &mut Vec<f64>) {
    lap.clear();
    lap.resize(m * m, 0.0);
    for row in w.chunks_exact(m) {
        let r: f64 = row.iter().sum();
        if r <= 0.0 {
            continue;
        }
        for (j, &wj) in row.iter().enumerate() {
            if wj == 0.0 {
                continue;
            }
            lap[j * m + j] += wj;
            for (k, &wk) in row.iter().enumerate() {
                lap[j * m + k] -= wj * wk / r;
            }
        }
    }
}

/// Solves `Λ y = rhs` for a consistent `rhs`, one grounded column per connected component of
/// `Λ`'s couplings; `y` is 0 on each component's first column.
pub(crate) fn solve_laplacian(lap: &[f64], m: usize, rhs: &[f64], y: &mut Vec<f64>) {
    y.clear();
    y.resize(m, 0.0);
    let scale = (0..m).map(|j| lap[j * m + j]).fold(0.0, f64::max);
    if scale <= 0.0 {
        return;
    }
    let linked = |j: usize, k: usize| lap[j * m + k].abs() > COUPLING_TOL * scale;
    // Components by a search over the coupling graph (M is small).
    let mut comp = vec![usize::MAX; m];
    let mut members: Vec<usize> = Vec::with_capacity(m);
    for start in 0..m {
        if comp[start] != usize::MAX {
            continue;
        }
        members.clear();
        comp[start] = start;
        members.push(start);
        let mut head = 0;
        while head < members.len() {
            let j = members[head];
            head += 1;
            for k in 0..m {
                if comp[k] == usize::MAX && linked(j, k) {
                    comp[k] = start;
                    members.push(k);
                }
            }
        }
        // Ground `members[0]`; solve the rest densely with partial pivoting.
        let free = &members[1..];
        let n = free.len();
        if n == 0 {
            continue;
        }
        let mut a = vec![0.0; n * (n + 1)];
        for (p, &j) in free.iter().enumerate() {
            for (q, &k) in free.iter().enumerate() {
                a[p * (n + 1) + q] = lap[j * m + k];
            }
            a[p * (n + 1) + n] = rhs[j];
        }
        gauss_solve(&mut a, n);
        for (p, &j) in free.iter().enumerate() {
            y[j] = a[p * (n + 1) + n];
        }
    }
}

/// Solves `(Λ + μI) y = rhs` for any `rhs` (`μ > 0`: positive definite), for Newton steps whose
/// right-hand side need not be consistent (a class with no support yet needs its multiplier to
/// move on its own).
pub(crate) fn solve_ridge(lap: &[f64], m: usize, mu: f64, rhs: &[f64], y: &mut Vec<f64>) {
    let w = m + 1;
    let mut a = vec![0.0; m * w];
    for j in 0..m {
        a[j * w..j * w + m].copy_from_slice(&lap[j * m..][..m]);
        a[j * w + j] += mu;
        a[j * w + m] = rhs[j];
    }
    gauss_solve(&mut a, m);
    y.clear();
    y.extend((0..m).map(|j| a[j * w + m]));
}

/// Gaussian elimination with partial pivoting on the augmented `n × (n+1)` matrix `a`; the
/// solution replaces the last column. A zero pivot leaves its unknown 0.
fn gauss_solve(a: &mut [f64], n: usize) {
    let w = n + 1;
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&p, &q| a[p * w + col].abs().total_cmp(&a[q * w + col].abs()))
            .unwrap_or(col);
        if piv != col {
            for k in 0..w {
                a.swap(col * w + k, piv * w + k);
            }
        }
        let d = a[col * w + col];
        if d == 0.0 {
            continue;
        }
        for p in 0..n {
            if p == col {
                continue;
            }
            let f = a[p * w + col] / d;
            if f != 0.0 {
                for k in col..w {
                    a[p * w + k] -= f * a[col * w + k];
                }
            }
        }
    }
    for p in 0..n {
        let d = a[p * w + p];
        a[p * w + n] = if d == 0.0 { 0.0 } else { a[p * w + n] / d };
    }
}

/// Reusable buffers of [`solve_bipartite`].
#[derive(Debug, Clone, Default)]
pub(crate) struct BipartiteScratch {
    lap: Vec<f64>,
    rhs: Vec<f64>,
}

/// [`solve_bipartite`] with `a` the row sums and `b` the column sums of `wg` (`L × m`, the
/// weights times the incoming gradient): the step the exact and the entropic VJPs share.
pub(crate) fn solve_bipartite_sums(
    w: &[f64],
    m: usize,
    wg: &[f64],
    x: &mut Vec<f64>,
    y: &mut Vec<f64>,
) {
    let a: Vec<f64> = wg.chunks_exact(m).map(|r| r.iter().sum()).collect();
    let mut b = vec![0.0; m];
    for r in wg.chunks_exact(m) {
        b.iter_mut().zip(r).for_each(|(s, v)| *s += v);
    }
    solve_bipartite(w, m, &a, &b, x, y, &mut BipartiteScratch::default());
}

/// Solves the bipartite system above for `(x, y)` given `(a, b)`.
pub(crate) fn solve_bipartite(
    w: &[f64],
    m: usize,
    a: &[f64],
    b: &[f64],
    x: &mut Vec<f64>,
    y: &mut Vec<f64>,
    s: &mut BipartiteScratch,
) {
    let BipartiteScratch { lap, rhs } = s;
    laplacian(w, m, lap);
    rhs.clear();
    rhs.extend_from_slice(b);
    for (row, &ai) in w.chunks_exact(m).zip(a) {
        let r: f64 = row.iter().sum();
        if r > 0.0 {
            for (t, &wj) in rhs.iter_mut().zip(row) {
                *t -= wj * ai / r;
            }
        }
    }
    solve_laplacian(lap, m, rhs, y);
    x.clear();
    for (row, &ai) in w.chunks_exact(m).zip(a) {
        let r: f64 = row.iter().sum();
        let wy: f64 = row.iter().zip(y.iter()).map(|(p, q)| p * q).sum();
        x.push(if r > 0.0 { (ai - wy) / r } else { 0.0 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_the_full_system_including_disconnected_parts() {
        // 4 rows × 4 columns in two components: {rows 0,1; cols 0,1} and {rows 2,3; cols 2,3}.
        let w = [
            1.0, 0.5, 0.0, 0.0, //
            0.3, 2.0, 0.0, 0.0, //
            0.0, 0.0, 1.5, 0.2, //
            0.0, 0.0, 0.0, 0.7,
        ];
        let m = 4;
        // A consistent right-hand side: A applied to some entries u on the weighted support.
        let u = [
            0.4, -1.0, 0.0, 0.0, 2.0, 0.3, 0.0, 0.0, 0.0, 0.0, -0.5, 1.1, 0.0, 0.0, 0.0, 0.9,
        ];
        let a: Vec<f64> = (0..4)
            .map(|i| (0..m).map(|j| w[i * m + j] * u[i * m + j]).sum())
            .collect();
        let b: Vec<f64> = (0..m)
            .map(|j| (0..4).map(|i| w[i * m + j] * u[i * m + j]).sum())
            .collect();
        let (mut x, mut y, mut s) = Default::default();
        solve_bipartite(&w, m, &a, &b, &mut x, &mut y, &mut s);
        // Check every equation of the original (L + M) system.
        for i in 0..4 {
            let r: f64 = w[i * m..][..m].iter().sum();
            let got = r * x[i] + (0..m).map(|j| w[i * m + j] * y[j]).sum::<f64>();
            assert!((got - a[i]).abs() < 1e-12, "row {i}: {got} vs {}", a[i]);
        }
        for j in 0..m {
            let c: f64 = (0..4).map(|i| w[i * m + j]).sum();
            let got = c * y[j] + (0..4).map(|i| w[i * m + j] * x[i]).sum::<f64>();
            assert!((got - b[j]).abs() < 1e-12, "column {j}: {got} vs {}", b[j]);
        }
    }
}
