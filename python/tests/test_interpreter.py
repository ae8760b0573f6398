"""A good citizen of the interpreter: the GIL is released during fit and predict, and Ctrl-C
interrupts a fit."""

import _thread
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification

from cardinal import CardinalClassifier

# Trains for a long time: no early stopping, many epochs.
LONG = {"hidden": 256, "epochs": 5000, "config": {"train": {"patience": 0}}}


@pytest.fixture(scope="module")
def bigger():
    return make_multilabel_classification(n_samples=2000, n_features=100, n_classes=20, random_state=1)


def test_other_python_threads_run_during_fit(bigger):
    X, Y = bigger
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    start = time.perf_counter()
    CardinalClassifier(hidden=256, epochs=6, threads=1).fit(X, Y)
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    # With the GIL held the counter could not move at all while the engine trains.
    assert elapsed > 0.2, elapsed
    assert ticks > 0.2 * elapsed / 0.001 * 0.1, (ticks, elapsed)


def test_ctrl_c_interrupts_a_fit(bigger):
    X, Y = bigger
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        CardinalClassifier(**LONG, threads=1).fit(X, Y)
    elapsed = time.perf_counter() - start
    timer.cancel()
    # Stopped after the epoch in progress (an epoch here takes well under a second).
    assert elapsed < 10, elapsed
