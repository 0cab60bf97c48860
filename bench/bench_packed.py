"""Throughput of the packed kernels' trace generator and of simulating it through a Haswell hierarchy.

    python bench/bench_packed.py [--n 1024] [--sim-n 512] [--threads 1]

Prints (1) accesses generated per second for packed_micro (fp32, the analytic 6x16 / KC, MC, NC of Haswell) at
N = --n, generation only, and (2) accesses simulated per second end to end (generation + L1/L2/L3 + TLBs) at
N = --sim-n, with peak resident memory. Not a test: numbers depend on the host.
"""

from __future__ import annotations

import argparse
import resource
import time

from gemmsim.kernels.cpu_packed import KERNELS
from gemmsim.machine import load_machine
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.trace import Layout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024, help="square size for the generation benchmark")
    ap.add_argument("--sim-n", type=int, default=512, help="square size for the simulation benchmark")
    ap.add_argument("--threads", type=int, default=1, help="threads (cores) of the traced kernel")
    args = ap.parse_args()

    machine = load_machine("haswell")
    k = KERNELS["packed_micro"]
    p = k.params(threads=args.threads)

    # Warm the numba caches on a tiny case so compilation is not timed.
    h = Hierarchy.from_machine(machine, cores=args.threads)
    for c in k.trace(Layout.build(16, 16, 16, "fp32"), p, machine):
        h.feed(c)

    lay = Layout.build(args.n, args.n, args.n, "fp32")
    t0 = time.perf_counter()
    n = 0
    for c in k.trace(lay, p, machine):
        n += len(c)
    dt = time.perf_counter() - t0
    print(f"generate packed_micro N={args.n}: {n:,} accesses in {dt:.2f} s = {n / dt / 1e6:.1f} M accesses/s")

    lay = Layout.build(args.sim_n, args.sim_n, args.sim_n, "fp32")
    h = Hierarchy.from_machine(machine, cores=args.threads)
    t0 = time.perf_counter()
    n = 0
    for c in k.trace(lay, p, machine):
        h.feed(c)
        n += len(c)
    dt = time.perf_counter() - t0
    cn = h.counters()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    l1 = cn["levels"][0]
    print(
        f"simulate packed_micro N={args.sim_n} through haswell L1/L2/L3 + TLBs: {n:,} accesses in {dt:.2f} s = "
        f"{n / dt / 1e6:.1f} M accesses/s; L1 hit rate {(l1['load_hits'] + l1['store_hits']) / (l1['loads'] + l1['stores']):.3f}; "
        f"peak RSS {rss:.0f} MiB"
    )


if __name__ == "__main__":
    main()
