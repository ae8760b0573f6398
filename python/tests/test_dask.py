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
