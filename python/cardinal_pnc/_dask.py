"""Prediction on data too large for one machine's memory: a Dask array or DataFrame, one
partition at a time, each partition predicted where it lies (on a cluster's workers when a
``dask.distributed`` client is active)."""

from typing import Any

import numpy as np

_METHODS = ("predict", "predict_proba", "predict_count", "decision_function")


def predict_dask(estimator: Any, X: Any, method: str = "predict") -> Any:
    """``estimator``'s ``method`` (``predict``, ``predict_proba``, ``predict_count`` or
    ``decision_function``) on ``X``, a ``dask.array`` (rows in chunks; its columns are brought
    into one chunk) or a ``dask.dataframe``, partition by partition: a lazy Dask array of the
    results (one row per row of ``X``; ``predict_count`` gives a 1-D array). Each partition
    gives exactly what the estimator gives on it in memory. ``estimator`` must be fitted; it is
    pickled to the workers with its model."""
    if method not in _METHODS:
        raise ValueError(f"method={method!r}: expected one of {', '.join(_METHODS)}")
    import dask.array as da  # noqa: PLC0415 (an optional dependency)

    fn = getattr(estimator, method)
    n_labels = int(estimator.n_labels_)
    one_d = method == "predict_count"
    dtype = np.int64 if method == "predict" else np.float64
    def block(b: Any) -> np.ndarray:
        return np.asarray(fn(b)).astype(dtype, copy=False)

    if hasattr(X, "map_partitions") and hasattr(X, "columns"):
        # A Dask DataFrame: each partition reaches the estimator as a pandas DataFrame, so
        # its columns are matched to the model's by name.
        import dask  # noqa: PLC0415

        lengths = X.map_partitions(len).compute()
        parts = [
            da.from_delayed(
                dask.delayed(block)(part),
                shape=(int(n),) if one_d else (int(n), n_labels),
                dtype=dtype,
            )
            for part, n in zip(X.to_delayed(), lengths)
        ]
        return da.concatenate(parts, axis=0)
    if not isinstance(X, da.Array):
        raise ValueError(
            f"X: expected a dask.array or a dask.dataframe, got {type(X).__name__} (an array "
            "in memory goes to the estimator's own methods)"
        )
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D array, got {X.ndim} dimensions")
    X = X.rechunk({1: -1})
    if one_d:
        return X.map_blocks(block, drop_axis=1, dtype=dtype, chunks=(X.chunks[0],))
    return X.map_blocks(block, dtype=dtype, chunks=(X.chunks[0], (n_labels,)))
