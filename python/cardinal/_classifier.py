"""``CardinalClassifier``: the scikit-learn estimator over the library's engine."""

import json
import os
import tempfile
from typing import Any, Dict, Optional, Union

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin
from sklearn.utils.validation import check_is_fitted

from . import _native
from ._arrays import as_native

# The keyword parameters exposed directly, and the configuration field each sets.
_FIELDS = {
    "hidden": ("model", "hidden"),
    "dropout": ("model", "dropout"),
    "steps": ("inference", "steps"),
    "epochs": ("train", "epochs"),
    "lr": ("train", "lr"),
    "batch_size": ("train", "batch_size"),
    "weight_decay": ("train", "weight_decay"),
    "threshold": ("threshold",),
}


class CardinalClassifier(MultiOutputMixin, ClassifierMixin, BaseEstimator):
    """Predict and Constrain: a multi-label classifier that predicts each input's label count
    ``z`` and then which labels, by unrolled projected gradient ascent constrained to
    ``sum(y) = z``.

    ``fit`` trains exactly as ``cardinal train`` does: a part of the training data is held out
    (``train.dev_fraction``) for early stopping, then the last epochs train on all of it. The
    same ``seed`` and configuration give the same weights as the command-line program, for any
    ``threads``.

    Parameters
    ----------
    preset : str
        ``"predict"`` (the default configuration) or ``"paper"`` (the authors' configuration).
    seed : int
        Seed of the initialisation, the dev split's batch order and dropout.
    threads : int or None
        Threads for fit and predict (``None``: all cores).
    config : dict, str or None
        A configuration (a dict, or JSON text) read over the preset, as ``--config``; only the
        fields given change, e.g. ``{"inference": {"steps": 10}}``.
    verbose : int
        0: silent; 1: a line per epoch (loss, dev F1) on ``sys.stderr``; 2: also every batch.
    hidden, dropout, steps, epochs, lr, batch_size, weight_decay, threshold : optional
        Shortcuts for ``model.hidden``, ``model.dropout``, ``inference.steps``,
        ``train.epochs``, ``train.lr``, ``train.batch_size``, ``train.weight_decay`` and
        ``threshold``, applied over ``config``; ``None`` keeps the configuration's value.
    search : bool or None
        The default's search: on a training set of at most 2000 rows, ``fit`` trains whichever
        of the configuration and two variants of ``paper`` scores best in a 3-fold
        cross-validation on it (a few times the training time). ``None``: on for the
        ``predict`` preset unless ``config`` or a shortcut above sets a hyper-parameter (the
        candidates would replace it); ``True`` or ``False`` decides.

    Attributes
    ----------
    n_features_in_ : int
        Features seen by ``fit``.
    n_labels_ : int
        Labels seen by ``fit``.
    classes_ : ndarray
        The label columns ``0 .. n_labels_ - 1`` (as scikit-learn's multi-label classifiers).
    label_names_ : list of str
        Label names recorded in a loaded model directory (empty after ``fit`` on arrays).
    config_ : dict
        The full configuration the model was trained with.
    history_ : list of dict
        One record per epoch of ``fit`` (``phase``, ``epoch``, ``loss``, ``dev_example_f1``,
        ``seconds``), as ``metrics.jsonl`` of the command-line program; empty after ``load``.

    Errors in the input (labels other than 0/1, NaN or infinite features, row counts that
    differ, a feature count at predict other than at fit, an invalid configuration) raise
    ``ValueError`` with the library's message. Ctrl-C interrupts ``fit`` after the current
    epoch with ``KeyboardInterrupt``. The GIL is released while the engine runs.
    """

    def __init__(
        self,
        preset: str = "predict",
        seed: int = 0,
        threads: Optional[int] = None,
        config: Union[Dict[str, Any], str, None] = None,
        verbose: int = 0,
        hidden: Optional[int] = None,
        dropout: Optional[float] = None,
        steps: Optional[int] = None,
        epochs: Optional[int] = None,
        lr: Optional[float] = None,
        batch_size: Optional[int] = None,
        weight_decay: Optional[float] = None,
        threshold: Optional[float] = None,
        search: Optional[bool] = None,
    ):
        self.preset = preset
        self.seed = seed
        self.threads = threads
        self.config = config
        self.verbose = verbose
        self.hidden = hidden
        self.dropout = dropout
        self.steps = steps
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.threshold = threshold
        self.search = search

    # -- configuration ---------------------------------------------------------------------

    def _config_args(self) -> Dict[str, Any]:
        """The arguments of the library's configuration resolution."""
        config = self.config
        if isinstance(config, dict):
            config = json.dumps(config)
        overrides: Dict[str, Any] = {}
        for param, path in _FIELDS.items():
            value = getattr(self, param)
            if value is None:
                continue
            node = overrides
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = value
        if self.search is not None:
            overrides["search"] = {"max_rows": 2000 if self.search else 0}
        return {
            "preset": self.preset,
            "config": config,
            "overrides": json.dumps(overrides) if overrides else None,
            "seed": None if self.seed is None else int(self.seed),
        }

    # -- training and inference ------------------------------------------------------------

    def fit(self, X: Any, Y: Any) -> "CardinalClassifier":
        """Trains on features ``X`` (a 2-D array or a scipy.sparse matrix, ``n × d``) and labels
        ``Y`` (a 0/1 indicator matrix, dense or sparse, ``n × L``). Returns ``self``."""
        x = as_native(X, np.float32, "X")
        y = as_native(Y, np.float64, "Y")
        self.model_ = _native.NativeModel.fit(
            x, y, threads=self.threads, verbose=int(self.verbose), **self._config_args()
        )
        self._set_fitted_attributes()
        return self

    def _set_fitted_attributes(self) -> None:
        self.n_features_in_ = self.model_.n_features
        self.n_labels_ = self.model_.n_labels
        # The label columns, as scikit-learn's multi-label classifiers name them.
        self.classes_ = np.arange(self.n_labels_)
        self.label_names_ = list(self.model_.label_names)
        self.config_ = json.loads(self.model_.config_json)
        self.history_ = json.loads(self.model_.history_json)

    def _infer(self, X: Any):
        check_is_fitted(self, "model_")
        return self.model_.predict(as_native(X, np.float32, "X"), threads=self.threads)

    def predict(self, X: Any) -> np.ndarray:
        """The predicted label sets: an ``n × L`` uint8 indicator matrix, ``y_T >= threshold``."""
        return self._infer(X)[0]

    def predict_proba(self, X: Any) -> np.ndarray:
        """The last iterate ``y_T`` (``n × L``, float32, in ``[0, 1]``, each row summing to
        ``z``): a relaxed label indicator, not calibrated probabilities."""
        return self._infer(X)[1]

    def predict_count(self, X: Any) -> np.ndarray:
        """The predicted label counts ``z`` (``n``, float32)."""
        return self._infer(X)[2]

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores that rank the labels (``n × L``): the last ascent step's point before its
        projection, which orders labels as ``y_T`` does without its ties at 0 and 1."""
        return self._infer(X)[3]

    # -- model directories and pickling ----------------------------------------------------

    def save(self, path: Union[str, "os.PathLike[str]"], overwrite: bool = False) -> None:
        """Writes the model directory ``path`` in the command-line program's format
        (``cardinal eval --model PATH --data ...`` and ``cardinal predict`` read it). A
        directory holding a model is replaced only with ``overwrite=True``."""
        check_is_fitted(self, "model_")
        self.model_.save(os.fspath(path), overwrite)

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "CardinalClassifier":
        """Reads a model directory written by :meth:`save` or by ``cardinal train``. The
        estimator's parameters reproduce its configuration (``config`` holds it whole)."""
        model = _native.NativeModel.load(os.fspath(path))
        cfg = json.loads(model.config_json)
        est = cls(preset=cfg["preset"], seed=cfg["seed"], config=model.config_json)
        est.model_ = model
        est._set_fitted_attributes()
        return est

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        model = state.pop("model_", None)
        if model is not None:
            with tempfile.TemporaryDirectory() as tmp:
                d = os.path.join(tmp, "model")
                model.save(d, False)
                state["_model_files"] = {
                    name: open(os.path.join(d, name), "rb").read()
                    for name in sorted(os.listdir(d))
                    if not name.startswith(".")
                }
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        files = state.pop("_model_files", None)
        self.__dict__.update(state)
        if files is not None:
            with tempfile.TemporaryDirectory() as tmp:
                for name, data in files.items():
                    with open(os.path.join(tmp, os.path.basename(name)), "wb") as f:
                        f.write(data)
                self.model_ = _native.NativeModel.load(tmp)
