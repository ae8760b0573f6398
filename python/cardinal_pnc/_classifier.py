"""``CardinalClassifier``: the scikit-learn estimator over the library's engine."""

import inspect
import json
import numbers
import os
import tempfile
import warnings
from typing import Any, Dict, List, Optional, Tuple, TypeVar, Union

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin
from sklearn.utils.validation import check_is_fitted

from . import _native
from ._types import Config, EpochRecord, Predictions, SearchResults
from ._params import (
    SearchOffWarning,
    SearchOnWarning,
    config_args,
    finite_float,
    seed_of,
    threads_of,
)
from ._search import search_as_tasks
from ._inputs import (
    ArrayLike,
    as_features,
    as_labels,
    as_sample_weight,
    digest,
    cols,
    fitted_rows,
    label_error,
    rows as row_count,
)

Self = TypeVar("Self", bound="CardinalClassifier")


class _Runtime:
    """What a fitted estimator keeps between calls: its thread pool (one per estimator, not
    one per call) and the outputs of its last inference, keyed by the input's content."""

    def __init__(self) -> None:
        self._pool: Optional[_native.NativePool] = None
        self.last: Optional[Tuple[Any, Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]] = (
            None
        )

    def pool(self, threads: int) -> "_native.NativePool":
        if self._pool is None or self._pool.threads != threads:
            self._pool = _native.NativePool(threads)
        return self._pool


class CardinalClassifier(MultiOutputMixin, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """A multi-label classifier built on Predict and Constrain: it predicts each input's label
    count ``z`` and then which labels, by unrolled projected gradient ascent constrained to
    ``sum(y) = z``. On small training sets the default may train a forest instead (see "The
    default's search" below; ``system_`` says which system was trained).

    ``fit`` trains exactly as ``cardinal train`` does: a part of the training data is held out
    (``train.dev_fraction``) for early stopping, then the last epochs train on all of it. The
    same ``random_state`` (an int) and configuration give the same weights as the
    command-line program's ``--seed``, for any ``n_jobs``.

    The targets are a label indicator matrix ``Y`` (``n_samples × n_labels``, 0/1, dense or
    sparse, or a pandas DataFrame whose columns name the labels); the estimator is multi-label
    only. Label sets (lists of labels per sample) are turned into such a matrix by
    :class:`sklearn.preprocessing.MultiLabelBinarizer`.

    The default's search
    --------------------
    With the ``predict`` preset and ``search=None``, ``fit`` on a training set of at most 2000
    rows first scores six candidate configurations by a 5-fold cross-validation on that
    training set and trains the one with the best mean example-F1; this costs a few times the
    training time. Four candidates are Predict and Constrain (system ``pnc``: the
    configuration itself, two variants of ``paper``, ``paper-projected`` and ``paper-wide``,
    and ``predict-forest-prior``, the configuration with a random forest's label log-odds
    added to its unary scores, the count, energy, ascent and projection still deciding); two
    are not: ``forest``, a random forest whose neighbourhoods decide each
    row's label set and its count for the expected example-F1, and ``forest-blend``, that
    forest blended with the configuration's own count and unary networks. Neither forest runs
    the energy, the unrolled ascent or the projection, and on small data one of them is often
    the one chosen: ``system_`` says which system was trained, ``search_results_`` every
    candidate's system and score and the one chosen (``config_["preset"]`` names it).
    ``system="pnc"`` restricts the search to Predict and Constrain's candidates. Larger
    training sets train the configuration as it is. The search is switched off by ``search=False``,
    and by setting a training hyper-parameter (a shortcut below or ``config``) to a value
    other than the preset's: the candidates would replace it. Prediction-time parameters
    (``threshold``, ``labels_by``), ``n_jobs``, ``random_state`` and ``verbose`` never change
    what is trained, and a parameter set to its default value changes nothing: the search
    stays on, said at fit by a :class:`SearchOnWarning` (a grid over that parameter would
    otherwise compare the search at the preset's value with the configuration as given at
    the others).

    The search's trainings (candidate × fold) run as joblib tasks: one after the other in
    this process by default, and spread over a cluster's workers inside
    ``joblib.parallel_backend("dask")`` (or any joblib backend), each on ``n_jobs`` threads
    (fewer where a worker has fewer cores). The model is the same, to the byte, wherever
    they ran.

    Parameters
    ----------
    preset : str
        ``"predict"`` (the default configuration) or ``"paper"`` (the authors' released code's
        configuration; its departures from the printed paper are listed in the project's
        docs/departures.md).
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None
        Seed of the initialisation, the dev split, the batch order and dropout. An int is the
        seed itself (the CLI's ``--seed``); ``None`` draws a fresh seed from numpy's global
        random state at every ``fit``, a ``RandomState`` draws one from it. The seed used is
        ``config_["seed"]``.
    n_jobs : int or None
        Threads for fit and predict: ``None`` is 1, ``-1`` all cores, ``-2`` all but one (as
        in joblib). Results are identical for any value. Idle threads sleep, so estimators
        fitted in parallel (``GridSearchCV(n_jobs=k)``) leave each other the cores.
    config : dict, str or None
        A configuration (a dict, or JSON text) read over the preset, as ``--config``; only the
        fields given change, e.g. ``{"inference": {"steps": 10}}``.
    verbose : int
        0: silent; 1: a line per epoch (loss, dev F1) and per fold of the default's search
        on ``sys.stderr`` (a task's line where the task runs); 2: also every batch.
    hidden, dropout, steps, epochs, lr, batch_size, weight_decay : optional
        Shortcuts for ``model.hidden``, ``model.dropout``, ``inference.steps``,
        ``train.epochs``, ``train.lr``, ``train.batch_size`` and ``train.weight_decay``,
        applied over ``config``; ``None`` keeps the configuration's value.
    threshold : float or None
        Prediction only: ``predict`` labels those with ``y_T >= threshold`` (``None``: the
        model's own threshold: 0.5, or the one the default's search chose by cross-validation). Saved as the model's threshold by :meth:`save`.
    labels_by : str or None
        Prediction only: how ``predict`` chooses labels, as the CLI's ``--labels-by``:
        ``None`` or ``"threshold"`` (``y_T >= threshold``), ``"round-z"`` (the ``round(z)``
        best-ranked labels, so that each row has exactly its predicted count) or
        ``"top-k=K"``.
    search : bool or None
        The default's search (see above): ``None`` decides as described, ``True`` searches
        (on at most 2000 rows), ``False`` trains the configuration as it is.
    search_scoring : str or None
        What the default's search ranks its candidates (and their thresholds) by, as the
        configuration's ``search.scoring``: ``None`` or ``"example_f1"``, the mean
        example-F1 with an empty prediction for an empty label set scored 1 (the right
        answer); ``"f1_samples"``, scikit-learn's ``scoring="f1_samples"``, which scores it
        0. Use ``"f1_samples"`` inside a ``GridSearchCV(scoring="f1_samples")`` so that both
        searches optimise the same score. Never turns the search off; the two agree on data
        without empty label sets.
    system : str or None
        The system to train, as the CLI's ``--system``: ``None`` (the configuration's:
        Predict and Constrain, with the default's search choosing among every system on small
        data), ``"pnc"`` (Predict and Constrain only: the search, when it runs, chooses among
        its candidates alone), ``"forest"`` or ``"forest-blend"`` (the forests, trained as
        the search's candidates are), or a Table 1 system (``"mlp"``, ``"br-logistic"``,
        ...; :func:`systems` lists them all).
    seed, threads : deprecated
        Former names of ``random_state`` and ``n_jobs`` (``threads=None`` meant all cores).

    Attributes
    ----------
    n_features_in_ : int
        Features seen by ``fit``.
    feature_names_in_ : ndarray of str
        The column names of a DataFrame ``X`` seen by ``fit`` (only then). ``predict`` on a
        DataFrame then matches its columns by name, as ``cardinal predict`` matches an ARFF
        file's: reordered columns are aligned; missing, extra or renamed ones raise
        ``ValueError`` naming them.
    n_labels_ : int
        Labels seen by ``fit``.
    classes_ : ndarray
        The label columns ``0 .. n_labels_ - 1`` (as scikit-learn's multi-label classifiers).
    label_names_ : list of str
        The labels' names: a DataFrame ``Y``'s columns or ``fit``'s ``label_names``; empty
        when neither gave any. Saved in ``meta.json`` (the CLI prints them).
    config_ : dict
        The full configuration the model was trained with.
    system_ : str
        The system the model is: ``"pnc"`` (Predict and Constrain), ``"forest"``,
        ``"forest-blend"`` or a Table 1 system; ``config_["system"]``.
    search_results_ : dict or None
        What the default's search found: ``candidates`` (their names), ``systems`` (the system
        each is), ``mean_example_f1``
        (each one's mean cross-validated example-F1, in percent, at its best threshold, an
        empty prediction for an empty label set scored as ``scoring`` says: ``"example_f1"``,
        1, or ``"f1_samples"``, 0), ``thresholds`` (that decision
        threshold per candidate, chosen by the same cross-validation), ``folds``, and
        ``rows``, ``scope`` (``"all"``, or ``"pnc"`` with ``system="pnc"``), ``chosen`` (the
        candidate trained, with its threshold) and ``chosen_system``. Saved with the model,
        so :meth:`load` restores it. ``None`` when no search ran.
    history_ : list of dict
        One record per epoch of ``fit`` (``phase``, ``epoch``, ``loss``, ``dev_example_f1``,
        ``seconds``), as ``metrics.jsonl`` of the command-line program; empty after ``load``.

    Sample weights
    --------------
    ``fit(X, Y, sample_weight=w)`` weighs each example's training loss: its relaxed-F1 terms,
    its supervised count term and its unary cross-entropy are multiplied by its weight, and a
    batch's mean loss divides by the batch's total weight, so that in the loss an integer
    weight counts as that many copies of the row (to rounding; the batches differ) and a
    weight of 0 leaves the row's labels out of every gradient. ``None`` and all-ones weights
    train the same model, to the byte. Other weights leave the forest candidates out of the
    default's search (a forest counts every row once), said by a warning at ``fit``.
    What the weights do not change: the dev split and the folds of the default's search (rows,
    not weight, are split), the feature standardisation, the range of counts and the mean
    count (from every row), and the scores the dev part and the search's held-out folds are
    judged by (unweighted example-F1). The search's and the early stopping's training folds are
    weighted. ``GridSearchCV(...).fit(X, Y, sample_weight=w)`` passes each fold its weights.

    Errors in the input (labels other than 0/1, NaN or infinite features, row counts that
    differ, a feature count at predict other than at fit) and in the parameters raise
    ``ValueError`` naming the argument or parameter. Ctrl-C interrupts ``fit`` with
    ``KeyboardInterrupt``: after the current epoch of any training, the search's included,
    and between two trees of a forest. The GIL is released while the engine runs.
    """

    # Set by fit (and load); annotated for type checkers, no class attributes.
    model_: "_native.NativeModel"
    _native_runtime_: _Runtime

    def __init__(
        self,
        preset: str = "predict",
        random_state: Union[int, np.random.RandomState, np.random.Generator, None] = None,
        n_jobs: Optional[int] = None,
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
        labels_by: Optional[str] = None,
        search: Optional[bool] = None,
        seed: Optional[int] = None,
        threads: Optional[int] = None,
        system: Optional[str] = None,
        search_scoring: Optional[str] = None,
    ):
        self.preset = preset
        self.random_state = random_state
        self.n_jobs = n_jobs
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
        self.labels_by = labels_by
        self.search = search
        self.seed = seed
        self.threads = threads
        self.system = system
        self.search_scoring = search_scoring

    # -- parameters ------------------------------------------------------------------------

    def _seed(self) -> Optional[int]:
        """The seed of a fit: ``random_state`` (or the deprecated ``seed``)."""
        return seed_of(self)

    def _threads(self) -> int:
        """The threads of ``n_jobs`` (or the deprecated ``threads``), as joblib counts."""
        return threads_of(self)

    def _config_args(self, seed: Optional[int] = None) -> Dict[str, Any]:
        """The arguments of the library's configuration resolution for these parameters."""
        return config_args(self, seed).args

    def _rule(self) -> str:
        """The labelling rule of ``predict``, in the CLI's ``--labels-by`` syntax."""
        rule = self.labels_by
        if rule is not None and not isinstance(rule, str):
            raise ValueError(f"labels_by={rule!r}: expected None, 'threshold', 'round-z' or 'top-k=K'")
        decided = not self.model_.accepts_threshold
        if decided and (self.threshold is not None or (rule or "").startswith("threshold")):
            raise ValueError(
                f"threshold={self.threshold!r}, labels_by={rule!r}: the model is system "
                f"{self.model_.system!r}, which decides each row's label set for the expected "
                "F1; a threshold on that set gives the same labels at every value. Leave "
                "threshold and labels_by at None for the decided sets, or use "
                "labels_by='top-k=K' or 'round-z'; predict_proba gives the labels' marginal "
                "probabilities"
            )
        if rule is None or rule == "threshold":
            thr = self.threshold
            if thr is None:
                thr = self.config_["threshold"]
            return f"threshold={finite_float(thr, 'threshold')!r}"
        if self.threshold is not None and not rule.startswith("threshold"):
            raise ValueError(
                f"threshold={self.threshold!r} applies to labels_by='threshold' only, "
                f"not to labels_by={rule!r}"
            )
        return rule

    # -- training --------------------------------------------------------------------------

    def fit(
        self: Self,
        X: ArrayLike,
        y: Optional[ArrayLike] = None,
        sample_weight: Optional[ArrayLike] = None,
        *,
        label_names: Optional[List[str]] = None,
        Y: Optional[ArrayLike] = None,
    ) -> Self:
        """Trains on features ``X`` (a 2-D array, a scipy.sparse matrix or a pandas
        DataFrame, ``n × d``) and labels ``y`` (a 0/1 indicator matrix, dense, sparse or a
        DataFrame, ``n × L``; ``Y`` is accepted as its other name, as the package first
        called it). ``sample_weight`` (``n`` numbers, finite, ``>= 0``, not all
        0; ``None``: every example weighs 1) weighs each example's loss (see "Sample
        weights" in the class documentation). The names of a DataFrame's columns are
        recorded (``feature_names_in_``, ``label_names_``); ``label_names`` names ``Y``'s
        columns otherwise. Returns ``self``."""
        if y is not None and Y is not None:
            raise ValueError("fit: y and Y (its other name) are both given: pass one")
        if y is None:
            y = Y
        features, names = as_features(X, "fit")
        labels, y_names = as_labels(y)
        if label_names is not None:
            if isinstance(label_names, (str, bytes)) or not hasattr(label_names, "__iter__"):
                raise ValueError(
                    f"label_names={label_names!r}: expected a list of names, one per column of Y"
                )
            label_names = [str(n) for n in label_names]
            if y_names and y_names != label_names:
                raise ValueError(
                    "label_names differ from the names of Y's columns: pass one or the other"
                )
            y_names = label_names
        fitted_rows(features, labels)
        weights = as_sample_weight(sample_weight, row_count(features))
        if weights is not None and bool(np.all(weights == 1.0)):
            # Every row counted once, as without weights: the same model, forests included.
            weights = None
        resolved = config_args(self, self._seed())
        args, turned_off_by, kept_on_by, max_rows = resolved
        searches = max_rows > 0 and row_count(features) <= max_rows
        if weights is not None and searches and not turned_off_by and (
            self.search is not False and self.system is None
        ):
            warnings.warn(
                "sample_weight: the default's search leaves out its candidates that grow a "
                "forest (predict-forest-prior, forest, forest-blend), which counts every "
                "training row once; it chooses among Predict and Constrain's other candidates "
                "only (system='pnc' says so and silences this)",
                UserWarning,
                stacklevel=2,
            )
        if turned_off_by and row_count(features) <= max_rows:
            warnings.warn(
                f"{', '.join(turned_off_by)} set: the default's search (which on "
                f"training sets of at most {max_rows} rows chooses among several "
                "configurations by cross-validation) is off, and the configuration trains as "
                "given. A grid over these parameters compares them without the search; "
                "pass search=False to say so and silence this, or search=True to keep the "
                "search (the configuration as given is then one of its candidates)",
                SearchOffWarning,
                stacklevel=2,
            )
        if kept_on_by and row_count(features) <= max_rows:
            warnings.warn(
                f"{', '.join(f'{p}={getattr(self, p)!r}' for p in kept_on_by)}: the preset's own "
                "value, so the default's search stays on and may train a candidate that does "
                "not use it. A grid over this parameter would compare the search at this "
                "point with the configuration as given at the others; pass search=False "
                "(or search=True) to compare like with like and silence this",
                SearchOnWarning,
                stacklevel=2,
            )
        if not isinstance(self.verbose, numbers.Integral) or self.verbose < 0:
            raise ValueError(f"verbose={self.verbose!r}: expected an int >= 0")
        verbose = min(int(self.verbose), 2)
        runtime = _Runtime()
        pool = runtime.pool(self._threads())
        try:
            # The search's trainings as joblib tasks: in order here, or on a cluster's
            # workers inside `joblib.parallel_backend("dask")`; the same model either way.
            results = search_as_tasks(features, labels, weights, args, pool.threads, verbose)
            self.model_ = _native.NativeModel.fit(
                features,
                labels,
                pool,
                verbose=verbose,
                feature_names=names,
                label_names=y_names,
                sample_weight=weights,
                search_results=results,
                **args,
            )
        except ValueError as e:
            if str(e).startswith("Y: ") and "expected a label indicator" in str(e):
                raise ValueError(label_error(str(e))) from None
            raise
        self._native_runtime_ = runtime
        self._set_fitted_attributes()
        return self

    def _set_fitted_attributes(self) -> None:
        self.n_features_in_ = self.model_.n_features
        names = self.model_.feature_names
        if names:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_labels_ = self.model_.n_labels
        # The label columns, as scikit-learn's multi-label classifiers name them.
        self.classes_ = np.arange(self.n_labels_)
        self.label_names_ = list(self.model_.label_names)
        self.config_: Config = json.loads(self.model_.config_json)
        self.history_: List[EpochRecord] = json.loads(self.model_.history_json)
        self.system_: str = self.model_.system
        search = self.model_.search_json
        self.search_results_: Optional[SearchResults] = (
            None if search is None else json.loads(search)
        )

    # -- inference -------------------------------------------------------------------------

    def _outputs(self, X: ArrayLike) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(y_T, z, ranking, graded)`` of ``X``: one inference, reused while the same content is
        asked for again (``predict`` then ``predict_proba`` on one ``X`` infer once). The
        arrays are the cache's own: a caller copies what it hands out."""
        check_is_fitted(self, "model_")
        features, names = as_features(X, "predict")
        fitted_names = self.model_.feature_names
        if fitted_names and not names:
            warnings.warn(
                "X does not have valid feature names, but CardinalClassifier was fitted with "
                "feature names",
                UserWarning,
                stacklevel=3,
            )
        elif names and not fitted_names:
            warnings.warn(
                "X has feature names, but CardinalClassifier was fitted without feature names",
                UserWarning,
                stacklevel=3,
            )
        if not (names and fitted_names) and cols(features) != self.n_features_in_:
            raise ValueError(
                f"X has {cols(features)} features, but CardinalClassifier is expecting "
                f"{self.n_features_in_} features as input"
            )
        runtime: _Runtime = self._native_runtime_
        key = (digest(features), tuple(names or ()), id(self.model_))
        if runtime.last is not None and runtime.last[0] == key:
            out = runtime.last[1]
        else:
            y, z, ranking, graded = self.model_.predict(
                features, runtime.pool(self._threads()), feature_names=names or None
            )
            out = (y, z, ranking, graded)
            runtime.last = (key, out)
        return out

    def predict_all(self, X: ArrayLike) -> Predictions:
        """Every output of one inference on ``X``: ``(labels, proba, counts, decision)`` as
        :meth:`predict`, :meth:`predict_proba`, :meth:`predict_count` and
        :meth:`decision_function` return them."""
        y, z, ranking, graded = self._outputs(X)
        labels = _native.label_sets(y, z, ranking, self._rule())
        # Copies: the caller may change what it gets without changing the cache.
        return Predictions(
            labels=labels, proba=graded.copy(), counts=z.copy(), decision=ranking.copy()
        )

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The predicted label sets: an ``n × L`` int64 indicator matrix, chosen by
        ``labels_by`` (by default ``y_T >= threshold``)."""
        y, z, ranking, _ = self._outputs(X)
        return _native.label_sets(y, z, ranking, self._rule())

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Graded label scores (``n × L``, float32, in ``[0, 1]``), by the model's system
        (``system_``): for Predict and Constrain (``pnc``) the last iterate ``y_T``, each row
        summing to ``z``, a relaxed label indicator rather than calibrated probabilities; for
        ``forest`` and ``forest-blend`` each label's marginal probability under the joint
        distribution the set was decided by (the set itself is :meth:`predict`'s); for the
        baselines their per-label scores."""
        return self._outputs(X)[3].copy()

    def predict_count(self, X: ArrayLike) -> np.ndarray:
        """The predicted label counts ``z`` (``n``, float32)."""
        return self._outputs(X)[1].copy()

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Scores that rank the labels (``n × L``), by the model's system (``system_``): for
        Predict and Constrain the last ascent step's point before its projection, which
        orders labels as ``y_T`` does without its ties at 0 and 1; for ``forest`` and
        ``forest-blend`` each label's expected-F1 score at the chosen set's size; for the
        baselines their per-label scores."""
        return self._outputs(X)[2].copy()

    # -- tags ------------------------------------------------------------------------------

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        # Every label is binary: a column of Y with values other than 0 and 1 is refused.
        tags.classifier_tags.multi_class = False
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        tags.target_tags.two_d_labels = True
        tags.target_tags.one_d_labels = False
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = False
        return tags

    def _more_tags(self) -> Dict[str, Any]:
        # The same for scikit-learn before 1.6.
        return {"multilabel": True, "multioutput_only": True, "requires_y": True}

    # -- model directories and pickling ----------------------------------------------------

    def save(self, path: Union[str, "os.PathLike[str]"], overwrite: bool = False) -> None:
        """Writes the model directory ``path`` in the command-line program's format
        (``cardinal eval --model PATH --data ...`` and ``cardinal predict`` read it), with the
        feature and label names and, when set, ``threshold`` as the model's threshold. A
        directory holding a model is replaced only with ``overwrite=True``."""
        check_is_fitted(self, "model_")
        thr = None if self.threshold is None else finite_float(self.threshold, "threshold")
        self.model_.save(os.fspath(path), overwrite, thr)

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "CardinalClassifier":
        """Reads a model directory written by :meth:`save` or by ``cardinal train``. The
        estimator's parameters reproduce its configuration (``config`` holds it whole), so
        that ``clone(CardinalClassifier.load(path)).fit(X, Y)`` trains it again, also after
        the default's search chose it."""
        model = _native.NativeModel.load(os.fspath(path))
        cfg = json.loads(model.config_json)
        name = cfg.get("preset", "predict")
        # The library's rule for what a saved configuration is read over.
        preset = _native.base_preset(name)
        est = cls(
            preset=preset,
            random_state=cfg["seed"],
            config=model.config_json,
            search=None if "search" in cfg else False,
        )
        est.model_ = model
        est._native_runtime_ = _Runtime()
        est._set_fitted_attributes()
        return est

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        """scikit-learn's repr of the parameters, and for a fitted estimator the system it
        really trained (the default's search may have chosen a forest, not Predict and
        Constrain)."""
        text: str = super().__repr__(N_CHAR_MAX)
        model = self.__dict__.get("model_")
        if model is None:
            return text
        preset = self.__dict__.get("config_", {}).get("preset", "?")
        return f"{text}  # fitted: system {model.system!r} (preset {preset!r})"

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_native_runtime_", None)
        model = state.pop("model_", None)
        if model is not None:
            with tempfile.TemporaryDirectory() as tmp:
                d = os.path.join(tmp, "model")
                model.save(d, False, None)
                files = {}
                for name in sorted(os.listdir(d)):
                    if not name.startswith("."):
                        with open(os.path.join(d, name), "rb") as f:
                            files[name] = f.read()
                state["_model_files"] = files
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        files = state.pop("_model_files", None)
        self.__dict__.update(state)
        # An estimator pickled before a parameter existed gets its default (get_params, clone).
        for name, param in inspect.signature(CardinalClassifier.__init__).parameters.items():
            if name != "self" and name not in self.__dict__:
                setattr(self, name, param.default)
        if files is not None:
            with tempfile.TemporaryDirectory() as tmp:
                for name, data in files.items():
                    with open(os.path.join(tmp, os.path.basename(name)), "wb") as f:
                        f.write(data)
                self.model_ = _native.NativeModel.load(tmp)
            self._native_runtime_ = _Runtime()
