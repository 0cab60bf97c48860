"""Throughput of the host's SIMD microkernel (packed_micro on this computer) against single-threaded numpy BLAS.

    python bench/bench_host_micro.py [N ...]        (default 256 512 1024; fp32 and fp64)

Prints, per size and dtype, the fastest and median of 9 timed runs of each (after one warm-up), GFLOP/s and the
ratio host/BLAS. Target of issue 13: packed_micro within 3x of single-threaded BLAS at N >= 256 fp32. The fastest
run is the figure to compare on a shared machine (other processes only ever add time).
"""

from __future__ import annotations

import sys

from gemmsim.run.host import blas_time, host_clock_ghz, run_host


def main(sizes: list[int]) -> None:
    print(f"clock {host_clock_ghz() or float('nan'):.2f} GHz (measured)")
    print(f"{'N':>5} {'dtype':>5} {'packed_micro min/med ms':>24} {'GFLOP/s':>8} {'BLAS 1T min/med ms':>20} {'GFLOP/s':>8} {'host/BLAS':>9}")
    for n in sizes:
        for dt in ("fp32", "fp64"):
            r = run_host("packed_micro", n, n, n, dt, repeats=9)
            b = blas_time(n, n, n, dt, repeats=9)
            f = 2.0 * n**3
            print(f"{n:5d} {dt:>5} {r.min_s * 1e3:11.3f} /{r.median_s * 1e3:10.3f} {f / r.min_s / 1e9:8.1f} "
                  f"{b[1] * 1e3:9.3f} /{b[0] * 1e3:9.3f} {f / b[1] / 1e9:8.1f} {r.min_s / b[1]:9.2f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [256, 512, 1024])
