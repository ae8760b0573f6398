#!/usr/bin/env python3
"""Times the PyTorch reference's projections at L = 983, batch 50 (the Rust counterpart is the
`batch50-L983` group of benches/projections.rs).

    python3 crates/cardinal-proj/benches/peer_projection_timing.py [--peer DIR] [--threads N]

DIR holds pac.py; default: $PAC_PEER_DIR, else ../shared/peers/torch relative to the repository
root (the directory two levels above this file's crate).
"""
import argparse
import os
import statistics
import sys
import time


def default_peer_dir():
    env = os.environ.get("PAC_PEER_DIR")
    if env:
        return env
    repo_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    return os.path.join(repo_root, "..", "shared", "peers", "torch")


def timeit(fn, min_time=1.0, repeats=7):
    """Median seconds per call over `repeats` runs of enough calls to last min_time/repeats."""
    fn()  # warm-up
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeats:
            break
        n *= 2
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n)
    return statistics.median(runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", default=default_peer_dir(), help="directory containing pac.py")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--labels", type=int, default=983)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = ap.parse_args()

    sys.path.insert(0, os.path.abspath(args.peer))
    import torch
    import pac  # the peer's module

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(args.batch, args.labels, generator=gen, dtype=dtype)
    z = torch.full((args.batch, 1), args.labels / 50.0, dtype=dtype)
    g = torch.randn(args.batch, args.labels, generator=gen, dtype=dtype)

    ops = {
        "exact (capped_simplex_proj, 60 bisection steps)": lambda x: pac.capped_simplex_proj(x, z),
        "dykstra-soft R=2 (authors' soft simplex)": lambda x: pac.dykstra(x, z, 2, pac.soft_simplex_proj_authors),
    }
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, dtype {args.dtype}, "
          f"batch {args.batch}, L {args.labels}")
    print(f"{'operator':52s} {'forward us/batch':>18s} {'fwd+bwd us/batch':>18s}")
    for name, op in ops.items():
        def fwd():
            with torch.no_grad():
                op(v)

        def fwd_bwd():
            x = v.detach().requires_grad_(True)
            out = op(x)
            out.backward(g)

        tf = timeit(fwd)
        tb = timeit(fwd_bwd)
        print(f"{name:52s} {tf * 1e6:18.1f} {tb * 1e6:18.1f}")


if __name__ == "__main__":
    main()
