//! Shared test helpers: a deterministic RNG, slow references, and one finite-difference harness
//! used for every differentiable operator.
#![allow(dead_code)]

use cardinal_proj::{ProjParams, Projector, Real};

/// SplitMix64: deterministic and dependency-free.
pub(crate) struct Rng(pub u64);
impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub(crate) fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.uniform()
    }
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    pub(crate) fn normals(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| scale * self.normal()).collect()
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The default parameters with `rounds` Dykstra rounds and `fp_iters` FP iterations.
pub(crate) fn params(rounds: usize, fp_iters: usize) -> ProjParams {
    ProjParams {
        rounds,
        fp_iters,
        ..ProjParams::default()
    }
}

/// Runs a projector's forward on a fresh tape.
pub(crate) fn project<F: Real, P: Projector<F>>(p: &P, v: &[F], z: F) -> Vec<F> {
    let mut out = vec![F::zero(); v.len()];
    let mut tape = P::Tape::default();
    p.forward(v, z, &mut out, &mut tape).expect("valid input");
    out
}

/// Neumaier-compensated sum.
pub(crate) fn ksum(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for x in xs {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
    }
    s + c
}

/// Slow reference: bisection on τ to the last representable bit with compensated sums, then
/// `clip(v − τ, 0, 1)`. Independent of the crate's breakpoint logic.
pub(crate) fn reference_capped(v: &[f64], z: f64) -> Vec<f64> {
    let g = |t: f64| ksum(v.iter().map(|&x| (x - t).clamp(0.0, 1.0))) - z;
    let mut lo = v.iter().cloned().fold(f64::INFINITY, f64::min) - 1.0;
    let mut hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    for _ in 0..2000 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if g(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Either end is within one ulp of the root; pick the one with the smaller residual.
    let t = if g(lo).abs() <= g(hi).abs() { lo } else { hi };
    v.iter().map(|&x| (x - t).clamp(0.0, 1.0)).collect()
}

/// Brute force over active sets (each coordinate 0, free or 1): the feasible structured candidate
/// closest to v. Exponential; L ≤ 8.
pub(crate) fn brute_capped(v: &[f64], z: f64) -> Vec<f64> {
    let l = v.len();
    let mut best: Option<(f64, Vec<f64>)> = None;
    let total = 3usize.pow(l as u32);
    for code in 0..total {
        let mut c = code;
        let mut state = vec![0u8; l];
        for s in state.iter_mut() {
            *s = (c % 3) as u8;
            c /= 3;
        }
        let n_one = state.iter().filter(|&&s| s == 2).count() as f64;
        let free: Vec<usize> = (0..l).filter(|&i| state[i] == 1).collect();
        let tau = if free.is_empty() {
            if (n_one - z).abs() > 1e-12 {
                continue;
            }
            0.0
        } else {
            (free.iter().map(|&i| v[i]).sum::<f64>() - (z - n_one)) / free.len() as f64
        };
        let u: Vec<f64> = (0..l)
            .map(|i| match state[i] {
                0 => 0.0,
                1 => v[i] - tau,
                _ => 1.0,
            })
            .collect();
        if u.iter().any(|&x| !(-1e-12..=1.0 + 1e-12).contains(&x)) {
            continue;
        }
        let d: f64 = u.iter().zip(v).map(|(a, b)| (a - b) * (a - b)).sum();
        if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
            best = Some((d, u));
        }
    }
    best.expect("C(z) is non-empty").1
}

/// KKT of the capped projection: some τ has u = clip(v − τ, 0, 1). Returns the violation.
pub(crate) fn kkt_violation(v: &[f64], u: &[f64], z: f64) -> f64 {
    let tol = 1e-12;
    let mut viol = (u.iter().sum::<f64>() - z).abs();
    for &x in u {
        viol = viol.max(-x).max(x - 1.0);
    }
    // τ interval implied by each coordinate.
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    for (&x, &ui) in v.iter().zip(u) {
        if ui <= tol {
            lo = lo.max(x); // x − τ ≤ 0
        } else if ui >= 1.0 - tol {
            hi = hi.min(x - 1.0); // x − τ ≥ 1
        } else {
            lo = lo.max(x - ui);
            hi = hi.min(x - ui);
        }
    }
    viol.max(lo - hi)
}

// ---------------------------------------------------------------------------------------------
// Finite-difference harness
// ---------------------------------------------------------------------------------------------

/// A differentiable map `(x, θ) ↦ y` with its VJP; θ is `[z]` for projections, `w` for SC.
pub(crate) trait DiffOp {
    fn name(&self) -> String;
    fn eval(&self, x: &[f64], theta: &[f64]) -> Vec<f64>;
    /// Returns `(x̄, θ̄)` for the upstream adjoint `g`.
    fn vjp(&self, x: &[f64], theta: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>);
}

/// Adapts a [`Projector`] to [`DiffOp`], θ = [z]; forward and VJP go through one tape.
pub(crate) struct ProjOp<P>(pub String, pub P);
impl<P: Projector<f64>> DiffOp for ProjOp<P> {
    fn name(&self) -> String {
        self.0.clone()
    }
    fn eval(&self, x: &[f64], theta: &[f64]) -> Vec<f64> {
        project(&self.1, x, theta[0])
    }
    fn vjp(&self, x: &[f64], theta: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut tape = P::Tape::default();
        let mut out = vec![0.0; x.len()];
        self.1.forward(x, theta[0], &mut out, &mut tape).unwrap();
        let mut gv = vec![f64::NAN; x.len()]; // NaN: the VJP must overwrite every entry
        let gz = self.1.vjp(&tape, g, &mut gv);
        (gv, vec![gz])
    }
}

/// Outcome of one FD comparison.
pub(crate) enum FdOutcome {
    Ok,
    /// Two step sizes disagree: the point sits near a kink, skip it.
    Kink,
    Mismatch(String),
}

/// Compares every partial derivative of `⟨g, op(x, θ)⟩` with central differences.
pub(crate) fn fd_check(
    op: &dyn DiffOp,
    x: &[f64],
    theta: &[f64],
    g: &[f64],
    tol: f64,
) -> FdOutcome {
    let (gx, gt) = op.vjp(x, theta, g);
    let f = |x: &[f64], t: &[f64]| -> f64 { op.eval(x, t).iter().zip(g).map(|(a, b)| a * b).sum() };
    let n = x.len() + theta.len();
    for k in 0..n {
        let fd = |h: f64| {
            let (mut xp, mut xm, mut tp, mut tm) =
                (x.to_vec(), x.to_vec(), theta.to_vec(), theta.to_vec());
            if k < x.len() {
                xp[k] += h;
                xm[k] -= h;
            } else {
                tp[k - x.len()] += h;
                tm[k - x.len()] -= h;
            }
            (f(&xp, &tp) - f(&xm, &tm)) / (2.0 * h)
        };
        let (f1, f2) = (fd(1e-5), fd(1e-6));
        let scale = 1.0 + f2.abs();
        if (f1 - f2).abs() > 1e-6 * scale {
            return FdOutcome::Kink;
        }
        let an = if k < x.len() { gx[k] } else { gt[k - x.len()] };
        if !an.is_finite() || (an - f2).abs() > tol * scale {
            let what = if k < x.len() {
                format!("x[{k}]")
            } else {
                format!("theta[{}]", k - x.len())
            };
            return FdOutcome::Mismatch(format!(
                "{}: d/d{what}: analytic {an:e} vs FD {f2:e} (x = {x:?}, theta = {theta:?})",
                op.name()
            ));
        }
    }
    FdOutcome::Ok
}
