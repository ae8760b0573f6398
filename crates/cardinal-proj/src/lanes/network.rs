//! The sorting network that orders every lane of a block at once, and the tie repair that
//! makes its order match the per-row argsort's.

use super::Lanes;
use crate::util::rank_key;
use crate::Real;

/// A descending sorting network for `n` entries: Batcher's odd-even merge sort pruned to `n`.
#[derive(Debug, Clone)]
pub struct SortingNetwork {
    n: usize,
    /// Comparators `(i, j)`, `i < j`: afterwards `x[i] >= x[j]`.
    pairs: Vec<(u32, u32)>,
}

impl SortingNetwork {
    /// The network for `n` entries.
    pub fn new(n: usize) -> Self {
        let mut pairs = Vec::new();
        let mut p = 1;
        while p < n {
            let mut k = p;
            while k >= 1 {
                let mut j = k % p;
                while j + k < n {
                    for i in 0..k.min(n - j - k) {
                        if (i + j) / (2 * p) == (i + j + k) / (2 * p) {
                            pairs.push(((i + j) as u32, (i + j + k) as u32));
                        }
                    }
                    j += 2 * k;
                }
                k /= 2;
            }
            p *= 2;
        }
        Self { n, pairs }
    }

    /// Number of entries it sorts.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it sorts 0 entries.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of comparators.
    pub fn comparators(&self) -> usize {
        self.pairs.len()
    }

    /// Sorts every lane of `x` (length `n`, no NaN) descending.
    #[inline(always)]
    pub fn sort_desc<F: Real, const N: usize>(&self, x: &mut [Lanes<F, N>]) {
        assert_eq!(x.len(), self.n, "sorting network of another length");
        for &(i, j) in &self.pairs {
            let (lo, hi) = x.split_at_mut(j as usize);
            let (a, b) = (&mut lo[i as usize], &mut hi[0]);
            // Written as one max and one min of fresh values (x86 `maxps(q, p)`, `minps(p, q)`),
            // not as a conditional update, which compiles to a masked store that stalls the
            // next comparator's load of the same entry.
            let (mut hi, mut lo) = (*a, *b);
            for w in 0..N {
                let (p, q) = (a[w], b[w]);
                hi[w] = if q > p { q } else { p };
                lo[w] = if q > p { p } else { q };
            }
            *a = hi;
            *b = lo;
        }
    }

    /// [`Self::sort_desc`] carrying each entry's index in `idx` along (the same comparisons, so
    /// `x` ends up exactly as `sort_desc` leaves it). Tied entries end in no particular order.
    #[inline(always)]
    pub fn sort_desc_indexed<F: Real, const N: usize>(
        &self,
        x: &mut [Lanes<F, N>],
        idx: &mut [Lanes<u16, N>],
    ) {
        assert!(
            x.len() == self.n && idx.len() == self.n,
            "sorting network of another length"
        );
        for &(i, j) in &self.pairs {
            let (i, j) = (i as usize, j as usize);
            let (a, b, ia, ib) = (x[i], x[j], idx[i], idx[j]);
            let (mut hi, mut lo, mut ihi, mut ilo) = (a, b, ia, ib);
            // Values as in `sort_desc`; indices swapped by a bit mask (a select of the indices
            // compiles to a select of their addresses and gathers).
            for w in 0..N {
                let (p, q) = (a[w], b[w]);
                hi[w] = if q > p { q } else { p };
                lo[w] = if q > p { p } else { q };
                let m = (q > p) as u16;
                let flip = (ia[w] ^ ib[w]) & m.wrapping_neg();
                ihi[w] = ia[w] ^ flip;
                ilo[w] = ib[w] ^ flip;
            }
            x[i] = hi;
            x[j] = lo;
            idx[i] = ihi;
            idx[j] = ilo;
        }
    }
}

/// Puts tied entries of the sorted lanes `sorted` (indices `idx` into `v`) in the order of the
/// per-row argsort ([`rank_key`], which `util::argsort_desc` sorts by), so that the VJP ranks
/// tied entries as the per-row operator does. Runs of equal values are rare outside
/// constructed inputs: one vector pass finds them, a scalar pass fixes their lanes.
pub(super) fn order_ties<F: Real, const N: usize>(
    v: &[Lanes<F, N>],
    sorted: &mut [Lanes<F, N>],
    idx: &mut [Lanes<u16, N>],
) {
    let n = sorted.len();
    let mut tied = [false; N];
    for k in 1..n {
        for w in 0..N {
            tied[w] |= sorted[k][w] == sorted[k - 1][w];
        }
    }
    let key = |w: usize, i: u16| rank_key(v[i as usize][w], i as usize);
    for w in (0..N).filter(|&w| tied[w]) {
        let mut s = 0;
        while s < n {
            let mut e = s + 1;
            while e < n && sorted[e][w] == sorted[s][w] {
                e += 1;
            }
            // Insertion sort of the run by (key, index).
            for k in s + 1..e {
                let mut m = k;
                while m > s && key(w, idx[m][w]) < key(w, idx[m - 1][w]) {
                    let t = idx[m][w];
                    idx[m][w] = idx[m - 1][w];
                    idx[m - 1][w] = t;
                    m -= 1;
                }
            }
            for k in s..e {
                sorted[k][w] = v[idx[k][w] as usize][w];
            }
            s = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{argsort_desc, SortScratch};

    /// The lockstep sort with its tie repair ranks every lane's entries exactly as the per-row
    /// argsort does, on rows full of ties (few distinct values, signed zeros among them), for
    /// `f32` and `f64` and for lengths on both sides of the per-row radix sort's threshold.
    #[test]
    fn lockstep_ties_rank_as_the_row_sort() {
        lockstep_ties_check::<f32>();
        lockstep_ties_check::<f64>();
    }

    fn lockstep_ties_check<F: Real>() {
        const N: usize = 8;
        let pool = [1.5, 0.25, 0.0, -0.0, -2.0];
        let mut g = cardinal_testkit::Lcg::new(17);
        for n in [1, 2, 7, 33, 159, crate::util::RADIX_MIN_LEN + 5] {
            let net = SortingNetwork::new(n);
            let v: Vec<Lanes<F, N>> = (0..n)
                .map(|_| std::array::from_fn(|_| F::from(pool[g.below(pool.len())]).unwrap()))
                .collect();
            let mut sorted = v.clone();
            let mut idx: Vec<Lanes<u16, N>> = (0..n).map(|i| [i as u16; N]).collect();
            net.sort_desc_indexed(&mut sorted, &mut idx);
            order_ties(&v, &mut sorted, &mut idx);
            let (mut perm, mut scratch) = (Vec::new(), SortScratch::default());
            for w in 0..N {
                let row: Vec<F> = v.iter().map(|x| x[w]).collect();
                argsort_desc(&row, &mut perm, &mut scratch);
                let lockstep: Vec<u32> = idx.iter().map(|i| u32::from(i[w])).collect();
                assert_eq!(lockstep, perm, "n {n} lane {w}");
                for (k, &i) in perm.iter().enumerate() {
                    assert_eq!(sorted[k][w].order_key(), row[i as usize].order_key());
                }
            }
        }
    }
}
