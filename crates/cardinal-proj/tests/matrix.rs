//! The matrix projections (the paper's Section 6) against independent routes: the KKT
//! conditions, a brute force over supports on tiny sizes, Dykstra's primal iteration run to
//! convergence, and central finite differences for every VJP.

use cardinal_proj::matrix::{
    AnyMatrixProjector, DykstraMatrix, ExactMatrix, MatrixMethod, MatrixProjector, SinkhornMatrix,
};
use cardinal_proj::{ProjError, Simplex, SoftSimplex, SoftSimplexPrinted};

/// SplitMix64: deterministic test data without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((x ^ (x >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (a, b) = (self.next().max(1e-300), self.next());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
    /// Class sizes summing to `l`, non-integer, some possibly near 0.
    fn counts(&mut self, l: usize, m: usize) -> Vec<f64> {
        let w: Vec<f64> = (0..m).map(|_| self.next() + 0.05).collect();
        let s: f64 = w.iter().sum();
        w.iter().map(|x| x * l as f64 / s).collect()
    }
}

fn project<P: MatrixProjector<f64>>(p: &P, v: &[f64], m: usize, z: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    let mut tape = P::Tape::default();
    p.forward(v, m, z, &mut out, &mut tape).unwrap();
    out
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |w, (x, y)| w.max((x - y).abs()))
}

/// Rows sum to 1, columns to z, entries ≥ 0, and there are α, β with
/// `V − Y = α_i + β_j` on the support and `V ≤ α_i + β_j` off it (found by a walk over the
/// support's bipartite graph, independent of the solver).
fn assert_kkt(v: &[f64], y: &[f64], m: usize, z: &[f64], tol: f64) {
    let l = v.len() / m;
    for (i, row) in y.chunks(m).enumerate() {
        let s: f64 = row.iter().sum();
        assert!((s - 1.0).abs() < tol, "row {i} sums to {s}");
        assert!(
            row.iter().all(|&x| x >= 0.0),
            "row {i} has a negative entry"
        );
    }
    for j in 0..m {
        let s: f64 = (0..l).map(|i| y[i * m + j]).sum();
        assert!(
            (s - z[j]).abs() < tol,
            "column {j} sums to {s}, want {}",
            z[j]
        );
    }
    let on = |i: usize, j: usize| y[i * m + j] > 1e-12;
    let (mut alpha, mut beta) = (vec![f64::NAN; l], vec![f64::NAN; m]);
    let mut comp_row = vec![usize::MAX; l];
    let mut comp_col = vec![usize::MAX; m];
    let mut n_comp = 0;
    for start in 0..l {
        if comp_row[start] != usize::MAX {
            continue;
        }
        alpha[start] = 0.0;
        comp_row[start] = n_comp;
        let mut stack = vec![(true, start)];
        while let Some((is_row, k)) = stack.pop() {
            if is_row {
                for j in (0..m).filter(|&j| on(k, j)) {
                    let b = v[k * m + j] - y[k * m + j] - alpha[k];
                    if comp_col[j] == usize::MAX {
                        comp_col[j] = n_comp;
                        beta[j] = b;
                        stack.push((false, j));
                    } else {
                        assert!((beta[j] - b).abs() < tol, "inconsistent multipliers");
                    }
                }
            } else {
                for i in (0..l).filter(|&i| on(i, k)) {
                    let a = v[i * m + k] - y[i * m + k] - beta[k];
                    if comp_row[i] == usize::MAX {
                        comp_row[i] = n_comp;
                        alpha[i] = a;
                        stack.push((true, i));
                    } else {
                        assert!((alpha[i] - a).abs() < tol, "inconsistent multipliers");
                    }
                }
            }
        }
        n_comp += 1;
    }
    for i in 0..l {
        for j in 0..m {
            if !on(i, j) && comp_col[j] == comp_row[i] {
                assert!(
                    v[i * m + j] <= alpha[i] + beta[j] + tol,
                    "dual infeasible at ({i}, {j})"
                );
            }
        }
    }
}

#[test]
fn exact_meets_the_kkt_conditions_up_to_30_by_6() {
    let mut rng = Rng(1);
    for case in 0..200 {
        let l = 1 + (rng.next() * 30.0) as usize;
        let m = 1 + (rng.next() * 6.0) as usize;
        let scale = [0.1, 1.0, 10.0][case % 3];
        let v: Vec<f64> = (0..l * m).map(|_| scale * rng.normal()).collect();
        let z = rng.counts(l, m);
        let y = project(&ExactMatrix::default(), &v, m, &z);
        assert_kkt(&v, &y, m, &z, 1e-8);
    }
}

/// Solves the consistent system `a x = b` (`n × n`, possibly singular) by Gaussian elimination
/// with full pivoting; `None` if it is inconsistent.
fn solve_singular(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    let mut cols: Vec<usize> = (0..n).collect();
    let mut rank = 0;
    for k in 0..n {
        let mut best = (0.0, k, k);
        for i in k..n {
            for j in k..n {
                if a[i][cols[j]].abs() > best.0 {
                    best = (a[i][cols[j]].abs(), i, j);
                }
            }
        }
        if best.0 < 1e-10 {
            break;
        }
        a.swap(k, best.1);
        b.swap(k, best.1);
        cols.swap(k, best.2);
        let p = a[k][cols[k]];
        for i in 0..n {
            if i != k {
                let f = a[i][cols[k]] / p;
                for j in 0..n {
                    let d = f * a[k][j];
                    a[i][j] -= d;
                }
                b[i] -= f * b[k];
            }
        }
        rank += 1;
    }
    if b[rank..].iter().any(|x| x.abs() > 1e-9) {
        return None;
    }
    let mut x = vec![0.0; n];
    for k in 0..rank {
        x[cols[k]] = b[k] / a[k][cols[k]];
    }
    Some(x)
}

/// The projection by brute force: for every support, the projection onto the affine set of the
/// row and column equations restricted to it; the closest of those that are non-negative.
fn brute_force(v: &[f64], m: usize, z: &[f64]) -> Vec<f64> {
    let l = v.len() / m;
    let n = l * m;
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 1u32..(1 << n) {
        let sup: Vec<usize> = (0..n).filter(|&k| mask >> k & 1 == 1).collect();
        // Constraints: L rows then M columns; A restricted to the support.
        let nc = l + m;
        let a_of = |c: usize, k: usize| if c < l { k / m == c } else { k % m == c - l };
        let mut aat = vec![vec![0.0; nc]; nc];
        let mut rhs = vec![0.0; nc];
        for c in 0..nc {
            for d in 0..nc {
                aat[c][d] = sup.iter().filter(|&&k| a_of(c, k) && a_of(d, k)).count() as f64;
            }
            let target = if c < l { 1.0 } else { z[c - l] };
            rhs[c] = sup
                .iter()
                .filter(|&&k| a_of(c, k))
                .map(|&k| v[k])
                .sum::<f64>()
                - target;
        }
        let Some(lam) = solve_singular(aat, rhs) else {
            continue;
        };
        let mut y = vec![0.0; n];
        for &k in &sup {
            y[k] = v[k] - (0..nc).filter(|&c| a_of(c, k)).map(|c| lam[c]).sum::<f64>();
        }
        if y.iter().any(|&x| x < -1e-12) {
            continue;
        }
        // The affine solve meets the equations only if they are consistent on this support.
        let feasible = (0..l).all(|i| (y[i * m..][..m].iter().sum::<f64>() - 1.0).abs() < 1e-9)
            && (0..m).all(|j| ((0..l).map(|i| y[i * m + j]).sum::<f64>() - z[j]).abs() < 1e-9);
        if !feasible {
            continue;
        }
        let d: f64 = y.iter().zip(v).map(|(a, b)| (a - b) * (a - b)).sum();
        if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
            best = Some((d, y));
        }
    }
    best.expect("the polytope is not empty").1
}

#[test]
fn exact_matches_a_brute_force_over_supports_on_tiny_matrices() {
    let mut rng = Rng(2);
    for _ in 0..60 {
        let l = 1 + (rng.next() * 4.0) as usize;
        let m = 1 + (rng.next() * 3.0) as usize;
        if l * m > 12 {
            continue;
        }
        let v: Vec<f64> = (0..l * m).map(|_| rng.normal()).collect();
        let z = rng.counts(l, m);
        let y = project(&ExactMatrix::default(), &v, m, &z);
        let want = brute_force(&v, m, &z);
        assert!(max_diff(&y, &want) < 1e-9, "{l}x{m}: {y:?} vs {want:?}");
    }
}

#[test]
fn exact_matches_dykstra_run_to_convergence_up_to_30_by_6() {
    // Dykstra's primal iteration with exact simplex steps converges to the projection: an
    // independent route to the same point (no dual, no Newton step, no linear solve).
    let mut rng = Rng(3);
    for case in 0..40 {
        let l = [30, 17, 5, 30][case % 4];
        let m = [6, 4, 3, 2][case % 4];
        let v: Vec<f64> = (0..l * m).map(|_| rng.normal()).collect();
        let z = rng.counts(l, m);
        let y = project(&ExactMatrix::default(), &v, m, &z);
        let mut prev = project(&DykstraMatrix::new(500, Simplex), &v, m, &z);
        let mut rounds = 500;
        loop {
            rounds *= 2;
            let next = project(&DykstraMatrix::new(rounds, Simplex), &v, m, &z);
            let moved = max_diff(&next, &prev);
            prev = next;
            if moved < 1e-9 || rounds >= 64_000 {
                break;
            }
        }
        assert!(
            max_diff(&y, &prev) < 1e-5,
            "case {case}: {}",
            max_diff(&y, &prev)
        );
    }
}

/// `ℓ = ⟨w, P(v, z)⟩`; the VJP against central differences in every entry of `v` and `z`.
fn check_vjp<P: MatrixProjector<f64>>(p: &P, l: usize, m: usize, seed: u64, tol: f64) {
    let mut rng = Rng(seed);
    let v: Vec<f64> = (0..l * m).map(|_| rng.normal()).collect();
    let z = rng.counts(l, m);
    let w: Vec<f64> = (0..l * m).map(|_| rng.normal()).collect();
    let loss = |v: &[f64], z: &[f64]| {
        let y = project(p, v, m, z);
        y.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>()
    };
    let mut out = vec![0.0; l * m];
    let mut tape = P::Tape::default();
    p.forward(&v, m, &z, &mut out, &mut tape).unwrap();
    let (mut gv, mut gz) = (vec![0.0; l * m], vec![0.0; m]);
    p.vjp(&tape, &w, &mut gv, &mut gz);
    let h = 1e-6;
    for k in 0..l * m {
        let (mut vp, mut vm) = (v.clone(), v.clone());
        vp[k] += h;
        vm[k] -= h;
        let fd = (loss(&vp, &z) - loss(&vm, &z)) / (2.0 * h);
        assert!(
            (fd - gv[k]).abs() < tol,
            "∂/∂v[{k}]: fd {fd} vs vjp {}",
            gv[k]
        );
    }
    for j in 0..m {
        let (mut zp, mut zm) = (z.clone(), z.clone());
        zp[j] += h;
        zm[j] -= h;
        let fd = (loss(&v, &zp) - loss(&v, &zm)) / (2.0 * h);
        assert!(
            (fd - gz[j]).abs() < tol,
            "∂/∂z[{j}]: fd {fd} vs vjp {}",
            gz[j]
        );
    }
}

#[test]
fn every_vjp_matches_finite_differences() {
    for (seed, (l, m)) in [(4, 3), (7, 2), (12, 5), (30, 6)].into_iter().enumerate() {
        let s = seed as u64 + 10;
        check_vjp(&ExactMatrix::default(), l, m, s, 1e-6);
        check_vjp(&DykstraMatrix::new(1, SoftSimplex), l, m, s, 1e-6);
        check_vjp(&DykstraMatrix::new(3, SoftSimplex), l, m, s, 1e-6);
        check_vjp(&DykstraMatrix::new(3, SoftSimplexPrinted), l, m, s, 1e-6);
        check_vjp(&DykstraMatrix::new(4, Simplex), l, m, s, 1e-6);
        check_vjp(&SinkhornMatrix::new(0.5), l, m, s, 1e-6);
        check_vjp(&SinkhornMatrix::new(0.1), l, m, s, 1e-5);
        for method in MatrixMethod::ALL {
            check_vjp(&AnyMatrixProjector::new(method, 2), l, m, s, 1e-5);
        }
    }
}

#[test]
fn sinkhorn_meets_its_optimality_conditions() {
    // ε ln Y − V must be −(α_i + β_j): its double differences vanish.
    let mut rng = Rng(5);
    let (l, m, eps) = (20, 4, 0.3);
    let v: Vec<f64> = (0..l * m).map(|_| rng.normal()).collect();
    let z = rng.counts(l, m);
    let y = project(&SinkhornMatrix::new(eps), &v, m, &z);
    for i in 0..l {
        assert!((y[i * m..][..m].iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
    for j in 0..m {
        assert!(((0..l).map(|i| y[i * m + j]).sum::<f64>() - z[j]).abs() < 1e-7);
    }
    let d = |i: usize, j: usize| eps * y[i * m + j].ln() - v[i * m + j];
    for i in 1..l {
        for j in 1..m {
            let dd = d(i, j) - d(i, 0) - d(0, j) + d(0, 0);
            assert!(dd.abs() < 1e-9, "({i}, {j}): {dd}");
        }
    }
    // Colder is closer to the linear program's vertex: the objective ⟨V, Y⟩ grows.
    let obj = |y: &[f64]| y.iter().zip(&v).map(|(a, b)| a * b).sum::<f64>();
    let cold = project(&SinkhornMatrix::new(0.05), &v, m, &z);
    assert!(obj(&cold) > obj(&y));
}

#[test]
fn the_papers_dykstra_is_feasible_in_its_columns_and_nears_the_rows_with_rounds() {
    let mut rng = Rng(6);
    let (l, m) = (16, 4);
    let v: Vec<f64> = (0..l * m).map(|_| rng.normal()).collect();
    let z = rng.counts(l, m);
    let row_gap = |y: &[f64]| {
        y.chunks(m)
            .map(|r| (r.iter().sum::<f64>() - 1.0).abs())
            .fold(0.0, f64::max)
    };
    let y1 = project(&DykstraMatrix::new(1, Simplex), &v, m, &z);
    let y50 = project(&DykstraMatrix::new(50, Simplex), &v, m, &z);
    for y in [&y1, &y50] {
        for j in 0..m {
            assert!(((0..l).map(|i| y[i * m + j]).sum::<f64>() - z[j]).abs() < 1e-9);
        }
    }
    assert!(row_gap(&y50) < row_gap(&y1));
    let soft = project(&DykstraMatrix::new(2, SoftSimplex), &v, m, &z);
    assert!(soft.iter().all(|&x| x >= 0.0));
}

#[test]
fn counts_are_rescaled_within_tolerance_and_refused_beyond() {
    let v = [0.3, -0.2, 1.0, 0.5, 0.1, 0.0];
    let z = [1.0, 2.0];
    let near = [1.0005, 2.0];
    let a = project(&ExactMatrix::default(), &v, 2, &z);
    let b = project(&ExactMatrix::default(), &v, 2, &near);
    let s = 3.0 / 3.0005;
    let c = project(&ExactMatrix::default(), &v, 2, &[1.0005 * s, 2.0 * s]);
    assert!(max_diff(&b, &c) < 1e-12);
    assert!(max_diff(&a, &b) < 1e-3);
    let mut out = [0.0; 6];
    for method in MatrixMethod::ALL {
        let p = AnyMatrixProjector::new(method, 2);
        let mut tape = Default::default();
        let e = p
            .forward(&v, 2, &[2.0, 2.0], &mut out, &mut tape)
            .unwrap_err();
        assert_eq!(e, ProjError::InfeasibleCounts { sum: 4.0, rows: 3 });
        let e = p
            .forward(&v, 2, &[4.0, -1.0], &mut out, &mut tape)
            .unwrap_err();
        assert_eq!(
            e,
            ProjError::NegativeCount {
                class: 1,
                value: -1.0
            }
        );
    }
}

#[test]
fn f32_agrees_with_f64() {
    let mut rng = Rng(7);
    let (l, m) = (25, 5);
    let v: Vec<f64> = (0..l * m).map(|_| rng.normal()).collect();
    let z = rng.counts(l, m);
    let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    let z32: Vec<f32> = z.iter().map(|&x| x as f32).collect();
    for method in MatrixMethod::ALL {
        let p = AnyMatrixProjector::new(method, 3);
        let want = project(&p, &v, m, &z);
        let mut got = vec![0.0f32; l * m];
        let mut tape = Default::default();
        p.forward(&v32, m, &z32, &mut got, &mut tape).unwrap();
        let got: Vec<f64> = got.iter().map(|&x| x as f64).collect();
        assert!(
            max_diff(&got, &want) < 1e-4,
            "{method}: {}",
            max_diff(&got, &want)
        );
    }
}

#[test]
fn classes_of_size_zero_get_empty_columns() {
    // Integer sizes with empty classes, as gold counts of a segmentation have.
    let mut rng = Rng(8);
    for case in 0..20 {
        let (l, m) = (20 + case % 7, 4);
        let v: Vec<f64> = (0..l * m).map(|_| 2.0 * rng.normal()).collect();
        let mut z = vec![0.0; m];
        z[0] = (l - 3 - case % 3) as f64;
        z[2] = (l as f64) - z[0];
        let y = project(&ExactMatrix::default(), &v, m, &z);
        assert_kkt(&v, &y, m, &z, 1e-7);
        assert!((0..l).all(|i| y[i * m + 1] == 0.0 && y[i * m + 3] == 0.0));
        let reference = project(&DykstraMatrix::new(20_000, Simplex), &v, m, &z);
        assert!(max_diff(&y, &reference) < 1e-5, "case {case}");
    }
}
