"""cardinal.project and its VJP, checked by independent routes: a bisection on the
projection's KKT conditions, and central finite differences."""

import numpy as np
import pytest

from cardinal_pnc import project, project_vjp


def capped_simplex_by_bisection(v, z):
    """The Euclidean projection onto {0 <= y <= 1, sum y = z}: y = clip(v - tau, 0, 1) with tau
    found by bisection (its KKT conditions), written independently of the library."""
    lo, hi = v.min() - 1.0, v.max()
    for _ in range(200):
        tau = 0.5 * (lo + hi)
        if np.clip(v - tau, 0, 1).sum() > z:
            lo = tau
        else:
            hi = tau
    return np.clip(v - 0.5 * (lo + hi), 0, 1)


def test_exact_projection_matches_bisection_on_random_rows():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 12)) * 2
    z = rng.uniform(0.5, 11.5, size=50)
    y = project(v, z)
    assert y.shape == v.shape
    for r in range(50):
        np.testing.assert_allclose(y[r], capped_simplex_by_bisection(v[r], z[r]), atol=1e-9)
    np.testing.assert_allclose(y.sum(axis=1), z, atol=1e-9)
    # One vector with one count.
    np.testing.assert_allclose(project(v[0], z[0]), y[0])


@pytest.mark.parametrize("method", ["exact", "smooth", "dykstra-soft", "fp"])
def test_vjp_matches_central_finite_differences(method):
    rng = np.random.default_rng(1)
    v = rng.normal(size=8)
    z = 3.3
    g = rng.normal(size=8)
    gv, gz = project_vjp(v, z, g, method=method)
    h = 1e-6

    def loss(vv, zz):
        return float(g @ project(vv, zz, method=method))

    fd_v = np.array([(loss(v + h * e, z) - loss(v - h * e, z)) / (2 * h) for e in np.eye(8)])
    fd_z = (loss(v, z + h) - loss(v, z - h)) / (2 * h)
    np.testing.assert_allclose(gv, fd_v, atol=1e-5)
    assert abs(gz - fd_z) < 1e-5
    # Row-wise on a batch gives the same as one row at a time.
    gv2, gz2 = project_vjp(np.stack([v, v]), [z, z], np.stack([g, g]), method=method)
    np.testing.assert_allclose(gv2[1], gv)
    assert gz2.shape == (2,)
