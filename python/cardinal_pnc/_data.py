"""Datasets as arrays, read by the library's readers."""

import os
import warnings
from typing import Any, List, NamedTuple, Optional, Union

import numpy as np
import scipy.sparse

from . import _native
from ._arrays import from_parts


Features = Union[np.ndarray, scipy.sparse.csr_matrix]


class Dataset(NamedTuple):
    """A dataset's train and test splits: features (float32) as a dense ``numpy.ndarray`` for
    dense data and a ``scipy.sparse.csr_matrix`` for sparse data (see :func:`load_dataset`;
    both splits alike), labels as dense indicator matrices (uint8), and the feature and label
    names (empty lists for formats without names). Unpacks as
    ``X_train, Y_train, X_test, Y_test, feature_names, label_names``."""

    X_train: Features
    Y_train: np.ndarray
    X_test: Features
    Y_test: np.ndarray
    feature_names: List[str]
    label_names: List[str]


def _is_dense(parts: List[Any]) -> bool:
    """Whether at least half of the entries of the feature matrices (CSR parts) are stored:
    then a dense array takes less memory than the CSR matrix (4 bytes a cell against 8 a
    stored entry)."""
    cells = sum(int(p[0]) * int(p[1]) for p in parts)
    stored = sum(len(p[4]) for p in parts)
    return cells > 0 and 2 * stored >= cells


def _features(parts: Any, dense: bool) -> Features:
    m = from_parts(parts)
    return np.ascontiguousarray(m.toarray(), dtype=np.float32) if dense else m


def load_dataset(
    name_or_path: Optional[Union[str, "os.PathLike[str]"]] = None,
    data_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    train_fraction: float = 0.8,
    *,
    train: Optional[Union[str, "os.PathLike[str]"]] = None,
    test: Optional[Union[str, "os.PathLike[str]"]] = None,
    labels: Optional[Union[str, "os.PathLike[str]"]] = None,
    sparse: Optional[bool] = None,
) -> Dataset:
    """Reads a dataset exactly as ``cardinal train --dataset NAME_OR_PATH`` does, or as
    ``cardinal train --train TRAIN --test TEST --labels LABELS`` does.

    ``name_or_path`` is a name (looked up in ``data_dir``, else ``$CARDINAL_DATA``, else among
    the vendored datasets: ``"bibtex"`` is built in) or a path: a MULAN folder (its
    ``<prefix>-train*.arff`` and ``<prefix>-test*.arff``, e.g. ``Corel5k-train-sparse.arff``,
    with ``<prefix>.xml``), an ARFF file with its XML label file beside it (or a MEKA header
    ``-C n`` naming its labels), a LIBSVM multi-label or an Extreme Classification Repository
    file. A dataset in a single file is split into train and test with ``train_fraction``, as
    the command-line program splits it. ``train``, ``test`` and ``labels`` (all three, instead
    of ``name_or_path``) name a MULAN train ARFF file, test ARFF file and XML label file
    anywhere. What the readers decided on the way (attributes dropped as identifiers, labels
    taken from a MEKA header, 0-based LIBSVM) is issued as warnings.

    The features come as a dense ``numpy.ndarray`` (float32) when the data is dense: at least
    half of the entries of the train and test features together are non-zero (numeric
    features such as emotions', yeast's or scene's; ``StandardScaler()`` then centres them
    as usual), and as a ``scipy.sparse.csr_matrix`` otherwise (bag-of-words features such
    as bibtex's, where a dense array would be mostly zeros). ``sparse=True`` or ``False``
    chooses the form instead. The model is the same either way.

    Raises ``ValueError`` for malformed files (the message names the file, line and column) or
    arguments, and ``OSError`` when a file cannot be read.
    """
    if sparse is not None and not isinstance(sparse, (bool, np.bool_)):
        raise ValueError(f"sparse={sparse!r}: expected True, False or None")
    if not 0.0 < float(train_fraction) < 1.0:
        raise ValueError(f"train_fraction={train_fraction!r}: expected a number in (0, 1)")

    def path(p: Optional[Union[str, "os.PathLike[str]"]]) -> Optional[str]:
        return None if p is None else os.fspath(p)

    d = _native.load_dataset(
        path(name_or_path),
        path(data_dir),
        float(train_fraction),
        train=path(train),
        test=path(test),
        labels=path(labels),
    )
    for note in d["notes"]:
        warnings.warn(f"{d['name']}: {note}", stacklevel=2)
    dense = _is_dense([d["X_train"], d["X_test"]]) if sparse is None else not sparse
    return Dataset(
        X_train=_features(d["X_train"], dense),
        Y_train=d["Y_train"],
        X_test=_features(d["X_test"], dense),
        Y_test=d["Y_test"],
        feature_names=list(d["feature_names"]),
        label_names=list(d["label_names"]),
    )
