"""Round 33's question in round 32's traces (N = 2048): the step of a block alone on its SM and of two sharing one,
on the H200 (each block's clock64 cycles over its K / 32 steps; median over the blocks of each kind) and in the model
(``sm_pipeline.pipeline_time`` with one and two blocks on the step cost the launch gets at 1740 MHz): two blocks
as the simulation runs them (``ONE_STAGE_INTERLEAVE = False``: in step at S = 1, what round 33 started from) and as
the model does now (S = 1 blocks fill each other's waits).

    python validation/h200/round33/alone33.py          # -> alone33.csv, printed (~2 min)
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round30"))
sys.path.insert(0, str(HERE.parent / "round28"))
import predict28 as p  # noqa: E402
import process30  # noqa: E402
from h200_io import write_rows  # noqa: E402

import gemmsim.models.sm_pipeline as sp  # noqa: E402
import gemmsim.sim.gpu as sg  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402

N = 2048
MHZ = 1740.0  # about the traced launches' clock (1736-1749 MHz); the step in cycles hardly depends on it


def measured(archive: Path = HERE.parent / "round32" / "raw" / "round32.tar.gz") -> dict:
    """{(api, kernel, S): (alone, shared)}: median cycles a step of the blocks alone on an SM / sharing one."""
    out = {}
    for r in process30.launches(archive, (N,), "32"):
        if r["copy"] != "1" or not r["kernel"].startswith("mma_128"):
            continue
        sms, counts = np.unique(r["sm"], return_counts=True)
        alone = np.isin(r["sm"], sms[counts == 1])
        steps = N // 32
        out[(r["api"], r["kernel"], int(r["stages"]))] = (float(np.median(r["cycles"][alone])) / steps,
                                                          float(np.median(r["cycles"][~alone])) / steps)
    return out


def modelled(api: str, kernel: str, S: int) -> tuple[float, float]:
    seen = {}
    orig = sg._pipeline_cost

    def spy(*a, **k):
        seen["cost"] = orig(*a, **k)
        return seen["cost"]

    sg._pipeline_cost = spy
    try:
        sys.path.insert(0, str(HERE.parent / "round32"))
        import predict32
        sg.simulate_gpu(p.mv.machine_at(load_machine("h200"), MHZ), "tensorcore", M=N, N=N, K=N, dtype="fp16",
                        **predict32.params(api, kernel, S))
    finally:
        sg._pipeline_cost = orig
    c = seen["cost"]
    sp.ONE_STAGE_INTERLEAVE = False
    try:
        in_step = sp.pipeline_time(c, 2).step_clk
    finally:
        sp.ONE_STAGE_INTERLEAVE = True
    return sp.pipeline_time(c, 1).step_clk, in_step, sp.pipeline_time(c, 2).step_clk


def main() -> None:
    rows = []
    for (api, kernel, S), (a, b) in sorted(measured().items()):
        ma, mb, mn = modelled(api, kernel, S)
        rows.append(dict(api=api, kernel=kernel, stages=S, h200_alone=round(a), h200_shared=round(b),
                         h200_ratio=round(b / a, 2), model_alone=round(ma), model_shared=round(mb),
                         model_ratio=round(mb / ma, 2), model_shared_now=round(mn), model_ratio_now=round(mn / ma, 2)))
        print(rows[-1], flush=True)
    write_rows(HERE / "alone33.csv", rows)


if __name__ == "__main__":
    main()
