"""CardinalClassifier: scikit-learn conventions, determinism, model directories, pickling."""

import json
import pickle
import subprocess

import joblib
import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score

from cardinal_pnc import CardinalClassifier, _native, load_dataset

from conftest import SMALL


def fitted(problem, **kw):
    X, Y, _, _ = problem
    return CardinalClassifier(**{**SMALL, **kw}).fit(X, Y)


def test_outputs_have_the_documented_shapes_and_meaning(problem):
    X, Y, Xt, _ = problem
    clf = fitted(problem)
    labels, proba, z, rank = (
        clf.predict(Xt),
        clf.predict_proba(Xt),
        clf.predict_count(Xt),
        clf.decision_function(Xt),
    )
    assert labels.shape == proba.shape == rank.shape == (100, 8)
    assert z.shape == (100,)
    assert set(np.unique(labels)) <= {0, 1}
    # predict is y_T at the model's threshold; y_T lies in the box and sums to z.
    thr = clf.config_["threshold"]
    np.testing.assert_array_equal(labels, (proba >= thr).astype(np.int64))
    assert proba.min() >= 0.0 and proba.max() <= 1.0
    assert np.abs(proba.sum(axis=1) - z).max() <= 0.01
    # The ranking scores order labels as y_T does where y_T has no ties.
    for r in range(100):
        a, b = np.argmax(proba[r]), np.argmax(rank[r])
        assert proba[r, a] == proba[r, b]
    assert clf.n_features_in_ == 30 and clf.n_labels_ == 8
    assert len(clf.history_) >= SMALL["epochs"]


def test_dense_and_sparse_inputs_give_identical_models(problem):
    X, Y, Xt, _ = problem
    dense = CardinalClassifier(**SMALL).fit(X, Y)
    sparse = CardinalClassifier(**SMALL).fit(scipy.sparse.csr_matrix(X), scipy.sparse.csc_matrix(Y))
    np.testing.assert_array_equal(dense.predict_proba(Xt), sparse.predict_proba(Xt))
    np.testing.assert_array_equal(
        dense.predict_proba(Xt), dense.predict_proba(scipy.sparse.coo_matrix(Xt))
    )


def test_the_same_seed_gives_the_same_model_for_any_thread_count(problem):
    _, _, Xt, _ = problem
    a = fitted(problem, random_state=3, n_jobs=1).predict_proba(Xt)
    b = fitted(problem, random_state=3, n_jobs=2).predict_proba(Xt)
    c = fitted(problem, random_state=4, n_jobs=2).predict_proba(Xt)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_params_clone_and_set_params(problem):
    clf = CardinalClassifier(random_state=2, hidden=16, config={"inference": {"steps": 5}})
    params = clf.get_params()
    assert params["random_state"] == 2 and params["hidden"] == 16 and params["preset"] == "predict"
    twin = clone(clf)
    assert twin.get_params() == params and twin is not clf
    twin.set_params(hidden=8, epochs=2)
    X, Y, _, _ = problem
    twin.fit(X, Y)
    assert twin.config_["model"]["hidden"] == 8
    assert twin.config_["train"]["epochs"] == 2
    assert twin.config_["inference"]["steps"] == 5
    assert twin.config_["seed"] == 2


def test_pickle_and_joblib_give_identical_predictions(problem, tmp_path):
    _, _, Xt, _ = problem
    clf = fitted(problem)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf.predict_proba(Xt), again.predict_proba(Xt))
    np.testing.assert_array_equal(clf.decision_function(Xt), again.decision_function(Xt))
    joblib.dump(clf, tmp_path / "m.joblib")
    loaded = joblib.load(tmp_path / "m.joblib")
    np.testing.assert_array_equal(clf.predict(Xt), loaded.predict(Xt))
    # An unfitted estimator pickles too.
    assert pickle.loads(pickle.dumps(CardinalClassifier(random_state=5))).random_state == 5


def test_grid_search_with_two_jobs_and_cross_val_score(problem):
    X, Y, _, _ = problem
    search = GridSearchCV(
        CardinalClassifier(**SMALL, n_jobs=1),
        {"hidden": [8, 32]},
        scoring="f1_samples",
        cv=2,
        n_jobs=2,
    )
    search.fit(X, Y)
    assert search.best_params_["hidden"] in (8, 32)
    assert 0.0 < search.best_score_ <= 1.0
    scores = cross_val_score(CardinalClassifier(**SMALL, n_jobs=1), X, Y, cv=3, scoring="f1_samples")
    assert scores.shape == (3,) and np.all(scores > 0.2)


def test_save_and_load_round_trip_and_refuse_to_overwrite(problem, tmp_path):
    _, _, Xt, _ = problem
    clf = fitted(problem)
    d = tmp_path / "model"
    clf.save(d)
    assert (d / "model.safetensors").exists() and (d / "config.json").exists()
    loaded = CardinalClassifier.load(d)
    np.testing.assert_array_equal(clf.predict_proba(Xt), loaded.predict_proba(Xt))
    assert loaded.get_params()["random_state"] == clf.config_["seed"]
    with pytest.raises(FileExistsError, match="overwrite=True"):
        clf.save(d)
    clf.save(d, overwrite=True)
    # A loaded estimator refits to the same model: its parameters hold its configuration.
    X, Y, _, _ = problem
    refit = clone(loaded).fit(X, Y)
    np.testing.assert_array_equal(refit.predict_proba(Xt), clf.predict_proba(Xt))


def write_svm(path, X, Y):
    """A LIBSVM multi-label file (1-based features) written without the library."""
    with open(path, "w") as f:
        for x, y in zip(X, Y):
            labels = ",".join(str(i) for i in np.flatnonzero(y))
            feats = " ".join(f"{j + 1}:{v:.9g}" for j, v in enumerate(x) if v != 0)
            f.write(f"{labels} {feats}\n")


def test_the_defaults_search_through_joblib_tasks_trains_the_clis_weights(problem, tmp_path, cli):
    """With the default's search on, Python runs its trainings as joblib tasks and the CLI
    runs them itself: the same choice and the same weights, byte for byte."""
    X, Y, _, _ = problem
    data = tmp_path / "toy.svm"
    write_svm(data, X[:200], Y[:200])
    cfg = tmp_path / "small.json"
    cfg.write_text(json.dumps({"model": {"hidden": 16}, "train": {"epochs": 3}}))
    subprocess.run(
        [cli, "train", "--quiet", "--threads", "2", "--dataset", str(data), "--config", str(cfg),
         "--search", "--seed", "2", "--out", str(tmp_path / "cli")],
        check=True, capture_output=True,
    )
    ds = load_dataset(data)
    py = CardinalClassifier(random_state=2, n_jobs=1, config=cfg.read_text(), search=True)
    py.fit(ds.X_train, ds.Y_train)
    assert py.search_results_ is not None
    py.save(tmp_path / "py")
    for name in ("model.safetensors", "config.json"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "py" / name).read_bytes(), name


def test_the_cli_and_python_train_the_same_weights_and_read_each_others_models(
    problem, tmp_path, cli
):
    X, Y, _, _ = problem
    data = tmp_path / "toy.svm"
    write_svm(data, X, Y)
    cfg = tmp_path / "small.json"
    cfg.write_text(json.dumps({"model": {"hidden": 32}, "train": {"epochs": 4}}))
    # The CLI trains on the file's default split; Python reads the same split and trains.
    subprocess.run(
        [cli, "train", "--quiet", "--threads", "2", "--dataset", str(data), "--config", str(cfg),
         "--seed", "1", "--out", str(tmp_path / "cli")],
        check=True, capture_output=True,
    )
    ds = load_dataset(data)
    py = CardinalClassifier(random_state=1, n_jobs=2, config=cfg.read_text()).fit(ds.X_train, ds.Y_train)
    py.save(tmp_path / "py")
    cli_w = (tmp_path / "cli" / "model.safetensors").read_bytes()
    py_w = (tmp_path / "py" / "model.safetensors").read_bytes()
    assert cli_w == py_w, "the same seed and configuration must give bit-identical weights"
    # The CLI evaluates the Python model; Python predicts with the CLI's.
    out = subprocess.run(
        [cli, "eval", "--model", str(tmp_path / "py"), "--data", str(data)],
        check=True, capture_output=True, text=True,
    ).stdout
    assert "EXAMPLE_F1" in out
    from_cli = CardinalClassifier.load(tmp_path / "cli")
    lines = subprocess.run(
        [cli, "predict", "--model", str(tmp_path / "cli"), "--data", str(data)],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    z_cli = np.array([json.loads(line)["z"] for line in lines], dtype=np.float32)
    # load_dataset gives dense data as an array, sparse data as CSR: either here.
    X_all = scipy.sparse.vstack([scipy.sparse.csr_matrix(ds.X_train), ds.X_test]).toarray()
    assert len(z_cli) == X_all.shape[0]
    # `predict` numbers the rows as in the file; the split reorders them: compare as multisets.
    z_py = from_cli.predict_count(scipy.sparse.csr_matrix(X_all))
    np.testing.assert_allclose(np.sort(z_py), np.sort(z_cli), rtol=0, atol=1e-6)


def test_verbose_prints_progress(problem, capfd):
    fitted(problem, verbose=1)
    err = capfd.readouterr().err
    assert "phase 1 epoch   1: loss" in err and "dev F1" in err
    fitted(problem, verbose=0)
    assert capfd.readouterr().err == ""


def test_the_default_search_keeps_the_constraint_and_yields_to_set_parameters(problem):
    X, Y, Xt, _ = problem
    # No hyper-parameter set: on 300 rows the default chooses among its candidates by a
    # 5-fold cross-validation, and whichever it chose holds the constraint.
    clf = CardinalClassifier(random_state=0, n_jobs=2).fit(X, Y)
    assert clf.config_["preset"] in (
        "predict", "paper-projected", "paper-wide", "predict-forest-prior", "forest",
        "forest-blend",
    )
    proba, z = clf.predict_proba(Xt), clf.predict_count(Xt)
    assert proba.min() >= 0.0 and proba.max() <= 1.0
    assert np.abs(proba.sum(axis=1) - z).max() <= 0.01
    # A hyper-parameter set by the user turns the search off: it is not replaced.
    mine = CardinalClassifier(random_state=0, hidden=24, epochs=2).fit(X, Y)
    assert mine.config_["model"]["hidden"] == 24 and mine.config_["preset"] == "predict"
    # The configuration each asks for: `search` is written out only when it is on.
    def asks(**kw):
        return json.loads(_native.check_config(**CardinalClassifier(**kw)._config_args()))

    assert asks()["search"]["max_rows"] == 2000
    assert "search" not in asks(hidden=24)
    assert "search" not in asks(search=False)
    assert asks(hidden=24, search=True)["search"]["max_rows"] == 2000
