#!/usr/bin/env python3
"""Writes the scikit-learn reference values that crates/cardinal-data/tests/metrics_sklearn.rs checks.

Run from the repository root:  python3 tools/gen_metrics_fixture.py
Needs numpy and scikit-learn. The output is deterministic (fixed seed) and committed, so the Rust
tests never need Python.
"""

import json
import os

import numpy as np
import sklearn
from sklearn.metrics import (
    accuracy_score,
    f1_score,
    hamming_loss,
    jaccard_score,
    precision_score,
    recall_score,
)

N, L = 40, 12
SEED = 20180710
OUT = os.path.join("crates", "cardinal-data", "tests", "fixtures", "metrics", "sklearn_small.json")


def make_data(rng):
    # Per-row label densities vary so that rows range from sparse to dense.
    density = rng.uniform(0.05, 0.5, size=(N, 1))
    gold = (rng.random((N, L)) < density).astype(np.int64)
    # Scores correlate with gold so thresholds and top-k are meaningful.
    scores = np.clip(0.55 * gold + rng.normal(0.25, 0.22, size=(N, L)), 0.0, 1.0)
    # Quantise some rows to a 0.1 grid: creates ties (for the tie-break rule) and scores equal to
    # grid thresholds (for the >= convention).
    scores[::3] = np.round(scores[::3] * 10) / 10
    scores = scores.astype(np.float32)
    pred = (scores >= np.float32(0.5)).astype(np.int64)
    # Flip a few predictions so pred is not a pure threshold of scores.
    flip = rng.random((N, L)) < 0.08
    pred = np.where(flip, 1 - pred, pred)

    # Edge rows.
    gold[0] = 0  # empty gold, non-empty prediction
    pred[0] = 0
    pred[0, [1, 4]] = 1
    pred[1] = 0  # empty prediction, non-empty gold
    gold[1] = 0
    gold[1, [2, 3, 7]] = 1
    gold[2] = 0  # both empty
    pred[2] = 0
    gold[3] = 1  # all-on gold and prediction
    pred[3] = 1
    gold[4] = 1  # all-on gold, partial prediction
    pred[4] = 0
    pred[4, [0, 5, 6]] = 1
    pred[5] = gold[5]  # exact
    gold[6] = 0  # both empty again, scores all equal (pure tie row)
    pred[6] = 0
    scores[6] = np.float32(0.3)
    gold[7] = 0  # empty gold, all-on prediction
    pred[7] = 1
    # Label 11 never predicted nor gold: exercises macro-F1's zero_division.
    gold[:, 11] = 0
    pred[:, 11] = 0
    # Label 10 predicted but never gold.
    gold[:, 10] = 0
    pred[8, 10] = 1
    return gold, pred, scores


def sets(m):
    return [[int(j) for j in np.flatnonzero(row)] for row in m]


def ranking(row):
    # Higher score first, ties to the lower label index.
    return np.lexsort((np.arange(len(row)), -row.astype(np.float64)))


def precision_at_k(scores, gold, k):
    hits = [gold[i, ranking(scores[i])[:k]].sum() for i in range(len(scores))]
    return float(np.mean(hits) / k)


def top_k_sets(scores, ks):
    out = []
    for i, k in enumerate(ks):
        out.append(sorted(int(j) for j in ranking(scores[i])[:k]))
    return out


def round_half_away(z, n_labels):
    # numpy rounds half to even; Rust's f32::round rounds half away from zero.
    r = np.sign(z) * np.floor(np.abs(z) + 0.5)
    return np.clip(r, 0, n_labels).astype(np.int64)


def example_scores(gold, pred, zd):
    kw = dict(average="samples", zero_division=zd)
    return {
        "example_f1": f1_score(gold, pred, **kw),
        "example_precision": precision_score(gold, pred, **kw),
        "example_recall": recall_score(gold, pred, **kw),
        "example_jaccard": jaccard_score(gold, pred, **kw),
    }


def main():
    rng = np.random.default_rng(SEED)
    gold, pred, scores = make_data(rng)

    common = {
        "macro_f1": f1_score(gold, pred, average="macro", zero_division=0),
        "micro_f1": f1_score(gold, pred, average="micro", zero_division=0),
        "micro_precision": precision_score(gold, pred, average="micro", zero_division=0),
        "micro_recall": recall_score(gold, pred, average="micro", zero_division=0),
        "hamming_loss": hamming_loss(gold, pred),
        "subset_accuracy": accuracy_score(gold, pred),
    }
    conv = {"zero": example_scores(gold, pred, 0.0), "one": example_scores(gold, pred, 1.0)}

    ks = [1, 3, 5, 12, 15]
    p_at_k = [{"k": k, "value": precision_at_k(scores, gold, k)} for k in ks]

    grid = [float(np.float32(i / 20)) for i in range(1, 20)]
    by_t = {}
    tuned = {}
    for name, zd in (("zero", 0.0), ("one", 1.0)):
        f1s = [
            f1_score(gold, (scores >= np.float32(t)).astype(np.int64), average="samples", zero_division=zd)
            for t in grid
        ]
        by_t[name] = f1s
        best = max(f1s)
        cands = [(abs(t - 0.5), t, f) for t, f in zip(grid, f1s) if f >= best - 1e-12]
        _, t, f = min(cands)
        tuned[name] = {"threshold": t, "f1": f}

    # Predicted cardinalities: noisy gold counts, with exact halves to pin the rounding rule.
    counts = gold.sum(axis=1)
    z = (counts + rng.normal(0.0, 0.8, size=N)).astype(np.float32)
    z[0] = np.float32(2.5)
    z[1] = np.float32(-0.7)
    z[2] = np.float32(0.5)
    z[3] = np.float32(14.2)
    z[4] = np.float32(1.5)
    zr = round_half_away(z.astype(np.float64), L)
    z64 = z.astype(np.float64)
    train_mean = 2.375
    hist_len = int(max(zr.max(), counts.max())) + 1
    card = {
        "train_mean": train_mean,
        "mean_z": float(z64.mean()),
        "mean_gold": float(counts.mean()),
        "mae": float(np.abs(z64 - counts).mean()),
        "mse": float(((z64 - counts) ** 2).mean()),
        "pearson": float(np.corrcoef(z64, counts)[0, 1]),
        "rounded_accuracy": float((zr == counts).mean()),
        "hist_round_z": np.bincount(zr, minlength=hist_len).tolist(),
        "hist_gold": np.bincount(counts, minlength=hist_len).tolist(),
        "baseline_mae": float(np.abs(train_mean - counts).mean()),
        "baseline_mse": float(((train_mean - counts) ** 2).mean()),
    }

    fixture = {
        "about": "Generated by tools/gen_metrics_fixture.py; sklearn " + sklearn.__version__,
        "n_labels": L,
        "gold": sets(gold),
        "pred": sets(pred),
        "scores": [[float(v) for v in row] for row in scores],
        "expected": {"common": common, "zero": conv["zero"], "one": conv["one"]},
        "precision_at_k": p_at_k,
        "grid": grid,
        "f1_by_threshold": by_t,
        "tuned": tuned,
        "top_k": {"k": 3, "sets": top_k_sets(scores, [3] * N)},
        "z": [float(v) for v in z],
        "top_round_z": top_k_sets(scores, zr.tolist()),
        "cardinality": card,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
