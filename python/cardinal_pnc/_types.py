"""The shapes of the fitted estimator's records, for type checkers (``mypy --strict``):
``search_results_``, ``history_`` entries, ``config_`` and ``predict_all``'s outputs."""

from typing import Any, Dict, List, NamedTuple, Optional, TypedDict

import numpy as np


class SearchResults(TypedDict):
    """What the default's search found (``search_results_``)."""

    #: The candidates' preset names, in order.
    candidates: List[str]
    #: Each candidate's system (``pnc``, ``forest``, ``forest-blend``).
    systems: List[str]
    #: Each candidate's mean cross-validated example-F1 (percent), scored as ``scoring`` says.
    mean_example_f1: List[float]
    #: Each candidate's decision threshold.
    thresholds: List[float]
    #: Folds of the cross-validation, and of those the folds run.
    folds: int
    folds_run: int
    #: Training rows.
    rows: int
    #: Which systems the search chose among (``all`` or ``pnc``).
    scope: str
    #: What ranked the candidates: ``example_f1`` (an empty prediction for an empty label set
    #: scores 1) or ``f1_samples`` (it scores 0, as scikit-learn's ``f1_samples``).
    scoring: str
    #: The chosen candidate's preset name, and its system.
    chosen: str
    chosen_system: str


class Predictions(NamedTuple):
    """Every output of one inference (:meth:`CardinalClassifier.predict_all`)."""

    labels: np.ndarray
    proba: np.ndarray
    counts: np.ndarray
    decision: np.ndarray


class EpochRecord(TypedDict):
    """One epoch of training (an entry of ``history_``)."""

    phase: int
    epoch: int
    loss: float
    dev_example_f1: Optional[float]
    dev_mean_z: Optional[float]
    seconds: float


#: The complete configuration the model trained (``config_``), as ``config.json`` holds it.
Config = Dict[str, Any]
