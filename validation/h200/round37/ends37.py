"""Round 37 (issue 12), offline: a block's fill and drain as a wait in the dispatch model, against round 34's ends.

    python validation/h200/round37/ends37.py     # ~25 min on 2 cores (reuses round 36's captures in /tmp/capture36)
                                                  # -> ends37.csv, correlations printed

Round 36's dispatch model (``sm_pipeline.dispatch_cycles``) ran each block's whole pipeline time -- its prologue's
loaded copy latency and its epilogue included -- as work at the block's rate. A block waiting for its first copies
takes none of the chip's rate, though: the SM's other blocks, out of step with it, use what it leaves. Round 37
(``DISPATCH_PROLOGUE``) makes the fill and drain (the pipeline's time for k blocks less its k steady steps) a wait,
at the load the block starts into. For each of round 34's 40 launches (64x64 tile, M = K = 4096, N = 3712..4608,
mma.sync and WMMA, S = 1..4), at the machine file's favoured SMs and the drift rule's spread:

* ``round36``, ``round37``: the whole launch over its steady pace (all slots running: k blocks' steady steps), the
  measured ``span_over_steady`` beside them;
* ``cycles_37_over_36``: the whole launch's cycles, round 37 over round 36 (the fill's share of a block's time).

Nothing here is fitted to round 34's ends or to any timing.
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


def evaluate(c: dict) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    h = load_machine("h200")
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    spread = tcs.work_spread(bool(c["holds"]), bps)
    full = sp.pipeline_time(cost, bps)
    out = dict(api=c["api"], stages=c["stages"], N=c["N"], grid=grid, blocks_per_sm=bps, spread=round(spread, 4),
               fill_share=round(1 - cost.steps * full.step_clk / full.cycles, 4))
    cyc = {}
    for label, on in (("round36", False), ("round37", True)):
        sp.DISPATCH_PROLOGUE = on
        cyc[label] = sp.grid_cycles(cost, grid, sms, bps, h.l2_favoured_sms or 0, h.l2_favoured_share or 1.0,
                                    spread).cycles
        busy = cost.steps * full.step_clk if on else full.cycles
        out[label] = round(cyc[label] / (grid * busy / (sms * bps)), 4)
    sp.DISPATCH_PROLOGUE = True
    out["cycles_37_over_36"] = round(cyc["round37"] / cyc["round36"], 4)
    return out


def main() -> None:
    rows = dispatch36.round34_rows(evaluate)
    write_rows(HERE / "ends37.csv", rows)
    y = np.array([r["measured"] for r in rows])
    for label in ("round36", "round37"):
        x = np.array([r[label] for r in rows])
        print(f"{label}: {agreement(x, y)}")
    for r in rows:
        print(f"{r['api']:4} S={r['stages']} N={r['N']}: measured {r['measured']:.3f}  round36 {r['round36']:.3f}  "
              f"round37 {r['round37']:.3f}  fill {r['fill_share']:.3f}  cycles 37/36 {r['cycles_37_over_36']:.3f}")


if __name__ == "__main__":
    main()
