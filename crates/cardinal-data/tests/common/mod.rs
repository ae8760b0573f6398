//! Helpers shared by the readers' fixture tests.

// Each test binary includes this module and uses only some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use cardinal_data::data::Dataset;

/// A file or folder of the tiny fixtures, `tests/fixtures/data/REL`.
pub(crate) fn fx(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/data")
        .join(rel)
}

/// One row: (column, value) pairs and labels.
pub(crate) type Row = (Vec<(u32, f32)>, Vec<u32>);

/// Every row of `ds`, for comparing with a fixture's known content.
pub(crate) fn rows(ds: &Dataset) -> Vec<Row> {
    (0..ds.n_rows())
        .map(|r| {
            let (i, v) = ds.features.row(r);
            (
                i.iter().copied().zip(v.iter().copied()).collect(),
                ds.labels.row(r).to_vec(),
            )
        })
        .collect()
}
