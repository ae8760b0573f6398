"""Type stubs of the extension module ``cardinal._native`` (crates/cardinal-py)."""

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

__version__: str

CsrParts = Tuple[int, int, np.ndarray, np.ndarray, np.ndarray]
Matrix = Union[np.ndarray, CsrParts]

class NativeModel:
    @staticmethod
    def fit(
        x: Matrix,
        y: Matrix,
        preset: Optional[str] = None,
        config: Optional[str] = None,
        overrides: Optional[str] = None,
        seed: Optional[int] = None,
        threads: Optional[int] = None,
        verbose: int = 0,
    ) -> "NativeModel": ...
    def predict(
        self, x: Matrix, threads: Optional[int] = None
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    def save(self, path: str, overwrite: bool = False) -> None: ...
    @staticmethod
    def load(path: str) -> "NativeModel": ...
    @property
    def config_json(self) -> str: ...
    @property
    def history_json(self) -> str: ...
    @property
    def n_features(self) -> int: ...
    @property
    def n_labels(self) -> int: ...
    @property
    def label_names(self) -> List[str]: ...

def check_config(
    preset: Optional[str] = None,
    config: Optional[str] = None,
    overrides: Optional[str] = None,
    seed: Optional[int] = None,
) -> str: ...
def load_dataset(
    name_or_path: str, data_dir: Optional[str] = None, train_fraction: float = 0.8
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
