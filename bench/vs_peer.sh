#!/usr/bin/env bash
# Side-by-side speed against the PyTorch peer (../shared/peers/torch/bench.py --preset authors):
# alternates `cardinal bench` and the peer's bench, A B A B ..., and prints the per-pair ratios
# peer/cardinal for the training epoch and for test-set inference, and their medians.
#
# Usage: bench/vs_peer.sh [--dataset bibtex] [--threads 1] [--pairs 3] [--peer DIR]
# The peer needs python3 with torch and numpy. With 2 threads, run it on an idle machine: the
# peer is given OMP_WAIT_POLICY=ACTIVE there (its fastest setting when idle, RESULTS.md A.3).
set -euo pipefail
cd "$(dirname "$0")/.."

dataset=bibtex threads=1 pairs=3 peer=../shared/peers/torch
while [ $# -gt 0 ]; do
  case "$1" in
    --dataset) dataset=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --peer) peer=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ ! -f "$peer/bench.py" ]; then
  echo "the PyTorch peer is not at $peer (pass --peer DIR): no comparison possible" >&2
  exit 3
fi
data_root=$(cd "$peer/../../data" 2>/dev/null && pwd || true)
ours_data="$dataset"
[ -n "$data_root" ] && [ -d "$data_root/$dataset" ] && ours_data="$data_root/$dataset"

cargo build --release --quiet -p cardinal-cli
bin="${CARGO_TARGET_DIR:-target}/release/cardinal" # what the cargo build above built
policy=PASSIVE
[ "$threads" -gt 1 ] && policy=ACTIVE

echo "# dataset=$dataset threads=$threads pairs=$pairs commit=$(git rev-parse --short HEAD) load=$(cut -d' ' -f1-3 /proc/loadavg)"
ours_train=() ours_infer=() peer_train=() peer_infer=() ours_rss=() peer_rss=()
rss_file=$(mktemp)
trap 'rm -f "$rss_file"' EXIT
for i in $(seq 1 "$pairs"); do
  o=$(RAYON_NUM_THREADS=$threads "$bin" --threads "$threads" bench --dataset "$ours_data" --train-reps 3 --infer-reps 5)
  echo "cardinal $o"
  p=$(cd "$peer" && OMP_WAIT_POLICY=$policy /usr/bin/time -f '%M' -o "$rss_file" \
      python3 bench.py --preset authors --dataset "$dataset" ${data_root:+--data-root "$data_root"} \
      --threads "$threads" --train-reps 3 --infer-reps 5 2>/dev/null)
  prss=$(awk '{print $1/1024}' "$rss_file")
  echo "peer $p"
  ours_train+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["train_epoch_s"])' "$o")")
  ours_infer+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["infer_s"])' "$o")")
  ours_rss+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["peak_rss_mib"])' "$o")")
  peer_train+=("$(python3 -c 'import json,sys; r=json.loads(sys.argv[1])["results"]["threads_"+sys.argv[2]]; print(r["train_epoch_s_median"])' "$p" "$threads")")
  peer_infer+=("$(python3 -c 'import json,sys; r=json.loads(sys.argv[1])["results"]["threads_"+sys.argv[2]]; print(r["infer_s_median"])' "$p" "$threads")")
  peer_rss+=("$prss")
done
python3 - "${ours_train[*]}" "${peer_train[*]}" "${ours_infer[*]}" "${peer_infer[*]}" "${ours_rss[*]}" "${peer_rss[*]}" <<'PY'
import statistics, sys
ot, pt, oi, pi, orss, prss = ([float(x) for x in a.split()] for a in sys.argv[1:7])
rt = [p / o for o, p in zip(ot, pt)]
ri = [p / o for o, p in zip(oi, pi)]
for k, (a, b, c, d) in enumerate(zip(ot, pt, oi, pi), 1):
    print(f"pair {k}: train {b:.3f}/{a:.3f} s = {b / a:.1f}x   infer {d:.3f}/{c:.3f} s = {d / c:.1f}x")
print(f"median ratio peer/cardinal: train {statistics.median(rt):.1f}x, inference {statistics.median(ri):.1f}x")
print(f"peak RSS MiB: cardinal {max(orss):.0f}, peer {max(prss):.0f} (whole process, /usr/bin/time)")
PY
