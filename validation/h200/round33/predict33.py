"""Round 33 (issue 12): the S sweep with one block per SM, predicted before the run.

    python validation/h200/round33/predict33.py predict [mma|wmma]   # -> predictions33_<api>.csv
    python validation/h200/round33/predict33.py compare              # after the run: compare33.csv, printed

Round 32's traces at N = 2048 held something no round had used: the 8 SMs with one block beside the 124 with two.
There the model's step (``sm_pipeline.pipeline_time``) agrees with the H200 alone and shared at S >= 2, but at S = 1
the H200's two blocks take no longer than one alone (2,108 against 2,091 cycles a step, 8-warp 128x128 tile), where
the model's take 1.43x (their MMA phases run together). This round asks the model's other half: the same binaries
(round 28's, S = 1..4, three tiles, both APIs) at N = 4096 and 8192 with ``SMEM_MIN`` = 120,000 bytes of dynamic
shared memory per block (``smem33.patch``), so every SM holds one block. The model gets the same shared memory
(``smem``) and nothing else new. Predicted per launch, at 1980 MHz: TFLOP/s and the SM cycles of a block's step.
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
sys.path.insert(0, str(HERE.parent / "round32"))
import predict28 as p  # noqa: E402
import predict32 as p32  # noqa: E402
from h200_io import write_rows  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

SIZES = (4096, 8192)
SMEM_MIN = 120_000  # bytes: two blocks need 2 x (120,000 + 1,024 reserved) > 228 KiB, so one block per SM
TILES = p32.TILES


def run(h, api: str, kernel: str, S: int, n: int, mhz: float) -> dict:
    prm = dict(p32.params(api, kernel, S), smem=SMEM_MIN)
    r = simulate_gpu(p.mv.machine_at(h, mhz), "tensorcore", M=n, N=n, K=n, dtype="fp16", **prm)
    return dict(tflops=2.0 * n ** 3 / (r["time_s"] + p.mv.launch_overhead_s(p.mv.HERE)) / 1e12, row=r)


def _predict(job: tuple) -> dict:
    api, kernel, S, n = job
    h = load_machine("h200")
    r = run(h, api, kernel, S, n, p.MHZ)
    row = r["row"]
    return dict(api=api, kernel=kernel, stages=S, M=n, blocks_per_sm=int(row["blocks_per_sm"]),
                tflops_at_1980=round(r["tflops"], 1), step_clk=round(float(row.get("pipe_step_clk", 0) or 0), 1),
                holds=int(row["tc_holds"]), bound=row["bound"])


def predict(api: str) -> None:
    from multiprocessing import Pool
    jobs = [(api, k, S, n) for k in TILES for S in (1, 2, 3, 4) for n in SIZES]
    with Pool(2) as pool:
        out = pool.map(_predict, jobs)
    for r in out:
        print(r)
    write_rows(HERE / f"predictions33_{api}.csv", out)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "predict"
    if what == "predict":
        for api in (sys.argv[2:] or ["mma", "wmma"]):
            predict(api)
    else:
        raise SystemExit(f"usage: {sys.argv[0]} predict [mma|wmma] | compare")
