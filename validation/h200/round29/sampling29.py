"""Round 29 (issue 12): an explicit ``max_blocks`` sample against the same launch simulated whole.

    python validation/h200/round29/sampling29.py     # -> sampling29.csv (~6 min)

The S sweep of rounds 3 and 28 samples its launches at ``max_blocks = 264``: one wave of the 128x128 tiles (2 blocks
per SM), but a third of a wave or less of the 64x64 tiles (5-7 blocks per SM, 660-924 a wave). This runs the model on
the 64x64 kernels (round 3's mma.sync inputs at S = 1, 3, 4 and round 28's WMMA inputs at S = 3; 5, 6, 6 and 7 blocks
per SM) with four samples: 264 blocks exactly (``gpu_memory.MIN_SAMPLE_WAVES = 0``, the rule until this round), 264
rounded up to one whole wave and to two (``MIN_SAMPLE_WAVES = 1, 2``), and every block. ncu's DRAM bytes of the
mma.sync kernels (validation/h200/round7/tc_schedule7.csv) are printed beside them. No timing of these kernels is an
input; the clock is fixed at 1720 MHz (the sweep's launches ran at 1644-1779).
"""
from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round28"))
sys.path.insert(0, str(HERE.parent))
from h200_io import write_rows  # noqa: E402
import predict28 as p  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models import gpu_memory  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

KERNEL = "mma_64x64_w2x2"
CASES = (("mma", 1), ("mma", 3), ("mma", 4), ("wmma", 3))
SAMPLES = (("264 exactly", 264, 0), ("one wave", 264, 1), ("two waves", 264, 2), ("every block", None, 1))
MHZ = 1720.0


def ncu_bytes() -> dict:
    f = HERE.parent / "round7" / "tc_schedule7.csv"
    with f.open() as fh:
        return {(r["kernel"], int(r["stages"]), int(r["N"])): int(r["ncu_dram_bytes_read"]) for r in csv.DictReader(fh)}


def main() -> None:
    h = load_machine("h200")
    inputs = {(r["kernel"], int(r["S"])): r for r in p.read(HERE.parent / "round28" / "inputs28.csv")}
    ncu = ncu_bytes()
    rows = []
    keep = gpu_memory.MIN_SAMPLE_WAVES
    try:
        for n in (4096, 8192):
            for api, S in CASES:
                prm = p.wmma_params(inputs[(KERNEL, S)]) if api == "wmma" else p.mma_params(KERNEL, S)
                for name, mb, waves in SAMPLES:
                    gpu_memory.MIN_SAMPLE_WAVES = waves
                    q = dict(prm, max_blocks=mb if mb else (n // 64) ** 2)
                    t0 = time.time()
                    at = simulate_gpu(p.mv.machine_at(h, MHZ), "tensorcore", M=n, N=n, K=n, dtype="fp16", **q)
                    rows.append(dict(api=api, kernel=KERNEL, stages=S, M=n, sample=name, blocks_per_sm=at["blocks_per_sm"],
                                     blocks_simulated=at["blocks_simulated"], tflops=round(float(at["tflops"]), 2),
                                     dram_bytes=int(at["dram_bytes"]), l2_far_hits=int(at["l2_far_hits"]),
                                     ncu_dram_bytes_read=ncu.get((KERNEL, S, n), "") if api == "mma" else "",
                                     seconds=round(time.time() - t0, 1)))
                    print(rows[-1], flush=True)
    finally:
        gpu_memory.MIN_SAMPLE_WAVES = keep
    write_rows(HERE / "sampling29.csv", rows)


if __name__ == "__main__":
    main()
