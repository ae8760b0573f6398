//! Unit tests of the capped-simplex threshold search.

use super::*;

#[test]
fn newton_and_sort_agree_on_ties_and_bounds() {
    let cases: [(&[f64], f64); 5] = [
        (&[0.0, 0.0, 0.0, 0.0], 2.0),
        (&[3.0, 3.0, -3.0], 2.0),
        (&[0.5, 0.25], 0.0),
        (&[0.5, 0.25], 2.0),
        (&[1.0, 2.0, 3.0, 4.0, 5.0], 2.5),
    ];
    for (v, z) in cases {
        let a = tau_newton(v, z);
        let b = tau_sorted(v, z, &mut Vec::new());
        let s = |t: f64| v.iter().map(|x| (x - t).clamp(0.0, 1.0)).sum::<f64>();
        assert!(
            (s(a) - z).abs() < 1e-12 && (s(b) - z).abs() < 1e-12,
            "{v:?} {z}: {a} {b}"
        );
    }
}

#[test]
fn empty_free_set_gives_zero_subgradient() {
    let mut gv = [7.0f64; 3];
    assert_eq!(
        masked_centered_vjp(&[0.0; 3], 0, &[1.0, 2.0, 3.0], &mut gv),
        0.0
    );
    assert_eq!(gv, [0.0; 3]);
}
