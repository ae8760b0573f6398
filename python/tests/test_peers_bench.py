"""Smoke test of the peer benchmark (bench/peers.py) on a small generated MULAN dataset.

The scikit-learn peers always run (scikit-learn is a dependency of the package). The other
peers run only where their packages are installed (bench/peers.sh's environment), and are
skipped, by name, where they are not; a peer whose package is missing must be *reported* as
unavailable by the benchmark, never crash it.
"""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(ROOT, "bench", "peers.py")
SKLEARN = ["rf", "ovr-lr", "cc-lr", "mlp", "knn"]
COLUMNS = ["ex-F1 (empty=0)", "ex-F1 (empty=1)", "micro-F1", "macro-F1", "Hamming loss",
           "fit s", "predict s", "empty preds", "status"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A MULAN folder `small/` (small-train.arff, small-test.arff, small.xml): 120 train and
    60 test rows, 8 numeric features, 4 labels, some test rows with no label."""
    X, Y = make_multilabel_classification(n_samples=180, n_features=8, n_classes=4, n_labels=1,
                                          allow_unlabeled=True, random_state=0)
    root = tmp_path_factory.mktemp("peers-data")
    folder = root / "small"
    folder.mkdir()
    labels = [f"l{j}" for j in range(Y.shape[1])]
    (folder / "small.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<labels xmlns="http://mulan.sourceforge.net/labels">\n'
        + "".join(f'  <label name="{name}"></label>\n' for name in labels)
        + "</labels>\n")
    for part, rows in (("train", slice(0, 120)), ("test", slice(120, 180))):
        lines = ["@relation small", ""]
        lines += [f"@attribute f{i} numeric" for i in range(X.shape[1])]
        lines += [f"@attribute {name} {{0,1}}" for name in labels]
        lines += ["", "@data"]
        for x, y in zip(X[rows], Y[rows]):
            lines.append(",".join([f"{v:g}" for v in x] + [str(int(v)) for v in y]))
        (folder / f"small-{part}.arff").write_text("\n".join(lines) + "\n")
    return str(root)


def run_peers(tmp_path, data_dir, methods, *extra, env=None):
    out = tmp_path / "peers.json"
    cmd = [sys.executable, PEERS, "--datasets", "small", "--data-dir", data_dir,
           "--methods", ",".join(methods), "--out", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    md = (tmp_path / "peers.md").read_text()
    return report, md, proc


def check_ok(cell, n_test=60):
    assert cell["status"] == "ok", cell
    for key in ("ex_f1_e0", "ex_f1_e1", "micro_f1", "macro_f1"):
        assert 0.0 <= cell[key] <= 100.0, (key, cell)
    # The empty-set conventions differ only on rows where truth and prediction are both empty.
    assert cell["ex_f1_e1"] >= cell["ex_f1_e0"]
    assert cell["ex_f1_e1"] - cell["ex_f1_e0"] <= 100.0 * cell["empty_predictions"] / n_test + 1e-9
    assert 0.0 <= cell["hamming"] <= 1.0
    assert cell["fit_s"] >= 0 and cell["predict_s"] >= 0
    # Better than chance on this easy problem.
    assert cell["micro_f1"] > 40.0, cell


def test_sklearn_peers(tmp_path, data_dir):
    report, md, _ = run_peers(tmp_path, data_dir, SKLEARN)
    info = report["datasets"]["small"]
    assert (info["n_train"], info["n_test"], info["n_labels"]) == (120, 60, 4)
    assert info["test_rows_empty_truth"] > 0  # so that the two conventions differ
    cells = report["results"]["small"]
    assert list(cells) == SKLEARN
    for m in SKLEARN:
        check_ok(cells[m])
    assert report["versions"]["scikit-learn"]
    header = next(line for line in md.splitlines() if line.startswith("| method | ex-F1"))
    assert [c.strip() for c in header.strip("|").split("|")][1:] == COLUMNS
    for m in SKLEARN:
        assert any(line.startswith(f"| {m} |") and line.endswith("| ok |") for line in md.splitlines())


def test_metrics_match_sklearn():
    """The benchmark's own numpy metrics against scikit-learn's on random predictions with
    empty rows (sklearn's zero_division=0 is the empty=0 convention)."""
    from sklearn.metrics import f1_score, hamming_loss

    sys.path.insert(0, os.path.dirname(PEERS))
    try:
        import peers
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(0)
    Y = (rng.random((50, 6)) < 0.2).astype(np.uint8)
    P = (rng.random((50, 6)) < 0.2).astype(np.uint8)
    Y[:5] = 0
    P[:3] = 0
    m = peers.metrics(Y, P)
    assert m["ex_f1_e0"] == pytest.approx(100 * f1_score(Y, P, average="samples", zero_division=0))
    assert m["ex_f1_e1"] == pytest.approx(100 * f1_score(Y, P, average="samples", zero_division=1))
    assert m["micro_f1"] == pytest.approx(100 * f1_score(Y, P, average="micro", zero_division=0))
    assert m["macro_f1"] == pytest.approx(100 * f1_score(Y, P, average="macro", zero_division=0))
    assert m["hamming"] == pytest.approx(hamming_loss(Y, P))


# The optional peers: (method, module that provides it).
OPTIONAL = [("boomer", "mlrl.boosting"), ("boomer-f1", "mlrl.boosting"),
            ("gfm", "example_wise_f1_maximizer"), ("mlknn", "skmultilearn"),
            ("rakeld-lr", "skmultilearn"), ("br-svc", "skmultilearn")]


def _installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("method,module", OPTIONAL, ids=[m for m, _ in OPTIONAL])
def test_optional_peer(tmp_path, data_dir, method, module):
    if not _installed(module):
        pytest.skip(f"{module} is not installed (bench/peers.sh installs it)")
    report, _, _ = run_peers(tmp_path, data_dir, [method])
    check_ok(report["results"]["small"][method])


def test_missing_package_is_reported(tmp_path, data_dir):
    """A peer whose package cannot be imported is `unavailable`, and the run goes on."""
    shadow = tmp_path / "shadow"
    (shadow / "mlrl").mkdir(parents=True)
    (shadow / "mlrl" / "__init__.py").write_text("raise ImportError('mlrl hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=str(shadow) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    report, md, _ = run_peers(tmp_path, data_dir, ["boomer", "knn"], env=env)
    cells = report["results"]["small"]
    assert cells["boomer"]["status"] == "unavailable"
    assert "mlrl hidden" in cells["boomer"]["error"]
    check_ok(cells["knn"])
    assert "| boomer |" in md and "unavailable" in md
    # --resume keeps the finished cells (not run again) and the other methods' cells.
    again, _, _ = run_peers(tmp_path, data_dir, ["knn"], "--resume", env=env)
    assert again["results"]["small"]["knn"] == cells["knn"]
    assert again["results"]["small"]["boomer"]["status"] == "unavailable"


def test_timeout_is_reported(tmp_path, data_dir):
    report, _, _ = run_peers(tmp_path, data_dir, ["rf"], "--timeout", "0.01")
    assert report["results"]["small"]["rf"]["status"] == "timeout"


def test_gfm_adapted_to_installed_sklearn():
    """GFM stores a sub-problem without positives as a plain 0; with the first one such, the
    installed scikit-learn's guard on `predict` would hide the method (bench/peers.py
    adapts it)."""
    if not _installed("example_wise_f1_maximizer"):
        pytest.skip("example_wise_f1_maximizer is not installed (bench/peers.sh installs it)")
    from sklearn.linear_model import LogisticRegression

    sys.path.insert(0, os.path.dirname(PEERS))
    try:
        import peers
    finally:
        sys.path.pop(0)
    X, Y = make_multilabel_classification(n_samples=200, n_features=10, n_classes=8, n_labels=2,
                                          random_state=1)
    Y[Y.sum(axis=1) == 1, 0] = 0  # label 0 never alone: sub-problem (label 0, 1 label) is empty
    m = peers._gfm_class()(LogisticRegression(max_iter=1000)).fit(X[:150], Y[:150])
    assert isinstance(m.estimators_[0], int)
    P = peers.dense01(m.predict(X[150:]), Y.shape[1])
    assert P.shape == (50, 8) and peers.metrics(Y[150:], P)["micro_f1"] > 40.0
