"""Throughput of the emulated GEMM (gemmsim.numerics.orders) and of the exact reference.

    python bench/bench_numerics.py [--n 1024] [--threads 2]

Prints the seconds and emulated multiply-adds per second of an n^3 GEMM for a few (input, accumulator, order,
FMA) choices; the issue's target is a 1024^3 fp16 GEMM in under ~10 s. The first call of each compiled function
is a warm-up at n = 64 (numba compiles or loads its cache there). Above orders.FULL_LIMIT multiply-adds
(1024^3) the lab samples orders.SAMPLE_ROWS rows of C instead. Not a test: numbers depend on the host and its load.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from gemmsim.numerics.arith import quantize
from gemmsim.numerics.error import reference
from gemmsim.numerics.orders import FULL_LIMIT, SAMPLE_ROWS, gemm

CASES = [
    ("fp16", "fp16", "sequential", False),
    ("fp16", "fp32", "sequential", True),
    ("bf16", "bf16", "blocked", True),
    ("fp32", "fp32", "lanes", True),
    ("fp16", "fp16", "pairwise", True),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=None, help="numba threads (default: all cores)")
    args = ap.parse_args()
    if args.threads:
        numba.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    n = args.n
    print(f"n = {n}: {n**3 / 1e9:.2f} G multiply-adds per GEMM, numba threads {numba.get_num_threads()}; "
          f"the lab samples {SAMPLE_ROWS} rows of C above {FULL_LIMIT / 1e9:.2f} G")
    for inp, acc, order, fma in CASES:
        A, B = quantize(rng.random((n, n)), inp), quantize(rng.random((n, n)), inp)
        gemm(A[:64, :64], B[:64, :64], acc=acc, order=order, use_fma=fma)
        t = time.perf_counter()
        gemm(A, B, acc=acc, order=order, use_fma=fma)
        dt = time.perf_counter() - t
        print(f"  {inp:>4} in, {acc:>4} acc, {order:>10}, {'FMA' if fma else 'mul+add':>7}: {dt:6.2f} s  {n**3 / dt / 1e6:7.1f} M multiply-adds/s")
    A, B = rng.random((n, n)), rng.random((n, n))
    reference(A[:64, :64], B[:64, :64])
    t = time.perf_counter()
    reference(A, B)
    dt = time.perf_counter() - t
    print(f"  reference (Dot2, float64 inputs)           : {dt:6.2f} s  {n**3 / dt / 1e6:7.1f} M multiply-adds/s")


if __name__ == "__main__":
    main()
