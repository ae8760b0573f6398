#!/usr/bin/env bash
# Every test, on a fresh clone, by itself: the Rust workspace, then the Python package
# installed with `pip install .` into a virtual environment of its own (with its test
# dependencies from PyPI) and its pytest suite, which also runs examples/python_multilabel.py
# and checks the CLI and the package against each other.
#
# Needs a Rust toolchain and Python 3.9+ with the venv module. The environment is
# $CARDINAL_TEST_VENV (default .venv-test in the repository), reused when it exists.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Rust: cargo test --workspace --locked"
cargo test --workspace --locked

venv=${CARDINAL_TEST_VENV:-.venv-test}
echo "== Python: pip install '.[test]' into $venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet ".[test]"

echo "== Python: pytest python/tests"
# The CLI the interoperability tests run: the one `cargo test` just built.
CARDINAL_BIN="$PWD/target/debug/cardinal" "$venv/bin/python" -m pytest python/tests -q
