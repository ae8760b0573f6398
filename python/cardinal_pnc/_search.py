"""The default's search as joblib tasks: each task one training of one candidate on one fold,
run by whatever joblib backend is active (in order, in this process, by default; on a Dask
cluster's workers inside ``joblib.parallel_backend("dask")``). A task's result depends on
nothing but its arguments, so the model fitted from the results is the same wherever they
ran, to the byte."""

import os
import sys
from typing import Any, Dict, List, Optional, Tuple

import joblib
import numpy as np

from . import _native

# The library's cap on threads per core (`--threads`), applied where a task lands: a worker
# with fewer cores runs the task on fewer threads, with the same result.
_THREADS_PER_CORE = 4


def search_as_tasks(
    features: Any,
    labels: Any,
    weights: Any,
    args: Dict[str, Any],
    threads: int,
    verbose: int,
) -> Optional[List[str]]:
    """The results of every task of the default's search of a fit with these arguments (for
    ``NativeModel.fit(search_results=...)``), or ``None`` where the fit does not search."""
    tasks = _native.search_tasks(features, labels, sample_weight=weights, **args)
    if not tasks:
        return None
    if verbose:
        print(
            f"search: {len(tasks)} trainings (candidate × fold) as joblib tasks on the active "
            "backend (search=False trains the configuration as it is)",
            file=sys.stderr,
        )
    jobs = (
        joblib.delayed(_run_task)(features, labels, weights, args, task, threads, verbose)
        for task in tasks
    )
    return list(joblib.Parallel()(jobs))


def _run_task(
    features: Any,
    labels: Any,
    weights: Any,
    args: Dict[str, Any],
    task: Tuple[int, int],
    threads: int,
    verbose: int,
) -> str:
    """One task, on a pool of ``threads`` threads (at most the cap where it runs)."""
    # Arrays that crossed to a worker may arrive unaligned (views of a received buffer).
    features, labels, weights = (_contiguous(a) for a in (features, labels, weights))
    cap = _THREADS_PER_CORE * (os.cpu_count() or 1)
    pool = _native.NativePool(max(1, min(threads, cap)))
    training, fold = task
    return _native.run_search_task(
        features, labels, pool, training, fold, sample_weight=weights, verbose=verbose, **args
    )


def _contiguous(a: Any) -> Any:
    """``a`` (an array, a tuple of a sparse matrix's parts, or ``None``) with its arrays
    C-contiguous and aligned (copied where they are not)."""
    if isinstance(a, np.ndarray):
        return a if a.flags.c_contiguous and a.flags.aligned else np.array(a, order="C")
    if isinstance(a, tuple):
        return tuple(_contiguous(x) for x in a)
    return a
