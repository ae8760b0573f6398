"""Datasets as arrays, read by the library's readers."""

import os
import warnings
from typing import List, NamedTuple, Optional, Union

import numpy as np
import scipy.sparse

from . import _native
from ._arrays import from_parts


class Dataset(NamedTuple):
    """A dataset's train and test splits: features as ``scipy.sparse.csr_matrix`` (float32),
    labels as dense indicator matrices (uint8), and the feature and label names (empty lists
    for formats without names). Unpacks as
    ``X_train, Y_train, X_test, Y_test, feature_names, label_names``."""

    X_train: scipy.sparse.csr_matrix
    Y_train: np.ndarray
    X_test: scipy.sparse.csr_matrix
    Y_test: np.ndarray
    feature_names: List[str]
    label_names: List[str]


def load_dataset(
    name_or_path: Union[str, "os.PathLike[str]"],
    data_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    train_fraction: float = 0.8,
) -> Dataset:
    """Reads a dataset exactly as ``cardinal train --dataset NAME_OR_PATH`` does.

    ``name_or_path`` is a name (looked up in ``data_dir``, else ``$CARDINAL_DATA``, else among
    the vendored datasets: ``"bibtex"`` is built in) or a path: a MULAN folder, an ARFF file
    with its XML label file beside it, a LIBSVM multi-label or an Extreme Classification
    Repository file. A dataset in a single file is split into train and test with
    ``train_fraction``, as the command-line program splits it. What the readers decided on the
    way (attributes dropped as identifiers, labels taken from a MEKA header, 0-based LIBSVM) is
    issued as warnings.

    Raises ``ValueError`` for malformed files (the message names the file, line and column) and
    ``OSError`` when a file cannot be read.
    """
    d = _native.load_dataset(
        os.fspath(name_or_path),
        None if data_dir is None else os.fspath(data_dir),
        train_fraction,
    )
    for note in d["notes"]:
        warnings.warn(f"{d['name']}: {note}", stacklevel=2)
    return Dataset(
        X_train=from_parts(d["X_train"]),
        Y_train=d["Y_train"],
        X_test=from_parts(d["X_test"]),
        Y_test=d["Y_test"],
        feature_names=list(d["feature_names"]),
        label_names=list(d["label_names"]),
    )
