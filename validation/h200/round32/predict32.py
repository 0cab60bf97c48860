"""Round 32 (issue 12): round 31's tensor-core schedule at two sizes it was not built on, predicted before the run.

    python validation/h200/round32/predict32.py predict [mma|wmma]   # -> predictions32_<api>.csv (~6 min each)
    python validation/h200/round32/predict32.py compare              # after the run: compare32.csv, printed

Round 31's rule (``gemmsim.models.tc_schedule``) came from round 30's block-start traces at N = 4096 and 8192 (its
drift rate fitted on the mma.sync launches at 4096). Here the same binaries (round 28's mma.sync and WMMA kernels,
S = 1..4, three tiles) run at N = 2048 and 6144. Predicted per launch, at 1980 MHz (the comparison reruns the model at
each launch's own clock, as rounds 3 and 28 do): TFLOP/s, the DRAM bytes read (against ncu's), whether the blocks hold
in step, and the spread of every whole wave (5-95 % of its starts over the median block) -- 0 if they hold, else
min(``DRIFT_PER_WAVE`` x blocks per SM x w, 0.9). At 2048 the 128x128 tiles are one partial wave (256 blocks), so
the rule's first point (the first wave starts together) is all there is; the 64x64 tile 1.1-1.6 waves.
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
import predict28 as p  # noqa: E402
from h200_io import write_rows  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models import tc_schedule as tcs  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

SIZES = (2048, 6144)
TILES = ("mma_128x128_w2x2", "mma_128x128_w2x4", "mma_64x64_w2x2")


def params(api: str, kernel: str, S: int) -> dict:
    if api == "mma":
        return p.mma_params(kernel, S)
    inputs = {(r["kernel"], int(r["S"])): r for r in p.read(p.HERE / "inputs28.csv")}
    return p.wmma_params(inputs[(kernel, S)])


def run(h, api: str, kernel: str, S: int, n: int, mhz: float) -> dict:
    r = simulate_gpu(p.mv.machine_at(h, mhz), "tensorcore", M=n, N=n, K=n, dtype="fp16", **params(api, kernel, S))
    return dict(tflops=2.0 * n ** 3 / (r["time_s"] + p.mv.launch_overhead_s(p.mv.HERE)) / 1e12, row=r)


def predict(api: str) -> None:
    h = load_machine("h200")
    out = []
    for kernel in TILES:
        for S in (1, 2, 3, 4):
            for n in SIZES:
                m = run(h, api, kernel, S, n, p.MHZ)
                r = m["row"]
                bps = int(r["blocks_per_sm"])
                wave = h.sms * bps
                blocks = (n // int(r["BM"])) * (n // int(r["BN"]))
                spreads = [0.0 if r["tc_holds"] else min(tcs.DRIFT_PER_WAVE * bps * w, tcs.EVEN_SPREAD)
                           for w in range(blocks // wave)]
                out.append(dict(api=api, kernel=kernel, stages=S, M=n, blocks=blocks, blocks_per_sm=bps,
                                tflops_at_1980=round(m["tflops"], 1), dram_bytes_read=int(r["dram_bytes_read"]),
                                holds=int(r["tc_holds"]), restoring_gain=round(float(r["tc_restoring_gain"]), 4),
                                stagger_mean=round(float(r["tc_stagger_mean"]), 3),
                                wave_spreads=" ".join(f"{x:.2f}" for x in spreads), bound=r["bound"]))
                print(out[-1], flush=True)
    write_rows(HERE / f"predictions32_{api}.csv", out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["predict"]:
        for api in sys.argv[2:] or ["mma", "wmma"]:
            predict(api)
