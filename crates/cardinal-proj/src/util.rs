//! Shared helpers: input validation, descending argsort, small numeric utilities.

use crate::{ProjError, Real};
use std::cmp::Ordering;

/// Which range `z` must lie in.
#[derive(Clone, Copy)]
pub(crate) enum ZRange {
    /// `0 <= z <= L` (sets with the upper bound 1: C(z)).
    UpToLen,
    /// `z >= 0` (the positive simplex B(z) has no upper limit).
    NonNegative,
}

/// Checks the row, the output buffer and `z`; every operator calls this first so that invalid
/// input becomes an error instead of a NaN further down.
pub(crate) fn validate<F: Real>(
    v: &[F],
    z: F,
    out_len: usize,
    range: ZRange,
) -> Result<(), ProjError> {
    validate_shape(v, z, out_len, range)?;
    check_finite(v)
}

/// Everything [`validate`] checks except the finiteness of the entries (no pass over the row).
pub(crate) fn validate_shape<F: Real>(
    v: &[F],
    z: F,
    out_len: usize,
    range: ZRange,
) -> Result<(), ProjError> {
    if v.is_empty() {
        return Err(ProjError::Empty);
    }
    if v.len() != out_len {
        return Err(ProjError::LengthMismatch {
            input: v.len(),
            output: out_len,
        });
    }
    let zf = z.to_f64().unwrap_or(f64::NAN);
    match range {
        ZRange::UpToLen => {
            // `!(a && b)` so that NaN is rejected too.
            if !(zf >= 0.0 && zf <= v.len() as f64) {
                return Err(ProjError::InvalidZ {
                    z: zf,
                    len: v.len(),
                });
            }
        }
        ZRange::NonNegative => {
            if !(zf >= 0.0 && zf.is_finite()) {
                return Err(ProjError::NegativeZ { z: zf });
            }
        }
    }
    Ok(())
}

/// `NonFinite` for the first entry that is NaN or infinite.
pub(crate) fn check_finite<F: Real>(v: &[F]) -> Result<(), ProjError> {
    // A single pass with a cheap test; the index is only searched for on failure.
    if !v.iter().all(|x| x.is_finite()) {
        let (index, value) = v.iter().enumerate().find(|(_, x)| !x.is_finite()).unwrap();
        return Err(ProjError::NonFinite {
            index,
            value: value.to_f64().unwrap_or(f64::NAN),
        });
    }
    Ok(())
}

/// Descending order on finite values (validated before any sort, so `partial_cmp` never fails).
#[inline]
pub(crate) fn desc<F: Real>(a: &F, b: &F) -> Ordering {
    b.partial_cmp(a).unwrap_or(Ordering::Equal)
}

/// Reusable buffers of [`argsort_desc`] (nothing is allocated once they have grown).
#[derive(Debug, Clone, Default)]
pub(crate) struct SortScratch {
    keys: Vec<u64>,
    tmp: Vec<u64>,
    wide: Vec<u128>,
}

/// Below this length the packed keys are sorted by comparison (`sort_unstable`), above it by an
/// LSD radix sort on the 32 value bits.
pub(crate) const RADIX_MIN_LEN: usize = 320;

/// The tie order of every projection's sort, per row and in lockstep: entry `i` of value `x`
/// comes before every entry with a larger key, that is, descending values ([`Real::order_key`]:
/// `+0` before `−0`), and equal values by ascending index. The order key, complemented (for
/// descending order), packed above the index, so that sorting compares plain integers; for
/// `f32` its low 64 bits are enough (the key has 32 bits). The per-row sort
/// ([`argsort_desc`]) sorts by it, and the lockstep VJP (`lanes::network::order_ties`) puts
/// tied entries in its order, so both rank ties alike (tested: `lanes::network` tests).
#[inline(always)]
pub(crate) fn rank_key<F: Real>(x: F, i: usize) -> u128 {
    ((!x.order_key() as u128) << 32) | i as u128
}

/// Fills `perm` with a permutation sorting `v` descending (ties by ascending index, so the
/// result is fully determined by `v`): by [`rank_key`], as plain integers, `u64` for `f32`
/// (radix sort on the upper 32 bits for long rows), `u128` for `f64`.
pub(crate) fn argsort_desc<F: Real>(v: &[F], perm: &mut Vec<u32>, s: &mut SortScratch) {
    perm.clear();
    if F::KEY_BITS <= 32 {
        s.keys.clear();
        s.keys
            .extend(v.iter().enumerate().map(|(i, &x)| rank_key(x, i) as u64));
        if v.len() < RADIX_MIN_LEN {
            s.keys.sort_unstable();
            perm.extend(s.keys.iter().map(|&k| k as u32));
        } else {
            radix_argsort_hi32(&mut s.keys, &mut s.tmp, perm);
        }
    } else {
        s.wide.clear();
        s.wide
            .extend(v.iter().enumerate().map(|(i, &x)| rank_key(x, i)));
        s.wide.sort_unstable();
        perm.extend(s.wide.iter().map(|&k| k as u32));
    }
}

/// Stable LSD radix sort of `keys` by their upper 32 bits (4 passes of 8 bits; a pass whose
/// digit is the same for every key is skipped), writing the low 32 bits (the indices) of the
/// sorted keys to `perm`; the last pass scatters straight into `perm`. Keys enter in ascending
/// index order, so stability gives the same order as sorting the whole `u64`.
pub(crate) fn radix_argsort_hi32(keys: &mut [u64], tmp: &mut Vec<u64>, perm: &mut Vec<u32>) {
    let n = keys.len();
    let mut hist = [[0u32; 256]; 4];
    for &k in keys.iter() {
        let h = (k >> 32) as u32;
        hist[0][(h & 0xff) as usize] += 1;
        hist[1][((h >> 8) & 0xff) as usize] += 1;
        hist[2][((h >> 16) & 0xff) as usize] += 1;
        hist[3][(h >> 24) as usize] += 1;
    }
    // Passes that actually reorder (a digit shared by every key sorts nothing).
    let mut passes = [0usize; 4];
    let mut n_passes = 0;
    for (pass, h) in hist.iter().enumerate() {
        if n > 0 && h[((keys[0] >> (32 + 8 * pass)) & 0xff) as usize] as usize != n {
            passes[n_passes] = pass;
            n_passes += 1;
        }
    }
    perm.clear();
    if n_passes == 0 {
        perm.extend(keys.iter().map(|&k| k as u32));
        return;
    }
    tmp.clear();
    tmp.resize(n, 0);
    perm.resize(n, 0);
    let mut in_keys = true;
    for (step, &pass) in passes[..n_passes].iter().enumerate() {
        let h = &mut hist[pass];
        let shift = 32 + 8 * pass;
        let mut sum = 0u32;
        for c in h.iter_mut() {
            let t = *c;
            *c = sum;
            sum += t;
        }
        let src: &[u64] = if in_keys { keys } else { tmp };
        if step + 1 == n_passes {
            for &k in src {
                let d = ((k >> shift) & 0xff) as usize;
                perm[h[d] as usize] = k as u32;
                h[d] += 1;
            }
            return;
        }
        let (src, dst) = if in_keys {
            (&keys[..], &mut tmp[..])
        } else {
            (&tmp[..], &mut keys[..])
        };
        for &k in src {
            let d = ((k >> shift) & 0xff) as usize;
            dst[h[d] as usize] = k;
            h[d] += 1;
        }
        in_keys = !in_keys;
    }
}

/// `F::from(usize)`; exact for every length we handle.
#[inline]
pub(crate) fn of<F: Real>(n: usize) -> F {
    F::from_usize(n).expect("usize fits a float")
}

/// Lanes of the reductions below (explicit, so that LLVM vectorises without reassociating).
const LANES: usize = 8;

/// `out = m ⊙ g`, returns `Σ m ⊙ g` (summed in [`LANES`] interleaved partial sums).
#[inline]
pub(crate) fn masked_copy_sum<F: Real>(m: &[F], g: &[F], out: &mut [F]) -> F {
    let mut acc = [F::zero(); LANES];
    let n = out.len().min(m.len()).min(g.len());
    let (m, g, out) = (&m[..n], &g[..n], &mut out[..n]);
    let mut oc = out.chunks_exact_mut(LANES);
    let mut mc = m.chunks_exact(LANES);
    let mut gc = g.chunks_exact(LANES);
    for ((o, mm), gg) in (&mut oc).zip(&mut mc).zip(&mut gc) {
        for k in 0..LANES {
            let x = mm[k] * gg[k];
            o[k] = x;
            acc[k] += x;
        }
    }
    for (k, ((o, &mm), &gg)) in oc
        .into_remainder()
        .iter_mut()
        .zip(mc.remainder())
        .zip(gc.remainder())
        .enumerate()
    {
        let x = mm * gg;
        *o = x;
        acc[k] += x;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// Makes `perm` sort `v` descending when it nearly does already (the order of a related row):
/// a stable insertion sort on the gathered values, so entries already in order keep their
/// relative order. `mu` receives the sorted values. Gives up (returning `false`, `perm` still a
/// permutation) once the work exceeds a few passes, or on a non-finite entry.
pub(crate) fn repair_order<F: Real>(v: &[F], perm: &mut [u32], mu: &mut Vec<F>) -> bool {
    mu.clear();
    mu.extend(perm.iter().map(|&i| v[i as usize]));
    if !mu.iter().all(|x| x.is_finite()) {
        return false;
    }
    let mut budget = 4 * mu.len() + 64;
    for k in 1..mu.len() {
        let (x, i) = (mu[k], perm[k]);
        let mut j = k;
        while j > 0 && mu[j - 1] < x {
            mu[j] = mu[j - 1];
            perm[j] = perm[j - 1];
            j -= 1;
        }
        mu[j] = x;
        perm[j] = i;
        budget = match budget.checked_sub(k - j) {
            Some(b) => b,
            None => return false,
        };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argsort_paths_agree_with_a_stable_comparison_sort() {
        // Both key paths (comparison sort below RADIX_MIN_LEN, radix above; u128 keys for f64):
        // descending values, ties (signed zeros compare equal but +0 ranks first) by index.
        let mut s = 7u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for &l in &[1usize, 2, 5, RADIX_MIN_LEN - 1, RADIX_MIN_LEN, 1000, 5000] {
            let v: Vec<f32> = (0..l)
                .map(|_| match next() % 6 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => 1.5,
                    3 => -((next() % 1000) as f32) * 1e-3,
                    4 => f32::MIN_POSITIVE * (next() % 4) as f32,
                    _ => ((next() % 100_000) as f32 - 50_000.0) * 1e-2,
                })
                .collect();
            let key = |x: f32| (x, x.is_sign_positive());
            let mut want: Vec<u32> = (0..l as u32).collect();
            want.sort_by(|&a, &b| {
                let (xa, xb) = (key(v[a as usize]), key(v[b as usize]));
                xb.0.partial_cmp(&xa.0).unwrap().then(xb.1.cmp(&xa.1))
            });
            let (mut perm, mut sc) = (Vec::new(), SortScratch::default());
            argsort_desc(&v, &mut perm, &mut sc);
            assert_eq!(perm, want, "f32, L = {l}");
            let v64: Vec<f64> = v.iter().map(|&x| x as f64).collect();
            argsort_desc(&v64, &mut perm, &mut sc);
            assert_eq!(perm, want, "f64, L = {l}");
        }
        // Radix with every digit shared (no pass) or one differing digit (one pass).
        for v in [
            vec![0.75f32; 1000],
            (0..1000).map(|i| (i % 3) as f32).collect(),
        ] {
            let mut want: Vec<u32> = (0..1000).collect();
            want.sort_by(|&a, &b| v[b as usize].partial_cmp(&v[a as usize]).unwrap());
            let (mut perm, mut sc) = (Vec::new(), SortScratch::default());
            argsort_desc(&v, &mut perm, &mut sc);
            assert_eq!(perm, want);
        }
    }

    #[test]
    fn repair_order_sorts_nearly_sorted_and_gives_up_on_reversed() {
        let v: Vec<f64> = (0..300).map(|i| -(i as f64) * 0.5).collect();
        let mut perm: Vec<u32> = (0..300).collect();
        perm.swap(10, 11);
        perm.swap(200, 203);
        let mut mu = Vec::new();
        assert!(repair_order(&v, &mut perm, &mut mu));
        assert_eq!(perm, (0..300).collect::<Vec<u32>>());
        assert!(mu.windows(2).all(|w| w[1] <= w[0]));
        let mut rev: Vec<u32> = (0..300).rev().collect();
        assert!(!repair_order(&v, &mut rev, &mut mu));
        let mut sorted_rev = rev.clone();
        sorted_rev.sort_unstable();
        assert_eq!(
            sorted_rev,
            (0..300).collect::<Vec<u32>>(),
            "still a permutation"
        );
        let w = [1.0, f64::NAN];
        assert!(!repair_order(&w, &mut [0, 1], &mut mu));
    }
}
