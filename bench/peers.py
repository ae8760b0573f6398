#!/usr/bin/env python3
"""The peer benchmark: the multi-label libraries practitioners use, on cardinal's datasets.

Every method runs on the same train/test split of a dataset, read by ``cardinal.load_dataset``
exactly as ``cardinal train --dataset NAME`` reads it (MULAN train/test files; a single-file
dataset such as cal500 or foodtruck gets the loader's seeded split ``into_train_test(0.8, 0)``).
Seed 0 and one thread for every method. Each (method, dataset) cell runs in a child process of
its own, so that a peer that crashes, or runs past ``--timeout``, is reported as such and the
benchmark goes on.

The linear, neural and neighbour methods (GFM, logistic regression, LinearSVC, MLP, kNN, MLkNN)
get dense features with every numeric column standardised on the training split (0/1 columns
as they are); RandomForest, BOOMER and cardinal get the loader's features unchanged.

Metrics are computed here, in numpy, independently of cardinal's own metric code (F1 values in
percent, as everywhere in the project):

* ``ex_f1_e0``: example-F1 where an empty prediction for an empty truth scores 0 (the project's
  convention; scikit-learn's ``f1_score(average="samples", zero_division=0)``);
* ``ex_f1_e1``: the same where that case scores 1 (the SPEN/DVN convention);
* ``micro_f1``; ``macro_f1`` (the mean over all labels of the per-label F1, a label with no
  positive in truth and none predicted scoring 0, as scikit-learn's ``zero_division=0``);
* ``hamming``: the Hamming loss, the fraction of wrong label cells (not in percent);
* ``fit_s`` / ``predict_s``: wall-clock seconds of fit (including any inner cross-validation
  a method runs) and of predicting the test set.

Usage::

    python bench/peers.py --datasets emotions,flags --data-dir ../shared/data \\
        --out bench/results/peers.json [--methods rf,ovr-lr] [--timeout 1800] [--resume]

writes ``peers.json`` and ``peers.md`` (the markdown tables, also printed). The peers' packages
are optional: a method whose package is not installed is reported ``unavailable``. The
benchmark's own environment is made by ``bench/peers.sh``; cardinal itself never imports these
packages.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib import metadata

# One thread for every method: BLAS/OpenMP pools in the children this script starts and in
# itself (set before numpy is imported; not when imported as a module, e.g. by the tests).
if __name__ == "__main__":
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                 "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[_var] = "1"

import numpy as np  # noqa: E402

SEED = 0

# name -> (description, distribution that provides it, input: "scaled" or "raw")
METHODS = {
    "boomer": ("BOOMER default", "mlrl-boomer", "raw"),
    "boomer-f1": ("BOOMER-F1 (logistic-non-decomposable, gfm)", "mlrl-boomer", "raw"),
    "gfm": ("GFM over logistic regression (C by 3-fold CV)", "example-wise-f1-maximizer", "scaled"),
    "rf": ("RandomForest(300)", "scikit-learn", "raw"),
    "ovr-lr": ("OneVsRest(LogisticRegression)", "scikit-learn", "scaled"),
    "cc-lr": ("ClassifierChain(LogisticRegression)", "scikit-learn", "scaled"),
    "mlp": ("MLPClassifier", "scikit-learn", "scaled"),
    "knn": ("KNeighbors(10)", "scikit-learn", "scaled"),
    "mlknn": ("MLkNN(10)", "scikit-multilearn-ng", "scaled"),
    "rakeld-lr": ("RakelD(LogisticRegression)", "scikit-multilearn-ng", "scaled"),
    "br-svc": ("BinaryRelevance(LinearSVC)", "scikit-multilearn-ng", "scaled"),
    "cardinal": ("cardinal default (CardinalClassifier, threads=1)", "cardinal", "raw"),
}
SKLEARN_METHODS = ["rf", "ovr-lr", "cc-lr", "mlp", "knn"]
DEFAULT_DATASETS = ["emotions", "birds", "genbase", "flags", "cal500", "foodtruck"]
GFM_GRID = (0.01, 0.1, 1.0, 10.0)
METRICS = ("ex_f1_e0", "ex_f1_e1", "micro_f1", "macro_f1", "hamming")


class Unavailable(Exception):
    """A method's package is not installed."""


# -- metrics (numpy only) --------------------------------------------------------------------


def example_f1(Y, P, empty_scores):
    """Mean over rows of 2|y∩p| / (|y| + |p|), in percent; a row with empty truth and empty
    prediction scores ``empty_scores`` (0 or 1)."""
    Y = np.asarray(Y, dtype=bool)
    P = np.asarray(P, dtype=bool)
    inter = (Y & P).sum(axis=1).astype(np.float64)
    denom = (Y.sum(axis=1) + P.sum(axis=1)).astype(np.float64)
    f = np.where(denom > 0, 2.0 * inter / np.maximum(denom, 1.0), float(empty_scores))
    return 100.0 * float(f.mean())


def metrics(Y, P):
    """Every reported metric of predictions ``P`` against truth ``Y`` (both n × L, 0/1)."""
    Y = np.asarray(Y, dtype=bool)
    P = np.asarray(P, dtype=bool)
    if Y.shape != P.shape:
        raise ValueError(f"prediction shape {P.shape} differs from the truth's {Y.shape}")
    tp = (Y & P).sum(axis=0).astype(np.float64)
    fp = (~Y & P).sum(axis=0).astype(np.float64)
    fn = (Y & ~P).sum(axis=0).astype(np.float64)
    micro_den = 2 * tp.sum() + fp.sum() + fn.sum()
    per_label_den = 2 * tp + fp + fn
    per_label = np.where(per_label_den > 0, 2 * tp / np.maximum(per_label_den, 1.0), 0.0)
    return {
        "ex_f1_e0": example_f1(Y, P, 0),
        "ex_f1_e1": example_f1(Y, P, 1),
        "micro_f1": 100.0 * float(2 * tp.sum() / micro_den if micro_den > 0 else 0.0),
        "macro_f1": 100.0 * float(per_label.mean()),
        "hamming": float((Y != P).mean()),
    }


# -- the methods -----------------------------------------------------------------------------


def dense01(P, n_labels):
    """A prediction (dense, sparse, list) as an n × L uint8 array."""
    import scipy.sparse

    if scipy.sparse.issparse(P):
        P = P.toarray()
    P = np.asarray(P)
    if P.ndim == 1:
        P = P.reshape(-1, n_labels)
    return (P > 0.5).astype(np.uint8)


class ConstantLabels:
    """Fits ``inner`` on the labels that vary in the training data only and predicts the
    others as their constant value (several peers' per-label learners refuse a label with a
    single class; none of them could predict anything else for it)."""

    def __init__(self, inner):
        self.inner = inner

    def fit(self, X, Y):
        Y = np.asarray(Y, dtype=np.uint8)
        col_sum = Y.sum(axis=0)
        self.varying_ = np.flatnonzero((col_sum > 0) & (col_sum < Y.shape[0]))
        self.constant_ = (col_sum == Y.shape[0]).astype(np.uint8)
        self.n_labels_ = Y.shape[1]
        if len(self.varying_) > 0:
            self.inner.fit(X, Y[:, self.varying_])
        return self

    def predict(self, X):
        P = np.tile(self.constant_, (X.shape[0], 1))
        if len(self.varying_) > 0:
            P[:, self.varying_] = dense01(self.inner.predict(X), len(self.varying_))
        return P


def _gfm_class():
    """``ExampleWiseF1Maximizer``, adapted to the installed scikit-learn (0.1.5 was written for
    scikit-learn 1.2). Two things changed under it: ``BaseEstimator._validate_data`` became the
    function ``sklearn.utils.validation.validate_data`` (same arguments) in 1.6, and
    ``sklearn.multiclass._estimators_has``, which guards its ``predict`` and
    ``predict_proba``, now asks the first fitted sub-estimator only, which GFM stores as a
    plain 0 when its sub-problem has no positive example (1.2 asked the base estimator first).
    The adapted class calls the same methods without that guard; nothing else changes."""
    try:
        from example_wise_f1_maximizer import ExampleWiseF1Maximizer as Base
    except ImportError as e:
        raise Unavailable(str(e)) from e

    def unguarded(name):
        attr = Base.__dict__[name]
        return getattr(attr, "fn", attr)  # the function under `available_if`

    class ExampleWiseF1Maximizer(Base):
        if not hasattr(Base, "_validate_data"):
            def _validate_data(self, X, **kwargs):
                from sklearn.utils.validation import validate_data

                return validate_data(self, X, **kwargs)

        def predict_proba(self, x):
            return unguarded("predict_proba")(self, x)

        def predict(self, x):
            return unguarded("predict")(self, x)

    return ExampleWiseF1Maximizer


class GFMWithCV:
    """GFM (``example-wise-f1-maximizer``: the Bayes-optimal example-F1 decoder over n² + 1
    logistic regressions) with the regularisation C chosen from ``GFM_GRID`` by the mean
    example-F1 (empty-empty scores 0) of a seeded 3-fold cross-validation on the training
    data; ties go to the smaller C. Then refit on all of it."""

    def __init__(self):
        self.cls = _gfm_class()

    def _make(self, c):
        from sklearn.linear_model import LogisticRegression

        return self.cls(LogisticRegression(C=c, max_iter=1000), n_jobs=1)

    def fit(self, X, Y):
        from sklearn.model_selection import KFold

        folds = list(KFold(3, shuffle=True, random_state=SEED).split(X))
        self.cv_ = {}
        for c in GFM_GRID:
            scores = []
            for tr, va in folds:
                m = self._make(c).fit(X[tr], Y[tr])
                scores.append(example_f1(Y[va], dense01(m.predict(X[va]), Y.shape[1]), 0))
            self.cv_[c] = float(np.mean(scores))
        self.C_ = max(GFM_GRID, key=lambda c: (self.cv_[c], -c))
        self.model_ = self._make(self.C_).fit(X, Y)
        return self

    def predict(self, X):
        return self.model_.predict(X)

    def params(self):
        return {"C": self.C_, "cv_ex_f1_e0": {str(k): v for k, v in self.cv_.items()}}


def make_method(name):
    """The estimator of method ``name`` (raises ``Unavailable`` when its package is absent)."""
    import random

    random.seed(SEED)  # RakelD's label partition uses Python's `random`
    np.random.seed(SEED)
    try:
        if name in ("boomer", "boomer-f1"):
            from mlrl.boosting import BoomerClassifier

            # One thread: the parallel options off (they do not change the model).
            serial = dict(parallel_rule_refinement="false", parallel_statistic_update="false",
                          parallel_prediction="false")
            if name == "boomer":
                return BoomerClassifier(random_state=SEED, **serial)
            return BoomerClassifier(random_state=SEED, loss="logistic-non-decomposable",
                                    binary_predictor="gfm", **serial)
        if name == "gfm":
            return GFMWithCV()
        if name == "cardinal":
            from cardinal_pnc import CardinalClassifier

            return CardinalClassifier(random_state=SEED, n_jobs=1)
        if name in ("mlknn", "rakeld-lr", "br-svc"):
            from skmultilearn.adapt import MLkNN
            from skmultilearn.ensemble import RakelD
            from skmultilearn.problem_transform import BinaryRelevance
    except ImportError as e:
        raise Unavailable(str(e)) from e
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.multioutput import ClassifierChain
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import LinearSVC

    def lr():
        return LogisticRegression(max_iter=1000)

    return {
        "rf": lambda: RandomForestClassifier(n_estimators=300, random_state=SEED, n_jobs=1),
        "ovr-lr": lambda: OneVsRestClassifier(lr(), n_jobs=1),
        "cc-lr": lambda: ClassifierChain(lr(), random_state=SEED),
        "mlp": lambda: MLPClassifier(random_state=SEED),
        "knn": lambda: KNeighborsClassifier(n_neighbors=10, n_jobs=1),
        "mlknn": lambda: MLkNN(k=10),
        "rakeld-lr": lambda: RakelD(base_classifier=lr(), base_classifier_require_dense=[True, True]),
        "br-svc": lambda: BinaryRelevance(classifier=LinearSVC(random_state=SEED),
                                          require_dense=[True, True]),
    }[name]()


def prepare(X_train, X_test, how):
    """Features for a method: ``raw`` (the loader's CSR matrices), or ``scaled`` (dense,
    float64, each numeric column standardised with the training mean and standard deviation;
    a column whose training values are all 0 or 1, such as a bag-of-words indicator, is left
    as it is; constant columns are centred only)."""
    if how == "raw":
        return X_train, X_test
    A = X_train.toarray().astype(np.float64)
    B = X_test.toarray().astype(np.float64)
    mean = A.mean(axis=0)
    std = A.std(axis=0)
    std[std == 0] = 1.0
    binary = ((A == 0) | (A == 1)).all(axis=0)
    mean[binary] = 0.0
    std[binary] = 1.0
    return (A - mean) / std, (B - mean) / std


def load(dataset, data_dir):
    import warnings

    import cardinal_pnc as cardinal

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the readers' notes (identifier attributes dropped)
        # CSR for every dataset, as the recorded runs read them (`load_dataset` gives dense
        # data as an array by default).
        d = cardinal.load_dataset(dataset, data_dir=data_dir, sparse=True)
    return d


def run_cell(method, dataset, data_dir):
    """Fits ``method`` on ``dataset``'s training split and scores it on its test split."""
    import warnings

    d = load(dataset, data_dir)
    Y_train = np.asarray(d.Y_train, dtype=np.uint8)
    Y_test = np.asarray(d.Y_test, dtype=np.uint8)
    X_train, X_test = prepare(d.X_train, d.X_test, METHODS[method][2])
    est = make_method(method)
    if method != "cardinal":  # the product is run as it is
        est = ConstantLabels(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings and the like
        t0 = time.perf_counter()
        est.fit(X_train, Y_train)
        t1 = time.perf_counter()
        P = dense01(est.predict(X_test), Y_test.shape[1])
        t2 = time.perf_counter()
    out = {"status": "ok", **metrics(Y_test, P), "fit_s": t1 - t0, "predict_s": t2 - t1}
    inner = getattr(est, "inner", est)
    if hasattr(inner, "params"):
        out["params"] = inner.params()
    out["empty_predictions"] = int((P.sum(axis=1) == 0).sum())
    return out


def dataset_info(dataset, data_dir):
    d = load(dataset, data_dir)
    return {
        "n_train": int(d.X_train.shape[0]),
        "n_test": int(d.X_test.shape[0]),
        "n_features": int(d.X_train.shape[1]),
        "n_labels": int(d.Y_train.shape[1]),
        "test_rows_empty_truth": int((np.asarray(d.Y_test).sum(axis=1) == 0).sum()),
    }


# -- driver ----------------------------------------------------------------------------------


def worker(method, dataset, data_dir, result_path):
    """The child process: one cell, its result as JSON in ``result_path``."""
    try:
        res = run_cell(method, dataset, data_dir)
    except Unavailable as e:
        res = {"status": "unavailable", "error": str(e)}
    except Exception as e:  # a peer's failure is a result, not a crash
        res = {"status": "failed", "error": f"{type(e).__name__}: {e}"[:500]}
    with open(result_path, "w") as f:
        json.dump(res, f)


def run_child(method, dataset, data_dir, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", method, dataset, path]
        if data_dir:
            cmd += ["--data-dir", data_dir]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "error": f"no result within {timeout:g} s",
                    "wall_s": time.perf_counter() - t0}
        if os.path.exists(path):
            with open(path) as f:
                res = json.load(f)
        else:
            tail = (proc.stderr or "").strip().splitlines()[-3:]
            res = {"status": "failed",
                   "error": f"child exited with status {proc.returncode}: " + " | ".join(tail)}
        res["wall_s"] = time.perf_counter() - t0
        return res


def versions():
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("cardinal-pnc", "mlrl-boomer", "example-wise-f1-maximizer", "scikit-learn",
                 "scikit-multilearn-ng", "numpy", "scipy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def git_commit():
    """The checkout's commit (short), with ``+dirty`` for uncommitted changes; None outside
    a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (rev + ("+dirty" if dirty else "")) or None


def fmt(v, digits=2):
    return "" if v is None else f"{v:.{digits}f}"


def markdown(report):
    lines = []
    datasets = list(report["datasets"])
    methods = [m for m in METHODS if m in report["methods"]]
    lines.append("Example-F1 (%), empty prediction on empty truth scores 0 (the project's "
                 "convention) / scores 1 (SPEN/DVN); best peer in bold.\n")
    lines.append("| method | " + " | ".join(datasets) + " |")
    lines.append("| --- |" + " ---: |" * len(datasets))
    best = {}
    for ds in datasets:
        cells = report["results"].get(ds, {})
        for key in ("ex_f1_e0", "ex_f1_e1"):
            vals = [c[key] for m, c in cells.items() if m != "cardinal" and c.get("status") == "ok"]
            best[(ds, key)] = max(vals) if vals else None
    for m in methods:
        row = [m]
        for ds in datasets:
            c = report["results"].get(ds, {}).get(m)
            if c is None:
                row.append("")
            elif c["status"] != "ok":
                row.append(c["status"])
            else:
                parts = []
                for key in ("ex_f1_e0", "ex_f1_e1"):
                    s = fmt(c[key])
                    if m != "cardinal" and best[(ds, key)] is not None and abs(c[key] - best[(ds, key)]) < 1e-9:
                        s = f"**{s}**"
                    parts.append(s)
                row.append(" / ".join(parts))
        lines.append("| " + " | ".join(row) + " |")
    if "cardinal" in methods:
        lines.append("")
        lines.append("Best peer per dataset and convention against cardinal's default (example-F1, %):\n")
        lines.append("| dataset | best peer (empty=0) | cardinal (empty=0) | best peer (empty=1) "
                     "| cardinal (empty=1) |")
        lines.append("| --- | --- | ---: | --- | ---: |")
        for ds in datasets:
            cells = report["results"].get(ds, {})
            row = [ds]
            for key in ("ex_f1_e0", "ex_f1_e1"):
                ok = [(c[key], m) for m, c in cells.items() if m != "cardinal" and c.get("status") == "ok"]
                row.append(f"{fmt(max(ok)[0])} ({max(ok)[1]})" if ok else "")
                c = cells.get("cardinal", {})
                row.append(fmt(c[key]) if c.get("status") == "ok" else c.get("status", ""))
            lines.append("| " + " | ".join(row) + " |")
    for ds in datasets:
        info = report["datasets"][ds]
        lines.append("")
        lines.append(f"### {ds}\n")
        lines.append(f"{info.get('n_train')} train / {info.get('n_test')} test rows, "
                     f"{info.get('n_features')} features, {info.get('n_labels')} labels; "
                     f"{info.get('test_rows_empty_truth')} test rows with no label.\n")
        lines.append("| method | ex-F1 (empty=0) | ex-F1 (empty=1) | micro-F1 | macro-F1 | "
                     "Hamming loss | fit s | predict s | empty preds | status |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for m in methods:
            c = report["results"].get(ds, {}).get(m)
            if c is None:
                continue
            if c["status"] == "ok":
                lines.append(f"| {m} | {fmt(c['ex_f1_e0'])} | {fmt(c['ex_f1_e1'])} | "
                             f"{fmt(c['micro_f1'])} | {fmt(c['macro_f1'])} | "
                             f"{fmt(c['hamming'], 4)} | {fmt(c['fit_s'], 1)} | "
                             f"{fmt(c['predict_s'], 2)} | {c.get('empty_predictions', '')} | ok |")
            else:
                err = c.get("error", "").replace("|", "/").replace("\n", " ")[:120]
                lines.append(f"| {m} | | | | | | | | | {c['status']}: {err} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(DEFAULT_DATASETS),
                    help="comma-separated names or paths, as `cardinal train --dataset`")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="comma-separated, of: " + ", ".join(METHODS) + "; 'sklearn' names "
                    + ", ".join(SKLEARN_METHODS))
    ap.add_argument("--data-dir", default=None, help="where dataset names are looked up")
    ap.add_argument("--out", default="bench/results/peers.json",
                    help="the JSON file; the markdown goes beside it with .md")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per (method, dataset) cell: load, fit and predict")
    ap.add_argument("--resume", action="store_true",
                    help="keep the cells of an existing --out that finished ok")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="run nothing: join earlier reports (later files win a cell) into --out "
                    "and its markdown")
    ap.add_argument("--worker", nargs=3, metavar=("METHOD", "DATASET", "RESULT"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        worker(*args.worker[:2], args.data_dir, args.worker[2])
        return 0

    if args.merge:
        write(merge_reports(args.merge), args.out)
        return 0

    methods = []
    for m in args.methods.split(","):
        m = m.strip()
        if m == "sklearn":
            methods += SKLEARN_METHODS
        elif m in METHODS:
            methods.append(m)
        elif m:
            ap.error(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]

    report = {"command": "python bench/peers.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "commit": git_commit(), "versions": versions(), "seed": SEED, "threads": 1,
              "timeout_s": args.timeout, "gfm_grid": list(GFM_GRID),
              "methods": methods, "method_descriptions": {m: METHODS[m][0] for m in methods},
              "datasets": {}, "results": {}}
    old = {}
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            prior = json.load(f)
        old = prior.get("results", {})
        # Datasets and methods of the earlier run that this one does not name stay in the
        # report (a dataset added later joins the same tables).
        for ds, info in prior.get("datasets", {}).items():
            if ds not in datasets:
                report["datasets"][ds] = info
                report["results"][ds] = old.get(ds, {})
        kept = set(prior.get("methods", [])) | set(methods)
        report["methods"] = [m for m in METHODS if m in kept]
        report["method_descriptions"] = {m: METHODS[m][0] for m in report["methods"]}

    for ds in datasets:
        try:
            report["datasets"][ds] = dataset_info(ds, args.data_dir)
        except Exception as e:
            report["datasets"][ds] = {"error": f"{type(e).__name__}: {e}"}
            print(f"{ds}: cannot be read: {e}", file=sys.stderr)
            continue
        report["results"][ds] = dict(old.get(ds, {}))  # with --resume, other methods' cells stay
        for m in methods:
            prev = old.get(ds, {}).get(m)
            if prev is not None and prev.get("status") == "ok":
                res = prev
            else:
                res = run_child(m, ds, args.data_dir, args.timeout)
            report["results"][ds][m] = res
            shown = (f"ex-F1 {res['ex_f1_e0']:.2f} / {res['ex_f1_e1']:.2f}, fit {res['fit_s']:.1f} s"
                     if res["status"] == "ok" else f"{res['status']}: {res.get('error', '')[:200]}")
            print(f"{ds:>10} {m:>10}: {shown}", file=sys.stderr, flush=True)
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:  # after every cell: an interrupted run keeps its cells
                json.dump(report, f, indent=1)

    write(report, args.out)
    return 0


def write(report, out):
    """``out`` (JSON) and the markdown beside it; the markdown also on stdout."""
    md = markdown(report)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(os.path.splitext(out)[0] + ".md", "w") as f:
        f.write(md)
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(md)


def merge_reports(paths):
    """One report from several: datasets in order of appearance, every cell from the last file
    that has it; each part's command, commit and versions kept under ``parts``."""
    merged = {"parts": [], "methods": [], "datasets": {}, "results": {}}
    for path in paths:
        with open(path) as f:
            rep = json.load(f)
        merged["parts"].append({k: rep.get(k) for k in ("command", "commit", "versions", "timeout_s")}
                               | {"file": os.path.basename(path)})
        for k in ("seed", "threads", "gfm_grid"):
            merged.setdefault(k, rep.get(k))
        kept = set(merged["methods"]) | set(rep.get("methods", []))
        merged["methods"] = [m for m in METHODS if m in kept]
        for ds, info in rep.get("datasets", {}).items():
            merged["datasets"][ds] = info
            merged["results"].setdefault(ds, {}).update(rep.get("results", {}).get(ds, {}))
    merged["method_descriptions"] = {m: METHODS[m][0] for m in merged["methods"]}
    return merged


if __name__ == "__main__":
    sys.exit(main())
