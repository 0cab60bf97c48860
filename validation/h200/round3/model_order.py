"""The GPU memory model on the launch-order cases measured in round 3 (order_l2.csv, run 3).

    python validation/h200/round3/model_order.py [tiled_smem|naive] [N ...]   # appends to model_order.csv

One row per (kernel, N, order): the model's DRAM bytes read, L2 hit rate and far-partition hits (default
steady-state sampling), beside ncu's numbers from run 3. Slow: the naive kernel at N >= 4096 takes minutes a case.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from gemmsim.machine import load_machine
from gemmsim.sim.gpu import simulate_gpu

HERE = Path(__file__).resolve().parent
OUT = HERE / "model_order.csv"
COLS = ["kernel", "N", "order", "model_dram_bytes_read", "model_l2_hit_rate_pct", "model_l2_far_hit_bytes",
        "blocks", "blocks_simulated", "measured_dram_bytes_read", "measured_l2_hit_rate_pct",
        "measured_l2_fabric_bytes", "ratio_model_measured", "seconds"]
KERNELS = {"naive": ("naive16", {"BX": 16, "BY": 16}), "tiled_smem": ("tiled32", {})}


def main() -> None:
    args = sys.argv[1:]
    kernels = [a for a in args if a in KERNELS] or list(KERNELS)
    sizes = [int(a) for a in args if a.isdigit()] or [2048, 3072, 4096, 5120, 6144, 8192]
    meas = {(r["kernel"], int(r["N"]), r["order"]): r for r in csv.DictReader((HERE / "order_l2.csv").open())
            if r["run"] == "run3"}
    done = set()
    if OUT.exists():
        done = {(r["kernel"], int(r["N"]), r["order"]) for r in csv.DictReader(OUT.open())}
    m = load_machine("h200")
    new = not OUT.exists()
    with OUT.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(COLS)
        for kernel in kernels:
            mname, params = KERNELS[kernel]
            for N in sizes:
                for order in ("row", "column", "grouped"):
                    if (kernel, N, order) in done:
                        continue
                    t = time.perf_counter()
                    r = simulate_gpu(m, kernel, M=N, N=N, K=N, dtype="fp32", raster=order, **params)
                    ms = meas.get((mname, N, order), {})
                    md = float(ms.get("dram_bytes_read", "nan"))
                    w.writerow([kernel, N, order, int(r["dram_bytes_read"]), round(100 * r["l2_hit_rate"], 2),
                                int(r["l2_far_hits"] * 32), r["blocks"], r["blocks_simulated"], ms.get("dram_bytes_read", ""),
                                ms.get("l2_hit_rate_pct", ""), ms.get("l2_fabric_bytes", ""),
                                round(r["dram_bytes_read"] / md, 3) if md == md else "", round(time.perf_counter() - t, 1)])
                    f.flush()
                    print(kernel, N, order, int(r["dram_bytes_read"]), md, flush=True)


if __name__ == "__main__":
    main()
