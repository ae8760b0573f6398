//! Multi-label datasets: sparse features, label sets, and the readers for MULAN ARFF + XML,
//! LIBSVM multi-label and Extreme Classification Repository files.

/// Sparse matrix in compressed sparse row form (f32 values, u32 column indices).
///
/// Row `r` holds `indices[indptr[r]..indptr[r+1]]` (strictly increasing) and the matching `values`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CsrMatrix {
    pub n_rows: usize,
    pub n_cols: usize,
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
    pub values: Vec<f32>,
}

impl CsrMatrix {
    /// An empty matrix with `n_cols` columns and no rows.
    pub fn new(n_cols: usize) -> Self {
        Self { n_rows: 0, n_cols, indptr: vec![0], indices: Vec::new(), values: Vec::new() }
    }

    /// Appends a row; `indices` must be strictly increasing and `< n_cols` (checked in debug).
    pub fn push_row(&mut self, indices: &[u32], values: &[f32]) {
        debug_assert_eq!(indices.len(), values.len());
        debug_assert!(indices.windows(2).all(|w| w[0] < w[1]));
        debug_assert!(indices.iter().all(|&i| (i as usize) < self.n_cols));
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
    pub n_rows: usize,
    pub n_labels: usize,
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
}

impl LabelSets {
    /// No rows yet, `n_labels` labels.
    pub fn new(n_labels: usize) -> Self {
        Self { n_rows: 0, n_labels, indptr: vec![0], indices: Vec::new() }
    }

    /// Appends the label set of one example; `labels` strictly increasing, `< n_labels`.
    pub fn push_row(&mut self, labels: &[u32]) {
        debug_assert!(labels.windows(2).all(|w| w[0] < w[1]));
        debug_assert!(labels.iter().all(|&i| (i as usize) < self.n_labels));
        self.indices.extend_from_slice(labels);
        self.indptr.push(self.indices.len());
        self.n_rows += 1;
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
    pub features: CsrMatrix,
    pub labels: LabelSets,
    pub feature_names: Vec<String>,
    pub label_names: Vec<String>,
}

impl Dataset {
    pub fn n_rows(&self) -> usize {
        self.features.n_rows
    }
    pub fn n_features(&self) -> usize {
        self.features.n_cols
    }
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
}

/// A dataset with its standard train/test split.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrainTest {
    pub train: Dataset,
    pub test: Dataset,
}
