//! The lockstep soft Dykstra (`lanes`) against the per-row operator it must equal, and its
//! sorting network against the 0-1 principle and a comparison sort.

mod common;
use cardinal_proj::lanes::{
    LanesScratch, LanesTape, LanesVjpScratch, SoftDykstraLanes, SortingNetwork, LANES,
};
use cardinal_proj::*;
use common::*;

/// By the 0-1 principle a comparator network sorts every input iff it sorts every 0/1 input.
#[test]
fn sorting_network_sorts_every_binary_input_up_to_14() {
    for n in 1..=14usize {
        let net = SortingNetwork::new(n);
        for bits in 0u32..(1 << n) {
            let mut x = vec![[0.0f32; LANES]; n];
            for (i, xi) in x.iter_mut().enumerate() {
                // Each lane gets its own rotation of the pattern.
                for (w, xw) in xi.iter_mut().enumerate() {
                    *xw = ((bits.rotate_left(w as u32) >> i) & 1) as f32;
                }
            }
            let mut sorted = vec![[0.0f32; LANES]; n];
            net.sort_desc(&x, &mut sorted);
            let x = sorted;
            for w in 0..LANES {
                for i in 1..n {
                    assert!(x[i - 1][w] >= x[i][w], "n {n} bits {bits:b} lane {w}");
                }
            }
        }
    }
}

#[test]
fn sorting_network_equals_a_comparison_sort() {
    let mut rng = Rng(7);
    for n in [15usize, 16, 17, 100, 159, 160, 255, 256, 257, 983] {
        let net = SortingNetwork::new(n);
        let mut x = vec![[0.0f64; LANES]; n];
        for xi in x.iter_mut() {
            for xw in xi.iter_mut() {
                // Ties too: a coarse grid.
                *xw = (rng.range(-3.0, 3.0) * 8.0).round() / 8.0;
            }
        }
        let mut expect: Vec<Vec<f64>> = (0..LANES)
            .map(|w| x.iter().map(|xi| xi[w]).collect())
            .collect();
        for col in &mut expect {
            col.sort_by(|a, b| b.partial_cmp(a).unwrap());
        }
        let mut sorted = vec![[0.0f64; LANES]; n];
        net.sort_desc(&x, &mut sorted);
        let x = sorted;
        for (w, col) in expect.iter().enumerate() {
            for i in 0..n {
                assert_eq!(x[i][w], col[i], "n {n} lane {w} position {i}");
            }
        }
    }
    // The bitonic network pruned to Bibtex's 159 labels has 2721 comparators (Batcher's
    // odd-even merge sort, before it, 2249): O(n log² n) either way.
    assert_eq!(SortingNetwork::new(159).comparators(), 2721);
}

/// A block of rows for case `case` of a comparison with the per-row operator: lengths that
/// are not powers of two, 1 to 3 rounds, partial blocks, ties and exact zeros and a coarse
/// grid, and `z` at both ends of its range and inside.
struct Block {
    n: usize,
    rounds: usize,
    rows: Vec<Vec<f64>>,
    z: Vec<f64>,
}

impl Block {
    fn random(rng: &mut Rng, case: usize) -> Self {
        let n = [1usize, 2, 3, 7, 16, 40, 159, 300][case % 8];
        let rounds = [1usize, 2, 3][case % 3];
        let n_rows = 1 + rng.below(LANES);
        let scale = [0.1, 1.0, 3.0][case % 3];
        let rows: Vec<Vec<f64>> = (0..n_rows)
            .map(|r| {
                let mut row = rng.normals(n, scale);
                if r % 4 == 1 {
                    // Ties and exact zeros, as after a projection.
                    for x in row.iter_mut().step_by(2) {
                        *x = 0.0;
                    }
                }
                if r % 4 == 2 {
                    for x in row.iter_mut() {
                        *x = (*x * 4.0).round() / 4.0;
                    }
                }
                row
            })
            .collect();
        let z: Vec<f64> = (0..n_rows)
            .map(|r| match r % 5 {
                0 => 0.0,
                1 => n as f64,
                _ => rng.range(0.0, n as f64),
            })
            .collect();
        Block { n, rounds, rows, z }
    }
}

/// The row that lane `w` carries in a block of `n_rows` rows: its own, or row 0 when the block
/// is partial.
fn row_of_lane(w: usize, n_rows: usize) -> usize {
    if w < n_rows {
        w
    } else {
        0
    }
}

/// `rows` (each of length n, at most LANES) in lane layout.
fn to_lanes(rows: &[Vec<f64>]) -> Vec<[f64; LANES]> {
    (0..rows[0].len())
        .map(|i| std::array::from_fn(|w| rows[row_of_lane(w, rows.len())][i]))
        .collect()
}

/// One value per row (at most LANES) in lane layout.
fn lane_values(z: &[f64]) -> [f64; LANES] {
    std::array::from_fn(|w| z[row_of_lane(w, z.len())])
}

/// Runs the lockstep operator on `rows` (each of length n, at most LANES; missing lanes repeat
/// row 0) and returns the projected rows.
fn lanes_project(rounds: usize, rows: &[Vec<f64>], z: &[f64]) -> Result<Vec<Vec<f64>>, ProjError> {
    let n = rows[0].len();
    let op = SoftDykstraLanes::new(rounds, n);
    let (v, zl) = (to_lanes(rows), lane_values(z));
    let mut out = vec![[0.0; LANES]; n];
    op.forward(&v, &zl, &mut out, &mut LanesScratch::default())?;
    Ok((0..rows.len())
        .map(|w| out.iter().map(|o| o[w]).collect())
        .collect())
}

#[test]
fn lockstep_soft_dykstra_equals_the_per_row_operator() {
    let mut rng = Rng(11);
    let mut worst = 0.0f64;
    for case in 0..120 {
        let Block { n, rounds, rows, z } = Block::random(&mut rng, case);
        let got = lanes_project(rounds, &rows, &z).unwrap();
        let per_row = Dykstra::new(rounds, SoftSimplex);
        for (r, row) in rows.iter().enumerate() {
            let expect = project(&per_row, row, z[r]);
            for i in 0..n {
                let d = (got[r][i] - expect[i]).abs();
                worst = worst.max(d);
                assert!(
                    d <= 1e-12 * (1.0 + expect[i].abs()),
                    "case {case} n {n} R {rounds} row {r} entry {i}: {} vs {}",
                    got[r][i],
                    expect[i]
                );
            }
        }
    }
    assert!(worst < 1e-12, "{worst}");
}

#[test]
fn lockstep_soft_dykstra_in_f32_matches_f64_to_rounding() {
    let mut rng = Rng(5);
    let n = 159;
    let rows: Vec<Vec<f64>> = (0..LANES).map(|_| rng.normals(n, 0.5)).collect();
    let z: Vec<f64> = (0..LANES).map(|_| rng.range(0.5, 20.0)).collect();
    let expect = lanes_project(2, &rows, &z).unwrap();
    let op = SoftDykstraLanes::new(2, n);
    let mut v = vec![[0.0f32; LANES]; n];
    let mut zl = [0.0f32; LANES];
    for w in 0..LANES {
        for i in 0..n {
            v[i][w] = rows[w][i] as f32;
        }
        zl[w] = z[w] as f32;
    }
    let mut out = vec![[0.0f32; LANES]; n];
    op.forward(&v, &zl, &mut out, &mut LanesScratch::default())
        .unwrap();
    for w in 0..LANES {
        for i in 0..n {
            assert!((out[i][w] as f64 - expect[w][i]).abs() < 1e-4);
        }
    }
}

#[test]
fn lockstep_soft_dykstra_rejects_what_the_per_row_operator_rejects() {
    let rows = vec![vec![0.1, 0.2, 0.3], vec![0.4, f64::NAN, 0.0]];
    match lanes_project(2, &rows, &[1.0, 1.0]) {
        Err(ProjError::NonFinite { index: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
    let rows = vec![vec![0.1, 0.2, 0.3]];
    for z in [-0.5, 3.5, f64::NAN] {
        assert!(matches!(
            lanes_project(2, &rows, &[z]),
            Err(ProjError::InvalidZ { .. })
        ));
    }
    let op = SoftDykstraLanes::new(2, 3);
    let v = vec![[0.0f64; LANES]; 2];
    let mut out = vec![[0.0f64; LANES]; 3];
    assert!(op
        .forward(&v, &[1.0; LANES], &mut out, &mut LanesScratch::default())
        .is_err());
}

/// The lockstep VJP against the per-row `Dykstra<SoftSimplex>::vjp`: input and `z` adjoints
/// to rounding, for partial blocks, lengths that are not powers of two, ties (exact zeros and
/// a coarse grid, where both must rank tied entries alike) and 1–3 rounds. One scratch serves
/// every case, as in training: what an earlier case left in it must not leak into the next.
#[test]
fn lockstep_soft_dykstra_vjp_equals_the_per_row_vjp() {
    let mut rng = Rng(23);
    let mut worst = 0.0f64;
    let mut scratch = LanesVjpScratch::default();
    for case in 0..96 {
        let Block { n, rounds, rows, z } = Block::random(&mut rng, case);
        let n_rows = rows.len();
        let gs: Vec<Vec<f64>> = (0..n_rows).map(|_| rng.normals(n, 1.0)).collect();
        let op = SoftDykstraLanes::new(rounds, n);
        let (v, g, zl) = (to_lanes(&rows), to_lanes(&gs), lane_values(&z));
        let mut out = vec![[0.0; LANES]; n];
        let mut tape = LanesTape::default();
        op.forward_tape(&v, &zl, &mut out, &mut tape, &mut LanesScratch::default())
            .unwrap();
        let mut gv = vec![[0.0; LANES]; n];
        let gz = op.vjp(&tape, &g, &mut gv, &mut scratch);
        let per_row = Dykstra::new(rounds, SoftSimplex);
        let mut t = Default::default();
        let mut o = vec![0.0; n];
        let mut e = vec![0.0; n];
        for r in 0..n_rows {
            per_row.forward(&rows[r], z[r], &mut o, &mut t).unwrap();
            for i in 0..n {
                assert!((out[i][r] - o[i]).abs() <= 1e-12 * (1.0 + o[i].abs()));
            }
            let ez = per_row.vjp(&t, &gs[r], &mut e);
            let mut check = |what: &str, a: f64, b: f64| {
                let d = (a - b).abs() / (1.0 + b.abs());
                worst = worst.max(d);
                assert!(
                    d <= 1e-11,
                    "case {case} n {n} R {rounds} row {r} {what}: {a} vs {b}"
                );
            };
            check("z", gz[r], ez);
            for i in 0..n {
                check(&format!("entry {i}"), gv[i][r], e[i]);
            }
        }
    }
    assert!(worst < 1e-11, "{worst}");
}
