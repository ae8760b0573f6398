//! Nanoseconds per row for every projection operator, forward and forward+VJP, at the label
//! counts of the paper's datasets (159 bibtex, 983 delicious) and up to 10^6; the two τ
//! algorithms of the exact projection; and a batch of 50 rows at L = 983 to compare with the
//! PyTorch reference (`benches/peer_projection_timing.py`).
//!
//! `cargo bench -p cardinal-proj --bench projections [-- FILTER]`

use cardinal_proj::*;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;

const LENS: [usize; 5] = [159, 983, 10_000, 100_000, 1_000_000];

/// Deterministic N(0, 1) rows (SplitMix64 + Box–Muller).
fn normals(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u1, u2) = (next().max(1e-300), next());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect()
}

/// Row of f32 scores and a cardinality like the paper's (≈ L/50, at least 1).
fn row(l: usize) -> (Vec<f32>, f32) {
    let v = normals(l, l as u64).into_iter().map(|x| x as f32).collect();
    (v, (l as f32 / 50.0).max(1.0))
}

fn config(
    c: &mut Criterion,
    l: usize,
) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(format!("L={l}"));
    g.throughput(Throughput::Elements(l as u64));
    if l >= 100_000 {
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
    } else {
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
    g
}

fn bench_op<P: Projector<f32>>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    p: &P,
    l: usize,
) {
    let (v, z) = row(l);
    let gup: Vec<f32> = normals(l, 7).into_iter().map(|x| x as f32).collect();
    let mut out = vec![0.0f32; l];
    let mut gv = vec![0.0f32; l];
    let mut tape = P::Tape::default();
    g.bench_function(BenchmarkId::new(format!("{name}/forward"), l), |b| {
        b.iter(|| p.forward(black_box(&v), z, &mut out, &mut tape).unwrap())
    });
    g.bench_function(BenchmarkId::new(format!("{name}/forward+vjp"), l), |b| {
        b.iter(|| {
            p.forward(black_box(&v), z, &mut out, &mut tape).unwrap();
            black_box(p.vjp(&tape, &gup, &mut gv))
        })
    });
}

fn operators(c: &mut Criterion) {
    for &l in &LENS {
        let mut g = config(c, l);
        bench_op(&mut g, "exact", &CappedSimplex, l);
        bench_op(&mut g, "simplex", &Simplex, l);
        bench_op(&mut g, "soft", &SoftSimplex, l);
        bench_op(&mut g, "dykstra-soft-R2", &Dykstra::new(2, SoftSimplex), l);
        bench_op(&mut g, "dykstra-exact-R2", &Dykstra::new(2, Simplex), l);
        bench_op(&mut g, "fp-J10", &FastProjection { iters: 10 }, l);
        g.finish();
    }
}

/// Safeguarded Newton (expected O(L)) against sort + breakpoint scan (O(L log L)) for τ.
fn tau_algorithms(c: &mut Criterion) {
    for &l in &LENS {
        let mut g = config(c, l);
        let (v, z) = row(l);
        g.bench_function(BenchmarkId::new("tau/newton", l), |b| {
            b.iter(|| capped_simplex_tau(black_box(&v), z).unwrap())
        });
        let mut scratch = Vec::new();
        g.bench_function(BenchmarkId::new("tau/sort", l), |b| {
            b.iter(|| capped_simplex_tau_sort(black_box(&v), z, &mut scratch).unwrap())
        });
        g.finish();
    }
}

/// Batch of 50 rows at L = 983 (the peer comparison), sequential and through the batch helper.
fn batch_peer(c: &mut Criterion) {
    let (rows, l) = (50usize, 983usize);
    let v: Vec<f32> = normals(rows * l, 42)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    let z = vec![19.66f32; rows];
    let gup: Vec<f32> = normals(rows * l, 43)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    let mut g = c.benchmark_group("batch50-L983");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    fn run<P: Projector<f32>>(
        g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
        name: &str,
        p: &P,
        v: &[f32],
        z: &[f32],
        gup: &[f32],
        l: usize,
    ) where
        P::Tape: Sync,
    {
        let rows = z.len();
        let mut out = vec![0.0f32; rows * l];
        let mut gv = vec![0.0f32; rows * l];
        let mut gz = vec![0.0f32; rows];
        let mut tapes: Vec<P::Tape> = Vec::new();
        g.bench_function(format!("{name}/forward/batch-helper"), |b| {
            b.iter(|| forward_batch(p, black_box(v), z, l, &mut out, &mut tapes).unwrap())
        });
        g.bench_function(format!("{name}/forward+vjp/batch-helper"), |b| {
            b.iter(|| {
                forward_batch(p, black_box(v), z, l, &mut out, &mut tapes).unwrap();
                vjp_batch(p, &tapes, gup, l, &mut gv, &mut gz).unwrap();
            })
        });
        let mut tape = P::Tape::default();
        let mut grow = vec![0.0f32; l];
        g.bench_function(format!("{name}/forward+vjp/one-thread"), |b| {
            b.iter(|| {
                for r in 0..rows {
                    let s = r * l..(r + 1) * l;
                    p.forward(
                        black_box(&v[s.clone()]),
                        z[r],
                        &mut out[s.clone()],
                        &mut tape,
                    )
                    .unwrap();
                    black_box(p.vjp(&tape, &gup[s], &mut grow));
                }
            })
        });
        g.bench_function(format!("{name}/forward/one-thread"), |b| {
            b.iter(|| {
                for r in 0..rows {
                    let s = r * l..(r + 1) * l;
                    p.forward(black_box(&v[s.clone()]), z[r], &mut out[s], &mut tape)
                        .unwrap();
                }
            })
        });
    }
    run(&mut g, "exact", &CappedSimplex, &v, &z, &gup, l);
    run(
        &mut g,
        "dykstra-soft-R2",
        &Dykstra::new(2, SoftSimplex),
        &v,
        &z,
        &gup,
        l,
    );
    g.finish();
}

criterion_group!(benches, tau_algorithms, operators, batch_peer);
criterion_main!(benches);
