#!/usr/bin/env bash
# The peer benchmark in an environment of its own: creates $PEERS_VENV (default .venv-peers in
# the repository) with Python 3.12 (mlrl-boomer 0.15.6 needs it; $PEERS_PYTHON overrides),
# installs bench/requirements-peers.txt and the cardinal package from this checkout
# (`pip install .`: maturin builds the extension, a few minutes), then runs bench/peers.py
# with the arguments given, e.g.
#
#   bench/peers.sh --datasets emotions,flags --data-dir ../shared/data --out bench/results/peers.json
#
# The product never imports these packages; they live in this environment only.
# PEERS_REINSTALL=1 reinstalls cardinal after a change to the package.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${PEERS_VENV:-.venv-peers}
py=${PEERS_PYTHON:-python3.12}
if [ ! -x "$venv/bin/python" ]; then
  command -v "$py" >/dev/null 2>&1 || { echo "$py not found: set PEERS_PYTHON to a Python 3.12 or newer" >&2; exit 2; }
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet --no-deps -r bench/requirements-peers.txt
fi
if [ "${PEERS_REINSTALL:-0}" = 1 ] || ! "$venv/bin/python" -c "import cardinal" 2>/dev/null; then
  # The package's own dependencies are already there (numpy, scipy, scikit-learn).
  "$venv/bin/python" -m pip install --quiet --no-deps .
fi
exec nice -n "${PEERS_NICE:-10}" "$venv/bin/python" bench/peers.py "$@"
