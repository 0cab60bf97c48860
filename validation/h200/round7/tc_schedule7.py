"""The memory model's DRAM bytes for mma_pipe (round 3's cp.async + mma.sync GEMM) under its default schedule and in
lockstep, beside ncu's -> tc_schedule7.csv.

    python validation/h200/round7/tc_schedule7.py      # ~1 min

Issue 12's S sweep found the memory model's traffic for mma_pipe off at 8192^3 (round 9, MODEL_TC.md): 8.7 GB of DRAM
reads for the 128x128 tiles where ncu counts 2.3-6.7. Tensor-core kernels start their resident blocks spread over a
block (``start_stagger``: 1, from the tiled SGEMM's block-start traces); the naive kernel's row order, whose blocks
read the same new line every k step, runs in lockstep (round 7). mma_pipe's blocks also share a new tile every k
step (A's with their tile row, B's with their tile column), so this script runs both schedules. ncu: round 8's
counts on mma_pipe itself (``../round8/ncu_l2_8.csv``, one launch per configuration).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round3"))

import model_vs_measured_tc as mv  # noqa: E402
from process7 import write_csv  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

KERNELS = {"mma_128x128_w2x4": ("128x128_w8", 128), "mma_64x64_w2x2": ("64x64_w4", 64),
           "mma_128x128_w2x2": ("128x128_w4", 128)}
#: registers per thread as compiled (round 3's ptxas, mma_pipeline.csv): they set the blocks per SM
REGS = {(r["kernel"], int(r["stages"])): int(r["regs"]) for r in csv.DictReader((HERE.parent / "round3" / "mma_pipeline.csv").open())}


def dram_bytes(h, name: str, S: int, N: int, lockstep: bool) -> float:
    """The memory model's DRAM bytes read by mma_pipe ``name`` with S stages at N^3 (default sampling)."""
    wm, wn = mv.WARP_GRID[name]
    _, BM = KERNELS[name]
    regs = REGS[(name, S)]
    compute, copy = mv.executed_counts()[(name, S)]
    params = dict(BM=BM, BN=BM, BK=32, WM=BM // wm, WN=BM // wn, stages=S, regs=regs, pad=8,
                  warp_instructions_per_step=compute, warp_copy_instructions_per_step=copy)
    orig = gm.start_stagger
    if lockstep:
        gm.start_stagger = lambda spec: 0.0
    try:
        return float(simulate_gpu(h, "tensorcore", M=N, N=N, K=N, dtype="fp16", **params)["dram_bytes_read"])
    finally:
        gm.start_stagger = orig


def main() -> None:
    h = load_machine("h200")
    ncu = {(r["tile"], int(r["stages"]), int(r["size"])): float(r["dram_GB"]) * 1e9
           for r in csv.DictReader((HERE.parent / "round8" / "ncu_l2_8.csv").open()) if r["source"].startswith("mma_pipe")}
    rows = []
    for name, (tile, _) in KERNELS.items():
        for N in (4096, 8192):
            for S in (1, 2, 3, 4):
                spread, lock = dram_bytes(h, name, S, N, False), dram_bytes(h, name, S, N, True)
                rows.append(dict(kernel=name, stages=S, N=N, ncu_dram_bytes_read=int(ncu[(tile, S, N)]),
                                 model_spread=int(spread), model_lockstep=int(lock)))
                print(rows[-1], flush=True)
    write_csv("tc_schedule7.csv", rows)


if __name__ == "__main__":
    main()
