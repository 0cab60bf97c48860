"""Round 42 (issue 12): the model's k-step of the WMMA and mma.sync kernels, piece by piece, before the H200 records it.

    python validation/h200/round42/predict42.py     # -> predictions42.csv (~5 min on 2 cores)

For each API, tile, S = 1..4 and M = N = K = 4096, 8192: the model's steady step (`pipe_step_clk`) and block 0's four
intervals between the points where the recorded kernel (run_round42.sh, mode stepclock) reads its clock
(`PipelineTime.phases`; S = 1: copy code, wait + barrier, MMAs + barrier, rest; S > 1: wait + barrier, copy code, MMAs,
rest), and how its co-resident blocks sit (together / alternating, round 10b's measure). Inputs: round 28's
(`inputs28.csv`: WMMA) and round 3's (mma.sync), as round 28's sweep uses them; the model at 1730 MHz (the recorded
launches of round 10b ran at 1698-1782). Nothing here is fitted.
"""
from __future__ import annotations

import sys
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
sys.path.insert(0, str(HERE.parent / "round3"))
import model_vs_measured_tc as mv  # noqa: E402
import predict28 as p28  # noqa: E402
from tables import write_csv  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

KERNELS = ("mma_128x128_w2x4", "mma_128x128_w2x2", "mma_64x64_w2x2")
SIZES = (4096, 8192)
MHZ = 1730.0
PHASES = ("copy", "wait_barrier", "mma", "mma_barrier", "rest")


def params(api: str, kernel: str, S: int) -> dict:
    if api == "wmma":
        r = next(r for r in p28.read(p28.HERE / "inputs28.csv") if r["kernel"] == kernel and int(r["S"]) == S)
        return p28.wmma_params(r)
    return p28.mma_params(kernel, S)


def one(case: tuple) -> dict:
    api, kernel, S, n = case
    at = simulate_gpu(mv.machine_at(load_machine("h200"), MHZ), "tensorcore", M=n, N=n, K=n, dtype="fp16",
                      **params(api, kernel, S))
    row = dict(api=api, kernel=kernel, stages=S, M=n, blocks_per_sm=at["blocks_per_sm"],
               step_clk=round(at["pipe_step_clk"], 1))
    for ph in PHASES:
        v = at.get(f"pipe_phase_{ph}_clk")
        if v is not None:
            row[f"{ph}_clk"] = round(v, 1)
    row["together"] = round(at.get("pipe_blocks_together", float("nan")), 2)
    row["alternating"] = round(at.get("pipe_blocks_alternating", float("nan")), 2)
    return row


def main() -> None:
    cases = [(api, k, S, n) for api in ("wmma", "mma") for k in KERNELS for S in (1, 2, 3, 4) for n in SIZES]
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(one, cases)
    cols = ["api", "kernel", "stages", "M", "blocks_per_sm", "step_clk", *(f"{p}_clk" for p in PHASES), "together",
            "alternating"]
    rows = [{c: r.get(c, "") for c in cols} for r in rows]
    write_csv(HERE / "predictions42.csv", rows)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
