//! The sorting network that orders every lane of a block at once, and the tie repair that
//! makes its order match the per-row argsort's.

use super::Lanes;
use crate::util::rank_key;
use crate::Real;

/// A descending sorting network for `n` entries: the bitonic sorter pruned to `n`, run in
/// groups of up to three layers on up to eight wires held in registers.
///
/// Why bitonic, and why groups: a comparator of a block reads and writes whole lane vectors, so
/// the network is bound by stores, not by comparisons. The bitonic sorter's layers have a
/// regular shape (in "flip" form: every comparator puts the larger entry on the lower wire),
/// so that three consecutive layers of a stage act on closed sets of eight wires; loading such
/// a set once, running its twelve comparators and storing it once writes each wire once per
/// three layers instead of once per layer. Batcher's odd-even merge sort, the network before,
/// has fewer comparators but no such closed sets; the grouped bitonic network sorts Delicious's
/// 983 labels in under half the time (docs/results/speed.md).
///
/// Pruning: the sorter is built for the next power of two; the wires from `n` on stand for
/// entries of `−∞`. A comparator with its lower wire below `n` and its upper wire at `n` or
/// beyond would leave both in place, and one with both wires beyond `n` compares two `−∞`:
/// both are skipped, so the pruned network sorts any `n` entries without padding.
#[derive(Debug, Clone)]
pub struct SortingNetwork {
    n: usize,
    /// Wires per tile of the cache-blocked order, largest first ([`TILES`]; smaller in tests,
    /// to reach every path of the order with rows short enough for exhaustive checks).
    tiles: [usize; 2],
    comparators: usize,
}

/// The first layer of an eight- or four-wire group: the flip of a stage's merge (wire `q`
/// against wire `last − q`) or a half-cleaner (wire `q` against `q + half`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum First {
    Flip,
    Half,
}

/// One way of moving wires in and out: values alone, or values with their indices.
trait Wires {
    /// One wire: its lane vector(s).
    type W: Copy;
    /// The number of wires.
    fn len(&self) -> usize;
    fn load(&self, k: usize) -> Self::W;
    fn store(&mut self, k: usize, w: Self::W);
    /// The comparator: the larger entry of every lane to the first result.
    fn cmp(a: Self::W, b: Self::W) -> (Self::W, Self::W);
}

struct Values<'a, F, const N: usize>(&'a mut [Lanes<F, N>]);

impl<F: Real, const N: usize> Wires for Values<'_, F, N> {
    type W = Lanes<F, N>;
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn load(&self, k: usize) -> Self::W {
        self.0[k]
    }
    #[inline(always)]
    fn store(&mut self, k: usize, w: Self::W) {
        self.0[k] = w;
    }
    #[inline(always)]
    fn cmp(a: Self::W, b: Self::W) -> (Self::W, Self::W) {
        // One max and one min of fresh values (x86 `maxps(q, p)`, `minps(p, q)`).
        let (mut hi, mut lo) = (a, b);
        for w in 0..N {
            let (p, q) = (a[w], b[w]);
            hi[w] = if q > p { q } else { p };
            lo[w] = if q > p { p } else { q };
        }
        (hi, lo)
    }
}

struct Indexed<'a, F, const N: usize>(&'a mut [Lanes<F, N>], &'a mut [Lanes<u16, N>]);

impl<F: Real, const N: usize> Wires for Indexed<'_, F, N> {
    type W = (Lanes<F, N>, Lanes<u16, N>);
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn load(&self, k: usize) -> Self::W {
        (self.0[k], self.1[k])
    }
    #[inline(always)]
    fn store(&mut self, k: usize, w: Self::W) {
        self.0[k] = w.0;
        self.1[k] = w.1;
    }
    #[inline(always)]
    fn cmp((a, ia): Self::W, (b, ib): Self::W) -> (Self::W, Self::W) {
        let (mut hi, mut lo, mut ihi, mut ilo) = (a, b, ia, ib);
        // Values as in `Values`; indices swapped by a bit mask (a select of the indices
        // compiles to a select of their addresses and gathers), in a loop of their own so
        // that it runs at the `u16` vector's width (one loop ran it at the `f32` vector's).
        let mut m = [0u16; N];
        for w in 0..N {
            let (p, q) = (a[w], b[w]);
            hi[w] = if q > p { q } else { p };
            lo[w] = if q > p { p } else { q };
            m[w] = u16::from(q > p).wrapping_neg();
        }
        for w in 0..N {
            let flip = (ia[w] ^ ib[w]) & m[w];
            ihi[w] = ia[w] ^ flip;
            ilo[w] = ib[w] ^ flip;
        }
        ((hi, ihi), (lo, ilo))
    }
}

/// Runs comparator `(i, j)` of the group `v` in place.
#[inline(always)]
fn cs<S: Wires, const G: usize>(v: &mut [S::W; G], i: usize, j: usize) {
    let (hi, lo) = S::cmp(v[i], v[j]);
    v[i] = hi;
    v[j] = lo;
}

/// The wires of an eight-wire group `[lo, lo + e, lo + 2e, lo + 3e, hi − 3e, …, hi]`, of a
/// four-wire group `[lo, lo + e, hi − e, hi]`.
#[inline(always)]
fn wires8(lo: usize, hi: usize, e: usize) -> [usize; 8] {
    [
        lo,
        lo + e,
        lo + 2 * e,
        lo + 3 * e,
        hi - 3 * e,
        hi - 2 * e,
        hi - e,
        hi,
    ]
}

#[inline(always)]
fn wires4(lo: usize, hi: usize, e: usize) -> [usize; 4] {
    [lo, lo + e, hi - e, hi]
}

/// The comparators of an eight-wire group, layer by layer, as pairs of its positions.
fn pairs8(first: First) -> [(usize, usize); 12] {
    let l1 = match first {
        First::Flip => [(0, 7), (1, 6), (2, 5), (3, 4)],
        First::Half => [(0, 4), (1, 5), (2, 6), (3, 7)],
    };
    [
        l1[0],
        l1[1],
        l1[2],
        l1[3],
        (0, 2),
        (1, 3),
        (4, 6),
        (5, 7),
        (0, 1),
        (2, 3),
        (4, 5),
        (6, 7),
    ]
}

fn pairs4(first: First) -> [(usize, usize); 4] {
    let l1 = match first {
        First::Flip => [(0, 3), (1, 2)],
        First::Half => [(0, 2), (1, 3)],
    };
    [l1[0], l1[1], (0, 1), (2, 3)]
}

/// What the network does, group by group: a visitor of its groups in an order that respects
/// every wire's sequence of comparators.
trait Visit {
    fn group8(&mut self, lo: usize, hi: usize, e: usize, first: First);
    fn group4(&mut self, lo: usize, hi: usize, e: usize, first: First);
    fn pair(&mut self, lo: usize, hi: usize);
}

impl SortingNetwork {
    /// The network for `n` entries.
    pub fn new(n: usize) -> Self {
        Self::with_tiles(n, TILES)
    }

    fn with_tiles(n: usize, tiles: [usize; 2]) -> Self {
        let mut count = Count { n, comparators: 0 };
        walk(n, tiles, 2, &mut count);
        Self {
            n,
            tiles,
            comparators: count.comparators,
        }
    }

    /// Number of entries it sorts.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it sorts 0 entries.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of comparators (after pruning).
    pub fn comparators(&self) -> usize {
        self.comparators
    }

    /// Sorts every lane of `src` (length `n`, no NaN) descending into `x` (its contents
    /// ignored). The network's first layer reads `src`, so callers make no copy to sort in
    /// place.
    #[inline(always)]
    pub fn sort_desc<F: Real, const N: usize>(&self, src: &[Lanes<F, N>], x: &mut [Lanes<F, N>]) {
        assert!(
            src.len() == self.n && x.len() == self.n,
            "sorting network of another length"
        );
        let mut out = Values(x);
        first_layer(self.n, |k| src[k], &mut out);
        walk(self.n, self.tiles, 4, &mut Run(out));
    }

    /// [`Self::sort_desc`] carrying each entry's index along: `idx[k][w]` ends as the index in
    /// `src` of lane `w`'s `k`-th largest entry (the contents of `x` and `idx` are ignored; the
    /// first layer gives every entry its index). The same comparisons, so `x` ends exactly as
    /// `sort_desc` leaves it. Tied entries end in no particular order.
    #[inline(always)]
    pub fn sort_desc_indexed<F: Real, const N: usize>(
        &self,
        src: &[Lanes<F, N>],
        x: &mut [Lanes<F, N>],
        idx: &mut [Lanes<u16, N>],
    ) {
        assert!(
            src.len() == self.n && x.len() == self.n && idx.len() == self.n,
            "sorting network of another length"
        );
        assert!(
            self.n <= 1 << 16,
            "indexed sorts take rows of up to 65536 entries"
        );
        let mut out = Indexed(x, idx);
        first_layer(self.n, |k| (src[k], [k as u16; N]), &mut out);
        walk(self.n, self.tiles, 4, &mut Run(out));
    }
}

/// Wires per tile of the cache-blocked order, largest first: 2048 wires of 32 lanes with their
/// indices (or of 64 lanes without) are 384-512 KiB, within a 1 MiB L2 cache; 128 wires are
/// 24-32 KiB, within a 32 KiB L1 data cache.
const TILES: [usize; 2] = [2048, 128];

/// Visits the groups of the pruned bitonic sorter for `n` entries in a cache-blocked order.
///
/// Stage `m` merges blocks of `s = 2^m` wires: a flip layer (wire `B + i` against
/// `B + s − 1 − i`), then half-cleaners at distances `s/4, …, 1` (wire `x` against `x + d` in
/// the first half of every aligned `2d` block). The flip and the next two half-cleaners form
/// eight-wire groups; the remaining half-cleaners go three at a time (eight wires), then two
/// (four) or one (pairs).
///
/// Order: every comparator of a layer whose blocks fit in a tile (a power of two of wires)
/// depends only on that tile's wires. So the stages up to a tile's size run tile by tile, and
/// so do the short half-cleaners of each larger stage, after its long layers have streamed
/// over the whole row; within an L2 tile, the same again with L1 tiles. A row then crosses
/// each level of the memory hierarchy a few times per stage instead of once per layer, which
/// keeps long rows (`L` in the tens of thousands) from falling out of the caches. (Written
/// out for two levels, not recursively: every function here must inline into the caller's
/// instruction-set variant.)
///
/// `first` is the first stage that runs: 2 (all of them, as the comparator count needs), or 4
/// after the sorts have run the first layer themselves ([`first_layer`]).
#[inline(always)]
fn walk(n: usize, tiles: [usize; 2], first: usize, v: &mut impl Visit) {
    if n < 2 {
        return;
    }
    let top = n.next_power_of_two();
    let t2 = tiles[0].min(top);
    let t1 = tiles[1].min(t2);
    // Stages within an L1 tile, tile by tile.
    for b in (0..n).step_by(t1) {
        let mut s = first;
        while s <= t1 {
            let d = merge_start(s, b, b + t1, v);
            halves(d, 0, b, b + t1, v);
            s *= 2;
        }
    }
    // Stages within an L2 tile, tile by tile.
    for b in (0..n).step_by(t2) {
        let mut s = (2 * t1).max(first);
        while s <= t2 {
            let d = merge_start(s, b, b + t2, v);
            finish_in_tile(n, d, b, b + t2, t1, v);
            s *= 2;
        }
    }
    // Longer stages over the whole row.
    let mut s = (2 * t2).max(first);
    while s <= top {
        let d = merge_start(s, 0, top, v);
        let d = halves(d, t2 / 2, 0, top, v);
        for b in (0..n).step_by(t2) {
            finish_in_tile(n, d, b, b + t2, t1, v);
        }
        s *= 2;
    }
}

/// The half-cleaners from distance `d` down on the wires `from..to`: streamed over the range
/// while their blocks exceed a tile of `t1` wires, then tile by tile.
#[inline(always)]
fn finish_in_tile(n: usize, d: usize, from: usize, to: usize, t1: usize, v: &mut impl Visit) {
    if to - from > t1 {
        let d = halves(d, t1 / 2, from, to, v);
        for b in (from..to.min(n)).step_by(t1) {
            halves(d, 0, b, b + t1, v);
        }
    } else {
        halves(d, 0, from, to, v);
    }
}

/// The flip of stage `s` and up to two half-cleaners after it, on the wires `from..to`
/// (whole blocks of `s`); returns the distance of the next half-cleaner (0 if none).
#[inline(always)]
fn merge_start(s: usize, from: usize, to: usize, v: &mut impl Visit) -> usize {
    match s {
        2 => {
            for b in (from..to).step_by(2) {
                v.pair(b, b + 1);
            }
            0
        }
        4 => {
            for b in (from..to).step_by(4) {
                v.group4(b, b + 3, 1, First::Flip);
            }
            0
        }
        _ => {
            let e = s / 8;
            for b in (from..to).step_by(s) {
                for i in 0..e {
                    v.group8(b + i, b + s - 1 - i, e, First::Flip);
                }
            }
            s / 16
        }
    }
}

/// The half-cleaners from distance `d` down, on the wires `from..to` (whole blocks of `2d`),
/// while the distance exceeds `above`; returns the distance of the next one (0 if none).
#[inline(always)]
fn halves(mut d: usize, above: usize, from: usize, to: usize, v: &mut impl Visit) -> usize {
    while d >= 1 && d > above {
        if d >= 4 {
            let e = d / 4;
            for b in (from..to).step_by(2 * d) {
                for o in 0..e {
                    v.group8(b + o, b + o + 7 * e, e, First::Half);
                }
            }
            d /= 8;
        } else if d == 2 {
            for b in (from..to).step_by(4) {
                v.group4(b, b + 3, 1, First::Half);
            }
            d = 0;
        } else {
            for b in (from..to).step_by(2) {
                v.pair(b, b + 1);
            }
            d = 0;
        }
    }
    d
}

/// The network's first layer (stage 2: wire `2b` against `2b + 1`) from the wires `load`
/// gives into `out`; a last odd wire is copied. `walk` from stage 4 then finishes the sort.
#[inline(always)]
fn first_layer<S: Wires>(n: usize, load: impl Fn(usize) -> S::W, out: &mut S) {
    for b in (0..n).step_by(2) {
        if b + 1 < n {
            let (hi, lo) = S::cmp(load(b), load(b + 1));
            out.store(b, hi);
            out.store(b + 1, lo);
        } else {
            out.store(b, load(b));
        }
    }
}

/// Counts the comparators the pruned network runs.
struct Count {
    n: usize,
    comparators: usize,
}

impl Visit for Count {
    fn group8(&mut self, lo: usize, hi: usize, e: usize, first: First) {
        let w = wires8(lo, hi, e);
        self.comparators += pairs8(first)
            .iter()
            .filter(|&&(_, j)| w[j] < self.n)
            .count();
    }
    fn group4(&mut self, lo: usize, hi: usize, e: usize, first: First) {
        let w = wires4(lo, hi, e);
        self.comparators += pairs4(first)
            .iter()
            .filter(|&&(_, j)| w[j] < self.n)
            .count();
    }
    fn pair(&mut self, _lo: usize, hi: usize) {
        self.comparators += usize::from(hi < self.n);
    }
}

/// Runs the network on the wires of `S`: a whole group in registers where all its wires are
/// below `n`, comparator by comparator (skipping pruned ones) where the group straddles `n`.
struct Run<S>(S);

impl<S: Wires> Run<S> {
    /// The comparators `pairs` of the group on wires `w`, one at a time, skipping those whose
    /// upper wire is pruned.
    #[inline(always)]
    fn partial(&mut self, w: &[usize], pairs: &[(usize, usize)]) {
        let n = self.0.len();
        for &(i, j) in pairs {
            if w[j] < n {
                let (hi, lo) = S::cmp(self.0.load(w[i]), self.0.load(w[j]));
                self.0.store(w[i], hi);
                self.0.store(w[j], lo);
            }
        }
    }
}

impl<S: Wires> Visit for Run<S> {
    #[inline(always)]
    fn group8(&mut self, lo: usize, hi: usize, e: usize, first: First) {
        let n = self.0.len();
        if lo >= n {
            return;
        }
        let w = wires8(lo, hi, e);
        if hi >= n {
            return self.partial(&w, &pairs8(first));
        }
        let l = |q: usize| self.0.load(w[q]);
        let mut v: [S::W; 8] = [l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7)];
        // Constant positions, written out, so that the group stays in registers: a loop over
        // `pairs8` left it in memory, 4× slower.
        if first == First::Flip {
            cs::<S, 8>(&mut v, 0, 7);
            cs::<S, 8>(&mut v, 1, 6);
            cs::<S, 8>(&mut v, 2, 5);
            cs::<S, 8>(&mut v, 3, 4);
        } else {
            cs::<S, 8>(&mut v, 0, 4);
            cs::<S, 8>(&mut v, 1, 5);
            cs::<S, 8>(&mut v, 2, 6);
            cs::<S, 8>(&mut v, 3, 7);
        }
        cs::<S, 8>(&mut v, 0, 2);
        cs::<S, 8>(&mut v, 1, 3);
        cs::<S, 8>(&mut v, 4, 6);
        cs::<S, 8>(&mut v, 5, 7);
        cs::<S, 8>(&mut v, 0, 1);
        cs::<S, 8>(&mut v, 2, 3);
        cs::<S, 8>(&mut v, 4, 5);
        cs::<S, 8>(&mut v, 6, 7);
        for q in 0..8 {
            self.0.store(w[q], v[q]);
        }
    }

    #[inline(always)]
    fn group4(&mut self, lo: usize, hi: usize, e: usize, first: First) {
        let n = self.0.len();
        if lo >= n {
            return;
        }
        let w = wires4(lo, hi, e);
        if hi >= n {
            return self.partial(&w, &pairs4(first));
        }
        let l = |q: usize| self.0.load(w[q]);
        let mut v: [S::W; 4] = [l(0), l(1), l(2), l(3)];
        if first == First::Flip {
            cs::<S, 4>(&mut v, 0, 3);
            cs::<S, 4>(&mut v, 1, 2);
        } else {
            cs::<S, 4>(&mut v, 0, 2);
            cs::<S, 4>(&mut v, 1, 3);
        }
        cs::<S, 4>(&mut v, 0, 1);
        cs::<S, 4>(&mut v, 2, 3);
        for q in 0..4 {
            self.0.store(w[q], v[q]);
        }
    }

    #[inline(always)]
    fn pair(&mut self, lo: usize, hi: usize) {
        if hi < self.0.len() {
            let (a, b) = S::cmp(self.0.load(lo), self.0.load(hi));
            self.0.store(lo, a);
            self.0.store(hi, b);
        }
    }
}

/// Puts tied entries of the sorted lanes `sorted` (indices `idx` into `v`) in the order of the
/// per-row argsort ([`rank_key`], which `util::argsort_desc` sorts by), so that the VJP ranks
/// tied entries as the per-row operator does.
///
/// One vector pass keeps, per lane, where its current run of equal values starts; an entry
/// equal to the one before it is inserted into its run right there (insertion sort by key,
/// which is a total order, so the result is the argsort's whatever the network left). Ties
/// are rare but not negligible (a few lanes in 32 per sort late in training, by chance among
/// nearby values), so only their entries take the scalar path: a pass over the whole lane per
/// tied lane was a twentieth of the training epoch.
#[inline(always)]
pub(super) fn order_ties<F: Real, const N: usize>(
    v: &[Lanes<F, N>],
    sorted: &mut [Lanes<F, N>],
    idx: &mut [Lanes<u16, N>],
) {
    let Some(&first) = sorted.first() else {
        return;
    };
    let key = |w: usize, i: u16| rank_key(v[i as usize][w], i as usize);
    let mut start = [0u32; N];
    let mut prev = first;
    for k in 1..sorted.len() {
        let x = sorted[k];
        // Integer flags: an ordered float reduction would keep this from vectorising.
        let mut any = 0u32;
        for w in 0..N {
            let tie = prev[w] == x[w];
            start[w] = if tie { start[w] } else { k as u32 };
            any |= u32::from(tie);
        }
        if any != 0 {
            for w in (0..N).filter(|&w| prev[w] == x[w]) {
                // Entry `k` into lane `w`'s run `start..k`, already in key order; the values
                // follow their indices (equal, but ±0 differ in the key).
                let s = start[w] as usize;
                let mut m = k;
                while m > s && key(w, idx[m][w]) < key(w, idx[m - 1][w]) {
                    let t = idx[m][w];
                    idx[m][w] = idx[m - 1][w];
                    idx[m - 1][w] = t;
                    m -= 1;
                }
                for j in m..=k {
                    sorted[j][w] = v[idx[j][w] as usize][w];
                }
            }
        }
        prev = x;
    }
}

#[cfg(test)]
mod tests;
