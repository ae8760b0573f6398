//! A forest in a model folder: its tensors in `model.safetensors` (indices stored as exact
//! `f32`), checked whole when read back, since a model folder is untrusted input.

use cardinal_store::TensorProblem;

use super::tree::{Node, Tree, LEAF};
use super::{Forest, MAX_INDEX};

/// A named `f32` tensor: name, shape, values.
pub type Tensor = (String, Vec<usize>, Vec<f32>);

/// A tensor's shape and values by name, or why it cannot be read.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Result<(Vec<usize>, Vec<f32>), TensorProblem>;

/// `name`'s values out of the order `rule` states.
fn order(name: &str, rule: impl Into<String>) -> TensorProblem {
    TensorProblem::Order {
        name: name.into(),
        rule: rule.into(),
    }
}

/// `name` of shape `found` where `expected` is.
fn shape(name: &str, found: &[usize], expected: impl Into<String>) -> TensorProblem {
    TensorProblem::Shape {
        name: name.into(),
        found: found.to_vec(),
        expected: expected.into(),
    }
}

impl Forest {
    /// The forest as named tensors (`forest.*`).
    pub fn tensors(&self) -> Vec<Tensor> {
        let mut nodes = Vec::new();
        let mut offsets = vec![0.0f32];
        for tree in &self.trees {
            for n in &tree.nodes {
                let feature = if n.feature == LEAF {
                    -1.0
                } else {
                    n.feature as f32
                };
                nodes.extend([feature, n.threshold, n.left as f32, n.right as f32]);
            }
            offsets.push((nodes.len() / 4) as f32);
        }
        let n = self.label_indptr.len() - 1;
        let as_f32 = |v: &[u32]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        vec![
            ("forest.nodes".into(), vec![nodes.len() / 4, 4], nodes),
            ("forest.tree_offsets".into(), vec![offsets.len()], offsets),
            (
                "forest.leaf_of_row".into(),
                vec![self.trees.len(), n],
                self.leaf_of_row.iter().flat_map(|v| as_f32(v)).collect(),
            ),
            (
                "forest.bag".into(),
                vec![self.trees.len(), n],
                self.bag.iter().flat_map(|v| as_f32(v)).collect(),
            ),
            (
                "forest.label_indptr".into(),
                vec![n + 1],
                self.label_indptr.iter().map(|&x| x as f32).collect(),
            ),
            (
                "forest.label_indices".into(),
                vec![self.label_indices.len()],
                as_f32(&self.label_indices),
            ),
        ]
    }

    /// The forest from its tensors (`get` gives a tensor's shape and values by name, or an
    /// error naming it), for a model of `n_features` inputs and `n_labels` labels. Every
    /// index is checked, so that a damaged file is refused, never followed out of bounds.
    pub fn from_tensors(
        get: Lookup<'_>,
        n_features: usize,
        n_labels: usize,
    ) -> Result<Self, TensorProblem> {
        let trees = read_trees(get, n_features)?;
        let (n, leaf_of_row) = per_tree(get, "forest.leaf_of_row", &trees, None, |t| {
            t.n_leaves as usize
        })?;
        if n == 0 || n >= MAX_INDEX {
            return Err(shape(
                "forest.leaf_of_row",
                &[trees.len(), n],
                format!("[trees, rows] with 1 to {MAX_INDEX} rows"),
            ));
        }
        // A row is drawn at most `n` times into a bootstrap sample of `n`.
        let (_, bag) = per_tree(get, "forest.bag", &trees, Some(n), |_| n + 1)?;
        let (indptr, labels) = read_labels(get, n, n_labels)?;
        Ok(Self::assemble(
            trees,
            leaf_of_row,
            bag,
            indptr,
            labels,
            n_labels,
            n_features,
        ))
    }
}

/// `v` as an index below `below`, or why not.
fn index(name: &str, v: f32, below: usize) -> Result<usize, TensorProblem> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && (v as usize) < below {
        Ok(v as usize)
    } else {
        Err(TensorProblem::NotAnIndex {
            name: name.into(),
            value: v,
            below,
        })
    }
}

/// Tensor `name`, which must have `dims` dimensions.
fn shaped(
    get: Lookup<'_>,
    name: &str,
    dims: usize,
) -> Result<(Vec<usize>, Vec<f32>), TensorProblem> {
    let (found, data) = get(name)?;
    if found.len() != dims {
        return Err(shape(name, &found, format!("{dims} dimension(s)")));
    }
    Ok((found, data))
}

/// Every tree, from `forest.nodes` cut by `forest.tree_offsets`.
fn read_trees(get: Lookup<'_>, n_features: usize) -> Result<Vec<Tree>, TensorProblem> {
    let (found, nodes) = shaped(get, "forest.nodes", 2)?;
    if found[1] != 4 {
        return Err(shape("forest.nodes", &found, "[nodes, 4]"));
    }
    let n_nodes = found[0];
    let (_, offsets) = shaped(get, "forest.tree_offsets", 1)?;
    let offsets: Vec<usize> = offsets
        .iter()
        .map(|&o| index("forest.tree_offsets", o, n_nodes + 1))
        .collect::<Result<_, _>>()?;
    if offsets.len() < 2 || offsets[0] != 0 || offsets[offsets.len() - 1] != n_nodes {
        return Err(order(
            "forest.tree_offsets",
            format!("run from 0 to {n_nodes} over at least one tree"),
        ));
    }
    offsets
        .windows(2)
        .map(|w| {
            if w[1] <= w[0] {
                return Err(order("forest.tree_offsets", "increase"));
            }
            read_tree(&nodes[4 * w[0]..4 * w[1]], n_features)
        })
        .collect()
}

/// Tensor `name` of shape `[trees, n]` (`n` as given, or as found), each tree's row of
/// indices below `below(tree)`; returns `n` and the rows.
fn per_tree(
    get: Lookup<'_>,
    name: &str,
    trees: &[Tree],
    n: Option<usize>,
    below: impl Fn(&Tree) -> usize,
) -> Result<(usize, Vec<Vec<u32>>), TensorProblem> {
    let (found, values) = shaped(get, name, 2)?;
    let cols = n.unwrap_or(found[1]);
    if found != [trees.len(), cols] {
        return Err(shape(
            name,
            &found,
            format!(
                "[{}, {}]",
                trees.len(),
                n.map_or("rows".into(), |n| n.to_string())
            ),
        ));
    }
    let rows = trees
        .iter()
        .zip(values.chunks(cols.max(1)))
        .map(|(tree, row)| {
            row.iter()
                .map(|&v| index(name, v, below(tree)).map(|i| i as u32))
                .collect::<Result<Vec<u32>, TensorProblem>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((cols, rows))
}

/// The training label sets of `n` rows over `n_labels` labels: offsets and labels.
fn read_labels(
    get: Lookup<'_>,
    n: usize,
    n_labels: usize,
) -> Result<(Vec<usize>, Vec<u32>), TensorProblem> {
    let (found, indptr) = shaped(get, "forest.label_indptr", 1)?;
    let (_, labels) = shaped(get, "forest.label_indices", 1)?;
    if found[0] != n + 1 {
        return Err(shape(
            "forest.label_indptr",
            &found,
            format!("[{}], one more than the rows", n + 1),
        ));
    }
    let indptr: Vec<usize> = indptr
        .iter()
        .map(|&v| index("forest.label_indptr", v, labels.len() + 1))
        .collect::<Result<_, _>>()?;
    if indptr[0] != 0 || indptr[n] != labels.len() || indptr.windows(2).any(|w| w[1] < w[0]) {
        return Err(order(
            "forest.label_indptr",
            "run from 0 to the label count, not decreasing",
        ));
    }
    let labels: Vec<u32> = labels
        .iter()
        .map(|&v| index("forest.label_indices", v, n_labels).map(|i| i as u32))
        .collect::<Result<_, _>>()?;
    if indptr
        .windows(2)
        .any(|w| labels[w[0]..w[1]].windows(2).any(|p| p[1] <= p[0]))
    {
        return Err(order("forest.label_indices", "increase within each row"));
    }
    Ok((indptr, labels))
}

/// One tree's nodes (`[feature or −1, threshold, left, right]` each). Children come after
/// their parent (as `grow` numbers them), so no path can loop, and leaves are numbered
/// `0, 1, …` in node order.
fn read_tree(raw: &[f32], n_features: usize) -> Result<Tree, TensorProblem> {
    let entry = |entry: usize, expected: &'static str| TensorProblem::Entry {
        name: "forest.nodes".into(),
        entry,
        expected,
    };
    let count = raw.len() / 4;
    let mut nodes = Vec::with_capacity(count);
    let mut n_leaves = 0u32;
    for (at, n) in raw.chunks_exact(4).enumerate() {
        if n[0] == -1.0 {
            if index("forest.nodes", n[2], MAX_INDEX)? != n_leaves as usize {
                return Err(entry(at, "the next leaf"));
            }
            nodes.push(Node {
                feature: LEAF,
                threshold: 0.0,
                left: n_leaves,
                right: 0,
            });
            n_leaves += 1;
        } else {
            let feature = index("forest.nodes", n[0], n_features)? as u32;
            let left = index("forest.nodes", n[2], count)?;
            let right = index("forest.nodes", n[3], count)?;
            if left <= at || right <= at || n[1].is_nan() {
                return Err(entry(at, "a valid split"));
            }
            nodes.push(Node {
                feature,
                threshold: n[1],
                left: left as u32,
                right: right as u32,
            });
        }
    }
    Ok(Tree { nodes, n_leaves })
}
