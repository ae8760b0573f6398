//! Input validation, runtime dispatch, batch helpers and tape reuse.

mod common;
use cardinal_proj::*;
use common::*;

fn all_ops() -> Vec<(Method, AnyProjector)> {
    Method::ALL
        .into_iter()
        .map(|m| (m, AnyProjector::new(m, params(2, 5))))
        .collect()
}

#[test]
fn invalid_input_is_an_error() {
    for (m, p) in all_ops() {
        let mut tape = AnyTape::default();
        let mut out = vec![0.0f64; 3];
        let v = [0.1, 0.2, 0.3];
        let err = |v: &[f64], z: f64, out: &mut [f64], tape: &mut AnyTape<f64>| {
            p.forward(v, z, out, tape)
        };
        assert!(
            matches!(
                err(&v, -0.1, &mut out, &mut tape),
                Err(ProjError::InvalidZ { .. } | ProjError::NegativeZ { .. })
            ),
            "{m}"
        );
        assert!(
            err(&v, f64::NAN, &mut out, &mut tape).is_err(),
            "{m}: NaN z"
        );
        assert!(
            err(&v, f64::INFINITY, &mut out, &mut tape).is_err(),
            "{m}: inf z"
        );
        assert!(
            matches!(
                err(&[0.1, f64::NAN, 0.3], 1.0, &mut out, &mut tape),
                Err(ProjError::NonFinite { index: 1, .. })
            ),
            "{m}"
        );
        assert!(
            matches!(
                err(&[0.1, 0.2, f64::NEG_INFINITY], 1.0, &mut out, &mut tape),
                Err(ProjError::NonFinite { index: 2, .. })
            ),
            "{m}"
        );
        assert!(
            matches!(
                err(&v, 1.0, &mut [0.0; 2], &mut tape),
                Err(ProjError::LengthMismatch {
                    input: 3,
                    output: 2
                })
            ),
            "{m}"
        );
        assert!(
            matches!(err(&[], 0.0, &mut [], &mut tape), Err(ProjError::Empty)),
            "{m}"
        );
        // z > L: an error where the set has the upper bound; fine for B(z) and for clipping,
        // which ignores z.
        let r = err(&v, 3.5, &mut out, &mut tape);
        match m {
            Method::Simplex | Method::Soft | Method::SoftPrinted | Method::Clip => {
                assert!(r.is_ok(), "{m}")
            }
            _ => assert!(matches!(r, Err(ProjError::InvalidZ { .. })), "{m}"),
        }
        // z = 0 and z = L are valid.
        assert!(err(&v, 0.0, &mut out, &mut tape).is_ok(), "{m}");
        assert!(err(&v, 3.0, &mut out, &mut tape).is_ok(), "{m}");
        assert!(out.iter().all(|x| x.is_finite()));
    }
    assert!(capped_simplex_tau(&[1.0f32, f32::NAN], 1.0).is_err());
}

#[test]
fn method_names_round_trip() {
    for m in Method::ALL {
        assert_eq!(m.to_string().parse::<Method>().unwrap(), m);
    }
    assert_eq!(
        "dykstra-soft".parse::<Method>().unwrap(),
        Method::DykstraSoft
    );
    assert_eq!(
        "soft-printed".parse::<Method>().unwrap(),
        Method::SoftPrinted
    );
    assert_eq!(
        "dykstra-soft-printed".parse::<Method>().unwrap(),
        Method::DykstraSoftPrinted
    );
    match "dykstra".parse::<Method>() {
        Err(ProjError::UnknownMethod { name, allowed }) => {
            assert_eq!(name, "dykstra");
            // Every name, in `Method::ALL`'s order: these ten first, a new method after.
            let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
            assert_eq!(allowed, names.join("|"));
            assert!(
                allowed.starts_with(
                    "exact|simplex|soft|dykstra-soft|dykstra-exact|fp|smooth|clip\
                     |soft-printed|dykstra-soft-printed"
                ),
                "{allowed}"
            );
        }
        other => panic!("{other:?}"),
    }
    match "soft".parse::<cardinal_proj::matrix::MatrixMethod>() {
        Err(ProjError::UnknownMatrixMethod { name, allowed }) => {
            assert_eq!(
                (name.as_str(), allowed.as_str()),
                ("soft", "exact|dykstra|dykstra-printed|sinkhorn")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn any_projector_matches_concrete_operators() {
    let mut rng = Rng(1);
    let v = rng.normals(40, 1.0);
    let z = 7.3;
    let get = |m| project(&AnyProjector::new(m, params(3, 7)), &v, z);
    assert_eq!(get(Method::Exact), project(&CappedSimplex, &v, z));
    assert_eq!(get(Method::Simplex), project(&Simplex, &v, z));
    assert_eq!(get(Method::Soft), project(&SoftSimplex, &v, z));
    assert_eq!(
        get(Method::DykstraSoft),
        project(&Dykstra::new(3, SoftSimplex), &v, z)
    );
    assert_eq!(
        get(Method::DykstraExact),
        project(&Dykstra::new(3, Simplex), &v, z)
    );
    assert_eq!(
        get(Method::Fp),
        project(&FastProjection { iters: 7 }, &v, z)
    );
    assert_eq!(get(Method::Clip), project(&BoxClip, &v, z));
    assert_eq!(
        get(Method::SoftPrinted),
        project(&SoftSimplexPrinted, &v, z)
    );
    assert_eq!(
        get(Method::DykstraSoftPrinted),
        project(&Dykstra::new(3, SoftSimplexPrinted), &v, z)
    );
    // The printed and released variants are different operators (this row has r_j < 0).
    let differ = |a: Method, b: Method| {
        let (a, b) = (get(a), get(b));
        a.iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    };
    // Measured: 2.9e-2 and 8.0e-4.
    assert!(differ(Method::SoftPrinted, Method::Soft) > 1e-2);
    assert!(differ(Method::DykstraSoftPrinted, Method::DykstraSoft) > 1e-4);
}

#[test]
fn tapes_are_reusable_across_lengths_and_methods() {
    let mut rng = Rng(2);
    let mut tape = AnyTape::default();
    for step in 0..60 {
        let (m, p) = all_ops()[step % 6];
        let l = 1 + rng.below(50);
        let v = rng.normals(l, 1.0);
        let z = rng.range(0.0, l as f64);
        let mut out = vec![0.0; l];
        p.forward(&v, z, &mut out, &mut tape).unwrap();
        // Fresh-tape result must be identical: nothing stale leaks from the previous call.
        assert_eq!(out, project(&p, &v, z), "{m}");
        let g = rng.normals(l, 1.0);
        let mut gv1 = vec![0.0; l];
        let gz1 = p.vjp(&tape, &g, &mut gv1);
        let mut fresh = AnyTape::default();
        p.forward(&v, z, &mut out, &mut fresh).unwrap();
        let mut gv2 = vec![0.0; l];
        let gz2 = p.vjp(&fresh, &g, &mut gv2);
        assert_eq!((gv1, gz1), (gv2, gz2), "{m}");
    }
}

#[test]
fn batch_equals_row_by_row() {
    let mut rng = Rng(3);
    for (rows, l) in [(3usize, 7usize), (50, 983)] {
        for (m, p) in all_ops() {
            let v = rng.normals(rows * l, 1.0);
            let z: Vec<f64> = (0..rows).map(|_| rng.range(0.0, l as f64)).collect();
            let mut out = vec![0.0; rows * l];
            let mut tapes = Vec::new();
            forward_batch(&p, &v, &z, l, &mut out, &mut tapes).unwrap();
            let g = rng.normals(rows * l, 1.0);
            let mut gv = vec![0.0; rows * l];
            let mut gz = vec![0.0; rows];
            vjp_batch(&p, &tapes, &g, l, &mut gv, &mut gz).unwrap();
            for b in 0..rows {
                let r = b * l..(b + 1) * l;
                let mut tape = AnyTape::default();
                let mut o = vec![0.0; l];
                p.forward(&v[r.clone()], z[b], &mut o, &mut tape).unwrap();
                assert_eq!(&out[r.clone()], &o[..], "{m}");
                let mut gvr = vec![0.0; l];
                let gzr = p.vjp(&tape, &g[r.clone()], &mut gvr);
                assert_eq!(&gv[r], &gvr[..], "{m}");
                assert_eq!(gz[b], gzr, "{m}");
            }
        }
    }
}

#[test]
fn batch_shape_and_row_errors() {
    let p = CappedSimplex;
    let mut tapes = Vec::new();
    let mut out = vec![0.0f64; 6];
    assert!(matches!(
        forward_batch(&p, &[0.0; 5], &[1.0, 1.0], 3, &mut out, &mut tapes),
        Err(ProjError::BatchShape { .. })
    ));
    assert!(matches!(
        forward_batch(
            &p,
            &[0.0, 0.0, 0.0, 0.0, f64::NAN, 0.0],
            &[1.0, 1.0],
            3,
            &mut out,
            &mut tapes
        ),
        Err(ProjError::NonFinite { index: 1, .. })
    ));
    assert!(matches!(
        forward_batch(&p, &[0.0; 6], &[1.0, 4.0], 3, &mut out, &mut tapes),
        Err(ProjError::InvalidZ { .. })
    ));
}
