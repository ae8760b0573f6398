//! Multi-label evaluation metrics and binarisation rules.
