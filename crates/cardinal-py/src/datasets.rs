//! `load_dataset`: any dataset the CLI reads, as arrays.

use std::path::PathBuf;

use cardinal::data::{CsrMatrix, Dataset};
use cardinal::engine::DataSpec;
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::arrays::indicator_matrix;
use crate::errors::to_py;

/// A feature matrix as the tuple `(n_rows, n_cols, indptr, indices, data)` of CSR parts.
fn csr_parts<'py>(py: Python<'py>, m: &CsrMatrix) -> PyResult<Bound<'py, PyTuple>> {
    let indptr: Vec<i64> = m.indptr.iter().map(|&i| i as i64).collect();
    let indices: Vec<i64> = m.indices.iter().map(|&i| i64::from(i)).collect();
    let items = [
        m.n_rows.into_pyobject(py)?.into_any(),
        m.n_cols.into_pyobject(py)?.into_any(),
        PyArray1::from_vec(py, indptr).into_any(),
        PyArray1::from_vec(py, indices).into_any(),
        PyArray1::from_vec(py, m.values.clone()).into_any(),
    ];
    PyTuple::new(py, items)
}

/// Puts `X_<split>` (CSR parts) and `Y_<split>` (a `uint8` indicator matrix) into `out`.
fn put_split(out: &Bound<'_, PyDict>, split: &str, d: &Dataset) -> PyResult<()> {
    let py = out.py();
    out.set_item(format!("X_{split}"), csr_parts(py, &d.features)?)?;
    out.set_item(format!("Y_{split}"), indicator_matrix(py, &d.labels)?)?;
    Ok(())
}

/// A data error in the words of the Python function: its keyword `data_dir=`, not the CLI's
/// flag.
fn in_python_words(e: cardinal::Error) -> PyErr {
    let err = to_py(e);
    Python::attach(|py| {
        let msg = err.value(py).to_string();
        let worded = msg.replace("--data-dir or CARDINAL_DATA", "data_dir= or $CARDINAL_DATA");
        if worded == msg {
            err
        } else {
            PyErr::from_type(err.get_type(py), worded)
        }
    })
}

/// Reads the dataset `name_or_path` exactly as `cardinal train --dataset` does (a name in
/// `data_dir` or `$CARDINAL_DATA`, a vendored name such as `bibtex`, or a path to a MULAN
/// folder, an ARFF file with its XML beside it, a LIBSVM or an XMC file; a single file is split
/// with `train_fraction` as the CLI splits it), or the MULAN files `train`, `test` and
/// `labels` as `cardinal train --train --test --labels` reads them. Returns a dict with
/// `X_train`, `Y_train`, `X_test`, `Y_test`, `feature_names`, `label_names`, `name` and
/// `notes` (what the readers decided on the way).
#[pyfunction]
#[pyo3(signature = (name_or_path=None, data_dir=None, train_fraction=0.8, train=None, test=None, labels=None))]
pub(crate) fn load_dataset<'py>(
    py: Python<'py>,
    name_or_path: Option<String>,
    data_dir: Option<PathBuf>,
    train_fraction: f64,
    train: Option<PathBuf>,
    test: Option<PathBuf>,
    labels: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let files = [&train, &test, &labels];
    let given = files.iter().filter(|f| f.is_some()).count();
    if given != 0 && given != 3 {
        return Err(PyValueError::new_err(
            "train, test and labels go together: pass all three (the MULAN train and test \
             ARFF files and their XML label file), or none",
        ));
    }
    if given == 3 && name_or_path.is_some() {
        return Err(PyValueError::new_err(
            "pass either name_or_path or train, test and labels, not both",
        ));
    }
    let Some(dataset) = name_or_path.or_else(|| {
        train
            .as_ref()
            .and_then(|t| t.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
    }) else {
        return Err(PyValueError::new_err(
            "name_or_path: a dataset name or path is required (or train, test and labels)",
        ));
    };
    let spec = DataSpec {
        data_dir: data_dir.or_else(|| crate::environment().data_dir.clone()),
        train_fraction,
        train,
        test,
        labels,
        ..DataSpec::named(dataset)
    };
    let (tt, notes) = py.detach(|| spec.load_noted()).map_err(in_python_words)?;
    let out = PyDict::new(py);
    put_split(&out, "train", &tt.train)?;
    put_split(&out, "test", &tt.test)?;
    out.set_item("feature_names", tt.train.feature_names.clone())?;
    out.set_item("label_names", tt.train.label_names.clone())?;
    out.set_item("name", tt.train.name.clone())?;
    let notes: Vec<String> = notes.iter().map(|n| n.to_string()).collect();
    out.set_item("notes", notes)?;
    Ok(out)
}
