"""Round 38 (issue 12), offline: round 34's launch ends with the favoured SMs as round 38 sets them.

    python validation/h200/round38/ends38.py     # ~25 min on 2 cores (round 36's captures in /tmp/capture36) -> ends38.csv

Round 34's 40 launches (64x64 tile, M = K = 4096, N = 3712..4608, mma.sync and WMMA, S = 1..4) ran on a device with
24 favoured SMs (its traces). Each launch's length over its steady pace (all slots busy), as round 37's ``ends37``:

* ``fav24_file``: 24 favoured SMs drawing the machine file's share, up to their cap (round 36's rule);
* ``fav24_at_load``: 24 favoured SMs drawing what their step gains at the chip's load
  (``sm_pipeline.FAVOURED_AT_LOAD``): the model as round 38 ships it;

against the measured ``span_over_steady``; round 36 as shipped (12 favoured SMs, the file's share) is ``round36`` in
../round37/ends37.csv. Nothing here is fitted to round 34's ends or to any timing.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path.insert(0, str(H200))
sys.path.insert(0, str(H200 / "round36"))
from h200_io import agreement, write_rows  # noqa: E402
import dispatch36  # noqa: E402  (round 36's captures: the model's step cost of each launch, at its own clock)

VARIANTS = (("fav24_file", False), ("fav24_at_load", True))


def evaluate(c: dict) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    h = load_machine("h200")
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    spread = tcs.work_spread(bool(c["holds"]), bps)
    sp.DISPATCH_PROLOGUE = False
    pace = grid * sp.pipeline_time(cost, bps).cycles / (sms * bps)
    out = dict(api=c["api"], stages=c["stages"], N=c["N"], grid=grid, blocks_per_sm=bps, spread=round(spread, 4))
    for label, at_load in VARIANTS:
        sp.FAVOURED_AT_LOAD = at_load
        out[label] = round(sp.grid_cycles(cost, grid, sms, bps, 24, h.l2_favoured_share, spread).cycles / pace, 4)
    sp.FAVOURED_AT_LOAD = True
    return out


def main() -> None:
    rows = dispatch36.round34_rows(evaluate)
    write_rows(HERE / "ends38.csv", rows)
    y = np.array([r["measured"] for r in rows])
    for label, _ in VARIANTS:
        x = np.array([r[label] for r in rows])
        print(f"{label:14s} {agreement(x, y)}")


if __name__ == "__main__":
    main()
