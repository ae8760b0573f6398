"""The estimator's parameters turned into the library's configuration arguments, checked,
each refusal naming the parameter that caused it."""

import json
import math
import numbers
import os
import re
import warnings
from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np

from . import _native

# The keyword parameters that are training hyper-parameters, the configuration field each
# sets, and the kind of value each takes.
FIELDS = {
    "hidden": (("model", "hidden"), "int"),
    "dropout": (("model", "dropout"), "float"),
    "steps": (("inference", "steps"), "int"),
    "epochs": (("train", "epochs"), "int"),
    "lr": (("train", "lr"), "float"),
    "batch_size": (("train", "batch_size"), "int"),
    "weight_decay": (("train", "weight_decay"), "float"),
}

# `search_scoring`'s values and the configuration's names for them (`search.scoring`).
SEARCH_SCORINGS = {"example_f1": "example-f1", "f1_samples": "f1-samples"}


class SearchOffWarning(UserWarning):
    """The estimator's parameters turned the default's search off (see
    :class:`CardinalClassifier`, "The default's search")."""


class SearchOnWarning(UserWarning):
    """A training hyper-parameter set to the preset's own value left the default's search on,
    whose candidates may not use it (see :class:`CardinalClassifier`, "The default's
    search")."""


class ConfigArgs(NamedTuple):
    """What a fit passes the library, and what the parameters did to the default's search."""

    args: Dict[str, Any]
    """The keyword arguments of the library's configuration resolution."""
    turned_off_by: List[str]
    """The parameters that turned the search off (said by a warning at fit)."""
    kept_on_by: List[str]
    """The hyper-parameters set to the preset's own values, which leave the search on (said
    by a warning at fit: the search's candidates may not have them)."""
    max_rows: int
    """The preset's ``search.max_rows``: the rows up to which it would search."""


def positive_int(value: Any, name: str, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={value!r}: expected an int")
    if value < (0 if allow_zero else 1):
        raise ValueError(f"{name}={value!r}: expected an int >= {0 if allow_zero else 1}")
    return int(value)


def finite_float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={value!r}: expected a number")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name}={value!r}: expected a finite number")
    return float(value)


def seed_of(est: Any) -> Optional[int]:
    """The seed of a fit: ``random_state`` (or the deprecated ``seed``)."""
    rs = est.random_state
    if est.seed is not None:
        warnings.warn(
            "`seed` is deprecated; use `random_state`", FutureWarning, stacklevel=3
        )
        if rs is not None:
            raise ValueError("random_state and seed (its deprecated name) are both set")
        rs = est.seed
    if rs is None:
        rs = np.random.mtrand._rand
    if isinstance(rs, bool):
        raise ValueError(f"random_state={rs!r}: expected an int, a RandomState or None")
    if isinstance(rs, numbers.Integral):
        if not 0 <= int(rs) < 2**64:
            raise ValueError(f"random_state={rs!r}: expected an int in [0, 2**64)")
        return int(rs)
    if isinstance(rs, np.random.RandomState):
        return int(rs.randint(np.iinfo(np.int32).max))
    if isinstance(rs, np.random.Generator):
        return int(rs.integers(np.iinfo(np.int32).max))
    raise ValueError(f"random_state={rs!r}: expected an int, a RandomState or None")


def threads_of(est: Any) -> int:
    """The threads of ``n_jobs`` (or the deprecated ``threads``), as joblib counts."""
    n = est.n_jobs
    name = "n_jobs"
    if est.threads is not None:
        warnings.warn(
            "`threads` is deprecated; use `n_jobs`", FutureWarning, stacklevel=3
        )
        if n is not None:
            raise ValueError("n_jobs and threads (its deprecated name) are both set")
        n, name = est.threads, "threads"
    if n is None:
        return 1
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"{name}={n!r}: expected an int or None")
    n = int(n)
    if n == 0:
        raise ValueError(f"{name}=0: expected an int other than 0 (None is 1 thread)")
    if n > 0:
        # Far past the library's cap (4 per core), which NativePool refuses in its words.
        return min(n, 2**31)
    cores = os.cpu_count() or 1
    threads = cores + 1 + int(n)
    if threads < 1:
        raise ValueError(
            f"{name}={n}: this machine has {cores} cores, so n_jobs must be >= {-cores}"
        )
    return threads


def _overrides(est: Any) -> Dict[str, Any]:
    """The shortcut parameters that are set, as a nested configuration."""
    overrides: Dict[str, Any] = {}
    for param, (path, kind) in FIELDS.items():
        value = getattr(est, param)
        if value is None:
            continue
        value = (
            positive_int(value, param, allow_zero=param == "steps")
            if kind == "int"
            else finite_float(value, param)
        )
        node = overrides
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return overrides


def _check(
    est: Any,
    preset: Optional[str],
    config: Optional[str],
    overrides: Optional[str],
    system: Optional[str] = None,
) -> Dict[str, Any]:
    """The library's configuration for these arguments (a dict); its refusal as a
    ``ValueError`` naming the parameter that caused it."""
    try:
        checked: Dict[str, Any] = json.loads(
            _native.check_config(preset, config, overrides, None, system)
        )
        return checked
    except ValueError as e:
        msg = str(e)
        if system is not None and f"`{system}`" in msg:
            raise ValueError(f"system={system!r}: {msg}") from None
        if not isinstance(est.config, str):
            # Positions in JSON the estimator wrote (from a dict), not the user.
            msg = re.sub(r" at line \d+, column \d+", "", msg)
        named = preset is not None and (f"`{preset}`" in msg or f'"{preset}"' in msg)
        if "preset" in msg and named:
            raise ValueError(f"preset={preset!r}: {msg}") from None
        for param, (path, _) in FIELDS.items():
            if getattr(est, param) is not None and ".".join(path) in msg:
                raise ValueError(f"{param}={getattr(est, param)!r}: {msg}") from None
        if config is not None:
            raise ValueError(f"config: {msg}") from None
        raise


def config_args(est: Any, seed: Optional[int] = None) -> ConfigArgs:
    """The arguments of the library's configuration resolution: the preset, ``config``,
    the shortcuts, and the default's search on or off (see the class documentation)."""
    if not isinstance(est.preset, str):
        known = ", ".join(_native.presets())
        raise ValueError(f"preset={est.preset!r}: expected a str, one of {known}")
    config = est.config
    if isinstance(config, dict):
        config = json.dumps(config)
    elif config is not None and not isinstance(config, str):
        raise ValueError(f"config: expected a dict, JSON text or None, got {type(config).__name__}")
    if est.search is not None and not isinstance(est.search, (bool, np.bool_)):
        raise ValueError(f"search={est.search!r}: expected True, False or None")
    if est.system is not None and not isinstance(est.system, str):
        raise ValueError(f"system={est.system!r}: expected a system's name or None")
    overrides = _overrides(est)
    parsed = json.loads(config) if config is not None else None
    # As the CLI's --config without --preset: a configuration that names its preset (as
    # every saved config.json does) is read over that preset, not over `predict`.
    named = parsed.get("preset") if isinstance(parsed, dict) else None
    preset: Optional[str] = est.preset
    if isinstance(named, str) and est.preset == "predict":
        preset = None
    # The preset the configuration is read over, by the library's rule (a saved
    # configuration's name is not a preset).
    base_name = _native.base_preset(named) if preset is None and isinstance(named, str) else preset
    base = _check(est, base_name, None, None)
    max_rows = int(base.get("search", {}).get("max_rows", 0))
    if est.search is not None:
        rows = max_rows or 2000
        overrides.setdefault("search", {})["max_rows"] = rows if est.search else 0
    scoring = getattr(est, "search_scoring", None)
    if scoring is not None:
        if scoring not in SEARCH_SCORINGS:
            raise ValueError(
                f"search_scoring={scoring!r}: expected None, {', '.join(map(repr, SEARCH_SCORINGS))}"
            )
        overrides.setdefault("search", {})["scoring"] = SEARCH_SCORINGS[scoring]
    text = json.dumps(overrides) if overrides else None
    # Whether the search runs is the library's rule, the CLI's too (the configuration and the
    # shortcuts that change a hyper-parameter turn it off, unless they set its switch); what
    # is said of it at fit is read off the configuration it gives.
    user = _check(est, preset, config, text, est.system)
    turned_off_by: List[str] = []
    kept_on_by: List[str] = []
    switched = isinstance(parsed, dict) and "max_rows" in (parsed.get("search") or {})
    if est.search is None and not switched and max_rows:
        set_params = [p for p in FIELDS if getattr(est, p) is not None]
        if int(user.get("search", {}).get("max_rows", 0)):
            kept_on_by = set_params
        else:
            # Said at fit (where the rows are known): a grid over these compares the
            # configuration as given, not the default's choice.
            turned_off_by = set_params + (["config"] if config is not None else [])
            if est.system is not None and not turned_off_by:
                turned_off_by.append("system")
    args = {
        "preset": preset,
        "config": config,
        "overrides": text,
        "seed": seed,
        "system": est.system,
    }
    return ConfigArgs(args, turned_off_by, kept_on_by, max_rows)
