//! Exact projections: KKT, slow references, brute force, invariances, feasibility, degenerate
//! inputs, agreement between the two τ algorithms, Dykstra convergence.

mod common;
use cardinal_proj::*;
use common::*;
use proptest::prelude::*;

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Row of length 1..=40 with values of mixed magnitude, and z ∈ [0, L].
fn row_and_z() -> impl Strategy<Value = (Vec<f64>, f64)> {
    (1usize..=40, prop_oneof![Just(0.5), Just(3.0), Just(30.0)])
        .prop_flat_map(|(l, s)| (prop::collection::vec(-s..s, l), 0.0..=(l as f64)))
}

fn assert_feasible(u: &[f64], z: f64) {
    for &x in u {
        assert!((0.0..=1.0).contains(&x), "bound violated: {x}");
    }
    let s: f64 = u.iter().sum();
    assert!((s - z).abs() <= 1e-5 * z.max(1.0), "sum {s} vs z {z}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn capped_matches_reference_and_kkt((v, z) in row_and_z()) {
        let u = project(&CappedSimplex, &v, z);
        assert_feasible(&u, z);
        prop_assert!(kkt_violation(&v, &u, z) <= 1e-9, "kkt {}", kkt_violation(&v, &u, z));
        let r = reference_capped(&v, z);
        prop_assert!(max_abs_diff(&u, &r) <= 1e-10, "vs reference: {}", max_abs_diff(&u, &r));
    }

    #[test]
    fn newton_and_sort_tau_agree((v, z) in row_and_z()) {
        let t1 = capped_simplex_tau(&v, z).unwrap();
        let t2 = capped_simplex_tau_sort(&v, z, &mut Vec::new()).unwrap();
        let u1: Vec<f64> = v.iter().map(|x| (x - t1).clamp(0.0, 1.0)).collect();
        let u2: Vec<f64> = v.iter().map(|x| (x - t2).clamp(0.0, 1.0)).collect();
        prop_assert!(max_abs_diff(&u1, &u2) <= 1e-10);
    }

    #[test]
    fn capped_matches_brute_force(v in prop::collection::vec(-2.0f64..3.0, 1..=8), zf in 0.0f64..1.0, integer in any::<bool>()) {
        let l = v.len() as f64;
        let z = if integer { (zf * l).round() } else { zf * l };
        let u = project(&CappedSimplex, &v, z);
        let b = brute_capped(&v, z);
        prop_assert!(max_abs_diff(&u, &b) <= 1e-9, "{u:?} vs brute {b:?}");
    }

    #[test]
    fn capped_invariances((v, z) in row_and_z(), shift in -100.0f64..100.0, seed in any::<u64>()) {
        let u = project(&CappedSimplex, &v, z);
        // Shift: Π(v + c1) = Π(v) since Σu is fixed.
        let vs: Vec<f64> = v.iter().map(|x| x + shift).collect();
        prop_assert!(max_abs_diff(&project(&CappedSimplex, &vs, z), &u) <= 1e-9);
        // Permutation equivariance.
        let mut rng = Rng(seed);
        let mut perm: Vec<usize> = (0..v.len()).collect();
        for i in (1..perm.len()).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        let vp: Vec<f64> = perm.iter().map(|&i| v[i]).collect();
        let up = project(&CappedSimplex, &vp, z);
        let back: Vec<f64> = perm.iter().map(|&i| u[i]).collect();
        prop_assert!(max_abs_diff(&up, &back) <= 1e-12);
    }

    #[test]
    fn simplex_kkt_and_feasibility(v in prop::collection::vec(-5.0f64..5.0, 1..=40), z in 0.0f64..50.0) {
        let u = project(&Simplex, &v, z);
        let s: f64 = u.iter().sum();
        prop_assert!((s - z).abs() <= 1e-9 * z.max(1.0));
        prop_assert!(u.iter().all(|&x| x >= 0.0));
        // KKT: one θ with u_i = v_i − θ on the support and v_i ≤ θ off it.
        if z > 0.0 {
            let (i0, _) = u.iter().enumerate().find(|(_, &x)| x > 0.0).unwrap();
            let theta = v[i0] - u[i0];
            for (x, &ui) in v.iter().zip(&u) {
                if ui > 0.0 { prop_assert!((x - ui - theta).abs() <= 1e-9); }
                else { prop_assert!(*x <= theta + 1e-9); }
            }
        }
    }

    /// Regression: with z small enough that no coordinate reaches 1, both projections coincide.
    #[test]
    fn simplex_equals_capped_for_small_z(v in prop::collection::vec(-3.0f64..3.0, 1..=40), frac in 0.0f64..1.0) {
        // The simplex projection's max coordinate grows with z; pick z below where it hits 1.
        let zmax = (0..=100).map(|k| k as f64 * 0.01 * v.len() as f64)
            .take_while(|&z| project(&Simplex, &v, z).iter().all(|&x| x < 1.0))
            .last().unwrap_or(0.0);
        let z = frac * zmax;
        let a = project(&Simplex, &v, z);
        let b = project(&CappedSimplex, &v, z);
        prop_assert!(max_abs_diff(&a, &b) <= 1e-10);
    }
}

#[test]
fn degenerate_inputs() {
    let cases: Vec<(Vec<f64>, f64)> = vec![
        (vec![0.3; 10], 4.0),                      // all equal
        (vec![0.3; 10], 4.5),                      // all equal, fractional z
        (vec![1.0, 1.0, 0.0, 0.0, 0.5, 0.5], 3.0), // ties
        (vec![2.0, -1.0, 0.5], 0.0),               // z = 0
        (vec![2.0, -1.0, 0.5], 3.0),               // z = L
        (vec![5.0, 5.0, -5.0, -5.0], 2.0),         // integer z, every coordinate at a bound
        (vec![1e6, -1e6, 3.0, 2.5, 1e6 - 0.5], 2.5),
        (vec![1e6, 1e6 + 0.25, 1e6 + 0.5, 1e6 + 0.75], 1.7),
        (vec![-1e6; 7], 7.0),
        (vec![7.0], 0.25),
    ];
    for (v, z) in cases {
        let u = project(&CappedSimplex, &v, z);
        assert_feasible(&u, z);
        let scale = v.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        assert!(
            kkt_violation(&v, &u, z) <= 1e-12 * scale,
            "{v:?} z={z}: {u:?}"
        );
        let r = reference_capped(&v, z);
        assert!(
            max_abs_diff(&u, &r) <= 1e-10 * scale,
            "{v:?} z={z}: {u:?} vs {r:?}"
        );
        // The VJP is finite (zero subgradient when the free set is empty).
        let mut tape = CappedTape::default();
        let mut out = vec![0.0; v.len()];
        CappedSimplex.forward(&v, z, &mut out, &mut tape).unwrap();
        let mut gv = vec![0.0; v.len()];
        let gz = CappedSimplex.vjp(&tape, &vec![1.0; v.len()], &mut gv);
        assert!(gz.is_finite() && gv.iter().all(|x| x.is_finite()));
    }
    // Every coordinate at a bound: F = ∅ -> zero subgradient.
    let mut tape = CappedTape::default();
    let mut out = vec![0.0; 4];
    CappedSimplex
        .forward(&[5.0, 5.0, -5.0, -5.0], 2.0, &mut out, &mut tape)
        .unwrap();
    assert_eq!(out, vec![1.0, 1.0, 0.0, 0.0]);
    assert_eq!(tape.n_free(), 0);
    let mut gv = vec![9.0; 4];
    assert_eq!(
        CappedSimplex.vjp(&tape, &[1.0, 2.0, 3.0, 4.0], &mut gv),
        0.0
    );
    assert_eq!(gv, vec![0.0; 4]);
}

#[test]
fn large_rows_match_reference() {
    let mut rng = Rng(99);
    for &l in &[983usize, 10_000] {
        for scale in [0.1, 1.0, 100.0] {
            let v = rng.normals(l, scale);
            let z = rng.range(0.0, l as f64);
            let u = project(&CappedSimplex, &v, z);
            assert_feasible(&u, z);
            assert!(max_abs_diff(&u, &reference_capped(&v, z)) <= 1e-10 * scale.max(1.0));
        }
    }
}

#[test]
fn f32_close_to_f64() {
    let mut rng = Rng(5);
    for _ in 0..50 {
        let l = 1 + rng.below(300);
        let v = rng.normals(l, 2.0);
        let z = rng.range(0.0, l as f64);
        let u64 = project(&CappedSimplex, &v, z);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let u32 = project(&CappedSimplex, &v32, z as f32);
        let s: f32 = u32.iter().sum();
        assert!((s - z as f32).abs() <= 1e-5 * (z as f32).max(1.0) * (l as f32).sqrt().max(1.0));
        assert!(u32.iter().all(|&x| (0.0..=1.0).contains(&x)));
        for (a, b) in u32.iter().zip(&u64) {
            assert!((*a as f64 - b).abs() <= 1e-4, "{a} vs {b}");
        }
    }
}

#[test]
fn dykstra_exact_converges_to_capped() {
    let mut rng = Rng(11);
    for _ in 0..20 {
        let l = 2 + rng.below(50);
        let v = rng.normals(l, 1.5);
        let z = rng.range(0.5, l as f64 - 0.5);
        let target = project(&CappedSimplex, &v, z);
        let errs: Vec<f64> = [1usize, 4, 16, 64, 4096]
            .iter()
            .map(|&r| max_abs_diff(&project(&Dykstra::new(r, Simplex), &v, z), &target))
            .collect();
        assert!(errs[4] <= 1e-6, "not converged: {errs:?}");
        assert!(errs[4] <= errs[0] + 1e-12, "{errs:?}");
    }
}

#[test]
fn dykstra_with_zero_rounds_is_identity() {
    let v = [0.5, 2.0, -1.0];
    assert_eq!(project(&Dykstra::new(0, SoftSimplex), &v, 1.0), v.to_vec());
}

#[test]
fn soft_simplex_matches_formula_by_hand() {
    // L = 2, v = (1, 0), z = 1: μ = (1, 0), c = (1, 1), r = (1, 0),
    // δ = (1/2, 0), scores (1/2, 0), ρ = softmax, θ = (1 − 1)/(ρ₁ + 2ρ₂) = 0, out = (1, 0).
    let u = project(&SoftSimplex, &[1.0f64, 0.0], 1.0);
    assert!((u[0] - 1.0).abs() < 1e-15 && u[1] == 0.0);
    // v = (0.2, 0.1), z = 1: r = (1, 0.9), δ = (1/2, 0.9/1.9), scores (0.5, 1.8/1.9).
    let (a1, a2): (f64, f64) = (0.5, 1.8 / 1.9);
    let (e1, e2) = (a1.exp(), a2.exp());
    let (p1, p2) = (e1 / (e1 + e2), e2 / (e1 + e2));
    let theta = (0.2 * p1 + 0.3 * p2 - 1.0) / (p1 + 2.0 * p2);
    let u = project(&SoftSimplex, &[0.2f64, 0.1], 1.0);
    assert!((u[0] - (0.2 - theta)).abs() < 1e-14 && (u[1] - (0.1 - theta)).abs() < 1e-14);
}

#[test]
fn soft_simplex_is_stable_for_long_rows() {
    // Softmax scores reach L; without max-subtraction exp would overflow.
    let mut rng = Rng(3);
    let v = rng.normals(100_000, 1.0);
    let u = project(&SoftSimplex, &v, 50.0);
    assert!(u.iter().all(|x| x.is_finite() && *x >= 0.0));
}

#[test]
fn fast_projection_bisection_settles() {
    // The soft one-hots make FP biased (the paper reports it as inferior), so we check what FP
    // guarantees: outputs in the box, and the bisection settling as J grows.
    let mut rng = Rng(21);
    for _ in 0..20 {
        let l = 5 + rng.below(30);
        let v: Vec<f64> = (0..l).map(|_| rng.range(1.0, 4.0)).collect();
        let z = rng.range(0.5, l as f64 / 2.0);
        let a = project(&FastProjection { iters: 60 }, &v, z);
        let b = project(&FastProjection { iters: 80 }, &v, z);
        assert!(a.iter().all(|&x| (0.0..=1.0).contains(&x)));
        assert!(max_abs_diff(&a, &b) <= 1e-9);
    }
}
