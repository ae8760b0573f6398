"""Every model says what it is: the system that really trained (``system_``, ``repr``,
``search_results_``), a forest's graded scores and its refusal of a threshold, and the
Predict-and-Constrain-only switch (``system="pnc"``)."""

import numpy as np
import pytest

from cardinal_pnc import CardinalClassifier


def test_a_forest_says_so_and_refuses_a_threshold(problem, tmp_path):
    X, Y, Xt, _ = problem
    forest = CardinalClassifier(system="forest", random_state=0).fit(X, Y)
    assert forest.system_ == "forest" == forest.config_["system"]
    assert "system 'forest'" in repr(forest)
    # Its graded scores are its labels' marginals, not the 0/1 set it decides.
    proba = forest.predict_proba(Xt)
    assert ((proba >= 0) & (proba <= 1)).all()
    assert ((proba > 0) & (proba < 1)).any()
    labels, z = forest.predict(Xt), forest.predict_count(Xt)
    np.testing.assert_array_equal(labels.sum(axis=1), z.astype(np.int64))
    # A threshold would give the same set at every value: refused, naming it.
    for kw in ({"threshold": 0.3}, {"labels_by": "threshold"}):
        with pytest.raises(ValueError, match="threshold"):
            forest.set_params(**kw).predict(Xt)
        forest.set_params(threshold=None, labels_by=None)
    forest.set_params(labels_by="top-k=2")
    assert (forest.predict(Xt).sum(axis=1) == 2).all()
    # Saved and loaded, it is still the forest.
    forest.save(tmp_path / "f")
    assert CardinalClassifier.load(tmp_path / "f").system_ == "forest"


def test_pnc_alone_searches_its_own_candidates_and_holds_the_constraint(problem, tmp_path):
    X, Y, Xt, _ = problem
    pnc = CardinalClassifier(system="pnc", random_state=0, epochs=2, search=True)
    pnc.fit(X[:150], Y[:150])
    assert pnc.system_ == "pnc"
    res = pnc.search_results_
    assert res["scope"] == "pnc" and res["systems"] == ["pnc"] * 4
    assert res["chosen"] == pnc.config_["preset"] and res["chosen_system"] == "pnc"
    proba, z = pnc.predict_proba(Xt), pnc.predict_count(Xt)
    assert np.abs(proba.sum(axis=1) - z).max() <= 0.01
    assert proba.min() >= 0 and proba.max() <= 1
    # The record is kept with the model.
    pnc.save(tmp_path / "p")
    assert CardinalClassifier.load(tmp_path / "p").search_results_ == res


def test_an_unknown_system_is_named():
    with pytest.raises(ValueError, match="system='nosuch'"):
        CardinalClassifier(system="nosuch").fit(np.eye(6), np.eye(6)[:, :2])


def test_the_labels_go_by_y_or_by_y_s_other_name(problem):
    X, Y, Xt, _ = problem
    a = CardinalClassifier(hidden=8, epochs=2, random_state=0).fit(X, y=Y)
    b = CardinalClassifier(hidden=8, epochs=2, random_state=0).fit(X, Y=Y)
    np.testing.assert_array_equal(a.predict_proba(Xt), b.predict_proba(Xt))
    with pytest.raises(ValueError, match="both given"):
        CardinalClassifier().fit(X, y=Y, Y=Y)
    with pytest.raises(ValueError, match="requires y to be passed"):
        CardinalClassifier().fit(X)
