//! The optimised operators against straightforward references (the pre-optimisation code of
//! `SoftSimplex` and `Dykstra`, kept here verbatim in spirit): outputs, `∂ℓ/∂z` and `∂ℓ/∂v` agree
//! to rounding. Covers both argsort paths (comparison sort of packed keys below
//! the radix threshold, radix sort above; `u128` keys for f64), the soft simplex head/tail split
//! (including a tail with a zero softmax weight), Dykstra's single sort shared by all rounds
//! (`forward_ordered`, with its fall-back when the order is wrong), and the exact projection's
//! fused finiteness check and sampled Newton start.

mod common;
use cardinal_proj::*;
use common::*;
use std::cmp::Ordering;

// ---------------------------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------------------------

/// Algorithm 1 as first written: full sort, softmax over every index, full reverse sweep.
#[derive(Clone, Copy)]
struct RefSoft;

#[derive(Default)]
struct RefSoftTape {
    perm: Vec<usize>,
    c: Vec<f64>,
    r: Vec<f64>,
    rho: Vec<f64>,
    active: Vec<f64>,
    theta: f64,
    n: f64,
    d: f64,
}

impl Projector<f64> for RefSoft {
    type Tape = RefSoftTape;
    fn forward(
        &self,
        v: &[f64],
        z: f64,
        out: &mut [f64],
        t: &mut RefSoftTape,
    ) -> Result<(), ProjError> {
        let l = v.len();
        let mut perm: Vec<usize> = (0..l).collect();
        perm.sort_by(|&a, &b| v[b].partial_cmp(&v[a]).unwrap_or(Ordering::Equal));
        let (mut c, mut cs, mut rs, mut a) = (0.0, vec![], vec![], vec![]);
        for (k, &i) in perm.iter().enumerate() {
            let j = (k + 1) as f64;
            c += v[i];
            let r = j * v[i] - (c - z);
            let rr = r.max(0.0);
            cs.push(c);
            rs.push(r);
            a.push(j * rr / (1.0 + rr));
        }
        let amax = a.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = a.iter().map(|x| (x - amax).exp()).collect();
        let s: f64 = e.iter().sum();
        let rho: Vec<f64> = e.iter().map(|x| x / s).collect();
        let n: f64 = rho.iter().zip(&cs).map(|(p, c)| p * c).sum();
        let d: f64 = rho
            .iter()
            .enumerate()
            .map(|(k, p)| (k + 1) as f64 * p)
            .sum();
        let theta = (n - z) / d;
        t.active = v
            .iter()
            .map(|&x| if x - theta > 0.0 { 1.0 } else { 0.0 })
            .collect();
        for (o, &x) in out.iter_mut().zip(v) {
            *o = (x - theta).max(0.0);
        }
        *t = RefSoftTape {
            perm,
            c: cs,
            r: rs,
            rho,
            active: std::mem::take(&mut t.active),
            theta,
            n,
            d,
        };
        Ok(())
    }
    fn vjp(&self, t: &RefSoftTape, g: &[f64], gv: &mut [f64]) -> f64 {
        let mut dtheta = 0.0;
        for ((o, &a), &gi) in gv.iter_mut().zip(&t.active).zip(g) {
            *o = a * gi;
            dtheta -= a * gi;
        }
        let (dn, dd) = (dtheta / t.d, -dtheta * t.theta / t.d);
        let mut gz = -dtheta / t.d;
        let dot = dn * t.n + dd * t.d;
        let mut suffix = 0.0;
        for k in (0..t.perm.len()).rev() {
            let j = (k + 1) as f64;
            let da = t.rho[k] * (dn * t.c[k] + dd * j - dot);
            let dr = if t.r[k] > 0.0 {
                j * da / ((1.0 + t.r[k]) * (1.0 + t.r[k]))
            } else {
                0.0
            };
            gz += dr;
            suffix += dn * t.rho[k] - dr;
            gv[t.perm[k]] += j * dr + suffix;
        }
        gz
    }
}

/// Dykstra as first written (explicit b, p, q; masks multiply).
struct RefDykstra<P>(usize, P);

struct RefDykTape<T> {
    inner: Vec<T>,
    masks: Vec<Vec<f64>>,
}
impl<T> Default for RefDykTape<T> {
    fn default() -> Self {
        Self {
            inner: vec![],
            masks: vec![],
        }
    }
}

impl<P: Projector<f64>> Projector<f64> for RefDykstra<P> {
    type Tape = RefDykTape<P::Tape>;
    fn forward(
        &self,
        v: &[f64],
        z: f64,
        out: &mut [f64],
        t: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        let l = v.len();
        let (mut b, mut p, mut q) = (v.to_vec(), vec![0.0; l], vec![0.0; l]);
        t.inner.clear();
        t.masks.clear();
        for _ in 0..self.0 {
            let mut c = vec![0.0; l];
            let mut m = vec![0.0; l];
            for i in 0..l {
                let x = b[i] + p[i];
                let a = x.min(1.0);
                m[i] = if x <= 1.0 { 1.0 } else { 0.0 };
                p[i] = x - a;
                c[i] = a + q[i];
            }
            let mut tape = P::Tape::default();
            self.1.forward(&c, z, &mut b, &mut tape)?;
            for i in 0..l {
                q[i] = c[i] - b[i];
            }
            t.inner.push(tape);
            t.masks.push(m);
        }
        out.copy_from_slice(&b);
        Ok(())
    }
    fn vjp(&self, t: &Self::Tape, g: &[f64], gv: &mut [f64]) -> f64 {
        let l = g.len();
        let (mut gp, mut gq, mut gc) = (vec![0.0; l], vec![0.0; l], vec![0.0; l]);
        gv.copy_from_slice(g);
        let mut gz = 0.0;
        for k in (0..self.0).rev() {
            let tin: Vec<f64> = (0..l).map(|i| gv[i] - gq[i]).collect();
            gz += self.1.vjp(&t.inner[k], &tin, &mut gc);
            for i in 0..l {
                let c = gq[i] + gc[i];
                let x = gp[i] + (c - gp[i]) * t.masks[k][i];
                gv[i] = x;
                gp[i] = x;
                gq[i] = c;
            }
        }
        gz
    }
}

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn run<P: Projector<F>, F: Real>(
    p: &P,
    v: &[F],
    z: F,
    g: &[F],
    tape: &mut P::Tape,
) -> (Vec<F>, Vec<F>, F) {
    let mut out = vec![F::nan(); v.len()];
    p.forward(v, z, &mut out, tape).expect("valid input");
    let mut gv = vec![F::nan(); v.len()];
    let gz = p.vjp(tape, g, &mut gv);
    (out, gv, gz)
}

fn close(a: f64, b: f64, tol: f64, scale: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + scale)
}

/// Compares a fast operator with a reference on one row. With `ties`, tied entries may be ranked
/// differently (an equally valid subgradient), so ∂ℓ/∂v is compared through its sum only.
fn compare<P: Projector<f64>, R: Projector<f64>>(
    what: &str,
    fast: &P,
    reference: &R,
    v: &[f64],
    z: f64,
    g: &[f64],
    ties: bool,
    tape: &mut P::Tape,
) {
    let (o1, g1, z1) = run(fast, v, z, g, tape);
    let (o2, g2, z2) = run(reference, v, z, g, &mut R::Tape::default());
    let scale = v.iter().fold(0.0f64, |m, x| m.max(x.abs())) * v.len() as f64;
    let tol = 1e-9;
    for (i, (a, b)) in o1.iter().zip(&o2).enumerate() {
        assert!(
            close(*a, *b, tol, scale),
            "{what}: out[{i}] {a} vs {b} (L={}, z={z})",
            v.len()
        );
    }
    let gscale = g2.iter().fold(z2.abs(), |m, x| m.max(x.abs())) * v.len() as f64;
    assert!(
        close(z1, z2, tol, gscale),
        "{what}: gz {z1} vs {z2} (L={}, z={z})",
        v.len()
    );
    if ties {
        let (s1, s2): (f64, f64) = (g1.iter().sum(), g2.iter().sum());
        assert!(close(s1, s2, tol, gscale), "{what}: sum gv {s1} vs {s2}");
    } else {
        for (i, (a, b)) in g1.iter().zip(&g2).enumerate() {
            assert!(
                close(*a, *b, tol, gscale),
                "{what}: gv[{i}] {a} vs {b} (L={}, z={z})",
                v.len()
            );
        }
    }
}

const LENS: [usize; 9] = [1, 2, 7, 31, 159, 319, 320, 983, 2500];

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn soft_simplex_matches_reference() {
    let mut rng = Rng(21);
    let mut tape = SoftTape::default(); // reused across lengths on purpose
    for &l in &LENS {
        for scale in [0.05, 1.0, 30.0] {
            for zf in [0.0, 0.02, 0.3, 1.0, 3.0] {
                let v = rng.normals(l, scale);
                let g = rng.normals(l, 1.0);
                let z = zf * l as f64 + if zf == 0.0 { 0.0 } else { 0.5 };
                compare("soft", &SoftSimplex, &RefSoft, &v, z, &g, false, &mut tape);
            }
        }
    }
}

#[test]
fn soft_simplex_matches_reference_with_ties() {
    let mut rng = Rng(22);
    let mut tape = SoftTape::default();
    for &l in &LENS {
        for _ in 0..4 {
            // Few distinct values, signed zeros included: long runs of ties.
            let levels = [-1.0, -0.0, 0.0, 0.25, 0.5, 2.0];
            let v: Vec<f64> = (0..l).map(|_| levels[rng.below(levels.len())]).collect();
            let g = rng.normals(l, 1.0);
            let z = rng.range(0.0, 0.2 * l as f64 + 1.0);
            compare(
                "soft/ties",
                &SoftSimplex,
                &RefSoft,
                &v,
                z,
                &g,
                true,
                &mut tape,
            );
        }
    }
}

#[test]
fn soft_simplex_f32_matches_f64() {
    // The f32 path uses the u64 keys (comparison sort or radix), f64 the u128 keys.
    let mut rng = Rng(23);
    for &l in &[159usize, 983] {
        let v = rng.normals(l, 1.0);
        let g = rng.normals(l, 1.0);
        let z = 0.02 * l as f64 + 1.0;
        let (o64, g64, z64) = run(&SoftSimplex, &v, z, &g, &mut SoftTape::default());
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let g32: Vec<f32> = g.iter().map(|&x| x as f32).collect();
        let (o32, gv32, z32) = run(&SoftSimplex, &v32, z as f32, &g32, &mut SoftTape::default());
        for (a, b) in o32.iter().zip(&o64) {
            assert!((*a as f64 - b).abs() < 1e-4, "{a} vs {b}");
        }
        for (a, b) in gv32.iter().zip(&g64) {
            assert!((*a as f64 - b).abs() < 1e-3 * (1.0 + b.abs()), "{a} vs {b}");
        }
        assert!((z32 as f64 - z64).abs() < 1e-3 * (1.0 + z64.abs()));
    }
}

#[test]
fn soft_tail_with_zero_weight() {
    // Large scores push the largest logit past ~745 so that exp(−amax) = 0 in f64: the tail's
    // order and weighted sum are then skipped.
    let mut rng = Rng(24);
    let l = 3000;
    let v = rng.normals(l, 50.0);
    let g = rng.normals(l, 1.0);
    compare(
        "soft/zero-tail",
        &SoftSimplex,
        &RefSoft,
        &v,
        2000.0,
        &g,
        false,
        &mut SoftTape::default(),
    );
}

#[test]
fn dykstra_matches_reference() {
    let mut rng = Rng(31);
    let mut tape_s = DykstraTape::default();
    let mut tape_e = DykstraTape::default();
    for &l in &LENS {
        for rounds in [1usize, 2, 3] {
            for (scale, ties) in [(0.3, false), (2.0, true)] {
                // max |v| < 1 gives no ties among the rounds' inputs; larger rows tie at the cap.
                let v: Vec<f64> = rng
                    .normals(l, scale)
                    .into_iter()
                    .map(|x| if scale < 1.0 { x.clamp(-0.99, 0.99) } else { x })
                    .collect();
                let g = rng.normals(l, 1.0);
                let z = rng.range(0.0, l as f64);
                compare(
                    "dykstra-soft",
                    &Dykstra::new(rounds, SoftSimplex),
                    &RefDykstra(rounds, RefSoft),
                    &v,
                    z,
                    &g,
                    ties,
                    &mut tape_s,
                );
                compare(
                    "dykstra-exact",
                    &Dykstra::new(rounds, Simplex),
                    &RefDykstra(rounds, Simplex),
                    &v,
                    z,
                    &g,
                    ties,
                    &mut tape_e,
                );
            }
        }
    }
}

#[test]
fn dykstra_batch_vjp_is_sync_and_matches_rows() {
    // The tape must stay Sync for `vjp_batch`.
    fn assert_sync<T: Sync>() {}
    assert_sync::<DykstraTape<f32, SoftTape<f32>>>();
    let mut rng = Rng(32);
    let (rows, l) = (5, 400);
    let v: Vec<f64> = rng.normals(rows * l, 1.0);
    let g: Vec<f64> = rng.normals(rows * l, 1.0);
    let z = vec![8.0; rows];
    let p = Dykstra::new(2, SoftSimplex);
    let mut tapes = Vec::new();
    let mut out = vec![0.0; rows * l];
    forward_batch(&p, &v, &z, l, &mut out, &mut tapes).unwrap();
    let (mut gv, mut gz) = (vec![0.0; rows * l], vec![0.0; rows]);
    vjp_batch(&p, &tapes, &g, l, &mut gv, &mut gz).unwrap();
    for r in 0..rows {
        let s = r * l..(r + 1) * l;
        let (o, gr, zr) = run(
            &p,
            &v[s.clone()],
            z[r],
            &g[s.clone()],
            &mut DykstraTape::default(),
        );
        assert_eq!(o, out[s.clone()].to_vec());
        assert_eq!(gr, gv[s].to_vec());
        assert_eq!(zr, gz[r]);
    }
}

#[test]
fn forward_ordered_checks_the_order() {
    let mut rng = Rng(41);
    for &l in &[5usize, 159, 983] {
        let v = rng.normals(l, 1.0);
        let g = rng.normals(l, 1.0);
        let z = 3.0;
        let mut good: Vec<u32> = (0..l as u32).collect();
        good.sort_by(|&a, &b| v[b as usize].partial_cmp(&v[a as usize]).unwrap());
        let bad: Vec<u32> = (0..l as u32).collect(); // identity: not sorted
        let short: Vec<u32> = good[..l - 1].to_vec();
        // A few adjacent swaps: repaired by insertion; reversed: too many inversions, re-sorted.
        let mut nearly = good.clone();
        for k in (0..l.saturating_sub(1)).step_by(7) {
            nearly.swap(k, k + 1);
        }
        let reversed: Vec<u32> = good.iter().rev().copied().collect();
        let (o, gv, gz) = run(&SoftSimplex, &v, z, &g, &mut SoftTape::default());
        let (os, gvs, gzs) = run(&Simplex, &v, z, &g, &mut SimplexTape::default());
        for order in [&good, &bad, &short, &nearly, &reversed] {
            let mut out = vec![0.0; l];
            let mut t = SoftTape::default();
            SoftSimplex
                .forward_ordered(&v, z, order, &mut out, &mut t)
                .unwrap();
            let mut gv2 = vec![0.0; l];
            let gz2 = SoftSimplex.vjp(&t, &g, &mut gv2);
            assert_eq!((&out, &gv2, gz2), (&o, &gv, gz));
            let mut ts = SimplexTape::default();
            Simplex
                .forward_ordered(&v, z, order, &mut out, &mut ts)
                .unwrap();
            let gz2 = Simplex.vjp(&ts, &g, &mut gv2);
            assert_eq!((&out, &gv2, gz2), (&os, &gvs, gzs));
        }
        // Invalid input is still reported on the ordered path.
        let mut w = v.clone();
        w[l / 2] = f64::NAN;
        let mut out = vec![0.0; l];
        let e = SoftSimplex.forward_ordered(&w, z, &good, &mut out, &mut SoftTape::default());
        assert!(
            matches!(e, Err(ProjError::NonFinite { index, .. }) if index == l / 2),
            "{e:?}"
        );
        let e = Simplex.forward_ordered(&w, z, &good, &mut out, &mut SimplexTape::default());
        assert!(
            matches!(e, Err(ProjError::NonFinite { index, .. }) if index == l / 2),
            "{e:?}"
        );
        let e = SoftSimplex.forward_ordered(&v, -1.0, &good, &mut out, &mut SoftTape::default());
        assert!(matches!(e, Err(ProjError::NegativeZ { .. })), "{e:?}");
    }
}

#[test]
fn exact_reports_non_finite_entries_and_survives_overflowing_sums() {
    for l in [3usize, 200] {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut v = vec![0.5f32; l];
            v[l - 2] = bad;
            let mut out = vec![0.0; l];
            let e = CappedSimplex.forward(&v, 1.0, &mut out, &mut CappedTape::default());
            assert!(
                matches!(e, Err(ProjError::NonFinite { index, .. }) if index == l - 2),
                "{e:?}"
            );
        }
        // Finite entries whose sum overflows f32: accepted (no error), output in the box.
        let v: Vec<f32> = (0..l)
            .map(|i| if i % 2 == 0 { 3e38 } else { 1.0 })
            .collect();
        let mut out = vec![f32::NAN; l];
        CappedSimplex
            .forward(&v, 1.0, &mut out, &mut CappedTape::default())
            .unwrap();
        assert!(out.iter().all(|x| (0.0..=1.0).contains(x)), "{out:?}");
    }
}

#[test]
fn exact_sampled_start_on_adversarial_rows() {
    // Rows where the evenly spaced sample is unrepresentative: constant sample positions with a
    // few outliers elsewhere, sorted rows, huge spreads, and every z regime.
    let mut rng = Rng(51);
    for &l in &[128usize, 129, 500, 983, 4096] {
        let mut rows: Vec<Vec<f64>> = vec![];
        rows.push(
            (0..l)
                .map(|i| if i % 32 == 0 { 0.0 } else { rng.normal() * 5.0 })
                .collect(),
        );
        rows.push(
            (0..l)
                .map(|i| if i % 32 == 0 { 100.0 } else { rng.normal() })
                .collect(),
        );
        rows.push((0..l).map(|i| i as f64 / l as f64).collect());
        rows.push((0..l).map(|i| -(i as f64)).collect());
        rows.push(rng.normals(l, 1e4));
        rows.push(vec![0.25; l]);
        for v in rows {
            for z in [
                0.0,
                0.5,
                1.0,
                l as f64 / 50.0,
                l as f64 / 2.0,
                l as f64 - 1.0,
                l as f64,
            ] {
                let u = project(&CappedSimplex, &v, z);
                let r = reference_capped(&v, z);
                let scale = v.iter().fold(1.0f64, |m, x| m.max(x.abs()));
                let d = u
                    .iter()
                    .zip(&r)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(d <= 1e-9 * scale, "L={l} z={z}: {d}");
                let tau_sort = capped_simplex_tau_sort(&v, z, &mut Vec::new()).unwrap();
                let tau_newton = capped_simplex_tau(&v, z).unwrap();
                let s = |t: f64| ksum(v.iter().map(|x| (x - t).clamp(0.0, 1.0)));
                assert!(
                    (s(tau_newton) - z).abs() <= 1e-9 * l as f64 * scale
                        && (s(tau_sort) - z).abs() <= 1e-9 * l as f64 * scale
                );
            }
        }
    }
}

#[test]
fn exact_vjp_matches_mask_formula() {
    // gv = m ⊙ (g − mean_F g), gz = mean_F g, with the free set recomputed from the output.
    let mut rng = Rng(52);
    for &l in &[1usize, 9, 159, 983] {
        let v = rng.normals(l, 1.0);
        let g = rng.normals(l, 1.0);
        let z = rng.range(0.0, l as f64);
        let (u, gv, gz) = run(&CappedSimplex, &v, z, &g, &mut CappedTape::default());
        let free: Vec<bool> = u.iter().map(|&x| x > 0.0 && x < 1.0).collect();
        let n = free.iter().filter(|&&f| f).count();
        let mean = if n == 0 {
            0.0
        } else {
            (0..l).filter(|&i| free[i]).map(|i| g[i]).sum::<f64>() / n as f64
        };
        assert!((gz - mean).abs() < 1e-12);
        for i in 0..l {
            let want = if free[i] { g[i] - mean } else { 0.0 };
            assert!((gv[i] - want).abs() < 1e-12);
        }
    }
}
