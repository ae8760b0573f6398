//! Multi-target data: every example has `L` targets (positions), each taking one of the same
//! `M` classes, as in image segmentation (the paper's Section 6). Features are dense.
//!
//! Read and written as MEKA's multi-target ARFF ([`super::arff::read_multi_target_arff`],
//! [`super::arff::write_multi_target_arff`]): the relation name's `-C L` says that the first
//! `L` attributes are the targets, each a nominal attribute over the class names.

/// A multi-target dataset: dense features and one class per position.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiTargetDataset {
    /// Human-readable name (the relation name without MEKA's options).
    pub name: String,
    /// Names of the `M` classes (the nominal values shared by every target).
    pub class_names: Vec<String>,
    /// Names of the `L` target attributes.
    pub target_names: Vec<String>,
    /// Names of the features.
    pub feature_names: Vec<String>,
    /// Features, row-major `n × n_features`.
    pub features: Vec<f32>,
    /// Classes, row-major `n × L`, each below `M`.
    pub targets: Vec<u32>,
}

impl MultiTargetDataset {
    /// Number of examples (counted by the targets, or, for new data without targets, by the
    /// features).
    pub fn n_rows(&self) -> usize {
        match self.positions() {
            0 => self.features.len() / self.n_features().max(1),
            l => self.targets.len() / l,
        }
    }
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.feature_names.len()
    }
    /// Number of positions `L` (targets per example).
    pub fn positions(&self) -> usize {
        self.target_names.len()
    }
    /// Number of classes `M`.
    pub fn classes(&self) -> usize {
        self.class_names.len()
    }
    /// Features of example `i`.
    pub fn row_features(&self, i: usize) -> &[f32] {
        let d = self.n_features();
        &self.features[i * d..(i + 1) * d]
    }
    /// Classes of example `i`.
    pub fn row_targets(&self, i: usize) -> &[u32] {
        let l = self.positions();
        &self.targets[i * l..(i + 1) * l]
    }
    /// The examples `rows`, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Self {
        let mut out = Self {
            features: Vec::with_capacity(rows.len() * self.n_features()),
            targets: Vec::with_capacity(rows.len() * self.positions()),
            ..self.clone_header()
        };
        for &i in rows {
            out.features.extend_from_slice(self.row_features(i));
            out.targets.extend_from_slice(self.row_targets(i));
        }
        out
    }
    /// The names without the rows.
    fn clone_header(&self) -> Self {
        Self {
            name: self.name.clone(),
            class_names: self.class_names.clone(),
            target_names: self.target_names.clone(),
            feature_names: self.feature_names.clone(),
            features: Vec::new(),
            targets: Vec::new(),
        }
    }
    /// A seeded split into `n_train` and `n_test` rows (the binary datasets' split:
    /// [`super::split::split_sizes`]), each part in file order.
    pub fn train_test_split(
        &self,
        n_train: usize,
        n_test: usize,
        seed: u64,
    ) -> super::error::Result<(Self, Self)> {
        let parts = super::split::split_sizes(self.n_rows(), &[n_train, n_test], seed)?;
        Ok((self.select_rows(&parts[0]), self.select_rows(&parts[1])))
    }
    /// How many positions of example `i` take each class (the class sizes `z`).
    pub fn class_counts(&self, i: usize) -> Vec<usize> {
        let mut z = vec![0; self.classes()];
        for &c in self.row_targets(i) {
            z[c as usize] += 1;
        }
        z
    }
}
