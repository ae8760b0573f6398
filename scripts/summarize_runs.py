#!/usr/bin/env python3
"""One line per model directory: dev example-F1 (last phase-1 epoch, the selection criterion),
test example-F1 at the configured threshold and at top-round(z), count and constraint diagnostics.

Usage: scripts/summarize_runs.py RUN_DIR [RUN_DIR ...]
"""
import json
import sys
from pathlib import Path


def row(d: Path):
    hist = [json.loads(l) for l in (d / "metrics.jsonl").read_text().splitlines() if l.strip()]
    ph1 = [h for h in hist if h["phase"] == 1 and h.get("dev_example_f1") is not None]
    dev = ph1[-1]["dev_example_f1"] if ph1 else float("nan")
    best_dev = max((h["dev_example_f1"] for h in ph1), default=float("nan"))
    ev = json.loads((d / "eval.json").read_text())
    secs = [h["seconds"] for h in hist]
    return (
        f"{d.name:<40} dev {dev:6.2f} (best {best_dev:6.2f})  test@thr {100 * ev['at_threshold']['example_f1']:6.2f}"
        f"  test@round(z) {100 * ev['at_top_round_z']['example_f1']:6.2f}  macro {100 * ev['at_threshold']['macro_f1']:6.2f}"
        f"  z {ev['cardinality']['mean_z']:6.2f} mae {ev['cardinality']['mae']:5.2f} (const {ev['cardinality']['baseline_mae']:5.2f})"
        f"  sum-ok {100 * ev['constraint']['frac_sum_within_001']:5.1f}%  {sum(secs) / max(len(secs), 1):5.2f} s/ep"
    )


for arg in sys.argv[1:]:
    p = Path(arg)
    try:
        print(row(p))
    except (OSError, KeyError, ValueError) as e:
        print(f"{p.name:<40} incomplete ({e})")
