"""Scale-out on a Dask cluster of two single-thread worker processes: a grid search and the
default's own search through joblib's `dask` backend, and prediction partition by partition."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from cardinal_pnc import CardinalClassifier, load_dataset

from conftest import SMALL, skip_unless_ci

# The development suite's data, beside the repository (CI provides it).
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

distributed = pytest.importorskip("dask.distributed")
joblib = pytest.importorskip("joblib")


def test_grid_search_on_a_local_cluster_matches_the_local_search(problem):
    X, Y, _, _ = problem
    grid = {"hidden": [8, 32], "random_state": [0, 1]}

    def search():
        return GridSearchCV(
            CardinalClassifier(**SMALL, n_jobs=1), grid, scoring="f1_samples", cv=2
        )

    local = search().fit(X, Y)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        with joblib.parallel_backend("dask"):
            remote = search().fit(X, Y)
    # Same engine, same seeds: the cluster's scores are the local ones.
    np.testing.assert_array_equal(
        remote.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"]
    )
    assert remote.best_params_ == local.best_params_


def test_predict_on_a_dask_array_on_a_cluster_matches_in_memory(problem):
    """`predict_dask` on a 4-partition Dask array, computed on a local cluster of two worker
    processes, gives the in-memory outputs bit for bit."""
    da = pytest.importorskip("dask.array")
    from cardinal_pnc import predict_dask

    X, Y, Xt, _ = problem
    clf = CardinalClassifier(**SMALL, n_jobs=1).fit(X, Y)
    lazy = da.from_array(Xt, chunks=(len(Xt) // 4 + 1, Xt.shape[1] // 2))
    assert lazy.numblocks[0] == 4
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        for method in ("predict", "predict_proba", "predict_count", "decision_function"):
            got = predict_dask(clf, lazy, method).compute()
            np.testing.assert_array_equal(got, getattr(clf, method)(Xt), err_msg=method)
    with pytest.raises(ValueError, match="method="):
        predict_dask(clf, lazy, "fit")
    with pytest.raises(ValueError, match="expected a dask.array"):
        predict_dask(clf, Xt)


def test_predict_on_a_dask_dataframe_matches_columns_by_name(problem):
    """On a Dask DataFrame each partition reaches the estimator as a pandas DataFrame: its
    columns, here reversed, are matched to the model's by name."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from cardinal_pnc import predict_dask

    X, Y, Xt, _ = problem
    cols = [f"f{j}" for j in range(X.shape[1])]
    named = CardinalClassifier(**SMALL, n_jobs=1).fit(pd.DataFrame(X, columns=cols), Y)
    frame = pd.DataFrame(Xt, columns=cols)
    lazy_frame = dd.from_pandas(frame[cols[::-1]], npartitions=3)
    got = predict_dask(named, lazy_frame).compute()
    np.testing.assert_array_equal(got, named.predict(frame))


def _fit_locally_and_on_a_cluster(make, X, Y):
    """`make()` fitted on X, Y in this process and inside `joblib.parallel_backend("dask")` on
    a local cluster of two single-thread worker processes, with the names of the workers
    that ran the cluster's tasks and the cluster's worker names."""
    local = make().fit(X, Y)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        with distributed.get_task_stream(client) as stream, joblib.parallel_backend("dask"):
            remote = make().fit(X, Y)
        ran = {t["worker"] for t in stream.data}
    return local, remote, ran, workers


def _same_model(local, remote, Xt, tmp_path):
    assert remote.search_results_ == local.search_results_
    assert remote.config_ == local.config_
    for method in ("predict", "predict_proba", "predict_count", "decision_function"):
        np.testing.assert_array_equal(
            getattr(remote, method)(Xt), getattr(local, method)(Xt), err_msg=method
        )
    local.save(tmp_path / "local")
    remote.save(tmp_path / "remote")
    for name in ("model.safetensors", "config.json"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "remote" / name).read_bytes()


def test_the_defaults_search_runs_on_the_cluster_and_fits_the_same_model(problem, tmp_path):
    """The default's search (kept on with search=True) runs its candidate × fold trainings as
    joblib tasks: on the cluster's workers inside the `dask` backend, and the model fitted from
    their results is the one fitted in one process, byte for byte."""
    X, Y, Xt, _ = problem

    def make():
        return CardinalClassifier(hidden=32, epochs=4, random_state=0, n_jobs=1, search=True)

    local, remote, ran, workers = _fit_locally_and_on_a_cluster(make, X, Y)
    assert local.search_results_ is not None and len(local.search_results_["candidates"]) == 6
    # The trainings ran as the cluster's tasks, on its workers.
    assert ran and ran <= workers, (ran, workers)
    _same_model(local, remote, Xt, tmp_path)


def test_the_default_on_emotions_fits_the_same_model_on_a_cluster(tmp_path):
    """The default, untouched, on emotions (391 training rows: its search runs every fold of
    every candidate) on a cluster of two workers, against one machine."""
    if not (SHARED_DATA / "emotions").is_dir():
        skip_unless_ci(f"no emotions data in {SHARED_DATA}")
    ds = load_dataset("emotions", data_dir=str(SHARED_DATA))

    def make():
        return CardinalClassifier(random_state=0, n_jobs=1)

    local, remote, ran, workers = _fit_locally_and_on_a_cluster(make, ds.X_train, ds.Y_train)
    assert local.search_results_ is not None
    assert ran and ran <= workers, (ran, workers)
    _same_model(local, remote, ds.X_test, tmp_path)
