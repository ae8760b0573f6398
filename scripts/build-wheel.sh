#!/usr/bin/env bash
# Builds the Python package's abi3 wheel (CPython 3.9 and newer, this platform) into
# target/wheels/, for `pip install target/wheels/cardinal_pnc-*.whl` on machines without Rust.
#
# Needs Rust 1.89+ (cargo on PATH) and Python 3.9+ with venv; maturin is installed into a
# virtual environment of its own ($CARDINAL_WHEEL_VENV, default .venv-wheel). Takes a few
# minutes: the library is compiled in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "build-wheel.sh: cargo not found: install Rust 1.89+ (https://rustup.rs)" >&2
  exit 1
fi
venv=${CARDINAL_WHEEL_VENV:-.venv-wheel}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip "maturin>=1.5,<2"
# No debug information in the extension: a smaller wheel and a shorter build (the CLI's
# release build keeps `debug = 1`, for profiling). Set the variable to keep it.
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-0}"
echo "== building the abi3 wheel (release mode: a few minutes)"
"$venv/bin/maturin" build --release --locked --out target/wheels "$@"
ls -1 target/wheels/cardinal_pnc-*.whl
