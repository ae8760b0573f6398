"""Shared fixtures: a small multi-label problem, a small configuration, the CLI binary."""

import os
import shutil

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification

# A configuration that trains in well under a second on the problem below.
SMALL = {"hidden": 32, "epochs": 4, "random_state": 0}


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
    tests that need it are skipped without one."""
    path = os.environ.get("CARDINAL_BIN") or shutil.which("cardinal")
    if not path or not os.path.exists(path):
        pytest.skip("no cardinal binary (set CARDINAL_BIN)")
    return path
