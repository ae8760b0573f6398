#!/usr/bin/env bash
# Every test, on a fresh clone, by itself: the Rust workspace, then the Python package as users
# install it: scripts/build-wheel.sh builds the abi3 wheel once, it is installed with its test
# dependencies (from PyPI) into a fresh virtual environment, and the pytest suite runs against
# that installed wheel, never the source tree. The wheel is built with the test build's Cargo
# profile (`dev`, which `test` inherits: opt-level 2, debug assertions on), so it reuses every
# crate `cargo test` compiled; the release wheel is the same code at opt-level 3 without debug
# assertions (scripts/build-wheel.sh alone builds it). The suite also
# runs examples/python_multilabel.py and checks the CLI and the package against each other.
#
# Needs a Rust toolchain and Python 3.9+ with the venv module. The test environment is
# $CARDINAL_TEST_VENV (default .venv-test in the repository), recreated on every run; the
# wheel's build environment is build-wheel.sh's ($CARDINAL_WHEEL_VENV, default .venv-wheel).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Rust: cargo test --workspace --locked"
cargo test --workspace --locked

echo "== Python: the abi3 wheel (scripts/build-wheel.sh)"
# Only this build's wheel in target/wheels/, so that the one installed is the one just built.
rm -f target/wheels/cardinal_pnc-*.whl
CARDINAL_WHEEL_PROFILE=dev scripts/build-wheel.sh
wheels=(target/wheels/cardinal_pnc-*.whl)
if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
  echo "test.sh: expected one wheel in target/wheels/, found: ${wheels[*]}" >&2
  exit 1
fi
wheel="$PWD/${wheels[0]}"

venv=${CARDINAL_TEST_VENV:-.venv-test}
echo "== Python: a fresh $venv with $(basename "$wheel")[test]"
python3 -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "$wheel[test]"

# The package the tests import must be the installed wheel's (site-packages), not
# python/cardinal_pnc of this checkout.
installed=$("$venv/bin/python" -c 'import cardinal_pnc, os; print(os.path.realpath(cardinal_pnc.__file__))')
case "$installed" in
  "$PWD/python/"*)
    echo "test.sh: the tests would import the source tree ($installed), not the wheel" >&2
    exit 1
    ;;
esac
echo "   cardinal_pnc from $installed"

echo "== Python: pytest python/tests (against the installed wheel)"
# The CLI the interoperability tests run: the one `cargo test` just built.
CARDINAL_BIN="$PWD/target/debug/cardinal" "$venv/bin/python" -m pytest python/tests -q
