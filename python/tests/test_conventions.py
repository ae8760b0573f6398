"""scikit-learn's conventions: prediction-time parameters, the default's search as a visible
part of the estimator, random_state and n_jobs, errors in Python's words, one inference per
input."""

import json
import os
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone

from cardinal_pnc import CardinalClassifier, _native

from conftest import SMALL


def asks(**kw):
    """The configuration an estimator asks the library for (the seed left out)."""
    return json.loads(_native.check_config(**CardinalClassifier(**kw)._config_args()))


def test_prediction_time_parameters_never_change_training(problem):
    X, Y, Xt, _ = problem
    plain = CardinalClassifier(**SMALL).fit(X, Y)
    for kw in ({"threshold": 0.3}, {"labels_by": "round-z"}, {"threshold": 0.5}):
        other = CardinalClassifier(**SMALL, **kw).fit(X, Y)
        np.testing.assert_array_equal(other.predict_proba(Xt), plain.predict_proba(Xt))
        assert other.config_ == plain.config_
    # They change predict, and take effect without a refit.
    proba, z = plain.predict_proba(Xt), plain.predict_count(Xt)
    plain.set_params(threshold=0.3)
    np.testing.assert_array_equal(plain.predict(Xt), (proba >= 0.3).astype(np.int64))
    plain.set_params(threshold=None, labels_by="round-z")
    counts = plain.predict(Xt).sum(axis=1)
    np.testing.assert_array_equal(counts, np.clip(np.round(z), 0, Y.shape[1]).astype(np.int64))
    plain.set_params(labels_by="top-k=2")
    assert (plain.predict(Xt).sum(axis=1) == 2).all()


def test_a_parameter_at_its_default_value_changes_nothing():
    default = asks()
    assert default["search"]["max_rows"] == 2000
    for kw in (
        {"threshold": 0.5},
        {"threshold": 0.3},
        {"labels_by": "round-z"},
        {"hidden": 2000},
        {"dropout": 0.5},
        {"epochs": 60},
        {"config": {"model": {"hidden": 2000}}},
        {"n_jobs": 2},
        {"verbose": 1},
        {"search": None},
    ):
        assert asks(**kw) == default, kw
    # A hyper-parameter other than the preset's turns the search off; `search` decides.
    assert "search" not in asks(hidden=24)
    assert "search" not in asks(config={"train": {"epochs": 3}})
    assert "search" not in asks(search=False)
    assert asks(hidden=24, search=True)["search"]["max_rows"] == 2000
    assert "search" not in asks(preset="paper")


def test_the_search_is_recorded_and_a_loaded_model_refits(problem, tmp_path):
    X, Y, Xt, _ = problem
    # A quick search: six candidates cross-validated on 150 rows, each trained briefly.
    searched = CardinalClassifier(random_state=0, epochs=2, search=True).fit(X[:150], Y[:150])
    res = searched.search_results_
    assert res["candidates"] == [
        "predict", "paper-projected", "paper-wide", "predict-forest-prior", "forest",
        "forest-blend",
    ]
    assert len(res["mean_example_f1"]) == 6 and res["folds"] == 5
    assert res["chosen"] == searched.config_["preset"]
    best = res["candidates"][int(np.argmax(res["mean_example_f1"]))]
    assert res["chosen"] == best
    assert CardinalClassifier(**SMALL).fit(X, Y).search_results_ is None
    # Whatever the search chose (here forced: paper-wide), the saved model refits, and so does
    # its clone, to the same weights.
    wide = CardinalClassifier(
        preset="paper",
        random_state=0,
        config={
            "preset": "paper-wide",
            "system": "pnc",
            "model": {"hidden": 16},
            "train": {"epochs": 2},
        },
    ).fit(X, Y)
    assert wide.config_["preset"] == "paper-wide"
    wide.save(tmp_path / "wide")
    loaded = CardinalClassifier.load(tmp_path / "wide")
    for again in (clone(loaded).fit(X, Y), loaded.fit(X, Y)):
        assert again.config_ == wide.config_
        np.testing.assert_array_equal(again.predict_proba(Xt), wide.predict_proba(Xt))


def test_random_state_conventions(problem):
    X, Y, Xt, _ = problem
    a = CardinalClassifier(**{**SMALL, "random_state": 7}).fit(X, Y)
    b = CardinalClassifier(**{**SMALL, "random_state": 7}).fit(X, Y)
    np.testing.assert_array_equal(a.predict_proba(Xt), b.predict_proba(Xt))
    assert a.config_["seed"] == 7
    # None: a fresh seed at every fit, from numpy's global state.
    kw = {**SMALL, "random_state": None}
    s1 = CardinalClassifier(**kw).fit(X, Y).config_["seed"]
    s2 = CardinalClassifier(**kw).fit(X, Y).config_["seed"]
    assert s1 != s2
    np.random.seed(3)
    s3 = CardinalClassifier(**kw).fit(X, Y).config_["seed"]
    np.random.seed(3)
    assert CardinalClassifier(**kw).fit(X, Y).config_["seed"] == s3
    # A RandomState draws the seed.
    r1 = CardinalClassifier(**{**SMALL, "random_state": np.random.RandomState(0)}).fit(X, Y)
    r2 = CardinalClassifier(**{**SMALL, "random_state": np.random.RandomState(0)}).fit(X, Y)
    assert r1.config_["seed"] == r2.config_["seed"]
    for bad in (-1, 1.5, "x", True):
        with pytest.raises(ValueError, match="random_state"):
            CardinalClassifier(**{**SMALL, "random_state": bad}).fit(X, Y)
    # The former name still works, with a FutureWarning.
    with pytest.warns(FutureWarning, match="random_state"):
        old = CardinalClassifier(hidden=32, epochs=4, seed=7).fit(X, Y)
    np.testing.assert_array_equal(old.predict_proba(Xt), a.predict_proba(Xt))


def test_n_jobs_conventions(problem):
    X, Y, Xt, _ = problem
    clf = CardinalClassifier(**SMALL)
    assert clf._threads() == 1
    cores = os.cpu_count()
    assert clf.set_params(n_jobs=-1)._threads() == cores
    if cores > 1:
        assert clf.set_params(n_jobs=-2)._threads() == cores - 1
    assert clf.set_params(n_jobs=3)._threads() == 3
    for bad in (0, -cores - 1, 1.5, "2"):
        with pytest.raises(ValueError, match="n_jobs"):
            CardinalClassifier(**SMALL, n_jobs=bad).fit(X, Y)
    with pytest.warns(FutureWarning, match="n_jobs"):
        assert CardinalClassifier(threads=2)._threads() == 2
    one = CardinalClassifier(**SMALL, n_jobs=1).fit(X, Y)
    many = CardinalClassifier(**SMALL, n_jobs=-1).fit(X, Y)
    np.testing.assert_array_equal(one.predict_proba(Xt), many.predict_proba(Xt))


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"hidden": -1}, "hidden=-1"),
        ({"hidden": 0}, "hidden=0"),
        ({"hidden": 2.5}, "hidden=2.5"),
        ({"epochs": "3"}, "epochs='3'"),
        ({"dropout": 1.5}, "dropout=1.5"),
        ({"lr": float("nan")}, "lr=nan"),
        ({"batch_size": -4}, "batch_size=-4"),
        ({"threshold": float("inf")}, "threshold=inf"),
        ({"labels_by": "nope"}, "labels_by"),
        ({"preset": "nope"}, "preset='nope'"),
        ({"config": {"nonsense": 1}}, "config: "),
        ({"config": 3}, "config: "),
        ({"search": "yes"}, "search='yes'"),
        ({"search_scoring": "f1"}, "search_scoring='f1'"),
        ({"verbose": -1}, "verbose=-1"),
    ],
)
def test_bad_parameters_name_the_python_parameter(problem, kw, match):
    X, Y, _, _ = problem
    with pytest.raises(ValueError, match=match) as e:
        clf = CardinalClassifier(**{**SMALL, **kw}).fit(X, Y)
        clf.predict(X)
    msg = str(e.value)
    # Neither the CLI's flags nor the Rust deserializer's words.
    assert "--" not in msg and "usize" not in msg and "line 1, column" not in msg, msg


def test_input_errors_in_python_words(problem):
    X, Y, _, _ = problem
    clf = CardinalClassifier(**SMALL)
    with pytest.raises(ValueError, match="Complex data not supported"):
        clf.fit(X + 1j, Y)
    with pytest.raises(ValueError, match="requires y to be passed"):
        clf.fit(X, None)
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        clf.fit(X[:3], [[0, 2], [1], [3, 4, 5]])
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        clf.fit(X[:2], [["sports"], ["arts", "music"]])
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        clf.fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        clf.fit(X[:2], [[0, 2, 1], [1, 0, 3]])
    with pytest.raises(ValueError, match=r"row 1, column 2 \(from 0\) holds 'a' \(str\)"):
        bad = X[:3].astype(object)
        bad[1, 2] = "a"
        clf.fit(bad, Y[:3])
    with pytest.raises(ValueError, match=r"row 0, column 4 \(from 0\) holds 1e\+39, beyond float32"):
        big = X.copy()
        big[0, 4] = 1e39
        clf.fit(big, Y)
    with pytest.raises(ValueError, match="beyond float32"):
        big = scipy.sparse.csr_matrix(X)
        big[5, 1] = -1e39
        clf.fit(big, Y)
    # Object arrays of numbers are numbers.
    fitted = clf.fit(X.astype(object), Y)
    assert fitted.predict(X.astype(object)).dtype == np.int64


def test_missing_values_of_pandas_are_named(problem):
    pd = pytest.importorskip("pandas")
    X, Y, _, _ = problem
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).astype("Float64")
    frame.iloc[2, 5] = pd.NA
    with pytest.raises(ValueError, match=r"row 2, column 5 .*(missing value|NaN)"):
        CardinalClassifier(**SMALL).fit(frame, Y)


def test_one_inference_per_input(problem, monkeypatch):
    X, Y, Xt, _ = problem
    clf = CardinalClassifier(**SMALL).fit(X, Y)
    calls = []
    model = clf.model_

    class Counting:
        def __getattr__(self, name):
            return getattr(model, name)

        def predict(self, *a, **kw):
            calls.append(1)
            return model.predict(*a, **kw)

    clf.model_ = Counting()
    labels, proba, z, rank = clf.predict(Xt), clf.predict_proba(Xt), clf.predict_count(Xt), clf.decision_function(Xt)
    assert len(calls) == 1
    both = clf.predict_all(Xt)
    assert len(calls) == 1
    np.testing.assert_array_equal(both.labels, labels)
    np.testing.assert_array_equal(both.proba, proba)
    np.testing.assert_array_equal(both.counts, z)
    np.testing.assert_array_equal(both.decision, rank)
    # What the caller changes is not the cache; new content is a new inference.
    proba[:] = -1
    assert clf.predict_proba(Xt).min() >= 0
    Xt2 = Xt.copy()
    Xt2[0, 0] += 1
    clf.predict_proba(Xt2)
    assert len(calls) == 2
    # The pool is the estimator's, built once.
    pool = clf._native_runtime_.pool(1)
    clf.predict(Xt2[:3])
    assert clf._native_runtime_.pool(1) is pool


def test_pickled_estimators_keep_working_and_drop_their_pool(problem):
    X, Y, Xt, _ = problem
    clf = CardinalClassifier(**SMALL).fit(X, Y)
    clf.predict(Xt)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict(Xt), clf.predict(Xt))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clone(clf).fit(X, Y)


def test_a_parameter_that_turns_the_search_off_says_so_at_fit(problem):
    """A grid over `hidden` compares configurations without the default's search: `fit` warns
    once where the search would have run, and not when the search is decided explicitly."""
    import warnings

    import cardinal_pnc as cardinal

    X, Y, _, _ = problem
    with pytest.warns(cardinal.SearchOffWarning, match="hidden, epochs set: the default's search"):
        CardinalClassifier(hidden=8, epochs=1, random_state=0).fit(X[:60], Y[:60])
    with warnings.catch_warnings():
        warnings.simplefilter("error", cardinal.SearchOffWarning)
        warnings.simplefilter("error", cardinal.SearchOnWarning)
        CardinalClassifier(hidden=8, epochs=1, random_state=0, search=False).fit(X[:60], Y[:60])
        CardinalClassifier(hidden=2000, random_state=0, search=True).fit(X[:60], Y[:60])
    # The preset's own value keeps the search on: a grid over hidden = [500, 2000] would
    # compare the search with a configuration; said at the 2000 point too.
    with pytest.warns(cardinal.SearchOnWarning, match="hidden=2000: the preset's own value"):
        fitted = CardinalClassifier(hidden=2000, random_state=0).fit(X[:60], Y[:60])
    assert fitted.search_results_ is not None


def test_config_names_its_preset_as_the_cli_reads_it():
    """`config={"preset": "paper"}` trains `paper` (no search), as `--config` with that file
    does on the command line; an explicit `preset` other than the default still wins."""
    paper = asks(config={"preset": "paper"})
    assert paper["preset"] == "paper"
    assert paper.get("search", {}).get("max_rows", 0) == 0
    assert asks(config={"preset": "predict"})["search"]["max_rows"] == 2000
    assert asks(preset="paper", config={"preset": "paper"})["preset"] == "paper"
    # A forest's name trains the forest, as --system forest builds it, and records it.
    for name in ("forest", "forest-blend"):
        forest = asks(config={"preset": name}, search=False)
        assert (forest["system"], forest["preset"]) == (name, name)
        assert forest["model"]["forest"] is not None
    # Other saved configurations' names without their system would train another system
    # under their name: refused, naming config.
    for name in ("mlp", "paper-projected", "table1-spen"):
        with pytest.raises(ValueError, match=f"config: .*`{name}` is not a preset"):
            asks(config={"preset": name})
    # With its system, as a saved config.json names it, a search candidate's configuration
    # is read over the preset it derives from (the library's rule), not refused.
    wide = asks(config={"preset": "paper-wide", "system": "pnc", "model": {"hidden": 500}})
    assert (wide["preset"], wide["model"]["hidden"]) == ("paper-wide", 500)
    assert wide["loss"]["unary_bce_weight"] == asks(preset="paper")["loss"]["unary_bce_weight"] == 0.0


def test_the_systems_and_presets_listed_are_the_ones_accepted(cli, tmp_path):
    """`systems()` and `presets()` are the library's lists: each named system and preset is
    a configuration the estimator can ask for, the CLI's `--system` help names the same
    systems, and a name not listed is refused."""
    import subprocess

    import cardinal_pnc

    listed = cardinal_pnc.systems()
    assert list(listed)[:3] == ["pnc", "forest", "forest-blend"]
    assert {"mlp", "br-logistic"} <= set(listed)
    assert all(about for about in listed.values()), listed
    for name in listed:
        assert asks(system=name, search=False)["system"] == name
    assert cardinal_pnc.presets() == ["paper", "predict", "paper-printed"]
    for name in cardinal_pnc.presets():
        assert asks(preset=name)["preset"] == name
    with pytest.raises(ValueError, match="system='nosuch'"):
        asks(system="nosuch")
    with pytest.raises(ValueError, match="expected a str, one of paper, predict, paper-printed"):
        asks(preset=3)
    unknown = subprocess.run(
        [cli, "train", "--system", "nosuch", "--out", str(tmp_path / "m")],
        capture_output=True,
        text=True,
    )
    assert unknown.returncode != 0
    for name in listed:
        assert name in unknown.stderr, (name, unknown.stderr)


def test_mixed_column_names_raise_as_scikit_learn_does(problem):
    pd = pytest.importorskip("pandas")
    X, Y, _, _ = problem
    frame = pd.DataFrame(X[:40])
    frame.columns = ["a"] + list(range(1, X.shape[1]))
    with pytest.raises(TypeError, match="Feature names are only supported if all input"):
        CardinalClassifier(search=False, epochs=1, hidden=8).fit(frame, Y[:40])


def test_search_scoring_f1_samples_is_scikit_learns_empty_convention(problem):
    """`search_scoring="f1_samples"` ranks the search's candidates by scikit-learn's
    `f1_samples` (an empty prediction for an empty label set scores 0): it keeps the search on,
    is recorded, and on data with empty label sets scores no candidate higher than the default
    scoring does, and at least one lower."""
    from sklearn.metrics import f1_score

    X, Y, _, _ = problem
    Y = Y.copy()
    Y[::3] = 0  # a third of the rows without labels
    assert asks(search_scoring="f1_samples")["search"] == {
        **asks()["search"],
        "scoring": "f1-samples",
    }
    assert "scoring" not in asks(search_scoring="example_f1")["search"]
    kw = {"hidden": 16, "epochs": 2, "random_state": 0, "search": True}
    ones = CardinalClassifier(**kw).fit(X[:150], Y[:150]).search_results_
    zeros = CardinalClassifier(**kw, search_scoring="f1_samples").fit(X[:150], Y[:150])
    z = zeros.search_results_
    assert ones is not None and z is not None
    assert (ones["scoring"], z["scoring"]) == ("example_f1", "f1_samples")
    assert ones["candidates"] == z["candidates"]
    assert all(b <= a + 1e-9 for a, b in zip(ones["mean_example_f1"], z["mean_example_f1"]))
    assert any(b < a for a, b in zip(ones["mean_example_f1"], z["mean_example_f1"]))
    # The convention is scikit-learn's own: an empty prediction of an empty set scores 0.
    empty = np.zeros((1, 3), dtype=int)
    assert f1_score(empty, empty, average="samples", zero_division=0) == 0.0


def test_an_estimator_pickled_before_a_parameter_existed_gets_its_default(problem):
    """An estimator pickled by an earlier version lacks the parameters added since: unpickled,
    they take their defaults, so that get_params and clone work and it predicts as before."""
    X, Y, Xt, _ = problem
    clf = CardinalClassifier(**SMALL).fit(X, Y)
    state = pickle.loads(pickle.dumps(clf)).__getstate__()
    for added in ("search_scoring", "system"):
        del state[added]
    old = CardinalClassifier.__new__(CardinalClassifier)
    old.__setstate__(state)
    assert old.get_params()["search_scoring"] is None and old.get_params()["system"] is None
    np.testing.assert_array_equal(old.predict(Xt), clf.predict(Xt))
    assert clone(old).get_params() == clone(clf).get_params()
