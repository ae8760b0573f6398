#!/usr/bin/env bash
# Every test, on a fresh clone, by itself: the Rust workspace, then the Python package as users
# install it: scripts/build-wheel.sh builds the abi3 wheel once (release mode, a few minutes,
# while the Rust tests run), it is installed with its test dependencies (from PyPI) into a
# fresh virtual environment, and the pytest suite runs against that installed wheel, never the
# source tree. The suite also runs examples/python_multilabel.py and checks the CLI and the
# package against each other.
#
# Needs a Rust toolchain and Python 3.9+ with the venv module. The test environment is
# $CARDINAL_TEST_VENV (default .venv-test in the repository), recreated on every run; the
# wheel's build environment is build-wheel.sh's ($CARDINAL_WHEEL_VENV, default .venv-wheel).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Rust: the test build (cargo test --workspace --locked --no-run)"
cargo test --workspace --locked --no-run

# The wheel and the test environment are made while the Rust tests run: the tests leave about
# a core of two idle (docs/journal/2026-12-03-test-build-levels.md), and neither reads what the
# other writes. The wheel builds in
# a target directory of its own, so that its cargo never waits on the tests' build lock.
venv=${CARDINAL_TEST_VENV:-.venv-test}
python_log=$(mktemp)
# The package's dependencies and test extras, as pyproject.toml lists them, installed while the
# wheel builds (about 35 s, most of it waiting on downloads); the wheel goes in once built.
prepare_env() {
  python3 -m venv --clear "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # Python before 3.11 has no tomllib: the wheel then brings its dependencies itself.
  mapfile -t deps < <("$venv/bin/python" -c '
try:
    import tomllib
except ImportError:
    raise SystemExit(0)
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["test"]))')
  if [ "${#deps[@]}" -gt 0 ]; then
    "$venv/bin/python" -m pip install --quiet "${deps[@]}"
  fi
}
prepare_python() {
  echo "== Python: a fresh $venv with the package's dependencies (beside the wheel's build)"
  env_log=$(mktemp)
  prepare_env >"$env_log" 2>&1 &
  env_pid=$!
  echo "== Python: the abi3 wheel (scripts/build-wheel.sh, beside the Rust tests)"
  # Only this build's wheel in target/wheels/, so that the one installed is the one just built.
  rm -f target/wheels/cardinal_pnc-*.whl
  CARGO_TARGET_DIR="$PWD/target/wheel-build" scripts/build-wheel.sh
  env_status=0
  wait "$env_pid" || env_status=$?
  cat "$env_log"
  rm -f "$env_log"
  if [ "$env_status" -ne 0 ]; then
    echo "test.sh: making $venv failed (above)" >&2
    return "$env_status"
  fi
  wheels=(target/wheels/cardinal_pnc-*.whl)
  if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
    echo "test.sh: expected one wheel in target/wheels/, found: ${wheels[*]}" >&2
    return 1
  fi
  wheel="$PWD/${wheels[0]}"
  echo "== Python: $(basename "$wheel")[test] into $venv"
  "$venv/bin/python" -m pip install --quiet "$wheel[test]"
}
prepare_python >"$python_log" 2>&1 &
python_pid=$!

echo "== Rust: cargo test --workspace --locked"
rust_status=0
cargo test --workspace --locked || rust_status=$?
python_status=0
wait "$python_pid" || python_status=$?
cat "$python_log"
rm -f "$python_log"
if [ "$rust_status" -ne 0 ]; then
  exit "$rust_status"
fi
if [ "$python_status" -ne 0 ]; then
  echo "test.sh: making the wheel or its test environment failed (above)" >&2
  exit "$python_status"
fi

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
