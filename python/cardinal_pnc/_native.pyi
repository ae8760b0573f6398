"""Type stubs of the extension module ``cardinal_pnc._native`` (crates/cardinal-py)."""

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

__version__: str

CsrParts = Tuple[int, int, np.ndarray, np.ndarray, np.ndarray]
Matrix = Union[np.ndarray, CsrParts]

class NativePool:
    def __init__(self, threads: int) -> None: ...
    @property
    def threads(self) -> int: ...

class NativeModel:
    @staticmethod
    def fit(
        x: Matrix,
        y: Matrix,
        pool: NativePool,
        preset: Optional[str] = None,
        config: Optional[str] = None,
        overrides: Optional[str] = None,
        seed: Optional[int] = None,
        verbose: int = 0,
        feature_names: Optional[List[str]] = None,
        label_names: Optional[List[str]] = None,
        sample_weight: Optional[np.ndarray] = None,
        system: Optional[str] = None,
        search_results: Optional[List[str]] = None,
    ) -> "NativeModel": ...
    def predict(
        self, x: Matrix, pool: NativePool, feature_names: Optional[List[str]] = None
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    def save(self, path: str, overwrite: bool = False, threshold: Optional[float] = None) -> None: ...
    @staticmethod
    def load(path: str) -> "NativeModel": ...
    @property
    def config_json(self) -> str: ...
    @property
    def history_json(self) -> str: ...
    @property
    def search_json(self) -> Optional[str]: ...
    @property
    def system(self) -> str: ...
    @property
    def about(self) -> str: ...
    @property
    def accepts_threshold(self) -> bool: ...
    @property
    def n_features(self) -> int: ...
    @property
    def n_labels(self) -> int: ...
    @property
    def feature_names(self) -> List[str]: ...
    @property
    def label_names(self) -> List[str]: ...

def search_tasks(
    x: Matrix,
    y: Matrix,
    preset: Optional[str] = None,
    config: Optional[str] = None,
    overrides: Optional[str] = None,
    seed: Optional[int] = None,
    system: Optional[str] = None,
    sample_weight: Optional[np.ndarray] = None,
) -> List[Tuple[int, int]]: ...
def run_search_task(
    x: Matrix,
    y: Matrix,
    pool: NativePool,
    training: int,
    fold: int,
    preset: Optional[str] = None,
    config: Optional[str] = None,
    overrides: Optional[str] = None,
    seed: Optional[int] = None,
    system: Optional[str] = None,
    sample_weight: Optional[np.ndarray] = None,
    verbose: int = 0,
) -> str: ...
def base_preset(name: str) -> str: ...
def systems() -> List[Tuple[str, str]]: ...
def presets() -> List[str]: ...
def label_sets(y: np.ndarray, z: np.ndarray, ranking: np.ndarray, rule: str) -> np.ndarray: ...
def check_config(
    preset: Optional[str] = None,
    config: Optional[str] = None,
    overrides: Optional[str] = None,
    seed: Optional[int] = None,
    system: Optional[str] = None,
) -> str: ...
def load_dataset(
    name_or_path: Optional[str] = None,
    data_dir: Optional[str] = None,
    train_fraction: float = 0.8,
    train: Optional[str] = None,
    test: Optional[str] = None,
    labels: Optional[str] = None,
) -> Dict[str, Any]: ...
def project(
    v: np.ndarray,
    z: np.ndarray,
    method: str = "exact",
    rounds: int = 2,
    iters: int = 10,
    eps: Optional[float] = None,
) -> np.ndarray: ...
def project_vjp(
    v: np.ndarray,
    z: np.ndarray,
    g: np.ndarray,
    method: str = "exact",
    rounds: int = 2,
    iters: int = 10,
    eps: Optional[float] = None,
) -> Tuple[np.ndarray, np.ndarray]: ...
