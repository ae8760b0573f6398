"""A grid search on a Dask cluster through joblib's `dask` backend (two worker processes)."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from cardinal_pnc import CardinalClassifier

from conftest import SMALL

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
