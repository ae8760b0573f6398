"""numpy and scipy.sparse input in the two forms the extension module takes: a C-contiguous
2-D array, or the parts ``(n_rows, n_cols, indptr, indices, data)`` of a CSR matrix. Every
check of the values (finite features, 0/1 labels, matching shapes) is the library's."""

from typing import Any, Tuple, Union

import numpy as np
import scipy.sparse

CsrParts = Tuple[int, int, np.ndarray, np.ndarray, np.ndarray]


def as_native(a: Any, dtype: type, what: str) -> Union[np.ndarray, CsrParts]:
    """``a`` as a C-contiguous 2-D array of ``dtype``, or as the CSR parts of a sparse matrix
    (indices sorted, duplicates summed)."""
    if scipy.sparse.issparse(a):
        csr = scipy.sparse.csr_matrix(a, dtype=dtype, copy=True)
        csr.sum_duplicates()
        return (
            csr.shape[0],
            csr.shape[1],
            np.ascontiguousarray(csr.indptr, dtype=np.int64),
            np.ascontiguousarray(csr.indices, dtype=np.int64),
            np.ascontiguousarray(csr.data, dtype=dtype),
        )
    arr = np.asarray(a)
    if arr.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D array or a scipy.sparse matrix, got {arr.ndim} dimensions")
    return np.ascontiguousarray(arr, dtype=dtype)


def n_rows(a: Any) -> int:
    """The number of rows of a matrix (scikit-learn's ``_num_samples``, for error messages)."""
    return int(a.shape[0])


def from_parts(parts: CsrParts) -> scipy.sparse.csr_matrix:
    """A CSR matrix from the parts the extension module returns."""
    rows, cols, indptr, indices, data = parts
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(rows, cols))
