"""Round 37 (issue 12), offline: would the traced spread of block times put the 64x64 tile's S order right at 4096?

    python validation/h200/round37/spread37.py    # first: spread37.csv (~10 s)
    python validation/h200/round37/oracle37.py    # ~10 min on 2 cores (round 36's captures in /tmp/capture36) -> oracle37.csv

The dispatch model spreads block times by ``tc_schedule.work_spread``: round 31's drift rate, DRIFT_PER_WAVE x blocks
per SM (fitted on block-start traces), which grows with blocks per SM -- 0.29 / 0.25 / 0.25 / 0.21 of a block for
mma.sync's S = 1..4 at 4096. Round 30's traces spread the first wave's block times the other way: 0.23 / 0.28 / 0.37 /
0.38 (``spread37.csv``, 5-95 % range over the median). This script runs the model as shipped on the 64x64 tile at
M = N = K = 4096, both APIs, once with the rule's spread and once with the traced one (the range over round 31's
``EVEN_SPREAD``, as ``work_spread`` converts), and reports each launch's end over its pace and the S order of the
whole launch's cycles. An oracle, not a model: the traced spreads are these launches' own.
"""
from __future__ import annotations

import csv
import pickle
import sys
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path.insert(0, str(H200))
sys.path.insert(0, str(H200 / "round36"))
from h200_io import write_rows  # noqa: E402
import dispatch36  # noqa: E402  (round 36's captured step costs)


def evaluate(job: tuple) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    api, S, traced = job
    c = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())
    h = load_machine("h200")
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    full = sp.pipeline_time(cost, bps).cycles
    out = dict(api=api, stages=S, blocks_per_sm=bps)
    for label, spread in (("rule", tcs.work_spread(bool(c["holds"]), bps)), ("traced", min(traced / tcs.EVEN_SPREAD, 1.0))):
        cyc = sp.grid_cycles(cost, grid, sms, bps, h.l2_favoured_sms or 0, h.l2_favoured_share or 1.0, spread).cycles
        out.update({f"spread_{label}": round(spread, 4), f"end_{label}": round(cyc / (grid * full / (sms * bps)), 4),
                    f"cycles_{label}": round(cyc)})
    return out


def main() -> None:
    traced = {(r["api"], int(r["stages"])): float(r["range_5_95"]) for r in csv.DictReader((HERE / "spread37.csv").open())
              if r["kernel"] == "mma_64x64_w2x2" and r["M"] == "4096"}
    meas = {(r["api"], int(r["stages"])): float(r["span_over_steady"]) for r in csv.DictReader((H200 / "round34" / "compare34.csv").open())
            if r["N"] == "4096"}
    jobs = [(api, S, traced[(api, S)]) for api in ("mma", "wmma") for S in (1, 2, 3, 4)]
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(evaluate, jobs, chunksize=1)
    for r in rows:
        r["end_measured"] = meas[(r["api"], r["stages"])]
    write_rows(HERE / "oracle37.csv", rows)
    for r in rows:
        print(f"{r['api']:4} S={r['stages']} ({r['blocks_per_sm']} per SM): spread rule {r['spread_rule']:.3f} traced "
              f"{r['spread_traced']:.3f}; end rule {r['end_rule']:.3f} traced {r['end_traced']:.3f} measured {r['end_measured']:.3f}")
    for api in ("mma", "wmma"):
        by = {r["stages"]: r for r in rows if r["api"] == api}
        for label in ("rule", "traced"):
            print(f"{api:4} {label:6}: S = 1's cycles over S = 1..4's "
                  + " ".join(f"{by[1][f'cycles_{label}'] / by[S][f'cycles_{label}']:.3f}" for S in (1, 2, 3, 4)))


if __name__ == "__main__":
    main()
