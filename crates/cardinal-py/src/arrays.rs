//! numpy arrays in, the library's [`CsrMatrix`] and [`LabelSets`] out (through its checked
//! constructors, [`cardinal::data::arrays`]), and back.
//!
//! A matrix arrives as a C-contiguous 2-D array or as the tuple `(n_rows, n_cols, indptr,
//! indices, data)` of a CSR matrix; the Python side makes one of the two from numpy arrays and
//! scipy.sparse matrices.

use cardinal::data::arrays::{
    features_from_csr, features_from_dense, labels_from_csr, labels_from_dense,
};
use cardinal::data::{CsrMatrix, LabelSets};
use numpy::ndarray::Array2;
use numpy::PyUntypedArrayMethods;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::data_to_py;

/// The parts of a CSR matrix as the Python side passes them.
type CsrParts<'py, T> = (
    usize,
    usize,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, T>,
);

/// The contiguous buffer of a read-only array, or a `ValueError` naming `what`.
fn slice<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    a: &'a numpy::PyReadonlyArray<'_, T, D>,
    what: &str,
) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{what}: expected a C-contiguous array")))
}

/// Features from a dense float32 array or CSR parts; errors name `what` (e.g. `"X"`).
pub fn features(x: &Bound<'_, PyAny>, what: &str) -> PyResult<CsrMatrix> {
    if let Ok((n_rows, n_cols, indptr, indices, data)) = x.extract::<CsrParts<'_, f32>>() {
        return features_from_csr(
            what,
            n_rows,
            n_cols,
            slice(&indptr, what)?,
            slice(&indices, what)?,
            slice(&data, what)?,
        )
        .map_err(data_to_py);
    }
    let dense: PyReadonlyArray2<'_, f32> = x.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{what}: expected a 2-D float32 array or the parts of a CSR matrix"
        ))
    })?;
    let (n_rows, n_cols) = (dense.shape()[0], dense.shape()[1]);
    features_from_dense(what, n_rows, n_cols, slice(&dense, what)?).map_err(data_to_py)
}

/// Label sets from a dense float64 indicator array or CSR parts; errors name `what`.
pub fn labels(y: &Bound<'_, PyAny>, what: &str) -> PyResult<LabelSets> {
    if let Ok((n_rows, n_cols, indptr, indices, data)) = y.extract::<CsrParts<'_, f64>>() {
        return labels_from_csr(
            what,
            n_rows,
            n_cols,
            slice(&indptr, what)?,
            slice(&indices, what)?,
            slice(&data, what)?,
        )
        .map_err(data_to_py);
    }
    let dense: PyReadonlyArray2<'_, f64> = y.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{what}: expected a 2-D float64 array or the parts of a CSR matrix"
        ))
    })?;
    let (n_rows, n_cols) = (dense.shape()[0], dense.shape()[1]);
    labels_from_dense(what, n_rows, n_cols, slice(&dense, what)?).map_err(data_to_py)
}

/// A row-major `rows × cols` buffer as a numpy array.
pub fn matrix<'py, T: numpy::Element>(
    py: Python<'py>,
    rows: usize,
    cols: usize,
    values: Vec<T>,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    Array2::from_shape_vec((rows, cols), values)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Label sets as a dense `uint8` indicator matrix.
pub fn indicator_matrix<'py>(
    py: Python<'py>,
    labels: &LabelSets,
) -> PyResult<Bound<'py, PyArray2<u8>>> {
    let l = labels.n_labels;
    let mut dense = vec![0u8; labels.n_rows * l];
    for r in 0..labels.n_rows {
        labels.write_dense(r, &mut dense[r * l..(r + 1) * l]);
    }
    matrix(py, labels.n_rows, l, dense)
}
