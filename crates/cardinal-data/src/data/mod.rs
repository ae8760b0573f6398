//! Multi-label datasets: sparse features, label sets, and the readers for MULAN ARFF + XML,
//! LIBSVM multi-label and Extreme Classification Repository files.
//!
//! - [`read_arff`] / [`read_mulan`]: MULAN ARFF (+ XML label file, [`read_label_xml`]) and MEKA
//!   ARFF (labels from the relation name's `-C n`); nominal features one-hot encoded as Weka's
//!   `NominalToBinary` does, identifiers and strings dropped ([`arff`] says how);
//! - [`read_libsvm`] / [`read_xmc`]: LIBSVM multi-label and XMC files;
//! - [`resolve_dataset`]: a name or path to a dataset, as the CLI uses it (with
//!   [`resolve_dataset_noted`], also what it decided: [`LoadNote`]); [`vendored`] Bibtex;
//! - [`split`]: seeded train/dev, k-fold and iterative-stratification splits;
//! - [`DatasetStats`]: MULAN-style statistics;
//! - [`arrays`]: datasets from in-memory arrays (dense or CSR), checked entry by entry.
//!
//! Every reader takes an `impl BufRead` and has a `_path` variant that reads plain or
//! gzip-compressed files (recognised by their magic bytes, not their name). Errors are
//! [`DataError`]s that carry file, line, column and what was expected; a gzip file that does not
//! decompress is reported as [`DataError::Gzip`], whatever the damaged text then looked like.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

pub mod arff;
pub mod arrays;
pub mod csv;
pub mod error;
pub mod inputs;
pub mod invalid;
mod lex;
pub mod multi_target;
pub mod multi_target_inputs;
pub mod overlap;
pub mod resolve;
mod sniff;
pub mod split;
pub mod stats;
pub mod svm;
pub mod synth_seg;
pub mod synthetic;
pub mod write;
pub mod xml;

pub use arff::{
    meka_label_spec, meka_problem, read_arff, read_arff_noted, read_arff_path,
    read_arff_path_noted, read_mulan, read_mulan_noted, ArffNotes, DropReason, DroppedAttribute,
    LabelSpec, MAX_NOMINAL_VALUES,
};
pub use error::{DataError, Location, ParseErrorKind, Result};
pub use inputs::{align_features, read_inputs, InputSchema, Inputs, Labels};
pub use invalid::{ArrayProblem, CsvProblem, InvalidInput};
pub use resolve::{
    load_dir, load_file, load_vendored, resolve_dataset, resolve_dataset_noted, vendored, LoadNote,
    NoteKind, Resolved, VENDORED,
};
pub use split::{
    iterative_stratification, kfold, permutation, split_sizes, train_dev_split, SplitMix64,
};
pub use stats::DatasetStats;
pub use svm::{
    read_libsvm, read_libsvm_path, read_xmc, read_xmc_path, IndexBase, SvmOptions, MAX_LABELS,
};
pub use write::{write_arff, write_label_xml, write_libsvm, write_xmc};
pub use xml::{parse_label_xml, read_label_xml, read_label_xml_path};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Opens a file for buffered reading, decompressing it if it starts with the gzip magic bytes.
pub fn open_path(path: &Path) -> Result<Box<dyn BufRead>> {
    let io_err = |e| DataError::Io {
        path: Some(path.to_path_buf()),
        source: e,
    };
    let f = File::open(path).map_err(io_err)?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let head = r.fill_buf().map_err(io_err)?;
    if head.starts_with(&GZIP_MAGIC) {
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            GzipStream(flate2::bufread::MultiGzDecoder::new(r)),
        )))
    } else {
        Ok(Box::new(r))
    }
}

/// A reader over in-memory bytes, decompressing them if they are gzip data.
pub fn open_bytes(bytes: &[u8]) -> Box<dyn BufRead + '_> {
    if bytes.starts_with(&GZIP_MAGIC) {
        Box::new(BufReader::with_capacity(
            1 << 16,
            GzipStream(flate2::bufread::MultiGzDecoder::new(bytes)),
        ))
    } else {
        Box::new(bytes)
    }
}

/// A gzip decoder whose errors are marked as such, so the readers report [`DataError::Gzip`].
struct GzipStream<R>(R);

impl<R: Read> Read for GzipStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| match e.kind() {
            // Retried by the callers, not a failure.
            io::ErrorKind::Interrupted => e,
            kind => io::Error::new(kind, error::GzipFailure(e)),
        })
    }
}

/// Reads the file at `path` with `read`; errors carry the path. When the file is gzip data that
/// does not decompress, that is the error reported: a damaged stream can decompress to garbage
/// that fails to parse before the decoder's checksum notices.
pub(crate) fn read_file<T>(
    path: &Path,
    read: impl FnOnce(Box<dyn BufRead>) -> Result<T>,
) -> Result<T> {
    let r = open_path(path)?;
    read(r).map_err(|e| gzip_damage(path).unwrap_or_else(|| e.with_path(path)))
}

/// The decompression error of a gzip file that does not decompress to its end; `None` for a
/// sound gzip file or one that is not gzip (checked only after another error, so its cost is
/// paid only then).
fn gzip_damage(path: &Path) -> Option<DataError> {
    let mut r = BufReader::new(File::open(path).ok()?);
    if !r.fill_buf().ok()?.starts_with(&GZIP_MAGIC) {
        return None;
    }
    let mut dec = flate2::bufread::MultiGzDecoder::new(r);
    io::copy(&mut dec, &mut io::sink())
        .err()
        .map(|source| DataError::Gzip {
            path: Some(path.to_path_buf()),
            source,
        })
}

/// File name without `.gz` and the last extension.
pub(crate) fn file_stem(path: &Path) -> String {
    let f = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let f = f.strip_suffix(".gz").unwrap_or(&f);
    match f.rfind('.') {
        Some(i) if i > 0 => f[..i].to_string(),
        _ => f.to_string(),
    }
}

/// Sparse matrix in compressed sparse row form (f32 values, u32 column indices).
///
/// Row `r` holds `indices[indptr[r]..indptr[r+1]]` (strictly increasing) and the matching `values`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CsrMatrix {
    /// Number of rows.
    pub n_rows: usize,
    /// Number of columns (features).
    pub n_cols: usize,
    /// Row offsets into `indices`/`values`: `n_rows + 1` entries starting at 0.
    pub indptr: Vec<usize>,
    /// Column index of every stored entry, row by row.
    pub indices: Vec<u32>,
    /// Value of every stored entry.
    pub values: Vec<f32>,
}

impl CsrMatrix {
    /// An empty matrix with `n_cols` columns and no rows.
    pub fn new(n_cols: usize) -> Self {
        Self {
            n_rows: 0,
            n_cols,
            indptr: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Appends a row; `indices` must be strictly increasing and `< n_cols`. Checked always (the
    /// model's sparse kernels rely on it; the readers guarantee it for every file they accept).
    pub fn push_row(&mut self, indices: &[u32], values: &[f32]) {
        assert_eq!(indices.len(), values.len(), "one value per index");
        assert!(
            indices.windows(2).all(|w| w[0] < w[1]),
            "CSR row indices must be strictly increasing"
        );
        assert!(
            indices.last().is_none_or(|&i| (i as usize) < self.n_cols),
            "CSR row index out of range"
        );
        self.indices.extend_from_slice(indices);
        self.values.extend_from_slice(values);
        self.indptr.push(self.indices.len());
        self.n_rows += 1;
    }

    /// Column indices and values of row `r`.
    pub fn row(&self, r: usize) -> (&[u32], &[f32]) {
        let (a, b) = (self.indptr[r], self.indptr[r + 1]);
        (&self.indices[a..b], &self.values[a..b])
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    /// The sub-matrix made of the given rows, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Self {
        let mut out = Self::new(self.n_cols);
        for &r in rows {
            let (i, v) = self.row(r);
            out.push_row(i, v);
        }
        out
    }

    /// Rows of `self` followed by rows of `other` (same number of columns).
    pub fn vstack(&self, other: &Self) -> Self {
        assert_eq!(self.n_cols, other.n_cols, "vstack: column counts differ");
        let mut out = self.clone();
        for r in 0..other.n_rows {
            let (i, v) = other.row(r);
            out.push_row(i, v);
        }
        out
    }
}

/// Label sets of `n_rows` examples over `n_labels` labels, in CSR form without values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelSets {
    /// Number of examples.
    pub n_rows: usize,
    /// Number of labels.
    pub n_labels: usize,
    /// Row offsets into `indices`: `n_rows + 1` entries starting at 0.
    pub indptr: Vec<usize>,
    /// The labels of every example, row by row, each row strictly increasing.
    pub indices: Vec<u32>,
    /// Per-example weights of the training loss (`n_rows` entries, finite and `>= 0`), or
    /// `None`: every example weighs 1. Only training reads them (each example's terms of the
    /// batch loss are multiplied by its weight); evaluation and the metrics ignore them.
    /// [`Self::select_rows`] keeps each selected row's weight, so training folds and dev
    /// splits carry them. Set them with [`arrays::with_sample_weights`], which checks them.
    pub weights: Option<Vec<f64>>,
}

impl LabelSets {
    /// No rows yet, `n_labels` labels.
    pub fn new(n_labels: usize) -> Self {
        Self {
            n_rows: 0,
            n_labels,
            indptr: vec![0],
            indices: Vec::new(),
            weights: None,
        }
    }

    /// Appends the label set of one example; `labels` strictly increasing, `< n_labels`. With
    /// weights, the new example weighs 1.
    pub fn push_row(&mut self, labels: &[u32]) {
        debug_assert!(labels.windows(2).all(|w| w[0] < w[1]));
        debug_assert!(labels.iter().all(|&i| (i as usize) < self.n_labels));
        self.indices.extend_from_slice(labels);
        self.indptr.push(self.indices.len());
        self.n_rows += 1;
        if let Some(w) = self.weights.as_mut() {
            w.push(1.0);
        }
    }

    /// The loss weight of example `r`, or `None` when the examples are unweighted (see
    /// [`Self::weights`]).
    pub fn weight(&self, r: usize) -> Option<f64> {
        self.weights.as_ref().map(|w| w[r])
    }

    /// Labels of example `r`.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.indices[self.indptr[r]..self.indptr[r + 1]]
    }

    /// Number of labels of example `r` (its cardinality).
    pub fn count(&self, r: usize) -> usize {
        self.indptr[r + 1] - self.indptr[r]
    }

    /// The sub-collection made of the given rows, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Self {
        let mut out = Self::new(self.n_labels);
        for &r in rows {
            out.push_row(self.row(r));
        }
        out.weights = self
            .weights
            .as_ref()
            .map(|w| rows.iter().map(|&r| w[r]).collect());
        out
    }

    /// Writes row `r` as a dense 0/1 vector into `out` (length `n_labels`).
    pub fn write_dense<F: From<u8> + Copy>(&self, r: usize, out: &mut [F]) {
        out.fill(F::from(0));
        for &l in self.row(r) {
            out[l as usize] = F::from(1);
        }
    }
}

/// One split of a dataset: features, labels and their names.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dataset {
    /// Human-readable name (relation name or file stem).
    pub name: String,
    /// Features, one row per example.
    pub features: CsrMatrix,
    /// Label sets, one row per example.
    pub labels: LabelSets,
    /// Feature names (empty for formats without names).
    pub feature_names: Vec<String>,
    /// Label names, one per label (may be empty for formats without names).
    pub label_names: Vec<String>,
}

impl Dataset {
    /// Number of examples.
    pub fn n_rows(&self) -> usize {
        self.features.n_rows
    }
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.features.n_cols
    }
    /// Number of labels.
    pub fn n_labels(&self) -> usize {
        self.labels.n_labels
    }

    /// The examples with the given indices, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Self {
        Self {
            name: self.name.clone(),
            features: self.features.select_rows(rows),
            labels: self.labels.select_rows(rows),
            feature_names: self.feature_names.clone(),
            label_names: self.label_names.clone(),
        }
    }

    /// A seeded random split into `n_train` and `n_test` rows (for single-file datasets such
    /// as MULAN's Bookmarks, which ships without a split; rows keep their file order).
    pub fn train_test_split(&self, n_train: usize, n_test: usize, seed: u64) -> Result<TrainTest> {
        let parts = split::split_sizes(self.n_rows(), &[n_train, n_test], seed)?;
        Ok(TrainTest {
            train: self.select_rows(&parts[0]),
            test: self.select_rows(&parts[1]),
        })
    }
}

/// A dataset with its standard train/test split.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrainTest {
    /// The training examples.
    pub train: Dataset,
    /// The test examples.
    pub test: Dataset,
}

impl TrainTest {
    /// Train rows followed by test rows, as one dataset.
    pub fn all(&self) -> Dataset {
        Dataset {
            name: self.train.name.clone(),
            features: self.train.features.vstack(&self.test.features),
            labels: {
                let mut l = self.train.labels.clone();
                for r in 0..self.test.labels.n_rows {
                    l.push_row(self.test.labels.row(r));
                }
                l
            },
            feature_names: self.train.feature_names.clone(),
            label_names: self.train.label_names.clone(),
        }
    }
}
