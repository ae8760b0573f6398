//! Datasets built from in-memory arrays (what the Python package receives from numpy and
//! scipy.sparse): checked constructors that name the matrix, row and column of a bad entry and
//! never panic.
//!
//! A dense matrix and its sparse (CSR) form give the same [`CsrMatrix`]: zeros are not stored,
//! whether implicit or explicit, so that the model sees the same input either way.

use super::invalid::{ArrayProblem, InvalidInput};
use super::{CsrMatrix, DataError, Dataset, LabelSets, Result};

/// An error about `what` (e.g. `"X"`), built by every check below.
fn invalid(what: &str, problem: ArrayProblem) -> DataError {
    InvalidInput::Array {
        array: what.to_string(),
        problem,
    }
    .into()
}

/// Refuses a non-finite feature value, naming its row and column (from 0).
fn finite(what: &str, row: usize, col: usize, value: f32) -> Result<()> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(invalid(what, ArrayProblem::NonFinite { row, col, value }))
    }
}

/// Where the checked entries of a matrix go, row by row: the features' or the labels' builder.
trait RowSink {
    /// The element type of the incoming values.
    type Value: Copy;
    /// Checks and keeps the entry at `row`, `col` (from 0).
    fn entry(&mut self, row: usize, col: u32, value: Self::Value) -> Result<()>;
    /// Ends the current row (pushed even when empty).
    fn end_row(&mut self);
}

/// Feature rows: finite values, zeros not stored.
struct FeatureRows<'a> {
    what: &'a str,
    out: CsrMatrix,
    cols: Vec<u32>,
    vals: Vec<f32>,
}

impl<'a> FeatureRows<'a> {
    fn new(what: &'a str, n_cols: usize) -> Self {
        Self {
            what,
            out: CsrMatrix::new(n_cols),
            cols: Vec::new(),
            vals: Vec::new(),
        }
    }
}

impl RowSink for FeatureRows<'_> {
    type Value = f32;

    fn entry(&mut self, row: usize, col: u32, value: f32) -> Result<()> {
        finite(self.what, row, col as usize, value)?;
        if value != 0.0 {
            self.cols.push(col);
            self.vals.push(value);
        }
        Ok(())
    }

    fn end_row(&mut self) {
        self.out.push_row(&self.cols, &self.vals);
        self.cols.clear();
        self.vals.clear();
    }
}

/// Label rows: indicators 0 or 1, a 1 kept as a label.
struct LabelRows<'a> {
    what: &'a str,
    out: LabelSets,
    row_labels: Vec<u32>,
}

impl<'a> LabelRows<'a> {
    fn new(what: &'a str, n_labels: usize) -> Self {
        Self {
            what,
            out: LabelSets::new(n_labels),
            row_labels: Vec::new(),
        }
    }
}

impl RowSink for LabelRows<'_> {
    type Value = f64;

    fn entry(&mut self, row: usize, col: u32, value: f64) -> Result<()> {
        if indicator(self.what, row, col as usize, value)? {
            self.row_labels.push(col);
        }
        Ok(())
    }

    fn end_row(&mut self) {
        self.out.push_row(&self.row_labels);
        self.row_labels.clear();
    }
}

/// The shape checks of [`walk_csr`]: one value per index, a column count that fits `u32`, and
/// `indptr` of `n_rows + 1` non-decreasing offsets from 0 to `indices.len()`.
fn check_csr_shape(
    what: &str,
    n_rows: usize,
    n_cols: usize,
    indptr: &[i64],
    indices: &[i64],
    n_values: usize,
) -> Result<()> {
    if n_values != indices.len() {
        return Err(invalid(
            what,
            ArrayProblem::ValuesPerIndex {
                values: n_values,
                indices: indices.len(),
            },
        ));
    }
    if u32::try_from(n_cols).is_err() {
        return Err(invalid(
            what,
            ArrayProblem::TooManyColumns { columns: n_cols },
        ));
    }
    if indptr.len() != n_rows + 1 {
        return Err(invalid(
            what,
            ArrayProblem::IndptrLength {
                found: indptr.len(),
                expected: n_rows + 1,
            },
        ));
    }
    if indptr[0] != 0 || indptr[n_rows] != indices.len() as i64 {
        return Err(invalid(
            what,
            ArrayProblem::IndptrRange {
                first: indptr[0],
                last: indptr[n_rows],
                entries: indices.len(),
            },
        ));
    }
    // Offsets first: non-decreasing from 0 to the entry count keeps every row in bounds.
    if let Some(r) = (0..n_rows).find(|&r| indptr[r + 1] < indptr[r]) {
        return Err(invalid(
            what,
            ArrayProblem::IndptrDecreases {
                row: r,
                start: indptr[r],
                end: indptr[r + 1],
            },
        ));
    }
    Ok(())
}

/// Checks a CSR structure (`indptr` of `n_rows + 1` non-decreasing offsets from 0 to
/// `indices.len()`, one value per index, each row's indices strictly increasing and below
/// `n_cols`) and feeds every stored entry to `sink`, in order, ending each row.
fn walk_csr<S: RowSink>(
    what: &str,
    n_rows: usize,
    n_cols: usize,
    indptr: &[i64],
    indices: &[i64],
    values: &[S::Value],
    sink: &mut S,
) -> Result<()> {
    check_csr_shape(what, n_rows, n_cols, indptr, indices, values.len())?;
    for r in 0..n_rows {
        let (a, b) = (indptr[r], indptr[r + 1]);
        let mut previous: Option<i64> = None;
        for k in a as usize..b as usize {
            let c = indices[k];
            if c < 0 || c >= n_cols as i64 {
                return Err(invalid(
                    what,
                    ArrayProblem::ColumnOutOfRange {
                        row: r,
                        col: c,
                        columns: n_cols,
                    },
                ));
            }
            if previous.is_some_and(|p| c <= p) {
                return Err(invalid(
                    what,
                    ArrayProblem::UnsortedColumn {
                        row: r,
                        col: c,
                        previous: previous.unwrap_or_default(),
                    },
                ));
            }
            previous = Some(c);
            sink.entry(r, c as u32, values[k])?;
        }
        sink.end_row();
    }
    Ok(())
}

/// Checks a dense row-major `n_rows × n_cols` buffer's length and feeds every entry to `sink`,
/// row by row.
fn walk_dense<S: RowSink>(
    what: &str,
    n_rows: usize,
    n_cols: usize,
    values: &[S::Value],
    sink: &mut S,
) -> Result<()> {
    if u32::try_from(n_cols).is_err() || n_rows.checked_mul(n_cols) != Some(values.len()) {
        return Err(invalid(
            what,
            ArrayProblem::DenseSize {
                values: values.len(),
                rows: n_rows,
                columns: n_cols,
            },
        ));
    }
    for r in 0..n_rows {
        for (c, &v) in values[r * n_cols..(r + 1) * n_cols].iter().enumerate() {
            sink.entry(r, c as u32, v)?;
        }
        sink.end_row();
    }
    Ok(())
}

/// Features from the parts of a CSR matrix (scipy.sparse's `indptr`, `indices`, `data`).
/// Errors name `what`: a malformed structure, an unsorted or repeated column index, a value
/// that is NaN or infinite. Explicit zeros are dropped.
pub fn features_from_csr(
    what: &str,
    n_rows: usize,
    n_cols: usize,
    indptr: &[i64],
    indices: &[i64],
    values: &[f32],
) -> Result<CsrMatrix> {
    let mut rows = FeatureRows::new(what, n_cols);
    walk_csr(what, n_rows, n_cols, indptr, indices, values, &mut rows)?;
    Ok(rows.out)
}

/// Features from a dense row-major `n_rows × n_cols` matrix. Errors name `what` and the row
/// and column of a NaN or infinite value, or a length other than `n_rows × n_cols`.
pub fn features_from_dense(
    what: &str,
    n_rows: usize,
    n_cols: usize,
    values: &[f32],
) -> Result<CsrMatrix> {
    let mut rows = FeatureRows::new(what, n_cols);
    walk_dense(what, n_rows, n_cols, values, &mut rows)?;
    Ok(rows.out)
}

/// Refuses a label indicator other than 0 or 1, naming its row and column; `true` for a 1.
fn indicator(what: &str, row: usize, col: usize, value: f64) -> Result<bool> {
    if value == 0.0 || value == 1.0 {
        Ok(value == 1.0)
    } else {
        Err(invalid(
            what,
            ArrayProblem::NotIndicator { row, col, value },
        ))
    }
}

/// Label sets from a dense row-major `n_rows × n_labels` indicator matrix; every entry must be
/// 0 or 1 (errors name `what`, the row and the column).
pub fn labels_from_dense(
    what: &str,
    n_rows: usize,
    n_labels: usize,
    values: &[f64],
) -> Result<LabelSets> {
    let mut rows = LabelRows::new(what, n_labels);
    walk_dense(what, n_rows, n_labels, values, &mut rows)?;
    Ok(rows.out)
}

/// Label sets from the parts of a sparse CSR indicator matrix; every stored value must be 0
/// or 1 (a stored 0 is no label).
pub fn labels_from_csr(
    what: &str,
    n_rows: usize,
    n_labels: usize,
    indptr: &[i64],
    indices: &[i64],
    values: &[f64],
) -> Result<LabelSets> {
    let mut rows = LabelRows::new(what, n_labels);
    walk_csr(what, n_rows, n_labels, indptr, indices, values, &mut rows)?;
    Ok(rows.out)
}

/// A dataset of `features` and `labels`, which must have the same number of rows and at least
/// one column each; without feature or label names.
pub fn dataset_from_arrays(name: &str, features: CsrMatrix, labels: LabelSets) -> Result<Dataset> {
    if features.n_rows != labels.n_rows {
        return Err(InvalidInput::RowCounts {
            features: features.n_rows,
            labels: labels.n_rows,
        }
        .into());
    }
    for (n, what) in [(features.n_cols, "feature"), (labels.n_labels, "label")] {
        if n == 0 {
            return Err(InvalidInput::NoColumns { what }.into());
        }
    }
    Ok(Dataset {
        name: name.to_owned(),
        features,
        labels,
        feature_names: Vec::new(),
        label_names: Vec::new(),
    })
}

/// `labels` with the per-example loss weights `weights` ([`LabelSets::weights`]): one per row,
/// finite (as float32), `>= 0`, not all zero (errors name `what`, e.g. `"sample_weight"`, and the first bad
/// entry).
pub fn with_sample_weights(labels: LabelSets, what: &str, weights: &[f64]) -> Result<LabelSets> {
    if weights.len() != labels.n_rows {
        return Err(invalid(
            what,
            ArrayProblem::WeightCount {
                weights: weights.len(),
                rows: labels.n_rows,
            },
        ));
    }
    if let Some((i, w)) = weights
        .iter()
        .enumerate()
        .find(|(_, w)| !w.is_finite() || **w < 0.0 || **w > f32::MAX as f64)
    {
        return Err(invalid(
            what,
            ArrayProblem::BadWeight {
                index: i,
                value: *w,
            },
        ));
    }
    if weights.iter().all(|&w| w == 0.0) {
        return Err(invalid(what, ArrayProblem::AllWeightsZero));
    }
    Ok(LabelSets {
        weights: Some(weights.to_vec()),
        ..labels
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weights travel with their rows through `select_rows`; a pushed row weighs 1; bad
    /// weights are refused, naming the argument.
    #[test]
    fn sample_weights_are_checked_and_follow_their_rows() {
        let labels = labels_from_dense("Y", 3, 2, &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap();
        let w = with_sample_weights(labels.clone(), "sample_weight", &[0.5, 0.0, 2.0]).unwrap();
        assert_eq!(w.weight(2), Some(2.0));
        assert_eq!(labels.weight(2), None);
        let mut sel = w.select_rows(&[2, 0]);
        assert_eq!(sel.weights, Some(vec![2.0, 0.5]));
        assert_eq!(sel.row(0), &[0, 1]);
        sel.push_row(&[1]);
        assert_eq!(sel.weights, Some(vec![2.0, 0.5, 1.0]));
        assert_eq!(labels.select_rows(&[1]).weights, None);
        for (bad, says) in [
            (&[1.0, 1.0][..], "2 weights for 3 rows"),
            (&[1.0, f64::NAN, 1.0][..], "entry 1 (from 0) is NaN"),
            (&[1.0, 1.0, f64::INFINITY][..], "entry 2 (from 0) is inf"),
            (&[1.0, -0.5, 1.0][..], "entry 1 (from 0) is -0.5"),
            (&[1.0, 1e39, 1.0][..], "within float32's range"),
            (&[0.0, 0.0, 0.0][..], "all weights are zero"),
        ] {
            let e = with_sample_weights(labels.clone(), "sample_weight", bad).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("sample_weight: ") && msg.contains(says),
                "{msg}"
            );
        }
    }

    /// The dense matrix of `m`, by its rows (an independent route to the entries).
    fn dense_of(m: &CsrMatrix) -> Vec<f32> {
        let mut out = vec![0.0; m.n_rows * m.n_cols];
        for r in 0..m.n_rows {
            let (i, v) = m.row(r);
            for (&c, &x) in i.iter().zip(v) {
                out[r * m.n_cols + c as usize] = x;
            }
        }
        out
    }

    #[test]
    fn dense_and_sparse_forms_give_the_same_matrix() {
        let dense = [0.0, 1.5, 0.0, -2.0, 0.0, 0.0, 0.0, 0.0, 3.0];
        let a = features_from_dense("X", 3, 3, &dense).unwrap();
        // The same matrix in CSR form, with an explicit zero stored in row 0.
        let b = features_from_csr(
            "X",
            3,
            3,
            &[0, 2, 3, 4],
            &[1, 2, 0, 2],
            &[1.5, 0.0, -2.0, 3.0],
        );
        let b = b.unwrap();
        assert_eq!(a, b);
        assert_eq!(dense_of(&a), dense);
        assert_eq!(a.nnz(), 3, "zeros are not stored");
        let rows: Vec<usize> = (0..3).map(|r| a.row(r).0.len()).collect();
        assert_eq!(rows, [1, 1, 1]);
    }

    #[test]
    fn trailing_empty_rows_are_kept() {
        let m = features_from_csr("X", 3, 2, &[0, 1, 1, 1], &[0], &[2.0]).unwrap();
        assert_eq!((m.n_rows, m.indptr.clone()), (3, vec![0, 1, 1, 1]));
        let y = labels_from_csr("Y", 3, 2, &[0, 0, 0, 1], &[1], &[1.0]).unwrap();
        assert_eq!((y.n_rows, y.row(2)), (3, &[1u32][..]));
    }

    #[test]
    fn non_finite_features_name_row_and_column() {
        let e = features_from_dense("X", 2, 2, &[0.0, 1.0, f32::NAN, 0.0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "X: row 1, column 0 (from 0) holds NaN: expected a finite number"
        );
        let e = features_from_csr("X", 1, 3, &[0, 1], &[2], &[f32::INFINITY]).unwrap_err();
        assert!(e.to_string().contains("row 0, column 2") && e.to_string().contains("inf"));
    }

    #[test]
    fn malformed_csr_structures_are_refused() {
        let cases: [(&[i64], &[i64], &str); 5] = [
            (&[0, 1], &[0], "indptr has 2 entries"),
            (&[1, 1, 1], &[], "indptr runs from 1"),
            (&[0, 2, 1], &[0], "indptr decreases at row 1 (2 then 1)"),
            (&[0, 1, 1], &[5], "column index 5: expected 0..3"),
            (&[0, 2, 2], &[2, 1], "column index 1 after 2"),
        ];
        for (indptr, indices, want) in cases {
            let values = vec![1.0; indices.len()];
            let e = features_from_csr("X", 2, 3, indptr, indices, &values)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(want), "{indptr:?} {indices:?}: {e}");
        }
        let e = features_from_dense("X", 2, 3, &[0.0; 5]).unwrap_err();
        assert!(e.to_string().contains("expected 2 rows × 3 columns"), "{e}");
    }

    #[test]
    fn labels_must_be_indicators() {
        let y = labels_from_dense("Y", 2, 3, &[1.0, 0.0, 1.0, 0.0, 0.0, 0.0]).unwrap();
        assert_eq!((y.row(0), y.row(1)), (&[0u32, 2][..], &[][..]));
        let e = labels_from_dense("Y", 1, 2, &[0.0, 2.0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Y: row 0, column 1 (from 0) holds 2: expected a label indicator, 0 or 1"
        );
        let e = labels_from_csr("Y", 1, 2, &[0, 1], &[0], &[-1.0]).unwrap_err();
        assert!(e.to_string().contains("holds -1"), "{e}");
        let e = labels_from_dense("Y", 1, 1, &[f64::NAN]).unwrap_err();
        assert!(e.to_string().contains("NaN"), "{e}");
    }

    #[test]
    fn row_counts_must_agree() {
        let x = features_from_dense("X", 2, 1, &[1.0, 2.0]).unwrap();
        let y = labels_from_dense("Y", 3, 1, &[1.0, 0.0, 1.0]).unwrap();
        let e = dataset_from_arrays("d", x.clone(), y).unwrap_err();
        assert!(e
            .to_string()
            .contains("the features have 2 rows where the labels have 3"));
        let y = labels_from_dense("Y", 2, 1, &[1.0, 0.0]).unwrap();
        let d = dataset_from_arrays("d", x.clone(), y).unwrap();
        let no_labels = labels_from_dense("Y", 2, 0, &[]).unwrap();
        let e = dataset_from_arrays("d", x, no_labels).unwrap_err();
        assert!(e.to_string().contains("no label columns"), "{e}");
        assert_eq!((d.n_rows(), d.n_features(), d.n_labels()), (2, 1, 1));
    }
}
