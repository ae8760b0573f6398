"""`cardinal eval`'s ranking metrics (ranking loss, coverage, LRAP, micro and macro ROC AUC)
against scikit-learn's, computed from the ranking scores `cardinal predict --ranking-scores`
prints for the same rows."""

import json
import subprocess

import numpy as np
import pytest


def _svm(path, X, Y):
    with open(path, "w") as f:
        for x, y in zip(X, Y):
            labels = ",".join(str(j) for j in np.flatnonzero(y))
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(x) if v != 0)
            f.write(f"{labels} {feats}\n")


def test_ranking_metrics_match_sklearn(problem, cli, tmp_path):
    from sklearn.metrics import (
        coverage_error,
        label_ranking_average_precision_score,
        label_ranking_loss,
        roc_auc_score,
    )

    X, Y, Xt, Yt = problem
    _svm(tmp_path / "train.svm", X, Y)
    _svm(tmp_path / "test.svm", Xt, Yt)
    config = tmp_path / "quick.json"
    config.write_text(json.dumps({"model": {"hidden": 32}, "train": {"epochs": 5}}))
    model = tmp_path / "m"
    run = lambda *a: subprocess.run([cli, "--threads", "1", *a], capture_output=True, text=True)  # noqa: E731
    done = run("train", "--quiet", "--no-search", "--dataset", str(tmp_path / "train.svm"),
               "--config", str(config), "--out", str(model))
    assert done.returncode == 0, done.stderr
    done = run("predict", "--model", str(model), "--data", str(tmp_path / "test.svm"),
               "--ranking-scores")
    assert done.returncode == 0, done.stderr
    n_labels = Y.shape[1]
    scores = np.zeros(Yt.shape)
    for line in done.stdout.splitlines():
        row = json.loads(line)
        for j, s in row["ranking"].items():
            scores[row["row"], int(j)] = s
    done = run("eval", "--model", str(model), "--data", str(tmp_path / "test.svm"), "--json", "-")
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)["ranking"]
    gold = Yt.astype(int)
    assert gold.shape[1] == n_labels and (gold.sum(axis=0) > 0).all()
    assert ours["ranking_loss"] == pytest.approx(label_ranking_loss(gold, scores), abs=1e-9)
    assert ours["coverage"] == pytest.approx(coverage_error(gold, scores), abs=1e-9)
    assert ours["lrap"] == pytest.approx(
        100 * label_ranking_average_precision_score(gold, scores), abs=1e-7)
    assert ours["micro_auc"] == pytest.approx(
        100 * roc_auc_score(gold, scores, average="micro"), abs=1e-7)
    assert ours["macro_auc"] == pytest.approx(
        100 * roc_auc_score(gold, scores, average="macro"), abs=1e-7)
    assert ours["auc_labels"] == n_labels
