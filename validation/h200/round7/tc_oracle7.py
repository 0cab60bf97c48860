"""How much of the S sweep's remaining error is the blocks' schedule? -> tc_oracle7.csv (a diagnostic, not the model).

    python validation/h200/round7/tc_oracle7.py      # ~10 min

``tc_schedule7.csv`` has, per mma_pipe configuration, ncu's DRAM bytes and the memory model's under its two
schedules: lockstep (``start_stagger`` 0) and spread over a block (1, the default for tensor-core kernels). Here
each configuration's S-sweep model (../round3/model_vs_measured_tc.py's ``stage_rows``, unchanged otherwise) runs
with the schedule whose bytes are nearer ncu's (in log ratio): an *oracle* schedule, chosen from measured traffic,
the way round 5 replayed the naive kernel on its measured block starts. It says what the S sweep would score if the
model knew which launches hold together; it is not a rule the model may use (the choice is read from ncu).
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round3"))

import model_vs_measured_tc as mv  # noqa: E402
from process7 import write_csv  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402

TILE = {(128, 32): "mma_128x128_w2x4", (64, 32): "mma_64x64_w2x2", (128, 64): "mma_128x128_w2x2"}


def oracle() -> dict:
    out = {}
    for r in csv.DictReader((HERE / "tc_schedule7.csv").open()):
        ncu, sp, lk = (float(r[k]) for k in ("ncu_dram_bytes_read", "model_spread", "model_lockstep"))
        out[(r["kernel"], int(r["stages"]), int(r["N"]))] = abs(math.log(ncu / lk)) < abs(math.log(ncu / sp))
    return out


def main() -> None:
    lock = oracle()
    current = {"lockstep": False}
    orig_stagger, orig_sim = gm.start_stagger, mv.simulate_gpu

    def stagger(spec):
        return 0.0 if current["lockstep"] else orig_stagger(spec)

    def sim(machine, kernel, **kw):
        name = TILE[(kw["BM"], kw["WN"])]
        current["lockstep"] = lock[(name, kw["stages"], kw["M"])]
        return orig_sim(machine, kernel, **kw)

    gm.start_stagger, mv.simulate_gpu = stagger, sim
    try:
        rows = mv.stage_rows(load_machine("h200"), mv.DATA)
    finally:
        gm.start_stagger, mv.simulate_gpu = orig_stagger, orig_sim
    for r in rows:
        r["schedule"] = "lockstep" if lock[(r["kernel"], r["stages"], r["M"])] else "spread"
    mv.report_stages(rows)
    write_csv("tc_oracle7.csv", [{k: r[k] for k in ("kernel", "stages", "M", "schedule", "sm_mhz", "measured_tflops",
                                                   "model_tflops", "ratio")} for r in rows])


if __name__ == "__main__":
    main()
