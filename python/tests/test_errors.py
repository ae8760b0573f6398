"""Bad input raises ValueError with the library's message; nothing crashes the interpreter."""

import numpy as np
import pytest
import scipy.sparse

from cardinal_pnc import CardinalClassifier, load_dataset, project

from conftest import SMALL


def test_labels_other_than_0_and_1(problem):
    X, Y, _, _ = problem
    Y2 = Y.copy()
    Y2[4, 2] = 2
    with pytest.raises(ValueError, match=r"Y: row 4, column 2 \(from 0\) holds 2: expected a label indicator"):
        CardinalClassifier(**SMALL).fit(X, Y2)
    with pytest.raises(ValueError, match="holds -1"):
        CardinalClassifier(**SMALL).fit(X, scipy.sparse.csr_matrix(-Y))
    with pytest.raises(ValueError, match="holds 0.5"):
        CardinalClassifier(**SMALL).fit(X, Y * 0.5)


@pytest.mark.parametrize("value,shown", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_non_finite_features(problem, value, shown):
    X, Y, _, _ = problem
    X2 = X.copy()
    X2[7, 3] = value
    with pytest.raises(ValueError, match=rf"X: row 7, column 3 \(from 0\) holds {shown}"):
        CardinalClassifier(**SMALL).fit(X2, Y)
    with pytest.raises(ValueError, match="row 7, column 3"):
        CardinalClassifier(**SMALL).fit(scipy.sparse.csr_matrix(X2), Y)
    clf = CardinalClassifier(**SMALL).fit(X, Y)
    with pytest.raises(ValueError, match="row 7, column 3"):
        clf.predict(X2)


def test_row_counts_that_differ(problem):
    X, Y, _, _ = problem
    with pytest.raises(ValueError, match="the features have 299 rows where the labels have 300"):
        CardinalClassifier(**SMALL).fit(X[:-1], Y)


def test_feature_count_at_predict(problem):
    X, Y, Xt, _ = problem
    clf = CardinalClassifier(**SMALL).fit(X, Y)
    with pytest.raises(ValueError, match="X has 29 features, but CardinalClassifier is expecting 30 features as input"):
        clf.predict(Xt[:, :29])
    with pytest.raises(ValueError, match="X has 31 features"):
        clf.predict_proba(scipy.sparse.hstack([scipy.sparse.csr_matrix(Xt), np.ones((100, 1))]))


def test_configuration_errors_name_the_field(problem):
    X, Y, _, _ = problem
    with pytest.raises(ValueError, match="model.dropout"):
        CardinalClassifier(dropout=1.5).fit(X, Y)
    with pytest.raises(ValueError, match="unknown field|nonsense"):
        CardinalClassifier(config={"nonsense": 1}).fit(X, Y)
    with pytest.raises(ValueError, match="preset"):
        CardinalClassifier(preset="nope").fit(X, Y)


def test_degenerate_shapes_raise_instead_of_crashing(problem):
    X, Y, _, _ = problem
    with pytest.raises(ValueError, match="X has 0 rows"):
        CardinalClassifier(**SMALL).fit(X[:0], Y[:0])
    with pytest.raises(ValueError, match="2-D"):
        CardinalClassifier(**SMALL).fit(X[0], Y)
    with pytest.raises(ValueError):
        CardinalClassifier(**SMALL).fit(X, Y[:, :0])
    with pytest.raises(ValueError):
        CardinalClassifier(**SMALL).fit(X[:, :0], Y)
    with pytest.raises(ValueError):
        CardinalClassifier(**SMALL).fit(np.array([["a"] * 30] * 300), Y)
    clf = CardinalClassifier(**SMALL).fit(X, Y)
    assert clf.predict(X[:0]).shape == (0, 8)


def test_unreadable_data_and_projection_input():
    with pytest.raises(ValueError, match="not found"):
        load_dataset("no-such-dataset-anywhere")
    with pytest.raises(ValueError, match="outside"):
        project([0.1, 0.2], 3.0)
    with pytest.raises(ValueError, match=r"row 1 .*not finite"):
        project([[0.1, 0.2], [np.nan, 0.0]], 1.0)
    with pytest.raises(ValueError, match="unknown projection method"):
        project([0.1, 0.2], 1.0, method="nope")
    with pytest.raises(ValueError, match="rounds = 0"):
        project([0.1, 0.2], 1.0, method="dykstra-soft", rounds=0)


def test_n_jobs_is_capped_as_the_cli_caps_threads(problem):
    """`n_jobs` beyond the CLI's cap on `--threads` (4 per core) is refused before any thread
    starts, naming `n_jobs`; at the cap it trains."""
    X, Y, _, _ = problem
    for n in (4096 + 1, 65535):
        with pytest.raises(ValueError, match=f"n_jobs = {n} .*per core"):
            CardinalClassifier(**SMALL, n_jobs=n).fit(X, Y)
    CardinalClassifier(**SMALL, n_jobs=2).fit(X[:60], Y[:60])
