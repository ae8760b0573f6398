//! Unit tests of the sorting network and the tie repair.

use super::*;
use crate::util::{argsort_desc, SortScratch};

/// Every path of the cache-blocked order (stages inside a tile, long layers streamed, short
/// ones per tile, tiles within tiles, groups straddling the pruned end) sorts: by the 0-1
/// principle, every 0/1 input of up to 13 entries with tiles of 2 to 16 wires, values and
/// indices together
/// (the indices end as a permutation that reads the sorted values back).
#[test]
fn every_tiling_sorts_every_binary_input() {
    const N: usize = 16;
    for tiles in [[2, 2], [4, 2], [4, 4], [8, 2], [16, 4]] {
        for n in 1..=13usize {
            let net = SortingNetwork::with_tiles(n, tiles);
            for base in (0u32..(1 << n)).step_by(N) {
                // Lane w holds the bits of input `base + w`.
                let v: Vec<Lanes<f32, N>> = (0..n)
                    .map(|i| std::array::from_fn(|w| (((base + w as u32) >> i) & 1) as f32))
                    .collect();
                // The outputs start as garbage: the sorts must not read them.
                let (mut x, mut idx) = (vec![[9.0; N]; n], vec![[7u16; N]; n]);
                net.sort_desc_indexed(&v, &mut x, &mut idx);
                let mut plain = vec![[9.0; N]; n];
                net.sort_desc(&v, &mut plain);
                assert_eq!(plain, x, "tiles {tiles:?} n {n}");
                for w in 0..N {
                    let mut seen = vec![false; n];
                    for k in 0..n {
                        assert_eq!(x[k][w], v[idx[k][w] as usize][w]);
                        seen[idx[k][w] as usize] = true;
                        if k > 0 {
                            assert!(x[k - 1][w] >= x[k][w], "tiles {tiles:?} n {n}");
                        }
                    }
                    assert!(seen.iter().all(|&s| s));
                }
            }
        }
    }
}

/// Longer rows, every tile size: the same multiset in descending order as a comparison sort.
#[test]
fn every_tiling_sorts_long_rows() {
    const N: usize = 8;
    let mut g = cardinal_testkit::Lcg::new(5);
    for tiles in [[2, 2], [8, 8], [32, 4], [64, 16], TILES] {
        for n in [17usize, 100, 129, 300, 513, 2100] {
            let net = SortingNetwork::with_tiles(n, tiles);
            let v: Vec<Lanes<f64, N>> = (0..n)
                .map(|_| std::array::from_fn(|_| g.below(40) as f64 - 20.0))
                .collect();
            let mut x = vec![[0.5; N]; n];
            net.sort_desc(&v, &mut x);
            for w in 0..N {
                let mut expect: Vec<f64> = v.iter().map(|r| r[w]).collect();
                expect.sort_by(|a, b| b.total_cmp(a));
                let got: Vec<f64> = x.iter().map(|r| r[w]).collect();
                assert_eq!(got, expect, "tiles {tiles:?} n {n} lane {w}");
            }
        }
    }
}

/// The lockstep sort with its tie repair ranks every lane's entries exactly as the per-row
/// argsort does, on rows full of ties (few distinct values, signed zeros among them) and on
/// rows with a few ties among many values (as in training: runs of two or three, not in every
/// lane), for `f32` and `f64` and for lengths on both sides of the per-row radix sort's
/// threshold.
#[test]
fn lockstep_ties_rank_as_the_row_sort() {
    lockstep_ties_check::<f32>();
    lockstep_ties_check::<f64>();
}

fn lockstep_ties_check<F: Real>() {
    const N: usize = 8;
    let pool = [1.5, 0.25, 0.0, -0.0, -2.0];
    let mut g = cardinal_testkit::Lcg::new(17);
    let cases = [1, 2, 7, 33, 159, crate::util::RADIX_MIN_LEN + 5]
        .into_iter()
        .flat_map(|n| [(n, true), (n, false)]);
    for (n, few_values) in cases {
        let net = SortingNetwork::new(n);
        let v: Vec<Lanes<F, N>> = (0..n)
            .map(|_| {
                std::array::from_fn(|_| {
                    let x = if few_values {
                        pool[g.below(pool.len())]
                    } else {
                        // 4n values: a tie in about half the lanes of a long row.
                        (g.below(4 * n) as f64 - 2.0 * n as f64) / 8.0
                    };
                    F::from(x).unwrap()
                })
            })
            .collect();
        let (mut sorted, mut idx) = (v.clone(), vec![[0u16; N]; n]);
        net.sort_desc_indexed(&v, &mut sorted, &mut idx);
        order_ties(&v, &mut sorted, &mut idx);
        let (mut perm, mut scratch) = (Vec::new(), SortScratch::default());
        for w in 0..N {
            let row: Vec<F> = v.iter().map(|x| x[w]).collect();
            argsort_desc(&row, &mut perm, &mut scratch);
            let lockstep: Vec<u32> = idx.iter().map(|i| u32::from(i[w])).collect();
            assert_eq!(lockstep, perm, "n {n} few values {few_values} lane {w}");
            for (k, &i) in perm.iter().enumerate() {
                assert_eq!(sorted[k][w].order_key(), row[i as usize].order_key());
            }
        }
    }
}
