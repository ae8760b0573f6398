"""The estimator's inputs, checked and named: ``X`` and ``Y`` (numpy arrays, scipy.sparse
matrices, pandas DataFrames, lists) in the two forms the extension module takes (see
``_arrays``), with a DataFrame's column names. What the library checks (finite features, 0/1
labels, matching shapes) it reports itself; this module refuses what it cannot be given:
complex or non-numeric values, numbers beyond float32, missing targets, label sets."""

import hashlib
import math
import re
from typing import Any, List, Optional, Tuple, Union

import numpy as np
import scipy.sparse

from ._arrays import CsrParts, as_native

ArrayLike = Any
Native = Union[np.ndarray, CsrParts]

_F32_MAX = float(np.finfo(np.float32).max)

_MULTILABEL_HINT = (
    "CardinalClassifier is multi-label only and takes a label indicator matrix "
    "(n_samples × n_labels, 0/1); label sets (a list of labels per sample) become one with "
    "sklearn.preprocessing.MultiLabelBinarizer().fit_transform(Y)"
)


def column_names(a: Any, features: bool = True) -> Optional[List[str]]:
    """The column names of a DataFrame whose columns are all named by strings (as
    scikit-learn takes feature names), else ``None``; feature names of mixed kinds (some
    strings, some not) raise ``TypeError`` as scikit-learn's do."""
    if scipy.sparse.issparse(a):
        return None
    cols = getattr(a, "columns", None)
    if cols is None or not hasattr(a, "iloc"):
        return None
    names = list(cols)
    if names and all(isinstance(c, str) for c in names):
        return names
    kinds = sorted({type(c).__name__ for c in names})
    if features and any(isinstance(c, str) for c in names):
        # As scikit-learn does: names of mixed kinds would be matched by some and not others.
        raise TypeError(
            "Feature names are only supported if all input features have string names, but "
            f"your input has {kinds} as feature name / column name types. If you want feature "
            "names to be stored and validated, you must convert them all to strings, by using "
            "X.columns = X.columns.astype(str) for example. Otherwise you can remove feature / "
            "column names from your input data, or convert them all to a non-string data type."
        )
    return None


class NotANumberError(ValueError, TypeError):
    """A value of an object array that is not a number: a ``ValueError`` (bad input), and a
    ``TypeError`` as numpy raises for it."""


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        import pandas as pd  # noqa: PLC0415 (pandas is optional)

        return bool(pd.isna(v)) if np.ndim(v) == 0 else False
    except ImportError:  # pragma: no cover
        return False


def _numeric(arr: np.ndarray, what: str) -> np.ndarray:
    """An object array's values as float64, or a ``ValueError`` naming the first value that
    is not a number."""
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        pass
    for idx in np.ndindex(arr.shape):
        v = arr[idx]
        try:
            float(v)
        except (TypeError, ValueError):
            where = f"row {idx[0]}, column {idx[1]} (from 0)" if len(idx) == 2 else f"entry {idx}"
            if _is_missing(v):
                raise ValueError(
                    f"{what}: {where} holds a missing value ({v!r}): impute it first, e.g. "
                    "with sklearn.impute.SimpleImputer"
                ) from None
            raise NotANumberError(
                f"{what}: {where} holds {v!r} ({type(v).__name__}): expected numbers (float() "
                f"argument must be a string or a real number, not '{type(v).__name__}')"
            ) from None
    raise ValueError(f"{what}: expected numbers")  # pragma: no cover


def _check_kind(dtype: np.dtype, what: str) -> None:
    if dtype.kind == "c":
        raise ValueError(
            f"Complex data not supported: {what} has dtype {dtype}; pass its real part "
            "(np.real) or its magnitude (np.abs) explicitly"
        )
    if dtype.kind in "USV":
        raise ValueError(
            f"{what}: holds strings (dtype {dtype}): expected numbers; encode them first, e.g. "
            "with sklearn.preprocessing.OneHotEncoder"
        )
    if dtype.kind in "mM":
        raise ValueError(f"{what}: holds dates or durations (dtype {dtype}): expected numbers")


def _check_float32_range(values: np.ndarray, shape_rows: Any, what: str) -> None:
    """Refuses finite values that float32, the engine's type, would turn into infinities."""
    if values.dtype.kind != "f" or values.dtype.itemsize <= 4 or values.size == 0:
        return
    with np.errstate(invalid="ignore"):
        big = np.abs(values) > _F32_MAX
    if not big.any():
        return
    big &= np.isfinite(values)
    if not big.any():
        return
    pos = int(np.flatnonzero(big.reshape(-1))[0])
    where = shape_rows(pos)
    raise ValueError(
        f"{what}: {where} holds {float(values.reshape(-1)[pos])!r}, beyond float32's range "
        f"(±{_F32_MAX:.4g}), in which the model computes: scale the features first"
    )


def as_features(X: ArrayLike, when: str) -> Tuple[Native, Optional[List[str]]]:
    """``X`` as the extension module takes it (float32), and its column names."""
    if X is None:
        raise ValueError(
            f"X: {when} expected a 2-D array, a scipy.sparse matrix or a DataFrame, got None"
        )
    names = column_names(X)
    if scipy.sparse.issparse(X):
        _check_kind(X.dtype, "X")
        if X.dtype.kind == "O":
            raise ValueError("X: a sparse matrix of dtype object: expected numbers")
        csr = scipy.sparse.csr_matrix(X)
        if csr.ndim != 2:  # pragma: no cover
            raise ValueError("X: expected a 2-D sparse matrix")

        def where(k: int) -> str:
            row = int(np.searchsorted(csr.indptr, k, side="right") - 1)
            return f"row {row}, column {int(csr.indices[k])} (from 0)"

        _check_float32_range(csr.data, where, "X")
        return as_native(csr, np.float32, "X"), names
    arr = np.asarray(X)
    _check_kind(arr.dtype, "X")
    if arr.dtype.kind == "O":
        arr = _numeric(arr, "X")
    if arr.ndim != 2:
        hint = (
            ". Reshape your data: a single feature is X.reshape(-1, 1), a single sample "
            "X.reshape(1, -1)"
            if arr.ndim == 1
            else ""
        )
        raise ValueError(
            f"X: expected a 2-D array or a scipy.sparse matrix, got {arr.ndim} dimensions{hint}"
        )
    cols = arr.shape[1]
    _check_float32_range(arr, lambda k: f"row {k // cols}, column {k % cols} (from 0)", "X")
    return as_native(arr, np.float32, "X"), names


def as_labels(Y: ArrayLike) -> Tuple[Native, Optional[List[str]]]:
    """``Y`` as the extension module takes it (float64), and its column names."""
    if Y is None:
        raise ValueError(
            "CardinalClassifier requires y to be passed, but the target y is None: "
            "fit(X, y) takes a 0/1 label indicator matrix y"
        )
    names = column_names(Y, features=False)
    if scipy.sparse.issparse(Y):
        _check_kind(Y.dtype, "Y")
        return as_native(Y, np.float64, "Y"), names
    if isinstance(Y, (list, tuple)):
        try:
            arr = np.asarray(Y)
        except ValueError:
            raise ValueError(f"Y: rows of different lengths: {_MULTILABEL_HINT}") from None
        if arr.dtype.kind in "OUS" or arr.ndim != 2:
            raise ValueError(f"Y: not a label indicator matrix: {_MULTILABEL_HINT}")
    else:
        arr = np.asarray(Y)
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: Y has dtype {arr.dtype}")
    if arr.dtype.kind in "OUS":
        if arr.dtype.kind == "O" and arr.ndim == 2:
            arr = _numeric(arr, "Y")
        else:
            raise ValueError(f"Y: holds {arr.dtype} values: {_MULTILABEL_HINT}")
    if arr.ndim == 1:
        kind = _target_type(arr)
        if kind == "multiclass":
            raise ValueError(
                "Y: a 1-D multiclass target: Only binary classification is supported, one "
                "binary label per column of a label indicator matrix; a multiclass target "
                f"becomes one with sklearn.preprocessing.LabelBinarizer. {_MULTILABEL_HINT}"
            )
        raise ValueError(
            f"Y: expected a 2-D label indicator matrix, got a 1-D array (a {kind} target): for "
            "binary classification, a single 0/1 label is Y.reshape(-1, 1); "
            f"{_MULTILABEL_HINT}"
        )
    if arr.ndim != 2:
        raise ValueError(f"Y: expected a 2-D label indicator matrix, got {arr.ndim} dimensions")
    return as_native(arr, np.float64, "Y"), names


def as_sample_weight(sample_weight: Any, n_rows: int) -> Optional[np.ndarray]:
    """``sample_weight`` as a contiguous 1-D float64 array of ``n_rows`` weights (a number is
    that weight for every row), or ``None``. Its values (finite, ``>= 0``, not all zero) are
    checked by the library."""
    if sample_weight is None:
        return None
    if scipy.sparse.issparse(sample_weight):
        raise ValueError("sample_weight: a sparse matrix: expected a 1-D array of weights")
    arr = np.asarray(sample_weight)
    _check_kind(arr.dtype, "sample_weight")
    if arr.dtype.kind == "O":
        arr = _numeric(arr, "sample_weight")
    if arr.dtype.kind == "b":
        raise ValueError("sample_weight: holds booleans: expected numbers (weights >= 0)")
    if arr.ndim == 0:
        arr = np.full(n_rows, float(arr))
    if arr.ndim != 1:
        raise ValueError(
            f"sample_weight: expected a 1-D array of {n_rows} weights (one per row of X), "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] != n_rows:
        raise ValueError(
            f"sample_weight: {arr.shape[0]} weights for the {n_rows} rows of X: expected one "
            "per row"
        )
    return np.ascontiguousarray(arr, dtype=np.float64)


def _target_type(y: np.ndarray) -> str:
    """scikit-learn's name of the kind of a target (``binary``, ``multiclass``,
    ``continuous``...), for messages."""
    try:
        from sklearn.utils.multiclass import type_of_target  # noqa: PLC0415

        return str(type_of_target(y))
    except ValueError:
        return "unknown"


def label_error(message: str) -> str:
    """The library's refusal of a value of ``Y`` in scikit-learn's words: continuous values are
    an unknown label type, and label sets a job for MultiLabelBinarizer."""
    m = re.search(r"holds (\S+): expected a label indicator", message)
    continuous = False
    if m:
        try:
            v = float(m.group(1))
            continuous = math.isfinite(v) and v != round(v)
        except ValueError:
            pass
    lead = "Unknown label type: continuous values in Y. " if continuous else ""
    return f"{lead}{message}; {_MULTILABEL_HINT}"


def rows(a: Native) -> int:
    return int(a[0]) if isinstance(a, tuple) else int(a.shape[0])


def cols(a: Native) -> int:
    return int(a[1]) if isinstance(a, tuple) else int(a.shape[1])


def fitted_rows(x: Native, y: Native) -> None:
    """Refuses training data without rows or without label columns, in the estimator's
    words."""
    if rows(x) == 0:
        raise ValueError("X has 0 rows: fit needs at least one sample")
    if rows(y) == 0:
        raise ValueError("Y has 0 rows: fit needs at least one sample")
    if cols(y) == 0:
        raise ValueError("Y has 0 columns: fit needs at least one label")
    if cols(x) == 0:
        raise ValueError(
            f"X has 0 feature(s) (shape=({rows(x)}, 0)) while a minimum of 1 is required: fit "
            "needs at least one feature"
        )


def digest(a: Native) -> Tuple[Any, ...]:
    """A key of the content of an input (its shape and a hash of its values)."""
    h = hashlib.blake2b(digest_size=16)
    if isinstance(a, tuple):
        for part in a[2:]:
            h.update(np.ascontiguousarray(part).reshape(-1).view(np.uint8).data)
            h.update(b"|")
        return (a[0], a[1], h.hexdigest())
    h.update(np.ascontiguousarray(a).reshape(-1).view(np.uint8).data)
    return (a.shape, h.hexdigest())
