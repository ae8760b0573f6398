#!/usr/bin/env bash
# The peer benchmark in an environment of its own: creates $PEERS_VENV (default .venv-peers in
# the repository) with Python 3.12 (mlrl-boomer 0.15.6 needs 3.12 or newer, the pinned numpy and
# scipy wheels are for 3.12; $PEERS_PYTHON names the interpreter),
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
if [ ! -x "$venv/bin/python" ]; then
  py=
  for c in ${PEERS_PYTHON:-python3.12 python3.13 python3}; do
    if "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then py=$c; break; fi
  done
  [ -n "$py" ] || { echo "no Python 3.12 found (the pinned wheels are cp312): set PEERS_PYTHON" >&2; exit 2; }
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet --no-deps -r bench/requirements-peers.txt
fi
if [ "${PEERS_REINSTALL:-0}" = 1 ] || ! "$venv/bin/python" -c "import cardinal_pnc" 2>/dev/null; then
  # The package's own dependencies are already there (numpy, scipy, scikit-learn).
  "$venv/bin/python" -m pip install --quiet --no-deps .
fi
exec nice -n "${PEERS_NICE:-10}" "$venv/bin/python" bench/peers.py "$@"
