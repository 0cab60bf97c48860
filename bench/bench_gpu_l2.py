"""Speed of the GPU memory-system model: the L2 simulation of a tiled SGEMM (tiled_smem, TILE 32, fp32).

Target (issue 3): N = 4096 on an H100/H200 machine in about a minute or less on one core, every block
simulated (no sampling). Prints, per case, the wall time, the cache accesses simulated per second (one per
line per warp instruction, L1 and L2 passes counted once each), and the DRAM bytes and L2 hit rate, so a
speed-up that changes the answer shows.

    python bench/bench_gpu_l2.py                       # h100 and h200, N = 2048 and 4096, row order
    python bench/bench_gpu_l2.py --machines h200 --sizes 4096 --raster grouped
    python bench/bench_gpu_l2.py --machines h200 a100 --sizes 8192 --budget default   # sampled, as l2_raster runs it
"""

from __future__ import annotations

import argparse
import time

from gemmsim.kernels.gpu import KERNELS
from gemmsim.machine import load_machine
from gemmsim.models.gpu_memory import DEFAULT_BUDGET, simulate_memory
from gemmsim.models.occupancy import occupancy
from gemmsim.sim.gpu import l1_carveout
from gemmsim.trace import Layout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machines", nargs="+", default=["h100", "h200"])
    ap.add_argument("--sizes", nargs="+", type=int, default=[2048, 4096])
    ap.add_argument("--raster", default="row", choices=["row", "column", "grouped"])
    ap.add_argument("--budget", default="none",
                    help="cache accesses before sampling: 'none' (every block), 'default' (the experiments' budget) or a number")
    args = ap.parse_args()
    budget = {"none": None, "default": DEFAULT_BUDGET}.get(args.budget) if not args.budget.isdigit() else int(args.budget)

    # compile once on a tiny case so the timings below are the simulation only
    warm = load_machine(args.machines[0])
    simulate_memory(warm, KERNELS["tiled_smem"].spec({}, "fp32"), Layout.build(64, 64, 64, "fp32"), 2)

    print(f"{'machine':8s} {'N':>6s} {'order':8s} {'blocks':>7s} {'accesses':>12s} {'wall s':>8s} {'M acc/s':>8s} "
          f"{'DRAM read':>12s} {'L2 hit':>7s} sampled")
    for name in args.machines:
        m = load_machine(name)
        spec = KERNELS["tiled_smem"].spec({"raster": args.raster}, "fp32")
        occ = occupancy(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
        l1 = m.l1_size(l1_carveout(m, occ))
        for n in args.sizes:
            t0 = time.perf_counter()
            c = simulate_memory(m, spec, Layout.build(n, n, n, "fp32"), occ.blocks_per_sm, l1, budget=budget).counters
            wall = time.perf_counter() - t0
            # every request of this kernel touches exactly one line; a sampled run simulates only some blocks (and a
            # shorter prefix of them too), so its rate counts the blocks simulated once
            accesses = c["global_requests"] * c["blocks_simulated"] / c["blocks"]
            print(f"{name:8s} {n:6d} {args.raster:8s} {c['blocks']:7d} {accesses:12.4g} {wall:8.1f} "
                  f"{accesses / wall / 1e6:8.2f} {c['dram_bytes_read']:12.4g} {c['l2_hit_rate']:7.3f} {c['sampled']}",
                  flush=True)


if __name__ == "__main__":
    main()
