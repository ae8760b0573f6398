//! Multi-label data and metrics for `cardinal`: readers for MULAN ARFF + XML, LIBSVM multi-label
//! and Extreme Classification Repository files, seeded splits, and the evaluation metrics.
//! Re-exported by the `cardinal` crate as `cardinal::data` and `cardinal::metrics`.
//!
//! ```
//! use cardinal_data::data::{read_libsvm, IndexBase, SvmOptions};
//! use cardinal_data::metrics::{binarize, evaluate, Binarize, MetricOptions};
//!
//! // Two examples over 3 labels: labels first, then 1-based `feature:value` pairs.
//! let text = "0,2 1:0.5 3:1\n1 2:1.5\n";
//! let opts = SvmOptions { n_labels: Some(3), ..SvmOptions::new(IndexBase::One) };
//! let ds = read_libsvm(text.as_bytes(), &opts)?;
//! assert_eq!((ds.n_rows(), ds.n_features(), ds.n_labels()), (2, 3, 3));
//! assert_eq!(ds.labels.row(0), [0, 2]);
//! assert_eq!(ds.features.row(1), (&[1u32][..], &[1.5f32][..]));
//!
//! // A model's scores (row-major 2 × 3), thresholded at 0.5: P = {0} and {1, 2}.
//! let scores = [0.9, 0.2, 0.4, 0.1, 0.7, 0.6];
//! let pred = binarize(&scores, 3, &Binarize::Threshold(0.5), None)?;
//! assert_eq!((pred.row(0), pred.row(1)), (&[0u32][..], &[1u32, 2][..]));
//!
//! // Example F1 = mean of 2|P ∩ G| / (|P| + |G|) = mean(2/3, 2/3).
//! let report = evaluate(&pred, &ds.labels, &MetricOptions::default());
//! assert!((report.example_f1 - 2.0 / 3.0).abs() < 1e-12);
//! assert_eq!(report.subset_accuracy, 0.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod data;
pub mod metrics;
