//! Datasets built from in-memory arrays (what the Python package receives from numpy and
//! scipy.sparse): checked constructors that name the matrix, row and column of a bad entry and
//! never panic.
//!
//! A dense matrix and its sparse (CSR) form give the same [`CsrMatrix`]: zeros are not stored,
//! whether implicit or explicit, so that the model sees the same input either way.

use super::{CsrMatrix, DataError, Dataset, LabelSets, Result};

/// An error about `what` (e.g. `"X"`), built by every check below.
fn invalid(what: &str, detail: String) -> DataError {
    DataError::Invalid(format!("{what}: {detail}"))
}

/// Refuses a non-finite feature value, naming its row and column (from 0).
fn finite(what: &str, row: usize, col: usize, value: f32) -> Result<()> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(invalid(
            what,
            format!("row {row}, column {col} (from 0) holds {value}: expected a finite number"),
        ))
    }
}

/// Checks a CSR structure (`indptr` of `n_rows + 1` non-decreasing offsets from 0 to
/// `indices.len()`, each row's indices strictly increasing and below `n_cols`) and calls
/// `keep(row, col, k)` for every stored entry `k`, in order.
fn walk_csr(
    what: &str,
    n_rows: usize,
    n_cols: usize,
    indptr: &[i64],
    indices: &[i64],
    mut keep: impl FnMut(usize, u32, usize) -> Result<()>,
) -> Result<()> {
    if u32::try_from(n_cols).is_err() {
        return Err(invalid(
            what,
            format!("{n_cols} columns: at most {} are supported", u32::MAX),
        ));
    }
    if indptr.len() != n_rows + 1 {
        return Err(invalid(
            what,
            format!(
                "indptr has {} entries: expected {} (rows + 1)",
                indptr.len(),
                n_rows + 1
            ),
        ));
    }
    if indptr[0] != 0 || indptr[n_rows] != indices.len() as i64 {
        return Err(invalid(
            what,
            format!(
                "indptr runs from {} to {}: expected 0 to {} (the stored entries)",
                indptr[0],
                indptr[n_rows],
                indices.len()
            ),
        ));
    }
    // Offsets first: non-decreasing from 0 to the entry count keeps every row in bounds.
    if let Some(r) = (0..n_rows).find(|&r| indptr[r + 1] < indptr[r]) {
        return Err(invalid(
            what,
            format!(
                "indptr decreases at row {r} ({} then {}): expected non-decreasing",
                indptr[r],
                indptr[r + 1]
            ),
        ));
    }
    for r in 0..n_rows {
        let (a, b) = (indptr[r], indptr[r + 1]);
        let mut previous: Option<i64> = None;
        for k in a as usize..b as usize {
            let c = indices[k];
            if c < 0 || c >= n_cols as i64 {
                return Err(invalid(
                    what,
                    format!("row {r} has column index {c}: expected 0..{n_cols}"),
                ));
            }
            if previous.is_some_and(|p| c <= p) {
                return Err(invalid(
                    what,
                    format!(
                        "row {r} has column index {c} after {}: expected strictly increasing \
                         indices (sort them and sum duplicates first)",
                        previous.unwrap_or_default()
                    ),
                ));
            }
            previous = Some(c);
            keep(r, c as u32, k)?;
        }
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
    if values.len() != indices.len() {
        return Err(invalid(
            what,
            format!(
                "{} values for {} indices: expected one value per index",
                values.len(),
                indices.len()
            ),
        ));
    }
    let mut out = CsrMatrix::new(n_cols);
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    let mut row = 0;
    let flush = |out: &mut CsrMatrix, cols: &mut Vec<u32>, vals: &mut Vec<f32>| {
        out.push_row(cols, vals);
        cols.clear();
        vals.clear();
    };
    walk_csr(what, n_rows, n_cols, indptr, indices, |r, c, k| {
        while row < r {
            flush(&mut out, &mut cols, &mut vals);
            row += 1;
        }
        finite(what, r, c as usize, values[k])?;
        if values[k] != 0.0 {
            cols.push(c);
            vals.push(values[k]);
        }
        Ok(())
    })?;
    while out.n_rows < n_rows {
        flush(&mut out, &mut cols, &mut vals);
    }
    Ok(out)
}

/// Features from a dense row-major `n_rows × n_cols` matrix. Errors name `what` and the row
/// and column of a NaN or infinite value, or a length other than `n_rows × n_cols`.
pub fn features_from_dense(
    what: &str,
    n_rows: usize,
    n_cols: usize,
    values: &[f32],
) -> Result<CsrMatrix> {
    check_dense_len(what, n_rows, n_cols, values.len())?;
    let mut out = CsrMatrix::new(n_cols);
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for r in 0..n_rows {
        cols.clear();
        vals.clear();
        for (c, &v) in values[r * n_cols..(r + 1) * n_cols].iter().enumerate() {
            finite(what, r, c, v)?;
            if v != 0.0 {
                cols.push(c as u32);
                vals.push(v);
            }
        }
        out.push_row(&cols, &vals);
    }
    Ok(out)
}

/// Refuses a dense buffer whose length is not `n_rows × n_cols`.
fn check_dense_len(what: &str, n_rows: usize, n_cols: usize, len: usize) -> Result<()> {
    if u32::try_from(n_cols).is_err() || n_rows.checked_mul(n_cols) != Some(len) {
        return Err(invalid(
            what,
            format!("{len} values: expected {n_rows} rows × {n_cols} columns"),
        ));
    }
    Ok(())
}

/// Refuses a label indicator other than 0 or 1, naming its row and column; `true` for a 1.
fn indicator(what: &str, row: usize, col: usize, value: f64) -> Result<bool> {
    if value == 0.0 || value == 1.0 {
        Ok(value == 1.0)
    } else {
        Err(invalid(
            what,
            format!(
                "row {row}, column {col} (from 0) holds {value}: expected a label indicator, \
                 0 or 1"
            ),
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
    check_dense_len(what, n_rows, n_labels, values.len())?;
    let mut out = LabelSets::new(n_labels);
    let mut row_labels = Vec::new();
    for r in 0..n_rows {
        row_labels.clear();
        for (c, &v) in values[r * n_labels..(r + 1) * n_labels].iter().enumerate() {
            if indicator(what, r, c, v)? {
                row_labels.push(c as u32);
            }
        }
        out.push_row(&row_labels);
    }
    Ok(out)
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
    if values.len() != indices.len() {
        return Err(invalid(
            what,
            format!(
                "{} values for {} indices: expected one value per index",
                values.len(),
                indices.len()
            ),
        ));
    }
    let mut out = LabelSets::new(n_labels);
    let mut row_labels = Vec::new();
    let mut row = 0;
    walk_csr(what, n_rows, n_labels, indptr, indices, |r, c, k| {
        while row < r {
            out.push_row(&row_labels);
            row_labels.clear();
            row += 1;
        }
        if indicator(what, r, c as usize, values[k])? {
            row_labels.push(c);
        }
        Ok(())
    })?;
    while out.n_rows < n_rows {
        out.push_row(&row_labels);
        row_labels.clear();
    }
    Ok(out)
}

/// A dataset of `features` and `labels`, which must have the same number of rows and at least
/// one column each; without feature or label names.
pub fn dataset_from_arrays(name: &str, features: CsrMatrix, labels: LabelSets) -> Result<Dataset> {
    if features.n_rows != labels.n_rows {
        return Err(DataError::Invalid(format!(
            "the features have {} rows where the labels have {}: expected one label row per \
             example",
            features.n_rows, labels.n_rows
        )));
    }
    for (n, what) in [(features.n_cols, "feature"), (labels.n_labels, "label")] {
        if n == 0 {
            return Err(DataError::Invalid(format!(
                "the data has no {what} columns: expected at least one"
            )));
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

#[cfg(test)]
mod tests {
    use super::*;

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
