#!/usr/bin/env bash
# Time per training epoch and per inference pass as the label count L and the unrolled steps T
# grow, on synthetic data (D = 2000 features at Bibtex's density, 2.5 labels per row), with the
# faithful configuration. Prints a markdown table; the last two columns divide by rows × T, so
# an algorithm linear in T and about L log L in L shows as flat-ish, slowly growing columns.
#
# Usage: bench/scaling.sh [--threads 1]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=1
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cargo build --release --quiet -p cardinal-cli
bin="${CARGO_TARGET_DIR:-target}/release/cardinal" # what the cargo build above built
echo "# threads=$threads commit=$(git rev-parse --short HEAD) load=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "| L | T | train rows | train epoch (s) | inference (s) | train µs per row·step | inference µs per row·step | peak RSS (MiB) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
run() { # L T rows reps
  local out
  out=$("$bin" --threads "$threads" bench --synthetic-labels "$1" --steps "$2" --synthetic-rows "$3" \
    --train-reps "$4" --infer-reps "$4")
  python3 - "$1" "$2" "$3" "$out" <<'PY'
import json, sys
l, t, rows, line = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
tr, inf = line["train_epoch_s"], line["infer_s"]
print(f"| {l} | {t} | {rows} | {tr:.3f} | {inf:.3f} | {1e6 * tr / (rows * t):.2f} | "
      f"{1e6 * inf / (line['n_test'] * t):.2f} | {line['peak_rss_mib']:.0f} |")
PY
}
# Half of the synthetic rows are test rows: 512 and 256 rows give whole inference blocks of 64.
for l in 159 983 5000 20000 100000; do
  rows=2000; reps=3
  [ "$l" -ge 5000 ] && rows=512 && reps=1
  [ "$l" -ge 100000 ] && rows=256
  run "$l" 15 "$rows" "$reps"
done
for t in 5 50; do
  run 159 "$t" 2000 3
  run 983 "$t" 2000 1
done
