#!/bin/bash
# Runs every line "NAME ARGS..." of a sweep file through proxy.py, PAR processes at a time
# (one GPU shared), appending JSON lines to OUT_FILE.
#   tools/proxy_sweep/sweep.sh tools/proxy_sweep/sweep1.txt 14 results.jsonl   (FOLDS=0,1)
set -euo pipefail
cd "$(dirname "$0")"
sweep=$(realpath "$1") par=${2:-12} out=$(realpath -m "${3:-results.jsonl}")
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
while read -r name args; do
  case "$name" in ""|\#*) continue ;; esac
  echo "python3 proxy.py --name $name $args --folds ${FOLDS:-0,1} >> $out"
done < "$sweep" | xargs -P "$par" -I{} bash -c "{}"
