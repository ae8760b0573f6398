"""cardinal: multi-label classification with a predicted label count (Predict and Constrain).

A model predicts how many labels an input has, ``z = h(x)``, then which, by unrolled projected
gradient ascent on a learned score over relaxed labels ``y`` in ``[0, 1]^L`` constrained to
``sum(y) = z`` (Brukhim & Globerson, ICML 2018). On training sets of at most 2000 rows the
default's search may instead train a random forest, which is not Predict and Constrain (a
fitted estimator's ``system_`` says which system it is; ``system="pnc"`` keeps to Predict and
Constrain). This package is a thin layer over the Rust
library that the ``cardinal`` command-line program uses: the same engine, the same numbers, the
same model directories.

* :class:`CardinalClassifier`: a scikit-learn estimator (fit, predict, predict_proba,
  predict_count, decision_function; pickling, ``clone``, ``GridSearchCV``).
* :func:`load_dataset`: any dataset the command-line program reads, as arrays.
* :func:`predict_dask`: prediction on a Dask array or DataFrame, partition by partition.
* :func:`project` and :func:`project_vjp`: the projection operators and their
  vector-Jacobian products on numpy arrays.
* :func:`systems` and :func:`presets`: what ``system`` and ``preset`` may name, as the library
  lists them.
"""

from ._classifier import CardinalClassifier
from ._params import SearchOffWarning, SearchOnWarning
from ._dask import predict_dask
from ._data import Dataset, load_dataset
from ._native import __version__
from ._project import project, project_vjp
from ._systems import presets, systems
from ._types import EpochRecord, SearchResults

__all__ = [
    "CardinalClassifier",
    "SearchOffWarning",
    "SearchOnWarning",
    "SearchResults",
    "EpochRecord",
    "Dataset",
    "load_dataset",
    "predict_dask",
    "project",
    "project_vjp",
    "systems",
    "presets",
    "__version__",
]
