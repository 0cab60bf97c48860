"""Sampled against unsampled GPU memory simulation at N = 2048 on the H200 (issue 11: sampling bias).

    python validation/h200/round3/model_sampling.py      # ~10 min on one core; writes model_sampling_2048.csv
    python validation/h200/round3/model_sampling.py naive --orders column --out part.csv   # one piece (parallel runs)

For each kernel (naive 16x16, tiled_smem TILE=32, tensorcore fp16 128x128x32) and raster order: DRAM bytes
read and written of the whole launch (every block simulated), of the default run (sampled to the cache-access
budget) and of a run that simulates only the first wave (``max_blocks`` = one wave). The test
tests/models/test_gpu_memory.py reruns the one-wave case and compares it with the unsampled bytes stored here.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from gemmsim.machine import load_machine
from gemmsim.models import gpu_memory
from gemmsim.sim.gpu import simulate_gpu

OUT = Path(__file__).resolve().parent / "model_sampling_2048.csv"
CASES = [("naive", "fp32", {"BX": 16, "BY": 16}), ("tiled_smem", "fp32", {}), ("tensorcore", "fp16", {})]
N = 2048


def run(m, kernel, dtype, params, order, max_blocks):
    t = time.perf_counter()
    r = simulate_gpu(m, kernel, M=N, N=N, K=N, dtype=dtype, raster=order, max_blocks=max_blocks, **params)
    return r, time.perf_counter() - t


def main() -> None:
    m = load_machine("h200")
    args = sys.argv[1:]
    out, orders = OUT, ("row", "column", "grouped")
    if "--out" in args:
        i = args.index("--out")
        out = Path(args[i + 1])
        del args[i:i + 2]
    if "--orders" in args:
        i = args.index("--orders")
        orders = tuple(args[i + 1].split(","))
        del args[i:i + 2]
    only = args
    rows = []
    for kernel, dtype, params in CASES:
        if only and kernel not in only:
            continue
        for order in orders:
            full, t_full = run(m, kernel, dtype, params, order, 10**9)
            wave = m.sms * int(full["blocks_per_sm"])
            dflt, t_dflt = run(m, kernel, dtype, params, order, None)
            keep, gpu_memory.MIN_SAMPLE_WAVES = gpu_memory.MIN_SAMPLE_WAVES, 1  # one wave exactly (round 29: default two)
            try:
                one, t_one = run(m, kernel, dtype, params, order, wave)
            finally:
                gpu_memory.MIN_SAMPLE_WAVES = keep
            rows.append([kernel, dtype, " ".join(f"{k}={v}" for k, v in params.items()), N, order, full["blocks"], wave,
                         int(full["dram_bytes_read"]), int(full["dram_bytes_written"]), int(dflt["dram_bytes_read"]),
                         dflt["blocks_simulated"], int(one["dram_bytes_read"]), one["blocks_simulated"],
                         round(t_full, 1), round(t_dflt, 1), round(t_one, 1)])
            print(rows[-1], flush=True)
    new = not out.exists() or (not only and out == OUT)
    with out.open("w" if new else "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["kernel", "dtype", "params", "N", "order", "blocks", "wave", "unsampled_dram_bytes_read",
                        "unsampled_dram_bytes_written", "default_dram_bytes_read", "default_blocks_simulated",
                        "one_wave_dram_bytes_read", "one_wave_blocks_simulated", "unsampled_s", "default_s", "one_wave_s"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
