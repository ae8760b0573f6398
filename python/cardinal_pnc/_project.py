"""The projection operators of ``cardinal-proj`` and their vector-Jacobian products."""

from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native

ArrayLike = Union[np.ndarray, List[float], Sequence[float]]


def _rows(v: ArrayLike, z: Union[float, ArrayLike]) -> Tuple[np.ndarray, np.ndarray, bool]:
    """``v`` as C-contiguous float64 rows, one ``z`` per row, and whether ``v`` was 1-D."""
    arr = np.asarray(v, dtype=np.float64)
    single = arr.ndim == 1
    if arr.ndim not in (1, 2):
        raise ValueError(f"v: expected a 1-D or 2-D array, got {arr.ndim} dimensions")
    rows = np.ascontiguousarray(arr.reshape(1, -1) if single else arr)
    zs = np.asarray(z, dtype=np.float64)
    if zs.ndim == 0:
        zs = np.full(rows.shape[0], float(zs))
    return rows, np.ascontiguousarray(zs.reshape(-1)), single


def project(
    v: ArrayLike,
    z: Union[float, ArrayLike],
    method: str = "exact",
    rounds: int = 2,
    iters: int = 10,
    eps: Optional[float] = None,
) -> np.ndarray:
    """Projects ``v`` (one vector, or one per row of a 2-D array) onto
    ``{y : 0 <= y <= 1, sum(y) = z}`` (``z`` a number, or one per row).

    ``method`` is one of ``exact`` (the Euclidean projection), ``simplex``, ``soft``,
    ``dykstra-soft`` (the paper's operator as the released code computes it, with a ReLU
    inside Algorithm 1's softsign), ``soft-printed`` and ``dykstra-soft-printed`` (Algorithm
    1 as printed), ``dykstra-exact``, ``fp``, ``smooth`` (entropic, temperature ``eps``,
    default 0.1) and ``clip``; ``rounds`` is used by the Dykstra methods,
    ``iters`` by ``fp``. Returns float64 of ``v``'s shape. Raises ``ValueError`` for an unknown
    method, a ``z`` outside ``[0, L]``, a non-finite entry (naming the row) or a parameter out
    of its range, whatever the method (``rounds`` 1..=1000, ``iters`` 1..=200, ``eps`` > 0;
    named as in a configuration's ``inference`` section: ``fp_iters``, ``smooth_eps``).
    """
    rows, zs, single = _rows(v, z)
    out = _native.project(rows, zs, method, rounds, iters, eps)
    return out[0] if single else out


def project_vjp(
    v: ArrayLike,
    z: Union[float, ArrayLike],
    g: ArrayLike,
    method: str = "exact",
    rounds: int = 2,
    iters: int = 10,
    eps: Optional[float] = None,
) -> Tuple[np.ndarray, Union[float, np.ndarray]]:
    """The vector-Jacobian product of :func:`project` at ``(v, z)``: given ``g = dL/dy`` (the
    shape of ``v``), returns ``(dL/dv, dL/dz)``; ``dL/dz`` is a number for a 1-D ``v`` and one
    per row otherwise."""
    rows, zs, single = _rows(v, z)
    gs = np.ascontiguousarray(np.asarray(g, dtype=np.float64).reshape(rows.shape) if single else np.asarray(g, dtype=np.float64))
    gv, gz = _native.project_vjp(rows, zs, gs, method, rounds, iters, eps)
    return (gv[0], float(gz[0])) if single else (gv, gz)
