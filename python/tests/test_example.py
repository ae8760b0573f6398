"""The example in examples/ runs and its checks pass."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python_multilabel.py"


def test_the_example_runs_and_its_checks_pass():
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "identical predictions: True" in out.stdout
    assert "one-vs-rest logistic regression" in out.stdout
