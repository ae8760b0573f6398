"""The Python package against the CLI on Bibtex, side by side: the same test example-F1, the
same weights, and the fit time against the CLI's training time.

Usage (with the package installed and the CLI built: `cargo build --release`):

    python bench/python_vs_cli.py [--pairs 3] [--threads 2] [--cli target/release/cardinal]

Each pair runs `cardinal train --seed 0 --threads T --out DIR` and
`CardinalClassifier(random_state=0, n_jobs=T).fit(X_train, Y_train)` on `load_dataset("bibtex")`,
alternating which goes first. The Python model is saved and scored by `cardinal eval`, so both
example-F1s come from the same code; its `model.safetensors` is compared byte for byte with
the CLI's. Prints one Markdown table.

Then prediction (`--predict-reps R`, default 5): the test set of Bibtex predicted R times, by
`cardinal predict --model DIR --data bibtex --format npy` (the whole command: start, model,
data, inference, output; and its inference alone, as its `-vv` log times it) and by the fitted
estimator's `predict(X_test)` with its cache of the last inference cleared, alternating; the
two label matrices are compared. Prints a second table with the medians and their ratios.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from cardinal_pnc import CardinalClassifier, load_dataset


def example_f1(text):
    return float(re.search(r"^EXAMPLE_F1 ([0-9.]+)$", text, re.M).group(1))


def run_cli(cli, threads, out):
    start = time.perf_counter()
    proc = subprocess.run(
        [cli, "--threads", str(threads), "train", "--quiet", "--seed", "0", "--out", out],
        check=True, capture_output=True, text=True,
    )
    wall = time.perf_counter() - start
    with open(os.path.join(out, "metrics.jsonl")) as f:
        epochs = sum(json.loads(line)["seconds"] for line in f)
    return {"wall": wall, "epochs": epochs, "f1": example_f1(proc.stdout)}


def run_python(cli, threads, data, out):
    start = time.perf_counter()
    clf = CardinalClassifier(random_state=0, n_jobs=threads).fit(data.X_train, data.Y_train)
    wall = time.perf_counter() - start
    clf.save(out)
    proc = subprocess.run(
        [cli, "eval", "--model", out, "--data", "bibtex"], check=True, capture_output=True, text=True
    )
    epochs = sum(r["seconds"] for r in clf.history_)
    return {"wall": wall, "epochs": epochs, "f1": example_f1(proc.stdout), "clf": clf}


def compare_predict(cli, threads, clf, model_dir, data, reps, tmp):
    """Median wall times of the CLI's and the estimator's test-set prediction, and whether the
    two agree label for label."""
    cli_times, cli_inference, py_times, same = [], [], [], True
    for k in range(reps):
        out = os.path.join(tmp, f"pred{k}")
        order = ("cli", "py") if k % 2 == 0 else ("py", "cli")
        for who in order:
            start = time.perf_counter()
            if who == "cli":
                proc = subprocess.run(
                    [cli, "--threads", str(threads), "-vv", "--log-format", "json", "predict",
                     "--model", model_dir, "--data", "bibtex", "--format", "npy", "--out", out],
                    check=True, capture_output=True, text=True,
                )
                cli_times.append(time.perf_counter() - start)
                # The inference alone, as the CLI's log times it.
                for line in proc.stderr.splitlines():
                    fields = json.loads(line).get("fields", {})
                    if fields.get("message") == "inference":
                        cli_inference.append(float(fields["seconds"]))
            else:
                # The estimator keeps its last inference for the same X (predict, then
                # predict_proba, infer once): forget it, so that every rep infers.
                clf._native_runtime_.last = None
                start = time.perf_counter()
                labels = clf.predict(data.X_test)
                py_times.append(time.perf_counter() - start)
        same = same and np.array_equal(np.load(os.path.join(out, "labels.npy")), labels)
    return (
        statistics.median(cli_times),
        statistics.median(cli_inference),
        statistics.median(py_times),
        same,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cli", default="target/release/cardinal")
    ap.add_argument("--predict-reps", type=int, default=5)
    args = ap.parse_args()
    data = load_dataset("bibtex")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            cli_dir, py_dir = os.path.join(tmp, f"cli{i}"), os.path.join(tmp, f"py{i}")
            if i % 2 == 0:
                c = run_cli(args.cli, args.threads, cli_dir)
                p = run_python(args.cli, args.threads, data, py_dir)
            else:
                p = run_python(args.cli, args.threads, data, py_dir)
                c = run_cli(args.cli, args.threads, cli_dir)
            same = open(os.path.join(cli_dir, "model.safetensors"), "rb").read() == open(
                os.path.join(py_dir, "model.safetensors"), "rb"
            ).read()
            rows.append((c, p, same))
            print(f"pair {i}: cli {c} python {p} identical weights {same}", file=sys.stderr)
        predicted = None
        if args.predict_reps > 0:
            predicted = compare_predict(
                args.cli, args.threads, rows[-1][1]["clf"], py_dir, data, args.predict_reps, tmp
            )
    print("| pair | CLI example-F1 | Python example-F1 | identical weights | CLI train wall (s) | Python fit wall (s) | ratio | CLI Σ epochs (s) | Python Σ epochs (s) | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for i, (c, p, same) in enumerate(rows):
        print(
            f"| {i} | {c['f1']:.2f} | {p['f1']:.2f} | {same} | {c['wall']:.2f} | {p['wall']:.2f} | "
            f"{p['wall'] / c['wall']:.3f} | {c['epochs']:.2f} | {p['epochs']:.2f} | {p['epochs'] / c['epochs']:.3f} |"
        )
    med = statistics.median
    print(
        f"| median | | | | {med([c['wall'] for c, _, _ in rows]):.2f} | {med([p['wall'] for _, p, _ in rows]):.2f} | "
        f"{med([p['wall'] / c['wall'] for c, p, _ in rows]):.3f} | {med([c['epochs'] for c, _, _ in rows]):.2f} | "
        f"{med([p['epochs'] for _, p, _ in rows]):.2f} | {med([p['epochs'] / c['epochs'] for c, p, _ in rows]):.3f} |"
    )
    if predicted is not None:
        cli_s, cli_inf, py_s, same = predicted
        print()
        print("| test-set prediction, median of reps | CLI `predict`, whole command (s) | its inference (s) | estimator `predict` (s) | ratio to the command | ratio to the inference | same labels |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        print(
            f"| {args.predict_reps} reps | {cli_s:.3f} | {cli_inf:.3f} | {py_s:.3f} | "
            f"{py_s / cli_s:.3f} | {py_s / cli_inf:.3f} | {same} |"
        )


if __name__ == "__main__":
    main()
