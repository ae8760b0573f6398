"""scikit-learn's estimator checks. The estimator is multi-label only: its targets are a 0/1
label indicator matrix, and its outputs have one column per label. The checks below assume a
single-output classifier (1-D targets, class labels of any value, ``(n, n_classes)``
probabilities) and cannot apply; every other check passes."""

import inspect

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from cardinal_pnc import CardinalClassifier

# The y of these checks, made binary by the check suite as {min, min + 1} of a column of
# non-negative integers, holds 1 and 2: not a label indicator, refused as such.
_Y_NOT_0_1 = (
    "its y, made binary as {y.min(), y.min() + 1}, holds 1 and 2, not a 0/1 label indicator"
)

# The y of these sample-weight checks holds the classes 1 and 2 (a column of them for a
# multi-output estimator); the weights themselves are checked on 0/1 targets in
# test_sample_weight.py (pandas Series, lists, shapes, bad values).
_Y_1_2 = "its y holds the classes 1 and 2, not a 0/1 label indicator"

EXPECTED_FAILED_CHECKS = {
    "check_estimators_dtypes": _Y_NOT_0_1,
    "check_classifier_data_not_an_array": _Y_NOT_0_1,
    "check_fit2d_1feature": _Y_NOT_0_1 + " (so the error names y, not the one feature)",
    "check_classifiers_classes": "its class labels are strings; labels here are the columns "
    "of an indicator matrix",
    "check_classifiers_train": "expects predict to return a 1-D vector of class labels; "
    "predict returns the n × L indicator matrix",
    "check_decision_proba_consistency": "fits a 1-D y; the targets are a 2-D label "
    "indicator matrix",
    "check_estimator_sparse_array": "expects predict_proba of shape (n, 2) for a binary "
    "target; it has one column per label (sparse input itself is supported)",
    "check_estimator_sparse_matrix": "expects predict_proba of shape (n, 2) for a binary "
    "target; it has one column per label (sparse input itself is supported)",
    "check_classifier_multioutput": "expects decision_function > 0 to equal predict and "
    "round(predict_proba) to equal predict; decision_function ranks labels (the last ascent "
    "step before the projection), and predict is y_T >= threshold (0.5 included)",
    "check_sample_weights_pandas_series": _Y_1_2,
    "check_sample_weights_not_an_array": _Y_1_2,
    "check_sample_weights_shape": _Y_1_2,
    "check_sample_weights_not_overwritten": _Y_1_2,
    "check_classifiers_one_label_sample_weights": "fits a 1-D binary y; the targets are a "
    "2-D label indicator matrix",
    "check_sample_weight_equivalence_on_dense_data": "passes a 1-D multiclass target y; the "
    "targets are a 2-D label indicator matrix. (The loss and its gradient "
    "equal those of repeated rows: crates/cardinal/src/batch/sample_weights.rs.)",
    "check_sample_weight_equivalence_on_sparse_data": "passes a 1-D multiclass target y; the "
    "targets are a 2-D label indicator matrix. (The loss and its gradient "
    "equal those of repeated rows: crates/cardinal/src/batch/sample_weights.rs.)",
}

if "expected_failed_checks" not in inspect.signature(parametrize_with_checks).parameters:
    pytest.skip("scikit-learn before 1.6 has no expected_failed_checks", allow_module_level=True)


# Tiny hyper-parameters: each check trains in milliseconds.
@parametrize_with_checks(
    [CardinalClassifier(hidden=8, epochs=2, random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
