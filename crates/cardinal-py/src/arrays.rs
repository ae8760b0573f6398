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

/// A library constructor from CSR parts: `(what, n_rows, n_cols, indptr, indices, values)`.
type FromCsr<T, M> = fn(&str, usize, usize, &[i64], &[i64], &[T]) -> cardinal::data::Result<M>;
/// A library constructor from a dense row-major buffer: `(what, n_rows, n_cols, values)`.
type FromDense<T, M> = fn(&str, usize, usize, &[T]) -> cardinal::data::Result<M>;

/// A matrix of element type `T` (numpy dtype `dtype`) from a dense 2-D array or CSR parts,
/// through the library's checked constructors; errors name `what`.
fn matrix_from<T: numpy::Element, M>(
    a: &Bound<'_, PyAny>,
    what: &str,
    dtype: &str,
    from_csr: FromCsr<T, M>,
    from_dense: FromDense<T, M>,
) -> PyResult<M> {
    if let Ok((n_rows, n_cols, indptr, indices, data)) = a.extract::<CsrParts<'_, T>>() {
        return from_csr(
            what,
            n_rows,
            n_cols,
            slice(&indptr, what)?,
            slice(&indices, what)?,
            slice(&data, what)?,
        )
        .map_err(data_to_py);
    }
    let dense: PyReadonlyArray2<'_, T> = a.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{what}: expected a 2-D {dtype} array or the parts of a CSR matrix"
        ))
    })?;
    let (n_rows, n_cols) = (dense.shape()[0], dense.shape()[1]);
    from_dense(what, n_rows, n_cols, slice(&dense, what)?).map_err(data_to_py)
}

/// Features from a dense float32 array or CSR parts; errors name `what` (e.g. `"X"`).
pub(crate) fn features(x: &Bound<'_, PyAny>, what: &str) -> PyResult<CsrMatrix> {
    matrix_from(x, what, "float32", features_from_csr, features_from_dense)
}

/// Label sets from a dense float64 indicator array or CSR parts; errors name `what`.
pub(crate) fn labels(y: &Bound<'_, PyAny>, what: &str) -> PyResult<LabelSets> {
    matrix_from(y, what, "float64", labels_from_csr, labels_from_dense)
}

/// A row-major `rows × cols` buffer as a numpy array.
pub(crate) fn matrix<'py, T: numpy::Element>(
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
pub(crate) fn indicator_matrix<'py>(
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
