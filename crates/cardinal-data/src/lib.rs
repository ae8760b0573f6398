//! Multi-label data and metrics for `cardinal`: readers for MULAN ARFF + XML, LIBSVM multi-label
//! and Extreme Classification Repository files, seeded splits, and the evaluation metrics.
//! Re-exported by the `cardinal` crate as `cardinal::data` and `cardinal::metrics`.

pub mod data;
pub mod metrics;
