"""A good citizen of the interpreter: the GIL is released during fit and predict, and Ctrl-C
interrupts a fit."""

import _thread
import signal
import threading
import time

import pytest
from sklearn.datasets import make_multilabel_classification

from cardinal_pnc import CardinalClassifier

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
    # Long enough on any machine for the timing below to mean something (no early stopping:
    # a faster engine once brought 6 epochs under 0.2 s).
    CardinalClassifier(hidden=256, epochs=40, n_jobs=1, config={"train": {"patience": 0}}).fit(X, Y)
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    # With the GIL held the counter could not move at all while the engine trains.
    assert elapsed > 0.2, elapsed
    assert ticks > 0.2 * elapsed / 0.001 * 0.1, (ticks, elapsed)


def _interrupted(fit):
    """Runs `fit` while Ctrl-C is sent every 0.5 s from 1 s on until it returns; asserts that it
    raised KeyboardInterrupt, and returns how long it took."""
    stop = threading.Event()

    def press():
        if stop.wait(1.0):
            return
        while not stop.is_set():
            _thread.interrupt_main()
            stop.wait(0.5)

    # A process started in the background by a non-interactive shell inherits SIGINT ignored,
    # and then Python raises nothing for it; an interactive user's Ctrl-C has the handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    presser = threading.Thread(target=press)
    presser.start()
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            fit()
    finally:
        stop.set()
        try:
            presser.join()
            time.sleep(0.05)  # a Ctrl-C sent just before the stop arrives here, not later
        except KeyboardInterrupt:
            pass
        signal.signal(signal.SIGINT, previous)
    return time.perf_counter() - start


def test_ctrl_c_interrupts_a_fit(bigger):
    X, Y = bigger
    # A fit that ignored Ctrl-C would run its 5000 epochs and fail the time bound; it stops
    # after the epoch in progress (an epoch here takes well under a second).
    elapsed = _interrupted(lambda: CardinalClassifier(**LONG, n_jobs=1).fit(X, Y))
    assert elapsed < 10, elapsed


def test_ctrl_c_interrupts_a_forest_and_the_search(bigger):
    X, Y = bigger
    # 10 000 trees (the most allowed) take about two minutes here; Ctrl-C stops the forest
    # between two trees.
    forest = {"model": {"forest": {"trees": 10000, "min_leaf": 1, "networks": 0.0}}}
    elapsed = _interrupted(
        lambda: CardinalClassifier(system="forest", search=False, n_jobs=1, config=forest).fit(X, Y)
    )
    assert elapsed < 10, elapsed
    # The default's search on these 2000 rows (its forests, then networks) takes 15-25 s on a
    # 2-core machine; Ctrl-C, first sent at 1 s, stops it inside a candidate's training.
    X, Y = make_multilabel_classification(
        n_samples=2000, n_features=600, n_classes=100, n_labels=6, random_state=1
    )
    elapsed = _interrupted(lambda: CardinalClassifier(n_jobs=1, random_state=0).fit(X, Y))
    assert elapsed < 6, elapsed
