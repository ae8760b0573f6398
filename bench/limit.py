#!/usr/bin/env python3
"""The default's distance to the limit: one training epoch of the `predict` preset, stage by
stage, against what this machine sustains for the same work.

For each dataset and thread count, in rounds (A B A B ...: cardinal, then the reference
kernels, so that both see the same load), this script

1. runs `cardinal bench --preset predict` (one warm-up epoch, then `--epochs` timed ones) and
   reads the epoch's time per stage (`stages_s`, from the `StageClock` of
   crates/cardinal/src/batch/clock.rs) and the shapes (rows, features, non-zeros, labels,
   hidden units, counts, steps, ...);
2. counts from those shapes and the configuration the floating-point work and the compulsory
   memory traffic of every stage (`count_epoch` below: the model of the code, function by
   function, with the file each term comes from);
3. times the reference kernels of the same shapes at the same thread count: every GEMM of the
   networks through numpy's OpenBLAS (`OPENBLAS_NUM_THREADS`), and the memory-bound stages
   (the sparse first layer, AdaGrad, the weight average, a STREAM triad) with the C kernels
   of bench/limit_kernels.c (gcc -O3 -march=native, OpenMP threads);
4. prints, per stage, the achieved time, the attainable time (the work at the measured rates)
   and their ratio; medians over rounds.

The attainable time of a stage is the sum over its kernels of the time the reference kernel
of that shape takes; where no library kernel exists (the unroll's lockstep work: sorting
networks, projections, masks, all SIMD over 32 rows), it is the op count at one 16-wide f32
vector instruction per FMA slot, i.e. half the best GEMM flop rate measured in the same run
(the FMAs of the energy's matvecs at the full GEMM rate), plus the bytes of its tape at the
measured stream rate (no overlap assumed).

Usage (numpy in a venv of its own; gcc with OpenMP):
    python3 -m venv .venv-limit && .venv-limit/bin/pip install -r bench/requirements-limit.txt
    .venv-limit/bin/python bench/limit.py --dataset bibtex --threads 1 2 --rounds 3
    .venv-limit/bin/python bench/limit.py --dataset ../shared/data/delicious --epochs 1
    .venv-limit/bin/python bench/limit.py --count-only BENCH_JSON   # the counts of a bench line

`--final-split` adds one run per round with the final projection off (1 thread) to time it
by difference. Raw results go to `--json FILE` if given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRAIN_LANES = 32  # crates/cardinal/src/batch/gradient.rs: rows per lockstep training block

# --------------------------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------------------------


def network_comparators(n: int) -> int:
    """Comparators of cardinal-proj's sorting network (the bitonic sorter pruned to n: a
    comparator runs when its upper wire is below n; crates/cardinal-proj/src/lanes/network.rs).
    The flip layer of stage s pairs B + i with B + s - 1 - i, a half-cleaner at distance d
    pairs x with x + d in the first half of every aligned 2d block."""
    if n < 2:
        return 0
    top = 1 << (n - 1).bit_length()
    c, s = 0, 2
    while s <= top:
        # Flip: i < s/2 with an upper wire b + s - 1 - i below n, i.e. i >= b + s - n.
        for b in range(0, top, s):
            c += max(0, s // 2 - max(0, b + s - n))
        d = s // 4
        while d >= 1:
            for b in range(0, top, 2 * d):
                c += max(0, min(d, n - b - d))
            d //= 2
        s *= 2
    return c


def batch_sizes(n: int, b: int) -> list[int]:
    return [b] * (n // b) + ([n % b] if n % b else [])


def params_of(s: dict) -> dict:
    """Parameter tensors (crates/cardinal/src/model/params.rs) and their sizes."""
    d, h, l, e, hc, k = (s[x] for x in ("D", "H", "L", "E", "Hc", "K"))  # noqa: E741 (the paper's L)
    return {
        "unary.w1": d * h, "unary.b1": h, "unary.w2": h * l, "unary.b2": l,
        "energy.wp": l * e, "energy.we": e,
        "card.w1": d * hc, "card.b1": hc, "card.w2": hc * k, "card.b2": k, "inference.eta": 1,
    }


def shapes_of(bench: dict) -> dict:
    """The shapes an epoch of `cardinal bench` runs, from its JSON line."""
    return {
        "N": bench["n_train"], "D": bench["n_features"], "L": bench["n_labels"],
        "H": bench["hidden"], "Hc": bench["card_hidden"], "K": bench["n_counts"],
        "E": bench["energy_hidden"], "T": bench["steps"], "R": bench["rounds"],
        "B": bench["batch_size"], "nnz": bench["train_nnz"],
        "final": bench.get("final_projection"), "average": bench.get("average", False),
        "dropout": bench.get("dropout", 0.0),
    }


def count_epoch(s: dict) -> dict:
    """Work of one epoch, per stage: a list of kernels `(kind, shape, flops, bytes)` each.

    `kind` says which reference bounds it: a measured kernel ("gemm": numpy, "gather": the C
    sparse first layer, "adagrad" and "average": the C kernels over every weight) whose time
    per call `shape = (key, scale)` names and scales (a partial batch, more bytes per weight),
    or a rate: "lanes"
    and "scalar" (SIMD ops at half the peak flop rate), "fma" (the peak flop rate), "tape"
    (bytes at the stream rate of a block's tape).
    `flops` counts a multiply-add as 2 and any other arithmetic, compare or select as 1;
    `bytes` is the traffic from beyond L2 that the algorithm cannot avoid (weights read once
    per pass where they exceed L2, activations of the batch not counted when they fit)."""
    N, D, L, H, Hc, K, E, T, R, B = (s[x] for x in "N D L H Hc K E T R B".split())
    nnz_row = s["nnz"] / N
    C = network_comparators(L)
    par = params_of(s)
    n_par = sum(par.values())
    opt_bytes = 16 * n_par + 4 * (n_par - par["unary.w1"] - par["card.w1"])
    st: dict[str, list] = {k: [] for k in (
        "unary_forward", "count_forward", "unroll_forward", "unroll_backward", "energy_grad",
        "unary_backward", "count_backward", "optimizer", "average")}
    for b in batch_sizes(N, B):
        nz = nnz_row * b
        blocks = -(-b // TRAIN_LANES)
        lanes = blocks * TRAIN_LANES  # spare lanes of a block are computed too
        for net, hid, out in (("unary", H, L), ("count", Hc, K)):
            # model/dropout.rs: a SplitMix64 hash per unit and row, in both passes (unary net)
            drop = 12 * b * hid if net == "unary" and s["dropout"] > 0 else 0
            # model/sparse_layer.rs: the standardisation shift (mean ⊙ scale)ᵀW, a pass over
            # every row of W per batch, then Σ_d x_d scale_d W_d over the row's non-zeros.
            st[f"{net}_forward"] += [
                ("gather", (f"1x{hid}", 1), 2 * D * hid, 4 * D * hid),
                ("gather", (f"{B}x{hid}", b / B), 2 * nz * hid, 4 * nz * hid),
                ("lanes", None, 2 * b * hid + drop, 0),  # ReLU, dropout
                ("gemm", (f"{B}x{hid}x{out}", b / B), 2 * b * hid * out, 4 * hid * out),
            ]
            # model/networks.rs: ∂W2 = hᵀ·∂out and ∂h = ∂out·W2ᵀ, ReLU mask, dropout;
            # sparse_layer.rs: column sums and the copy of ∂pre kept for the optimiser.
            st[f"{net}_backward"] += [
                ("gemm", (f"{hid}x{B}x{out}", b / B), 2 * b * hid * out, 4 * hid * out),
                ("gemm", (f"{B}x{out}x{hid}", b / B), 2 * b * hid * out, 4 * hid * out),
                ("lanes", None, 4 * b * hid + drop, 0),
            ]
        # inference/block_step.rs: a = Wpᵀy and g = u + Wp·act per step (4EL flops per lane),
        # v = μv + ηg, x = y + v; cardinal-proj lanes/vjp.rs forward_tape: the indexed sorting
        # network (max, min, compare, two index selects per comparator), the tie check, per
        # round the head scan (≤ 6 ops per entry) and the mapped output (6 per entry);
        # batch/gradient.rs: the relaxed F1 (2 per entry).
        st["unroll_forward"] += [
            ("fma", None, lanes * T * 4 * E * L, 0),
            ("lanes", None, lanes * T * (5 * C + (7 + 12 * R) * L + 2 * E), 0),
            # the tape: g_t, masks, the projection's input and order (u16)
            ("tape", None, 0, lanes * T * 4 * (2.5 * L + E)),
        ]
        # block_train.rs backward_block: ∂ℓ/∂y_t, the VJP (the rank table from the order, both
        # rounds' inner inputs recomputed, the soft simplex VJP over the head and the tail, the
        # combining passes), the momentum recursion: about (5 + 20R) ops per entry; the tape
        # read back.
        st["unroll_backward"] += [
            ("lanes", None, lanes * T * (5 + 20 * R) * L, 0),
            ("tape", None, 0, lanes * T * 4 * (2.5 * L + E)),
        ]
        if s["final"]:
            # cardinal-proj smooth.rs: per row, a safeguarded Newton iteration on θ with a
            # sigmoid per entry and in-order f32 sums (scalar); counted as 16 ops per entry
            # and iteration, assuming 8 iterations, plus the VJP's 8 ops per entry.
            st["unroll_forward"].append(("scalar", None, lanes * L * (16 * 8 + 2), 0))
            st["unroll_backward"].append(("scalar", None, lanes * L * 8, 0))
        # block_train.rs energy_block: ∂Wp = Σ ḡg (w2 ⊙ m)ᵀ and ∂w2 via Wpᵀḡg: two GEMMs
        # over the T·32 step-lanes of each block.
        st["energy_grad"] += [("fma", None, blocks * 2 * 2 * L * E * T * TRAIN_LANES, 0)]
        # train/optim.rs step_fused: every weight read and written with its accumulator (16
        # bytes), and the dense gradient of every tensor but the first layers' read (4 more),
        # ~12 flops (sqrt and division counted 1 each); the touched rows of the first layers'
        # gradients formed from the batch's non-zeros (sparse_row: 2·nnz·H flops). The C
        # kernel streams 16 bytes per weight: the bound is its byte rate.
        st["optimizer"] += [
            ("adagrad", ("all", opt_bytes / (16 * n_par)), 12 * n_par, opt_bytes),
            ("fma", None, 2 * nz * (H + Hc), 0),
        ]
        # train/average.rs: a ← d·a + e·w over every weight, after every batch.
        if s["average"]:
            st["average"] += [("average", ("all", 1), 3 * n_par, 12 * n_par)]
    return st


def gemm_flops(key: str) -> int:
    """2mkn of a GEMM named `mxkxn`."""
    m, k, n = map(int, key.split("x"))
    return 2 * m * k * n


def totals(st: dict) -> dict:
    return {k: (sum(x[2] for x in v), sum(x[3] for x in v)) for k, v in st.items()}


# --------------------------------------------------------------------------------------------
# Reference kernels
# --------------------------------------------------------------------------------------------

NUMPY_CHILD = r"""
import json, sys, time
import numpy as np
shapes = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
def med(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return sorted(ts)[reps // 2]
out = {}
for m, k, n in shapes:
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.empty((m, n), np.float32)
    reps = max(9, min(200, int(2e9 / (2 * m * k * n))))
    out[f"{m}x{k}x{n}"] = med(lambda: np.matmul(a, b, out=c), reps)
print(json.dumps(out))
"""

# Square-ish shapes for the best sgemm rate (the peak is the best rate over every shape timed).
PEAK_SHAPES = [(256, 2000, 512), (512, 512, 512)]


def gemm_times(shapes: list, threads: int, python: str) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    out = subprocess.run([python, "-c", NUMPY_CHILD, json.dumps(shapes)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def build_c_kernels(tmp: Path) -> Path:
    exe = tmp / "limit_kernels"
    subprocess.run(["gcc", "-O3", "-march=native", "-fno-math-errno", "-fopenmp", "-o", str(exe),
                    str(ROOT / "bench" / "limit_kernels.c"), "-lm"], check=True)
    return exe


def c_kernel(exe: Path, threads: int, *args) -> float:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
    line = subprocess.run([str(exe), *map(str, args)], env=env, check=True,
                          capture_output=True, text=True).stdout.split()
    return float(line[1])


def measure_kernels(s: dict, threads: int, exe: Path, python: str) -> dict:
    """Seconds of every reference kernel an epoch of shapes `s` needs, per call."""
    N, D, L, H, Hc, K, E, T, B = (s[x] for x in "N D L H Hc K E T B".split())
    gshapes = set(PEAK_SHAPES)
    for hid, out in ((H, L), (Hc, K)):
        gshapes |= {(B, hid, out), (hid, B, out), (B, out, hid)}
    g = gemm_times(sorted(gshapes), threads, python)
    peak = max(2 * m * k * n / g[f"{m}x{k}x{n}"] for m, k, n in gshapes)
    n_par = sum(params_of(s).values())
    nnz_b = max(1, round(s["nnz"] / N))
    m = {"gemm": g, "peak_flops": peak}
    m["gather"] = {}
    for hid in (H, Hc):
        m["gather"][f"{B}x{hid}"] = c_kernel(exe, threads, "gather", B, nnz_b, D, hid, 41)
        # the shift: every row of W once, split over the threads as cardinal splits it
        m["gather"][f"1x{hid}"] = c_kernel(exe, threads, "gather", threads, D // threads, D,
                                           hid, 41)
    m["adagrad"] = c_kernel(exe, threads, "adagrad", n_par, 21)
    m["average"] = c_kernel(exe, threads, "average", n_par, 21)
    # The tape of one block, written then read back by the thread that ran it: a stream of
    # that size (L3-resident where it exceeds L2) per thread.
    tape_floats = int(TRAIN_LANES * T * (3.5 * L + E))
    m["tape_bw"] = 12 * tape_floats * threads / c_kernel(exe, threads, "triad",
                                                         tape_floats * threads, 41)
    m["dram_bw"] = 12 * (1 << 25) / c_kernel(exe, threads, "triad", 1 << 25, 7)
    return m


def attainable(st: dict, m: dict) -> dict:
    """Seconds each stage's kernels take at the measured rates (see the module docstring)."""
    out = {}
    for stage, ks in st.items():
        t = 0.0
        for kind, shape, flops, nbytes in ks:
            if kind in ("gemm", "gather"):
                key, scale = shape
                t += m[kind][key] * scale
            elif kind in ("adagrad", "average"):
                t += m[kind] * shape[1]
            elif kind == "fma":
                t += flops / m["peak_flops"]
            elif kind in ("lanes", "scalar"):
                t += flops / (m["peak_flops"] / 2)
            elif kind == "tape":
                t += nbytes / m["tape_bw"]
        out[stage] = t
    return out


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

# Top-level stages of the StageClock (wall time, they add up to the batches' time) and the
# parts the table shows under them (thread-seconds).
TABLE = [
    ("nets_forward", ["unary_forward", "count_forward"]),
    ("unroll", ["unroll_forward", "unroll_backward", "energy_grad"]),
    ("loss", []),
    ("nets_backward", ["unary_backward", "count_backward"]),
    ("optimizer", []),
    ("average", []),
]


def run_bench(binary: Path, dataset: str, threads: int, epochs: int, config: str | None) -> dict:
    cmd = [str(binary), "--threads", str(threads), "bench", "--preset", "predict",
           "--dataset", dataset, "--train-reps", str(epochs), "--infer-reps", "1"]
    if config:
        cmd += ["--config", config]
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    return json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1])


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(rows: list, counts: dict, threads: int) -> str:
    """The markdown table of one dataset and thread count from its rounds."""
    ach = {k: med([r["bench"]["stages_s"][k] for r in rows]) for k in rows[0]["bench"]["stages_s"]}
    att = {k: med([r["attainable"][k] for r in rows]) for k in rows[0]["attainable"]}
    epoch = med([r["bench"]["train_epoch_s"] for r in rows])
    lines = [
        "| stage | GFLOP | GB | achieved (s) | attainable (s) | achieved / attainable |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    tot_att = 0.0
    for top, parts in TABLE:
        names = parts or [top]
        a_top = sum(att.get(p, 0.0) for p in names)
        fl = sum(counts[p][0] for p in names if p in counts)
        by = sum(counts[p][1] for p in names if p in counts)
        tot_att += a_top
        ratio = f"{ach[top] / a_top:.1f}×" if a_top > 0 else "–"
        lines.append(f"| **{top}** | {fl / 1e9:.2f} | {by / 1e9:.2f} | {ach[top]:.3f} | "
                     f"{a_top:.3f} | {ratio} |")
        # A part's time is summed over threads: its attainable time too (the wall time at
        # `threads` threads times the threads).
        for p in parts:
            a_p = att.get(p, 0.0) * threads
            r = f"{ach[p] / a_p:.1f}×" if a_p else "–"
            lines.append(f"| &nbsp; {p} (thread-s) | {counts[p][0] / 1e9:.2f} | "
                         f"{counts[p][1] / 1e9:.2f} | {ach[p]:.3f} | {a_p:.3f} | {r} |")
    lines.append(f"| **epoch** | | | {epoch:.3f} | {tot_att:.3f} | {epoch / tot_att:.1f}× |")
    return "\n".join(lines)


def print_report(dataset: str, results: dict, splits: list) -> None:
    """The tables of every thread count (medians over rounds) and the final projection's
    share, from the raw results (the attainable times recomputed from the kernel timings)."""
    for rows in results.values():
        for r in rows:
            r["attainable"] = attainable(count_epoch(shapes_of(r["bench"])), r["kernels"])
    s = shapes_of(results[list(results)[0]][0]["bench"])
    counts = totals(count_epoch(s))
    print(f"\nshapes: {json.dumps(s)}; sorting network: {network_comparators(s['L'])} "
          "comparators")
    for t in list(results):
        rows = results[t]
        k = rows[0]["kernels"]
        print(f"\n## {dataset}, {t} thread(s): medians over {len(rows)} rounds "
              f"(peak sgemm {med([r['kernels']['peak_flops'] for r in rows]) / 1e9:.0f} "
              f"GFLOP/s, DRAM triad {med([r['kernels']['dram_bw'] for r in rows]) / 1e9:.1f} "
              f"GB/s, tape stream {med([r['kernels']['tape_bw'] for r in rows]) / 1e9:.1f} "
              f"GB/s; OpenBLAS at the batch's shapes: "
              + ", ".join(f"{key} {gemm_flops(key) / med([r['kernels']['gemm'][key] for r in rows]) / 1e9:.0f} GFLOP/s"
                          for key in k["gemm"]) + ")\n")
        print(report(rows, counts, t))
    if splits:
        one = results.get(1, [])
        if one:
            fw = med([r["bench"]["stages_s"]["unroll_forward"] for r in one])
            bw = med([r["bench"]["stages_s"]["unroll_backward"] for r in one])
            fw0 = med([r["stages_s"]["unroll_forward"] for r in splits])
            bw0 = med([r["stages_s"]["unroll_backward"] for r in splits])
            print(f"\nfinal projection by difference (1 thread): forward {fw - fw0:.3f} s of "
                  f"{fw:.3f}, backward {bw - bw0:.3f} s of {bw:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="bibtex")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2, help="timed epochs per cardinal run")
    ap.add_argument("--final-split", action="store_true",
                    help="also time the final projection by difference (1 thread)")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--count-only", metavar="BENCH_JSON",
                    help="print the counts of a `cardinal bench` JSON line and exit")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--from-json", metavar="FILE",
                    help="print the tables of raw results written by --json, and exit")
    args = ap.parse_args()

    if args.count_only:
        s = shapes_of(json.loads(Path(args.count_only).read_text()))
        for k, (fl, by) in totals(count_epoch(s)).items():
            print(f"{k:16s} {fl / 1e9:9.3f} GFLOP {by / 1e9:9.3f} GB")
        return 0

    if args.from_json:
        raw = json.loads(Path(args.from_json).read_text())
        results = {int(t): rows for t, rows in raw["results"].items()}
        print_report(raw.get("dataset", args.dataset), results, raw["no_final"])
        return 0

    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "cardinal-cli"],
                       cwd=ROOT, check=True)
    binary = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "cardinal"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    load = lambda: " ".join(Path("/proc/loadavg").read_text().split()[:3])  # noqa: E731
    print(f"# dataset={args.dataset} threads={args.threads} rounds={args.rounds} "
          f"epochs={args.epochs} commit={commit}{'+dirty' if dirty else ''} load={load()}")
    no_final = None
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_c_kernels(Path(tmp))
        if args.final_split:
            no_final = Path(tmp) / "no_final.json"
            no_final.write_text('{"inference": {"final_projection": null}}')
        results = {t: [] for t in args.threads}
        splits = []
        for rnd in range(args.rounds):
            for t in args.threads:
                t0 = time.time()
                bench = run_bench(binary, args.dataset, t, args.epochs, None)
                s = shapes_of(bench)
                st = count_epoch(s)
                meas = measure_kernels(s, t, exe, sys.executable)
                results[t].append({"bench": bench, "kernels": meas,
                                   "attainable": attainable(st, meas), "load": load()})
                print(f"round {rnd + 1} threads {t}: epoch {bench['train_epoch_s']:.3f} s, "
                      f"attainable {sum(attainable(st, meas).values()):.3f} s, "
                      f"peak {meas['peak_flops'] / 1e9:.0f} GFLOP/s, "
                      f"DRAM triad {meas['dram_bw'] / 1e9:.1f} GB/s, load {load()} "
                      f"({time.time() - t0:.0f} s)", flush=True)
            if no_final:
                nf = run_bench(binary, args.dataset, 1, args.epochs, str(no_final))
                splits.append(nf)
    print_report(args.dataset, results, splits)
    if args.json:
        Path(args.json).write_text(json.dumps({"dataset": args.dataset, "results": results,
                                               "no_final": splits},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
