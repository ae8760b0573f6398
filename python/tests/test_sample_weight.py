"""``fit(X, Y, sample_weight=...)``: weights change the loss and nothing else, all-ones weights
change nothing, a weight of 0 removes a row's labels from training, bad weights are refused,
and GridSearchCV passes each fold its weights. (The weighted loss and gradient themselves are
checked against repeated rows and finite differences in crates/cardinal/tests.)"""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GridSearchCV

from cardinal_pnc import CardinalClassifier

from conftest import SMALL

# No dev part (its unweighted scores would decide early stopping), so that only the weighted
# loss sees the labels.
NO_DEV = {"train": {"dev_fraction": 0.0, "patience": 0}}


def proba(X, Y, Xt, sample_weight=None, **kw):
    clf = CardinalClassifier(**{**SMALL, **kw}).fit(X, Y, sample_weight=sample_weight)
    return clf.predict_proba(Xt)


def test_no_weights_and_equal_weights_of_one_train_the_same_model(problem):
    X, Y, Xt, _ = problem
    plain = proba(X, Y, Xt)
    np.testing.assert_array_equal(proba(X, Y, Xt, np.ones(len(X))), plain)
    np.testing.assert_array_equal(proba(X, Y, Xt, [1] * len(X)), plain)
    np.testing.assert_array_equal(proba(X, Y, Xt, pd.Series(np.ones(len(X)))), plain)
    np.testing.assert_array_equal(proba(X, Y, Xt, 1.0), plain)
    # Other weights train another model.
    halves = np.where(np.arange(len(X)) % 2 == 0, 1.0, 0.5)
    assert np.abs(proba(X, Y, Xt, halves) - plain).max() > 1e-4


def test_a_zero_weight_removes_the_rows_labels_from_training(problem):
    """Rows of weight 0 contribute nothing to any gradient: changing their labels (keeping
    each row's label count, from which the count range is drawn) trains the same model, while
    the same change with the rows weighted trains another."""
    X, Y, Xt, _ = problem
    group = np.arange(len(X)) < 80
    Y2 = Y.copy()
    Y2[group] = np.roll(Y[group], 3, axis=1)
    assert (Y2 != Y).any() and (Y2.sum(axis=1) == Y.sum(axis=1)).all()
    w = np.where(group, 0.0, 1.0)
    np.testing.assert_array_equal(
        proba(X, Y, Xt, w, config=NO_DEV), proba(X, Y2, Xt, w, config=NO_DEV)
    )
    unweighted = proba(X, Y, Xt, config=NO_DEV)
    assert np.abs(proba(X, Y2, Xt, config=NO_DEV) - unweighted).max() > 1e-3
    # And the zero weights did change the model.
    assert np.abs(proba(X, Y, Xt, w, config=NO_DEV) - unweighted).max() > 1e-3


@pytest.mark.parametrize(
    "weights, says",
    [
        (np.ones(299), "299 weights for the 300 rows"),
        (np.ones((300, 1)), "expected a 1-D array"),
        (np.r_[np.ones(299), np.nan], "entry 299 (from 0) is NaN"),
        (np.r_[np.inf, np.ones(299)], "entry 0 (from 0) is inf"),
        (np.r_[np.ones(10), -1.0, np.ones(289)], "entry 10 (from 0) is -1"),
        (np.r_[np.ones(299), 1e39], "float32"),
        (np.zeros(300), "all weights are zero"),
        (np.array(["1"] * 300), "holds strings"),
        (np.ones(300) * 1j, "Complex data not supported"),
        (np.ones(300, dtype=bool), "booleans"),
        (np.array([None] * 300), "is NaN"),
    ],
)
def test_bad_weights_raise_a_value_error_naming_sample_weight(problem, weights, says):
    X, Y, _, _ = problem
    with pytest.raises(ValueError, match="sample_weight") as e:
        CardinalClassifier(**SMALL).fit(X, Y, sample_weight=weights)
    assert says in str(e.value)


def test_grid_search_passes_each_fold_its_weights(problem):
    """A fold given all 300 weights would be refused (error_score="raise"); the refit on all
    rows trains what a direct weighted fit trains."""
    X, Y, Xt, _ = problem
    w = np.where(np.arange(len(X)) % 3 == 0, 2.0, 0.5)
    search = GridSearchCV(
        CardinalClassifier(**SMALL), {"hidden": [16]}, cv=2, scoring="f1_samples",
        error_score="raise",
    )
    search.fit(X, Y, sample_weight=w)
    direct = proba(X, Y, Xt, w, hidden=16)
    np.testing.assert_array_equal(search.best_estimator_.predict_proba(Xt), direct)
    assert np.abs(proba(X, Y, Xt, hidden=16) - direct).max() > 1e-4


def test_the_default_with_weights_of_one_is_the_default(problem):
    """With the default's search (forest candidates included), all-ones weights train the
    model no weights train; other weights say that the forests are left out."""
    X, Y, Xt, _ = problem
    fit = lambda w=None: CardinalClassifier(random_state=0).fit(X[:150], Y[:150], sample_weight=w)  # noqa: E731
    plain = fit()
    ones = fit(np.ones(150))
    assert ones.system_ == plain.system_
    np.testing.assert_array_equal(ones.predict_proba(Xt), plain.predict_proba(Xt))
    with pytest.warns(UserWarning, match="leaves out its candidates that grow a forest"):
        fit(np.where(np.arange(150) % 2 == 0, 1.0, 2.0))
