"""The systems and presets an estimator may name, as the library lists them."""

from typing import Dict, List

from . import _native


def systems() -> Dict[str, str]:
    """The systems ``CardinalClassifier(system=...)`` may name, each with what it is.

    In the library's order: Predict and Constrain (``pnc``), the forests the default's search
    may choose, then the paper's Table 1 systems and the tuned baselines. The list is the
    library's registry, the one the command line's ``--system`` reads.
    """
    return dict(_native.systems())


def presets() -> List[str]:
    """The presets ``CardinalClassifier(preset=...)`` may name (the command line's
    ``--preset``)."""
    return list(_native.presets())
