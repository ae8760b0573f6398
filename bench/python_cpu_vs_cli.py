"""CPU time of a Python fit against the CLI's training, on Bibtex at one thread: the same work
should cost the same CPU whatever else the machine is doing, where wall times on a shared
machine do not compare.

Usage (with the package installed and the CLI built: `cargo build --release`):

    python bench/python_cpu_vs_cli.py [--pairs 2] [--cli target/release/cardinal]

Each pair runs `cardinal --threads 1 train --seed 0 --no-checkpoints` under `/usr/bin/time`
(user + system CPU of the whole command, data loading and the final test evaluation
included) and `CardinalClassifier(random_state=0, n_jobs=1).fit` (the process's CPU time around the
fit alone, from `getrusage`).
"""

import argparse
import resource
import subprocess
import tempfile
import time

from cardinal_pnc import CardinalClassifier, load_dataset


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--cli", default="target/release/cardinal")
    args = ap.parse_args()
    d = load_dataset("bibtex")
    print("| pair | CLI train CPU | CLI wall | Python fit CPU | Python wall | CPU ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for pair in range(args.pairs):
        out = tempfile.mkdtemp()
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %e", args.cli, "--threads", "1", "train", "--quiet",
             "--seed", "0", "--no-checkpoints", "--out", out + "/m"],
            capture_output=True, text=True, check=True,
        )
        u, s, e = map(float, p.stderr.strip().splitlines()[-1].split())
        c0, w0 = cpu(), time.perf_counter()
        CardinalClassifier(random_state=0, n_jobs=1).fit(d.X_train, d.Y_train)
        c1, w1 = cpu(), time.perf_counter()
        print(f"| {pair} | {u + s:.1f} s | {e:.1f} s | {c1 - c0:.1f} s | {w1 - w0:.1f} s "
              f"| {(c1 - c0) / (u + s):.3f} |")


if __name__ == "__main__":
    main()
