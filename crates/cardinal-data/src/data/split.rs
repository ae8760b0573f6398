//! Seeded splits: random train/dev, k-fold, fixed sizes, and iterative stratification.
//!
//! All randomness comes from [`SplitMix64`] (Steele, Lea & Flood 2014), implemented here so
//! that a seed gives the same split forever, whatever crate versions are used. Shuffles are
//! Fisher–Yates from the last position down, drawing `j` in `0..=i` with [`SplitMix64::below`].
//! Returned index lists are sorted ascending, so subsets keep the file's row order.

use super::error::Result;
use super::invalid::InvalidInput;
use super::LabelSets;

/// The splitmix64 generator: a 64-bit state advanced by the golden-ratio constant and mixed.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The generator with initial state `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`) by multiply-shift: bias below 2^-40 for `n < 2^24`.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }
}

/// A random permutation of `0..n`.
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    SplitMix64::new(seed).shuffle(&mut p);
    p
}

/// Random train/dev split of `0..n`: `round(n * dev_fraction)` rows go to dev (the authors
/// carved a 5% dev set from train: `dev_fraction = 0.05`). Both lists sorted ascending.
///
/// # Panics
/// If `dev_fraction` is not within `[0, 1]`.
pub fn train_dev_split(n: usize, dev_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    assert!(
        (0.0..=1.0).contains(&dev_fraction),
        "dev_fraction must be in [0, 1], got {dev_fraction}"
    );
    let n_dev = (n as f64 * dev_fraction).round() as usize;
    let mut p = permutation(n, seed);
    let mut train = p.split_off(n_dev);
    p.sort_unstable();
    train.sort_unstable();
    (train, p)
}

/// `k` folds of a random permutation of `0..n`, sizes differing by at most one (the first
/// `n % k` folds get the extra row). Each fold sorted ascending.
///
/// # Panics
/// If `k == 0`.
pub fn kfold(n: usize, k: usize, seed: u64) -> Vec<Vec<usize>> {
    assert!(k > 0, "kfold needs k > 0");
    let p = permutation(n, seed);
    let (q, r) = (n / k, n % k);
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    for f in 0..k {
        let len = q + usize::from(f < r);
        let mut fold = p[start..start + len].to_vec();
        fold.sort_unstable();
        out.push(fold);
        start += len;
    }
    out
}

/// Random disjoint subsets of `0..n` with the given sizes (their sum may be below `n`; the
/// rest is unused). Used for single-file datasets such as MULAN's Bookmarks.
pub fn split_sizes(n: usize, sizes: &[usize], seed: u64) -> Result<Vec<Vec<usize>>> {
    let total: usize = sizes.iter().sum();
    if total > n {
        return Err(InvalidInput::SplitTooLarge {
            sizes: sizes.to_vec(),
            total,
            rows: n,
        }
        .into());
    }
    let p = permutation(n, seed);
    let mut start = 0;
    Ok(sizes
        .iter()
        .map(|&s| {
            let mut v = p[start..start + s].to_vec();
            v.sort_unstable();
            start += s;
            v
        })
        .collect())
}

/// Iterative stratification for multi-label data (Sechidis, Tsoumakas & Vlahavas, ECML 2011).
///
/// Splits the rows into `fractions.len()` subsets whose sizes follow `fractions` (normalised to
/// sum 1) while keeping each label's positives spread in the same proportions. Algorithm: each
/// subset `j` wants `r_j * |D|` rows and `r_j * |D_l|` positives of label `l`. Repeatedly take
/// the label with the fewest unassigned positives (ties: first in a seeded random label order)
/// and hand each of its unassigned rows to the subset that most wants that label (ties: wants
/// most rows overall, then seeded random); wishes are decremented for every label of the row.
/// Rows without labels are finally given to the subset wanting most rows.
///
/// Cost: O(L² + nnz · k) time, so Delicious (12920 rows, 983 labels) takes milliseconds.
/// Each returned list is sorted ascending.
///
/// # Panics
/// If `fractions` is empty or has a negative/non-finite entry or sums to zero.
pub fn iterative_stratification(
    labels: &LabelSets,
    fractions: &[f64],
    seed: u64,
) -> Vec<Vec<usize>> {
    let r = normalised(fractions);
    let k = r.len();
    let (n, nl) = (labels.n_rows, labels.n_labels);
    let mut rng = SplitMix64::new(seed);

    // Rows in a seeded random order; the inverted index keeps that order per label.
    let order = permutation(n, rng.next_u64());
    let (lptr, rows_of) = rows_by_label(labels, &order);
    let mut remaining: Vec<usize> = (0..nl).map(|l| lptr[l + 1] - lptr[l]).collect();
    // want[l * k + j]: positives of label l subset j still wants; want_rows[j]: rows it wants.
    let mut want: Vec<f64> = remaining
        .iter()
        .flat_map(|&c| r.iter().map(move |rj| rj * c as f64))
        .collect();
    let mut want_rows: Vec<f64> = r.iter().map(|rj| rj * n as f64).collect();
    let mut assigned = vec![usize::MAX; n];
    let label_order = permutation(nl, rng.next_u64());
    let mut ties = Vec::with_capacity(k);

    while let Some(l) = rarest_label(&label_order, &remaining) {
        for p in lptr[l]..lptr[l + 1] {
            let row = rows_of[p] as usize;
            if assigned[row] != usize::MAX {
                continue;
            }
            let w = &want[l * k..(l + 1) * k];
            let top = w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            ties.clear();
            ties.extend((0..k).filter(|&j| w[j] == top));
            if ties.len() > 1 {
                let top_rows = ties
                    .iter()
                    .map(|&j| want_rows[j])
                    .fold(f64::NEG_INFINITY, f64::max);
                ties.retain(|&j| want_rows[j] == top_rows);
            }
            let j = pick(&ties, &mut rng);
            assigned[row] = j;
            want_rows[j] -= 1.0;
            for &m in labels.row(row) {
                want[m as usize * k + j] -= 1.0;
                remaining[m as usize] -= 1;
            }
        }
    }
    subsets(&order, &assigned, &r, want_rows, &mut rng)
}

/// `fractions` scaled to sum 1.
///
/// # Panics
/// If `fractions` is empty or has a negative/non-finite entry or sums to zero.
fn normalised(fractions: &[f64]) -> Vec<f64> {
    assert!(
        !fractions.is_empty(),
        "iterative_stratification needs at least one fraction"
    );
    assert!(
        fractions.iter().all(|f| f.is_finite() && *f >= 0.0),
        "fractions must be finite and >= 0"
    );
    let sum: f64 = fractions.iter().sum();
    assert!(sum > 0.0, "fractions must not sum to zero");
    fractions.iter().map(|f| f / sum).collect()
}

/// The inverted index of `labels`: label `l`'s rows are `rows_of[lptr[l]..lptr[l + 1]]`, in the
/// order of `order`.
fn rows_by_label(labels: &LabelSets, order: &[usize]) -> (Vec<usize>, Vec<u32>) {
    let nl = labels.n_labels;
    let mut lptr = vec![0usize; nl + 1];
    for &l in &labels.indices {
        lptr[l as usize + 1] += 1;
    }
    for l in 0..nl {
        lptr[l + 1] += lptr[l];
    }
    let mut fill = lptr.clone();
    let mut rows_of = vec![0u32; labels.indices.len()];
    for &row in order {
        for &l in labels.row(row) {
            rows_of[fill[l as usize]] = row as u32;
            fill[l as usize] += 1;
        }
    }
    (lptr, rows_of)
}

/// The label with the fewest (but > 0) unassigned positives, the first in `label_order` on a
/// tie.
fn rarest_label(label_order: &[usize], remaining: &[usize]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for &l in label_order {
        let c = remaining[l];
        if c > 0 && best.is_none_or(|(_, bc)| c < bc) {
            best = Some((l, c));
        }
    }
    best.map(|(l, _)| l)
}

/// One of the tied subsets `ties` (not empty): the only one, or a seeded random one.
fn pick(ties: &[usize], rng: &mut SplitMix64) -> usize {
    if ties.len() == 1 {
        ties[0]
    } else {
        ties[rng.below(ties.len())]
    }
}

/// Each subset's rows, sorted, from the subsets `assigned` to the rows with labels; a row
/// without labels (`usize::MAX`) goes to the subset wanting most rows, in `order`.
fn subsets(
    order: &[usize],
    assigned: &[usize],
    r: &[f64],
    mut want_rows: Vec<f64>,
    rng: &mut SplitMix64,
) -> Vec<Vec<usize>> {
    let (k, n) = (r.len(), assigned.len());
    let mut out: Vec<Vec<usize>> = (0..k)
        .map(|j| Vec::with_capacity((r[j] * n as f64) as usize + 1))
        .collect();
    let mut ties = Vec::with_capacity(k);
    for &row in order {
        let j = if assigned[row] != usize::MAX {
            assigned[row]
        } else {
            let top = want_rows.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            ties.clear();
            ties.extend((0..k).filter(|&j| want_rows[j] == top));
            let j = pick(&ties, rng);
            want_rows[j] -= 1.0;
            j
        };
        out[j].push(row);
    }
    for v in &mut out {
        v.sort_unstable();
    }
    out
}
