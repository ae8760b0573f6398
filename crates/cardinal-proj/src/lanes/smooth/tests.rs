//! The lanes against the per-row operator, bit for bit: outputs, `∂ℓ/∂v`, `∂ℓ/∂z` and errors.

use super::*;

struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        ((self.uniform() * n as f64) as usize).min(n - 1)
    }
}

/// One row of length `l` of kind `kind`: spread values, ties on a coarse grid, all equal,
/// scores in `[0, 1]` as the unroll's `y_T`, entries past the single-float solver's range.
fn row(rng: &mut Rng, l: usize, kind: usize) -> Vec<f64> {
    (0..l)
        .map(|_| match kind {
            0 => 3.0 * rng.uniform() - 1.0,
            1 => (8.0 * rng.uniform()).round() / 4.0 - 1.0,
            2 => 0.25,
            3 => rng.uniform(),
            _ => 4000.0 * rng.uniform() - 2000.0,
        })
        .collect()
}

/// A count for a row of length `l`: the bounds, integers, fractions, near the bounds.
fn count(rng: &mut Rng, l: usize) -> f64 {
    let lf = l as f64;
    match rng.below(7) {
        0 => 0.0,
        1 => lf,
        2 => rng.below(l + 1) as f64,
        3 => 1e-3_f64.min(lf),
        4 => (lf - 1e-3).max(0.0),
        _ => rng.uniform() * lf,
    }
}

fn bits<F: Real>(x: F) -> u64 {
    x.to_f64().expect("finite").to_bits()
}

/// Blocks of rows of every kind and count through the lanes and row by row; every output
/// and gradient must have the same bits.
fn lanes_equal_rows<F: Real, const N: usize>(lengths: &[usize], seed: u64) {
    let mut rng = Rng(seed);
    let of = |x: f64| F::from_f64(x).expect("representable");
    for eps in [0.05, 0.1, 1e-3, 2.0] {
        let lanes = SmoothLanes { eps };
        let rowp = SmoothCappedSimplex { eps };
        let mut t = SmoothLanesTape::<F, N>::default();
        for &l in lengths {
            let rows: Vec<Vec<F>> = (0..N)
                .map(|w| {
                    // Past the single-float solver's range in a few lanes only.
                    let kind = if w % 11 == 5 { 4 } else { rng.below(4) };
                    row(&mut rng, l, kind).into_iter().map(of).collect()
                })
                .collect();
            let z: Lanes<F, N> = std::array::from_fn(|_| of(count(&mut rng, l)));
            let v: Vec<Lanes<F, N>> = (0..l)
                .map(|i| std::array::from_fn(|w| rows[w][i]))
                .collect();
            let g: Vec<Lanes<F, N>> = (0..l)
                .map(|_| std::array::from_fn(|_| of((4.0 * rng.uniform()).round() - 2.0)))
                .collect();
            let mut out = vec![splat(F::zero()); l];
            lanes.forward(&v, &z, &mut out, &mut t).unwrap();
            let mut gv = vec![splat(F::zero()); l];
            let gz = lanes.vjp(&t, &g, &mut gv);
            let mut tape = SmoothTape::default();
            for w in 0..N {
                let mut want = vec![F::zero(); l];
                rowp.forward(&rows[w], z[w], &mut want, &mut tape).unwrap();
                let gw: Vec<F> = g.iter().map(|x| x[w]).collect();
                let mut want_gv = vec![F::zero(); l];
                let want_gz = rowp.vjp(&tape, &gw, &mut want_gv);
                let at = format!("eps {eps} l {l} lane {w} z {:?}", z[w]);
                assert_eq!(bits(gz[w]), bits(want_gz), "∂z, {at}");
                for i in 0..l {
                    assert_eq!(bits(out[i][w]), bits(want[i]), "out[{i}], {at}");
                    assert_eq!(bits(gv[i][w]), bits(want_gv[i]), "∂v[{i}], {at}");
                }
            }
        }
    }
}

#[test]
fn f32_lanes_equal_the_rows_bit_for_bit() {
    lanes_equal_rows::<f32, LANES>(&[1, 2, 3, 7, 159, 983], 1);
}

#[test]
fn f64_lanes_equal_the_rows_bit_for_bit() {
    lanes_equal_rows::<f64, 8>(&[1, 2, 5, 40, 159], 2);
}

#[test]
fn rows_past_the_single_float_length_go_to_the_row_solver() {
    lanes_equal_rows::<f32, 4>(&[PLAIN_MAX_LEN + 3], 3);
}

#[test]
fn errors_are_the_first_refused_lanes() {
    let lanes = SmoothLanes { eps: 0.1 };
    let rowp = SmoothCappedSimplex { eps: 0.1 };
    let mut t = SmoothLanesTape::<f64, 8>::default();
    let mut v = vec![[0.5f64; 8]; 4];
    let mut z = [1.0f64; 8];
    let mut out = vec![[0.0f64; 8]; 4];
    v[2][5] = f64::NAN;
    z[6] = 7.0;
    let err = lanes.forward(&v, &z, &mut out, &mut t).unwrap_err();
    let want = rowp
        .forward(
            &[0.5, 0.5, f64::NAN, 0.5],
            1.0,
            &mut [0.0; 4],
            &mut SmoothTape::default(),
        )
        .unwrap_err();
    // Debug strings: the value is NaN, unequal to itself.
    assert_eq!(format!("{err:?}"), format!("{want:?}"));
    assert!(matches!(err, ProjError::NonFinite { index: 2, .. }));
    z[3] = -1.0;
    let err = lanes.forward(&v, &z, &mut out, &mut t).unwrap_err();
    assert_eq!(err, ProjError::InvalidZ { z: -1.0, len: 4 });
    assert_eq!(
        lanes.forward(&v, &z, &mut out[..3], &mut t).unwrap_err(),
        ProjError::LengthMismatch {
            input: 4,
            output: 3
        }
    );
    assert_eq!(
        lanes.forward(&[], &z, &mut [], &mut t).unwrap_err(),
        ProjError::Empty
    );
    assert!(matches!(
        SmoothLanes { eps: 0.0 }.forward(&v, &[1.0; 8], &mut out, &mut t),
        Err(ProjError::InvalidParameter { name: "eps", .. })
    ));
}
