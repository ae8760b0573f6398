//! `project` and `project_vjp`: the projection operators of `cardinal-proj`, row by row, on
//! numpy arrays (float64).

use cardinal::proj::{AnyProjector, AnyTape, Method, ProjParams, Projector};
use numpy::PyUntypedArrayMethods;
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrays::matrix;
use crate::errors::to_py;

/// The projector the arguments name, checked ([`AnyProjector::checked`]).
fn projector(
    method: &str,
    rounds: usize,
    iters: usize,
    eps: Option<f64>,
) -> PyResult<AnyProjector> {
    let method: Method = method
        .parse()
        .map_err(|e| to_py(cardinal::Error::Projection(e)))?;
    let mut params = ProjParams {
        rounds,
        fp_iters: iters,
        ..ProjParams::default()
    };
    if let Some(eps) = eps {
        params.smooth_eps = eps;
    }
    AnyProjector::checked(method, params).map_err(|e| to_py(cardinal::Error::Projection(e)))
}

/// The rows of `v` (`n × L`, C-contiguous) and one `z` per row, checked for shape.
fn rows_and_counts<'a>(
    v: &'a PyReadonlyArray2<'_, f64>,
    z: &'a PyReadonlyArray1<'_, f64>,
) -> PyResult<(usize, usize, &'a [f64], &'a [f64])> {
    let (n, l) = (v.shape()[0], v.shape()[1]);
    let vs = v
        .as_slice()
        .map_err(|_| PyValueError::new_err("v: expected a C-contiguous array"))?;
    let zs = z
        .as_slice()
        .map_err(|_| PyValueError::new_err("z: expected a C-contiguous array"))?;
    if zs.len() != n {
        return Err(PyValueError::new_err(format!(
            "z has {} entries where v has {n} rows: expected one count per row",
            zs.len()
        )));
    }
    if l == 0 {
        return Err(to_py(cardinal::Error::Projection(
            cardinal::proj::ProjError::Empty,
        )));
    }
    Ok((n, l, vs, zs))
}

/// A projection error on row `r`, naming the row.
fn row_error(r: usize, e: cardinal::proj::ProjError) -> PyErr {
    to_py(cardinal::Error::Row { row: r, source: e })
}

/// Projects every row of `v` onto `{0 <= y <= 1, sum y = z}` (or the method's set) with the
/// count of its row in `z`.
#[pyfunction]
#[pyo3(signature = (v, z, method="exact", rounds=2, iters=10, eps=None))]
pub(crate) fn project<'py>(
    py: Python<'py>,
    v: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray1<'py, f64>,
    method: &str,
    rounds: usize,
    iters: usize,
    eps: Option<f64>,
) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
    let proj = projector(method, rounds, iters, eps)?;
    let (n, l, vs, zs) = rows_and_counts(&v, &z)?;
    let mut out = vec![0.0; n * l];
    let mut tape = AnyTape::<f64>::default();
    for r in 0..n {
        proj.forward(
            &vs[r * l..(r + 1) * l],
            zs[r],
            &mut out[r * l..(r + 1) * l],
            &mut tape,
        )
        .map_err(|e| row_error(r, e))?;
    }
    matrix(py, n, l, out)
}

/// The vector-Jacobian product of [`project`]: given `g = ∂ℓ/∂y` for every row, returns
/// `(∂ℓ/∂v, ∂ℓ/∂z)`.
#[pyfunction]
#[pyo3(signature = (v, z, g, method="exact", rounds=2, iters=10, eps=None))]
pub(crate) fn project_vjp<'py>(
    py: Python<'py>,
    v: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray1<'py, f64>,
    g: PyReadonlyArray2<'py, f64>,
    method: &str,
    rounds: usize,
    iters: usize,
    eps: Option<f64>,
) -> PyResult<Bound<'py, PyTuple>> {
    let proj = projector(method, rounds, iters, eps)?;
    let (n, l, vs, zs) = rows_and_counts(&v, &z)?;
    if g.shape() != v.shape() {
        return Err(PyValueError::new_err(format!(
            "g has shape {:?} where v has {:?}: expected the same shape",
            g.shape(),
            v.shape()
        )));
    }
    let gs = g
        .as_slice()
        .map_err(|_| PyValueError::new_err("g: expected a C-contiguous array"))?;
    let (mut y, mut gv, mut gz) = (vec![0.0; l], vec![0.0; n * l], vec![0.0; n]);
    let mut tape = AnyTape::<f64>::default();
    for r in 0..n {
        let rows = r * l..(r + 1) * l;
        proj.forward(&vs[rows.clone()], zs[r], &mut y, &mut tape)
            .map_err(|e| row_error(r, e))?;
        gz[r] = proj.vjp(&tape, &gs[rows.clone()], &mut gv[rows]);
    }
    let items = [
        matrix(py, n, l, gv)?.into_any(),
        PyArray1::from_vec(py, gz).into_any(),
    ];
    PyTuple::new(py, items)
}
