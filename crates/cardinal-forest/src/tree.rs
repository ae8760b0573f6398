//! One tree of the forest: a multi-label classification tree grown to purity on a bootstrap
//! sample, splitting where the Gini impurity summed over the labels falls most.
//!
//! With `c_i` of a node's `w` (bootstrap-weighted) rows carrying label `i`, the summed Gini
//! impurity times `w` is `Σ_i c_i − (Σ_i c_i²)/w`. The first sum is the same on both sides of
//! any split, so the best split maximises `Σ_i c_Li²/w_L + Σ_i c_Ri²/w_R`, and moving a row
//! from right to left changes only the counts of its own labels: a sweep over a sorted
//! feature costs the rows' label count, not the number of labels, per row.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use cardinal_data::data::{CsrMatrix, LabelSets};

/// A node: a split on `feature` at `threshold` (rows with a value `<= threshold` go `left`),
/// or, where `feature` is `LEAF`, leaf number `left`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Node {
    pub(crate) feature: u32,
    pub(crate) threshold: f32,
    pub(crate) left: u32,
    pub(crate) right: u32,
}

/// The `feature` of a leaf node.
pub(crate) const LEAF: u32 = u32::MAX;

/// A grown tree: its nodes (the root first) and how many leaves they hold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
    pub(crate) n_leaves: u32,
}

impl Tree {
    /// The leaf that the row `(indices, values)` (sorted column indices, as a CSR row) reaches.
    pub(crate) fn leaf(&self, indices: &[u32], values: &[f32]) -> u32 {
        let mut at = 0usize;
        loop {
            let node = self.nodes[at];
            if node.feature == LEAF {
                return node.left;
            }
            let v = match indices.binary_search(&node.feature) {
                Ok(p) => values[p],
                Err(_) => 0.0,
            };
            at = if v <= node.threshold {
                node.left
            } else {
                node.right
            } as usize;
        }
    }
}

/// The training data by column and by row, for the split search: a large node reads a
/// feature's column, a small one looks its rows up (a column holds every row of the file).
pub(crate) struct Columns<'a> {
    /// Per feature, its non-zero entries as `(row, value)`, rows increasing.
    cols: Vec<Vec<(u32, f32)>>,
    rows: &'a CsrMatrix,
}

impl<'a> Columns<'a> {
    pub(crate) fn new(x: &'a CsrMatrix) -> Self {
        let mut cols = vec![Vec::new(); x.n_cols];
        for r in 0..x.n_rows {
            for p in x.indptr[r]..x.indptr[r + 1] {
                cols[x.indices[p] as usize].push((r as u32, x.values[p]));
            }
        }
        Self { cols, rows: x }
    }

    /// Sets `value[r]` to feature `f` of every row `r` of `rows` (`in_node` marks them).
    fn gather(&self, f: u32, rows: &[u32], in_node: &[bool], value: &mut [f32]) {
        for &r in rows {
            value[r as usize] = 0.0;
        }
        let mut found = Vec::new();
        self.nonzeros(f, rows, in_node, &mut found);
        for (r, v) in found {
            value[r as usize] = v;
        }
    }

    /// The rows of `rows` (`in_node` marks them) where feature `f` is not 0, with its value,
    /// in no particular order: `out` is cleared first.
    fn nonzeros(&self, f: u32, rows: &[u32], in_node: &[bool], out: &mut Vec<(u32, f32)>) {
        out.clear();
        let col = &self.cols[f as usize];
        // Binary searches in the rows cost about `rows · 8`; a column scan its length.
        if rows.len() * 8 < col.len() {
            for &r in rows {
                let (idx, val) = self.rows.row(r as usize);
                if let Ok(p) = idx.binary_search(&f) {
                    if val[p] != 0.0 {
                        out.push((r, val[p]));
                    }
                }
            }
        } else {
            out.extend(
                col.iter()
                    .copied()
                    .filter(|&(r, v)| v != 0.0 && in_node[r as usize]),
            );
        }
    }
}

/// What a tree is grown with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Growth {
    /// Features tried at each node (at least; more when those tried are constant there).
    pub(crate) mtry: usize,
    /// Fewest rows (bootstrap-weighted) on each side of a split.
    pub(crate) min_leaf: usize,
}

/// The best split of a node found so far.
struct Split {
    score: f64,
    feature: u32,
    threshold: f32,
}

/// Grows one tree on a bootstrap sample of the rows, drawn from `seed`; returns it with how
/// many times each row was drawn.
pub(crate) fn grow(
    cols: &Columns<'_>,
    labels: &LabelSets,
    growth: Growth,
    seed: u64,
) -> (Tree, Vec<u32>) {
    let n = labels.n_rows;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut weight = vec![0u32; n];
    for _ in 0..n {
        weight[rng.random_range(0..n)] += 1;
    }
    let mut rows: Vec<u32> = (0..n as u32).filter(|&r| weight[r as usize] > 0).collect();
    let mut builder = Builder {
        cols,
        labels,
        weight: &weight,
        growth,
        value: vec![0.0; n],
        in_node: vec![false; n],
        left_count: vec![0.0; labels.n_labels],
        node_count: vec![0.0; labels.n_labels],
        nodes: Vec::new(),
        features: (0..cols.cols.len() as u32).collect(),
        nonzero: Vec::new(),
        right_splits: Vec::new(),
    };
    // (node index, rows range, features known to be constant there)
    let mut stack = vec![(0usize, 0usize, rows.len(), 0usize)];
    builder.nodes.push(PENDING);
    while let Some((at, lo, hi, known)) = stack.pop() {
        let Some((split, constant)) = builder.best_split(&mut rows[lo..hi], known, &mut rng) else {
            continue; // stays a leaf
        };
        let mid = builder.partition(&mut rows[lo..hi], split.feature, split.threshold) + lo;
        let left = builder.nodes.len();
        builder.nodes.push(PENDING);
        builder.nodes.push(PENDING);
        builder.nodes[at] = Node {
            feature: split.feature,
            threshold: split.threshold,
            left: left as u32,
            right: left as u32 + 1,
        };
        // Right first onto the stack, so the left subtree is numbered first.
        stack.push((left + 1, mid, hi, constant));
        stack.push((left, lo, mid, constant));
    }
    // Leaves numbered in node order.
    let mut nodes = builder.nodes;
    let mut n_leaves = 0;
    for node in nodes.iter_mut().filter(|n| n.feature == LEAF) {
        node.left = n_leaves;
        n_leaves += 1;
    }
    (Tree { nodes, n_leaves }, weight)
}

/// A node not (yet) split: a leaf, numbered when the tree is grown.
const PENDING: Node = Node {
    feature: LEAF,
    threshold: 0.0,
    left: 0,
    right: 0,
};

struct Builder<'a> {
    cols: &'a Columns<'a>,
    labels: &'a LabelSets,
    weight: &'a [u32],
    growth: Growth,
    /// Per row, its value of the feature being scanned (scratch).
    value: Vec<f32>,
    /// Per row, whether it is in the node being split (scratch).
    in_node: Vec<bool>,
    left_count: Vec<f64>,
    node_count: Vec<f64>,
    nodes: Vec<Node>,
    features: Vec<u32>,
    /// The node's rows where the feature scanned is not 0, with its value (scratch).
    nonzero: Vec<(u32, f32)>,
    /// The splits of the downward sweep over the positives (scratch).
    right_splits: Vec<Split>,
}

impl Builder<'_> {
    /// The best split of the node holding `rows`, or `None` (a leaf): the node is pure, too
    /// small, or constant in every feature.
    fn best_split(
        &mut self,
        rows: &mut [u32],
        known: usize,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Option<(Split, usize)> {
        let labels = self.labels;
        let total: f64 = rows.iter().map(|&r| self.weight[r as usize] as f64).sum();
        if total < 2.0 * self.growth.min_leaf as f64 {
            return None;
        }
        let mut sumsq = 0.0;
        let mut mass = 0.0;
        for &r in rows.iter() {
            let w = self.weight[r as usize] as f64;
            for &i in row_labels(labels, r) {
                self.node_count[i as usize] += w;
                mass += w;
            }
        }
        for &r in rows.iter() {
            for &i in row_labels(labels, r) {
                let c = self.node_count[i as usize];
                if c > 0.0 {
                    sumsq += c * c;
                    self.node_count[i as usize] = -c; // counted once
                }
            }
        }
        for &r in rows.iter() {
            for &i in row_labels(labels, r) {
                self.node_count[i as usize] = self.node_count[i as usize].abs();
            }
        }
        // Pure: every row has the same labels (Σ c_i = Σ c_i²/w exactly when each c_i is 0 or w).
        let pure = (mass - sumsq / total).abs() <= 1e-9 * mass.max(1.0);
        let out = if pure {
            None
        } else {
            for &r in rows.iter() {
                self.in_node[r as usize] = true;
            }
            let found = self.search_features(rows, known, total, sumsq, rng);
            for &r in rows.iter() {
                self.in_node[r as usize] = false;
            }
            found
        };
        for &r in rows.iter() {
            for &i in row_labels(labels, r) {
                self.node_count[i as usize] = 0.0;
            }
        }
        out
    }

    /// Tries features in a random order until `mtry` of them vary within the node, and
    /// returns the best split with the number of features now known to be constant there.
    /// `features[..known]` are those constant in an ancestor, hence here (as scikit-learn's
    /// splitter keeps them): on sparse binary inputs most features are constant in a deep
    /// node, and trying them again is most of the cost.
    fn search_features(
        &mut self,
        rows: &mut [u32],
        known: usize,
        total: f64,
        sumsq: f64,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Option<(Split, usize)> {
        let mut best: Option<Split> = None;
        let mut varying = 0;
        let mut constant = known;
        let mut features = std::mem::take(&mut self.features);
        let d = features.len();
        for k in known..d {
            // A partial Fisher-Yates shuffle: draw the next feature among those left.
            let j = rng.random_range(k..d);
            features.swap(k, j);
            if self.scan(rows, features[k], total, sumsq, &mut best) {
                varying += 1;
            } else {
                // Into the constant prefix, for the node's descendants.
                features.swap(constant, k);
                constant += 1;
            }
            if varying >= self.growth.mtry {
                break;
            }
        }
        self.features = features;
        best.map(|b| (b, constant))
    }

    /// Scans feature `f` over the node's rows, updating `best`; returns whether `f` varies.
    ///
    /// The splits are those between rows adjacent in value, and on sparse inputs most rows
    /// are 0: the negatives are swept up from the lowest (the left side growing), the
    /// positives down from the highest (the right side growing), and the zeros are never
    /// visited one by one, so a feature costs its non-zero rows in the node, not the node.
    /// The sums are of whole numbers (bootstrap counts), exact in any order, and the splits
    /// are scored in increasing order of value, so the tree is what a sweep over every row
    /// in sorted order would grow.
    fn scan(
        &mut self,
        rows: &mut [u32],
        f: u32,
        total: f64,
        node_sumsq: f64,
        best: &mut Option<Split>,
    ) -> bool {
        let mut nz = std::mem::take(&mut self.nonzero);
        self.cols.nonzeros(f, rows, &self.in_node, &mut nz);
        let n = rows.len();
        let zeros = n - nz.len();
        let constant = nz.is_empty() || (zeros == 0 && nz.iter().all(|e| e.1 == nz[0].1));
        if constant {
            self.nonzero = nz;
            return false;
        }
        nz.sort_unstable_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let neg = nz.partition_point(|e| e.1 < 0.0);
        // The value at sweep position `p`: negatives, then zeros, then positives.
        let value_at = |p: usize| -> f32 {
            if p < neg {
                nz[p].1
            } else if p < neg + zeros {
                0.0
            } else {
                nz[p - zeros].1
            }
        };
        let min_leaf = self.growth.min_leaf as f64;
        // A split at position `b` (the left side is positions `..b`), if scored.
        let split = |b: usize, w_left: f64, sq_left: f64, sq_right: f64| -> Option<Split> {
            let (v, next) = (value_at(b - 1), value_at(b));
            let w_right = total - w_left;
            if v == next || w_left < min_leaf || w_right < min_leaf {
                return None;
            }
            let mid = v + (next - v) / 2.0;
            // The midpoint can round up to `next`; then split at `v` itself.
            let threshold = if mid < next { mid } else { v };
            Some(Split {
                score: sq_left / w_left + sq_right / w_right,
                feature: f,
                threshold,
            })
        };
        let mut offer = |s: Split| {
            if best.as_ref().is_none_or(|b| s.score > b.score) {
                *best = Some(s);
            }
        };
        // Splits with only negatives on the left: positions 1..=neg.
        let (mut w_left, mut sq_left, mut sq_right) = (0.0, 0.0, node_sumsq);
        for (p, &(r, _)) in nz[..neg].iter().enumerate() {
            w_left += self.move_row(r, &mut sq_left, &mut sq_right);
            if p + 1 < n {
                if let Some(s) = split(p + 1, w_left, sq_left, sq_right) {
                    offer(s);
                }
            }
        }
        self.clear_counts(&nz[..neg]);
        // Splits with only positives on the right, from the highest down; offered after, in
        // increasing order. Position `neg` when there are no zeros was offered above.
        let mut right_splits = std::mem::take(&mut self.right_splits);
        right_splits.clear();
        let (mut w_right, mut sq_left, mut sq_right) = (0.0, node_sumsq, 0.0);
        let lowest = if zeros == 0 { neg + 1 } else { neg + zeros };
        for (q, &(r, _)) in nz[neg..].iter().enumerate().rev() {
            w_right += self.move_row(r, &mut sq_right, &mut sq_left);
            let b = neg + zeros + q;
            if b >= lowest.max(1) {
                if let Some(s) = split(b, total - w_right, sq_left, sq_right) {
                    right_splits.push(s);
                }
            }
        }
        self.clear_counts(&nz[neg..]);
        for s in right_splits.drain(..).rev() {
            offer(s);
        }
        self.right_splits = right_splits;
        self.nonzero = nz;
        true
    }

    /// Moves row `r` to the side whose label counts `left_count` holds (the left in the
    /// upward sweep, the right in the downward one), updating that side's `Σ c_i²` (`gains`)
    /// and the other's (`loses`); returns the row's weight.
    fn move_row(&mut self, r: u32, gains: &mut f64, loses: &mut f64) -> f64 {
        let w = self.weight[r as usize] as f64;
        for &i in row_labels(self.labels, r) {
            let i = i as usize;
            let c_in = self.left_count[i];
            let c_out = self.node_count[i] - c_in;
            *gains += 2.0 * c_in * w + w * w;
            *loses += -2.0 * c_out * w + w * w;
            self.left_count[i] = c_in + w;
        }
        w
    }

    /// Zeroes the label counts of `rows`' labels.
    fn clear_counts(&mut self, rows: &[(u32, f32)]) {
        for &(r, _) in rows {
            for &i in row_labels(self.labels, r) {
                self.left_count[i as usize] = 0.0;
            }
        }
    }

    /// Puts the rows with a value `<= threshold` of feature `f` first; returns how many.
    fn partition(&mut self, rows: &mut [u32], f: u32, threshold: f32) -> usize {
        for &r in rows.iter() {
            self.in_node[r as usize] = true;
        }
        self.cols.gather(f, rows, &self.in_node, &mut self.value);
        for &r in rows.iter() {
            self.in_node[r as usize] = false;
        }
        let value = &self.value;
        // Stable, so that the rows keep their order on each side.
        let (mut left, right): (Vec<u32>, Vec<u32>) =
            rows.iter().partition(|&&r| value[r as usize] <= threshold);
        let mid = left.len();
        left.extend(right);
        rows.copy_from_slice(&left);
        mid
    }
}

/// The labels of training row `r`.
fn row_labels(labels: &LabelSets, r: u32) -> &[u32] {
    &labels.indices[labels.indptr[r as usize]..labels.indptr[r as usize + 1]]
}
