"""Shared fixtures: a small multi-label problem, a small configuration, the CLI binary; and the
rule for tests whose prerequisite is missing: skipped on a developer's machine, failed under CI
(which provides everything), so that no test passes there without having run."""

import os
import shutil

import pytest
from sklearn.datasets import make_multilabel_classification

# A configuration that trains in well under a second on the problem below.
# search=False: these hyper-parameters turn the default's search off anyway; said, it is no warning.
SMALL = {"hidden": 32, "epochs": 4, "random_state": 0, "search": False}


def in_ci(value=None):
    """Whether this is a CI run: `CI` (or `value`, when given) set to anything non-empty other
    than `0` or `false` (any case)."""
    v = (os.environ.get("CI", "") if value is None else value).strip()
    return v != "" and v != "0" and v.lower() != "false"


def skip_unless_ci(reason):
    """Skips the calling test for `reason`, or fails it when `in_ci()`."""
    if in_ci():
        pytest.fail(f"{reason}, and CI is set: CI must provide it", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def problem():
    """A small multi-label problem: dense X (float64), Y (0/1), train and test parts."""
    X, Y = make_multilabel_classification(
        n_samples=400, n_features=30, n_classes=8, n_labels=3, random_state=0
    )
    return X[:300], Y[:300], X[300:], Y[300:]


@pytest.fixture(scope="session")
def cli():
    """The `cardinal` binary: $CARDINAL_BIN (scripts/test.sh sets it), else one on PATH; the
    tests that need it are skipped without one, and fail under CI."""
    path = os.environ.get("CARDINAL_BIN") or shutil.which("cardinal")
    if not path or not os.path.exists(path):
        skip_unless_ci("no cardinal binary (set CARDINAL_BIN)")
    return path
