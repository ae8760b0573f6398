//! The printed Algorithm 1 (`SoftSimplexPrinted`): against a slow reference written here from
//! the paper's formula, against central differences on long rows, and against the released
//! variant (`SoftSimplex`, a ReLU inside the softsign), with which it agrees exactly when every
//! `r_j ≥ 0` and differs otherwise.

mod common;
use cardinal_proj::*;
use common::*;

/// `r_j = j μ_j − (c_j − z)` for `μ` = `v` sorted descending, `c` its cumulative sum.
fn reference_r(v: &[f64], z: f64) -> Vec<f64> {
    let mut mu = v.to_vec();
    mu.sort_by(|a, b| b.partial_cmp(a).unwrap());
    let mut c = 0.0;
    mu.iter()
        .enumerate()
        .map(|(k, &m)| {
            c += m;
            (k + 1) as f64 * m - (c - z)
        })
        .collect()
}

/// Algorithm 1 straight from the paper, dense, in f64: `δ = Softsign(μ∘I − (μ̄ − z))`,
/// `ρ = Softmax(δ∘I)`, `θ = (μ̄ᵀρ − z)/(Iᵀρ)`, output `max(v − θ, 0)`.
fn reference_printed(v: &[f64], z: f64) -> Vec<f64> {
    let mut mu = v.to_vec();
    mu.sort_by(|a, b| b.partial_cmp(a).unwrap());
    let l = mu.len();
    let idx: Vec<f64> = (1..=l).map(|j| j as f64).collect();
    let cum: Vec<f64> = mu
        .iter()
        .scan(0.0, |s, &m| {
            *s += m;
            Some(*s)
        })
        .collect();
    let delta: Vec<f64> = (0..l)
        .map(|k| {
            let x = mu[k] * idx[k] - (cum[k] - z);
            x / (1.0 + x.abs())
        })
        .collect();
    let logits: Vec<f64> = (0..l).map(|k| delta[k] * idx[k]).collect();
    let top = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|a| (a - top).exp()).collect();
    let total: f64 = e.iter().sum();
    let rho: Vec<f64> = e.iter().map(|x| x / total).collect();
    let num: f64 = cum.iter().zip(&rho).map(|(c, p)| c * p).sum::<f64>() - z;
    let den: f64 = idx.iter().zip(&rho).map(|(i, p)| i * p).sum();
    let theta = num / den;
    v.iter().map(|&x| (x - theta).max(0.0)).collect()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Output, `∂ℓ/∂v` and `∂ℓ/∂z` of `p` for the upstream gradient `g`.
fn run<P: Projector<f64>>(p: &P, v: &[f64], z: f64, g: &[f64]) -> (Vec<f64>, Vec<f64>, f64) {
    let mut tape = P::Tape::default();
    let mut out = vec![0.0; v.len()];
    p.forward(v, z, &mut out, &mut tape).unwrap();
    let mut gv = vec![f64::NAN; v.len()];
    let gz = p.vjp(&tape, g, &mut gv);
    (out, gv, gz)
}

#[test]
fn printed_matches_the_reference() {
    let mut rng = Rng(101);
    let mut tape = SoftPrintedTape::default(); // reused across lengths on purpose
    let mut checked_negative_r = 0;
    for &l in &[1usize, 2, 3, 6, 20, 159, 400] {
        for trial in 0..40 {
            let scale = [0.1, 0.6, 2.0, 10.0][trial % 4];
            let v: Vec<f64> = rng.normals(l, scale).iter().map(|x| x + 0.3).collect();
            let z = if trial % 2 == 0 {
                2.4
            } else {
                rng.range(0.0, l as f64 + 2.0)
            };
            let mut out = vec![0.0; l];
            SoftSimplexPrinted
                .forward(&v, z, &mut out, &mut tape)
                .unwrap();
            let want = reference_printed(&v, z);
            let tol = 1e-12 * (1.0 + v.iter().fold(0.0f64, |a, x| a.max(x.abs())) + z);
            let d = max_abs_diff(&out, &want);
            assert!(d <= tol, "L = {l}, z = {z}: max diff {d:e} (v = {v:?})");
            if reference_r(&v, z).iter().any(|&r| r < -0.1) {
                checked_negative_r += 1;
            }
        }
    }
    // Most rows exercise the negative logits that distinguish the printed algorithm.
    assert!(checked_negative_r > 150, "{checked_negative_r}");
}

/// The logits `j δ_j` reach ±L: without subtracting the largest, f32's exp overflows at L = 159.
#[test]
fn printed_f32_is_stable_and_close_to_f64() {
    let mut rng = Rng(102);
    for &l in &[6usize, 159, 983] {
        for _ in 0..10 {
            let v: Vec<f64> = rng.normals(l, 0.6).iter().map(|x| x + 0.3).collect();
            let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            let z = 2.4;
            let o64 = project(&SoftSimplexPrinted, &v, z);
            let o32 = project(&SoftSimplexPrinted, &v32, z as f32);
            for (a, b) in o64.iter().zip(&o32) {
                assert!(b.is_finite(), "L = {l}");
                assert!((a - *b as f64).abs() < 2e-4 * (1.0 + a.abs()), "{a} vs {b}");
            }
        }
    }
}

/// The VJP against central differences on rows longer than the generic harness uses.
#[test]
fn printed_vjp_on_long_rows() {
    let mut rng = Rng(103);
    let op = ProjOp("soft-printed".into(), SoftSimplexPrinted);
    let mut ok = 0;
    for &l in &[20usize, 159] {
        for _ in 0..4 {
            let v: Vec<f64> = rng.normals(l, 0.6).iter().map(|x| x + 0.3).collect();
            let g = rng.normals(l, 1.0);
            match fd_check(&op, &v, &[2.4], &g, 1e-5) {
                FdOutcome::Ok => ok += 1,
                FdOutcome::Kink => {}
                FdOutcome::Mismatch(m) => panic!("{m}"),
            }
        }
    }
    assert!(ok >= 6, "only {ok} of 8 points checked");
}

/// With every `r_j ≥ 0` the ReLU is the identity: the two variants agree, output and VJP.
/// `r` is non-increasing from `r_1 = z`, so this holds iff `z ≥ Σ_j (μ_j − μ_L)`. On the
/// boundary `r_L = 0` the outputs still agree, but the released variant has a kink there (the
/// ReLU's), so its VJP is one-sided: there only the outputs are compared.
#[test]
fn variants_agree_when_every_r_is_nonnegative() {
    let mut rng = Rng(104);
    let mut cases = 0;
    for &l in &[2usize, 6, 20, 159] {
        for trial in 0..20 {
            let v: Vec<f64> = rng.normals(l, 0.1).iter().map(|x| x + 0.3).collect();
            let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
            let spread: f64 = v.iter().map(|x| x - min).sum();
            // On the boundary (r_L = 0 up to rounding) and strictly inside.
            let boundary = trial % 2 == 0;
            let z = spread + if boundary { 0.0 } else { rng.range(0.1, 2.0) };
            let r = reference_r(&v, z);
            assert!(r.iter().all(|&x| x >= -1e-12), "{r:?}");
            let g = rng.normals(l, 1.0);
            let (o1, g1, z1) = run(&SoftSimplexPrinted, &v, z, &g);
            let (o2, g2, z2) = run(&SoftSimplex, &v, z, &g);
            let tol = 1e-12 * (1.0 + z);
            assert!(max_abs_diff(&o1, &o2) <= tol, "L = {l}: {o1:?} vs {o2:?}");
            if boundary {
                cases += 1;
                continue;
            }
            assert!(max_abs_diff(&g1, &g2) <= 1e-10, "L = {l}: {g1:?} vs {g2:?}");
            assert!((z1 - z2).abs() <= 1e-10, "L = {l}: {z1} vs {z2}");
            cases += 1;
        }
    }
    assert_eq!(cases, 80);
    // A hand case on the boundary: v = (1, 0), z = 1 has r = (1, 0).
    let (a, b) = (
        project(&SoftSimplexPrinted, &[1.0f64, 0.0], 1.0),
        project(&SoftSimplex, &[1.0f64, 0.0], 1.0),
    );
    assert!(max_abs_diff(&a, &b) < 1e-15, "{a:?} vs {b:?}");
}

/// Maximum per-entry difference between the variants on N(0.3, 0.6) rows with z = 2.4, where
/// some `r_j < 0` in most rows. Run with `--nocapture` to see the numbers; the bounds asserted
/// are below the measured ones (seeded, so deterministic).
#[test]
fn variants_differ_when_some_r_is_negative() {
    let z = 2.4;
    let mut rng = Rng(105);
    for &(l, rows, at_least) in &[(6usize, 4000, 0.1), (20, 4000, 0.3), (159, 1000, 0.7)] {
        let (mut worst, mut worst_agreeing) = (0.0f64, 0.0f64);
        let (mut negative_rows, mut sum_err_printed, mut sum_err_released) = (0, 0.0, 0.0);
        let (mut exact_printed, mut exact_released) = (0.0f64, 0.0f64);
        let mut per_row = Vec::with_capacity(rows);
        let mut worst_dykstra = 0.0f64;
        for _ in 0..rows {
            let v: Vec<f64> = rng.normals(l, 0.6).iter().map(|x| x + 0.3).collect();
            let printed = project(&SoftSimplexPrinted, &v, z);
            let released = project(&SoftSimplex, &v, z);
            let exact = project(&Simplex, &v, z);
            // The paper's operator onto C(z): Dykstra with R = 2 over either variant.
            worst_dykstra = worst_dykstra.max(max_abs_diff(
                &project(&Dykstra::new(2, SoftSimplexPrinted), &v, z),
                &project(&Dykstra::new(2, SoftSimplex), &v, z),
            ));
            let d = max_abs_diff(&printed, &released);
            per_row.push(d);
            if reference_r(&v, z).iter().any(|&r| r < 0.0) {
                negative_rows += 1;
                worst = worst.max(d);
            } else {
                worst_agreeing = worst_agreeing.max(d);
            }
            sum_err_printed += (printed.iter().sum::<f64>() - z).abs();
            sum_err_released += (released.iter().sum::<f64>() - z).abs();
            exact_printed = exact_printed.max(max_abs_diff(&printed, &exact));
            exact_released = exact_released.max(max_abs_diff(&released, &exact));
        }
        let n = rows as f64;
        per_row.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let q = |p: f64| per_row[((rows - 1) as f64 * p) as usize];
        eprintln!(
            "L = {l}, z = {z}, {rows} rows ({negative_rows} with some r_j < 0): \
             max |printed − released| = {worst:.4e} (rows with every r_j ≥ 0: \
             {worst_agreeing:.1e}); per-row max: median {:.4e}, 90% {:.4e}, 99% {:.4e}; \
             mean |Σu − z|: printed {:.4e}, released {:.4e}; \
             max |u − exact|: printed {exact_printed:.4e}, released {exact_released:.4e}; \
             Dykstra R = 2: max |printed − released| = {worst_dykstra:.4e}",
            q(0.5),
            q(0.9),
            q(0.99),
            sum_err_printed / n,
            sum_err_released / n,
        );
        assert!(worst >= at_least, "L = {l}: {worst:e} < {at_least:e}");
        assert!(worst_agreeing <= 1e-12, "L = {l}: {worst_agreeing:e}");
    }
}
