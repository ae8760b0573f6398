use super::*;
use crate::batch::{Float, TRAIN_LANES};
use crate::inference::test_support::{block_test_unroll, uniform_pm1};
use crate::inference::RowTape;
use crate::loss::soft_f1;
use cardinal_proj::{Method, ProjParams};

/// The lockstep training pass (forward with tape, loss, backward) against the per-row one
/// with `soft_f1` as the pipeline uses it: every row's loss, `∂ℓ/∂u`, adjoints of `g_t`,
/// energy masks, `∂ℓ/∂z` and `∂ℓ/∂η` to rounding. Full and partial blocks, label counts
/// that are not powers of two, and exact ties (duplicated labels: equal unary scores and
/// equal columns of `Wp`, so that every iterate ties them).
#[test]
fn block_training_pass_equals_the_row_pass() {
    // The width the training passes run, by their entry points (the CPU's widest variant),
    // beside the portable body.
    block_training_pass_check::<TRAIN_LANES>(
        <f64 as Float>::forward_block_tape,
        <f64 as Float>::backward_block,
    );
    // The lane width changes nothing in any lane's arithmetic: other widths, the portable
    // body only (each width of the dispatched pass is three more copies of it to compile).
    block_training_pass_check::<LANES>(portable_forward, portable_backward);
    block_training_pass_check::<8>(portable_forward, portable_backward);
}

/// A training block's forward pass with its tape, as [`Float::forward_block_tape`] runs it.
type ForwardPass<const N: usize> = for<'g> fn(
    &Unroll<'_, f64>,
    &SoftDykstraLanes,
    &[f64],
    &[f64],
    &dyn Fn(usize) -> &'g [u32],
    &[f64],
    &mut BlockTape<f64, N>,
) -> Result<(), ProjError>;

/// A training block's backward pass, as [`Float::backward_block`] runs it.
type BackwardPass<const N: usize> = fn(&Unroll<'_, f64>, &SoftDykstraLanes, &mut BlockTape<f64, N>);

fn portable_forward<'g, const N: usize>(
    un: &Unroll<'_, f64>,
    lanes: &SoftDykstraLanes,
    u: &[f64],
    z: &[f64],
    gold: &dyn Fn(usize) -> &'g [u32],
    weights: &[f64],
    t: &mut BlockTape<f64, N>,
) -> Result<(), ProjError> {
    un.forward_block_tape_impl(lanes, u, z, gold, weights, t)
}

fn portable_backward<const N: usize>(
    un: &Unroll<'_, f64>,
    lanes: &SoftDykstraLanes,
    t: &mut BlockTape<f64, N>,
) {
    un.backward_block_impl(lanes, t)
}

fn block_training_pass_check<const N: usize>(forward: ForwardPass<N>, backward: BackwardPass<N>) {
    let mut rnd = uniform_pm1(4242u64);
    for (case, &(l, e, steps, rows, ties)) in [
        (37usize, 5usize, 6usize, 64usize, false),
        (37, 5, 6, 13, true),
        (159, 16, 15, 50, false),
        (159, 16, 15, 64, true),
        (3, 2, 4, 1, false),
        (100, 7, 3, 33, true),
    ]
    .iter()
    .enumerate()
    {
        let rows = rows.min(N);
        let mut wpt = Array2::from_shape_fn((e, l), |_| rnd());
        if ties {
            for k in 0..e {
                for i in (1..l).step_by(2) {
                    wpt[[k, i]] = wpt[[k, i - 1]];
                }
            }
        }
        let we: Vec<f64> = (0..e).map(|_| rnd()).collect();
        let projector = AnyProjector::new(Method::DykstraSoft, ProjParams::default());
        let lanes = SoftDykstraLanes::new(2, l);
        let mut u: Vec<f64> = (0..rows * l).map(|_| 3.0 * rnd()).collect();
        if ties {
            for r in 0..rows {
                for i in (1..l).step_by(2) {
                    u[r * l + i] = u[r * l + i - 1];
                }
            }
        }
        let z: Vec<f64> = (0..rows)
            .map(|_| (1.0 + 4.0 * (rnd() + 1.0)).min(l as f64))
            .collect();
        let golds: Vec<Vec<u32>> = (0..rows)
            .map(|r| {
                (0..l as u32)
                    .filter(|&i| (i as usize + r).is_multiple_of(7))
                    .collect()
            })
            .collect();
        let weights: Vec<f64> = (1..=steps).map(|t| 0.1 + t as f64 / 10.0).collect();
        // Without and with a final projection of y_T (the default's entropic one).
        let smooth = AnyProjector::new(
            Method::Smooth,
            ProjParams {
                smooth_eps: 0.05,
                ..ProjParams::default()
            },
        );
        for final_projector in [None, Some(&smooth)] {
            let fin = final_projector.is_some();
            let un = block_test_unroll(&wpt, &we, steps, &projector, final_projector);
            let mut bt = BlockTape::<f64, N>::default();
            forward(&un, &lanes, &u, &z, &|r| &golds[r], &weights, &mut bt).unwrap();
            backward(&un, &lanes, &mut bt);
            un.energy_block(&mut bt);
            // The portable body computes the very same numbers as the pass under test.
            let mut portable = BlockTape::<f64, N>::default();
            un.forward_block_tape_impl(&lanes, &u, &z, |r| &golds[r], &weights, &mut portable)
                .unwrap();
            un.backward_block_impl(&lanes, &mut portable);
            let mut tape = RowTape::default();
            // The energy gradients the pipeline forms from the per-row adjoints and masks.
            let (mut gwp, mut gwe) = (Array2::<f64>::zeros((l, e)), vec![0.0; e]);
            let (mut gu, mut ggs, mut masks) =
                (vec![0.0; l], vec![0.0; steps * l], vec![0.0; steps * e]);
            let (mut bgu, mut bggs, mut bmasks) = (gu.clone(), ggs.clone(), masks.clone());
            let (mut pgu, mut pggs, mut pmasks) = (gu.clone(), ggs.clone(), masks.clone());
            let close = |what: &str, r: usize, a: f64, b: f64| {
                assert!(
                    (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                    "N {N} case {case} final {fin} row {r} {what}: {a} vs {b}"
                );
            };
            for r in 0..rows {
                un.forward_row(&u[r * l..(r + 1) * l], z[r], &mut tape)
                    .unwrap();
                let mut gys = vec![0.0; steps * l];
                let mut loss = 0.0;
                for t in 1..=steps {
                    let w = weights[t - 1];
                    let gy = &mut gys[(t - 1) * l..t * l];
                    loss -= w * soft_f1(tape.y(t, l), &golds[r], Some((gy, -w)));
                }
                let (gz, geta) = un.backward_row(&mut tape, &gys, &mut gu, &mut ggs);
                masks.copy_from_slice(&tape.masks[..steps * e]);
                bt.write_row(r, &mut bgu, &mut bggs, &mut bmasks);
                portable.write_row(r, &mut pgu, &mut pggs, &mut pmasks);
                assert_eq!(
                    (&bgu, &bggs, &bmasks, bt.loss(r), bt.grads(r)),
                    (&pgu, &pggs, &pmasks, portable.loss(r), portable.grads(r))
                );
                close("loss", r, bt.loss(r), loss);
                close("gz", r, bt.grads(r).0, gz);
                close("geta", r, bt.grads(r).1, geta);
                for i in 0..l {
                    close("y0", r, bt.y0(r, i), tape.y(0, l)[i]);
                    close("gu", r, bgu[i], gu[i]);
                }
                for (j, (&a, &b)) in bggs.iter().zip(&ggs).enumerate() {
                    close(&format!("ggs[{j}]"), r, a, b);
                }
                assert_eq!(bmasks, masks, "case {case} row {r} masks");
                for t in 0..steps {
                    for k in 0..e {
                        let m = masks[t * e + k];
                        for i in 0..l {
                            let g = ggs[t * l + i];
                            gwp[[i, k]] += g * we[k] * m;
                            gwe[k] += m * wpt[[k, i]] * g;
                        }
                    }
                }
            }
            for ((i, k), &x) in gwp.indexed_iter() {
                close(&format!("gwp[{i},{k}]"), 0, bt.gwp[[i, k]], x);
            }
            for k in 0..e {
                close(&format!("gwe[{k}]"), 0, bt.gwe[k], gwe[k]);
            }
        }
    }
}
