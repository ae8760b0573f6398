//! Every VJP against central finite differences (f64), through one generic harness.

mod common;
use cardinal_proj::sigmoid_cardinality as sc;
use cardinal_proj::*;
use common::*;

/// SC's gradient map `y ↦ γ(Σy)·1` with θ = w (k = 1, 2, …).
struct ScGrad;
impl DiffOp for ScGrad {
    fn name(&self) -> String {
        "sc-grad".into()
    }
    fn eval(&self, x: &[f64], w: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        sc::grad_into(x, w, 1.0, &mut out);
        out
    }
    fn vjp(&self, x: &[f64], w: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (mut gy, mut gw) = (vec![f64::NAN; x.len()], vec![f64::NAN; w.len()]);
        sc::grad_vjp(x, w, 1.0, g, &mut gy, &mut gw);
        (gy, gw)
    }
}

/// SC's value, as a map to a length-1 output (checks `grad` itself).
struct ScValue;
impl DiffOp for ScValue {
    fn name(&self) -> String {
        "sc-value".into()
    }
    fn eval(&self, x: &[f64], w: &[f64]) -> Vec<f64> {
        vec![sc::value(x, w, 1.0)]
    }
    fn vjp(&self, x: &[f64], w: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let gy = vec![g[0] * sc::grad(x, w, 1.0); x.len()];
        // ∂s/∂w_k = I_k(1 − I_{k+1}): the value with a one-hot weight vector.
        let gw = (0..w.len())
            .map(|k| {
                let mut e = vec![0.0; w.len()];
                e[k] = 1.0;
                g[0] * sc::value(x, &e, 1.0)
            })
            .collect();
        (gy, gw)
    }
}

#[derive(Clone, Copy)]
enum ZKind {
    /// z ∈ (0, L): sets with the upper bound.
    Capped,
    /// z ∈ (0, L + 2): the positive simplex has no upper limit.
    Positive,
    /// θ = w: four weights.
    Weights,
}

fn run(op: &dyn DiffOp, zk: ZKind, x_scale: f64, seed: u64) {
    let mut rng = Rng(seed);
    let (mut ok, mut kinks) = (0, 0);
    let trials = 80;
    for _ in 0..trials {
        let l = 2 + rng.below(9);
        let (x, theta) = match zk {
            ZKind::Capped => (
                rng.normals(l, x_scale),
                vec![rng.range(0.2, l as f64 - 0.2)],
            ),
            ZKind::Positive => (
                rng.normals(l, x_scale),
                vec![rng.range(0.2, l as f64 + 2.0)],
            ),
            ZKind::Weights => ((0..l).map(|_| rng.uniform()).collect(), rng.normals(4, 1.0)),
        };
        let out_len = op.eval(&x, &theta).len();
        let g = rng.normals(out_len, 1.0);
        match fd_check(op, &x, &theta, &g, 1e-5) {
            FdOutcome::Ok => ok += 1,
            FdOutcome::Kink => kinks += 1,
            FdOutcome::Mismatch(m) => panic!("{m}"),
        }
    }
    // Kinks are measure-zero: most random points must actually be checked.
    assert!(
        ok >= trials * 3 / 4,
        "{}: only {ok} checked points, {kinks} near kinks",
        op.name()
    );
}

#[test]
fn exact_capped_vjp() {
    run(
        &ProjOp("exact".into(), CappedSimplex),
        ZKind::Capped,
        1.0,
        1,
    );
}

#[test]
fn simplex_vjp() {
    run(&ProjOp("simplex".into(), Simplex), ZKind::Positive, 1.0, 2);
}

#[test]
fn soft_simplex_vjp() {
    run(&ProjOp("soft".into(), SoftSimplex), ZKind::Positive, 1.0, 3);
    // Small spread: many j with r_j > 0, so the softsign/relu path carries gradient.
    run(&ProjOp("soft".into(), SoftSimplex), ZKind::Positive, 0.2, 4);
}

#[test]
fn soft_simplex_printed_vjp() {
    let op = || ProjOp("soft-printed".into(), SoftSimplexPrinted);
    run(&op(), ZKind::Positive, 1.0, 5);
    // Small spread: many j with r_j > 0; large spread: many with r_j < 0, which (unlike the
    // released variant) carry gradient through their negative logits.
    run(&op(), ZKind::Positive, 0.2, 6);
    run(&op(), ZKind::Positive, 3.0, 7);
}

#[test]
fn dykstra_soft_printed_vjp() {
    for r in [1, 2, 5] {
        run(
            &ProjOp(
                format!("dykstra-soft-printed R={r}"),
                Dykstra::new(r, SoftSimplexPrinted),
            ),
            ZKind::Capped,
            1.0,
            60 + r as u64,
        );
    }
}

#[test]
fn dykstra_soft_vjp() {
    for r in [1, 2, 5] {
        run(
            &ProjOp(format!("dykstra-soft R={r}"), Dykstra::new(r, SoftSimplex)),
            ZKind::Capped,
            1.0,
            10 + r as u64,
        );
    }
}

#[test]
fn dykstra_exact_vjp() {
    for r in [1, 2, 5] {
        run(
            &ProjOp(format!("dykstra-exact R={r}"), Dykstra::new(r, Simplex)),
            ZKind::Capped,
            1.0,
            20 + r as u64,
        );
    }
}

#[test]
fn fast_projection_vjp() {
    for j in [0, 3, 10] {
        run(
            &ProjOp(format!("fp J={j}"), FastProjection { iters: j }),
            ZKind::Capped,
            1.0,
            30 + j as u64,
        );
    }
}

#[test]
fn any_projector_vjp() {
    for (i, m) in Method::ALL.into_iter().enumerate() {
        let zk = match m {
            Method::Simplex | Method::Soft | Method::SoftPrinted => ZKind::Positive,
            _ => ZKind::Capped,
        };
        run(
            &ProjOp(format!("any {m}"), AnyProjector::new(m, params(2, 5))),
            zk,
            1.0,
            40 + i as u64,
        );
    }
}

#[test]
fn sigmoid_cardinality_vjps() {
    run(&ScValue, ZKind::Weights, 1.0, 50);
    run(&ScGrad, ZKind::Weights, 1.0, 51);
}

/// The harness must be able to fail: a deliberately wrong VJP is caught.
#[test]
fn harness_detects_wrong_vjp() {
    struct Wrong;
    impl DiffOp for Wrong {
        fn name(&self) -> String {
            "wrong".into()
        }
        fn eval(&self, x: &[f64], t: &[f64]) -> Vec<f64> {
            project(&CappedSimplex, x, t[0])
        }
        fn vjp(&self, x: &[f64], t: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>) {
            // Forgets the mean subtraction.
            let u = project(&CappedSimplex, x, t[0]);
            let gx = u
                .iter()
                .zip(g)
                .map(|(&u, &g)| if u > 0.0 && u < 1.0 { g } else { 0.0 })
                .collect();
            (gx, vec![0.0])
        }
    }
    let mut rng = Rng(7);
    let mut caught = false;
    for _ in 0..20 {
        let x = rng.normals(6, 1.0);
        let g = rng.normals(6, 1.0);
        if let FdOutcome::Mismatch(_) = fd_check(&Wrong, &x, &[2.5], &g, 1e-5) {
            caught = true;
            break;
        }
    }
    assert!(caught);
}
