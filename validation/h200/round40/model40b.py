"""Round 40b (issue 12): the dispatch model on round 40b's new sizes (64x64, M = K = 4096, N = 3840, 3904, 4032, 4160,
4224; S = 1 and 2, both APIs), before this round (each block its own work) and now (co-started blocks together),
against the H200's ends (ends40b.csv). Predicted after the run, from nothing in it but each launch's clock.

    python validation/h200/round40/model40b.py   # ~20 min on 2 cores (captures into /tmp/capture36) -> model40b.csv
"""
from __future__ import annotations

import csv
import pickle
import sys
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round36", "round28", "round3"):
    sys.path.insert(0, str(H200 / d))
from h200_io import write_rows  # noqa: E402
import dispatch36  # noqa: E402

NEW = (3840, 3904, 4032, 4160, 4224)


def evaluate(c: dict) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    h = load_machine("h200")
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    pace = grid * sp.pipeline_time(cost, bps).cycles / (sms * bps)
    spread = tcs.work_spread(bool(c["holds"]), bps)
    ends = {label: sp.grid_cycles(cost, grid, sms, bps, h.l2_favoured_sms, h.l2_favoured_share, spread, even).cycles
            for label, even in (("before", None), ("now", h.sm_even_copy_groups))}
    return dict(api=c["api"], stages=c["stages"], N=c["N"], blocks_per_sm=bps, spread=round(spread, 4),
                **{k: round(v / pace, 4) for k, v in ends.items()})


def main() -> None:
    with (HERE / "ends40b.csv").open() as f:
        meas = {(r["api"], int(r["stages"]), int(r["N"])): r for r in csv.DictReader(f) if r["M"] == "4096"}
    jobs = [(api, S, n, float(meas[(api, S, n)]["sm_mhz"])) for api in ("mma", "wmma") for S in (1, 2) for n in NEW]
    todo = [j for j in jobs if not (dispatch36.CACHE / ("%s_%d_%d.pkl" % j[:3])).exists()]
    with get_context("spawn").Pool(2, maxtasksperchild=1) as pool:
        pool.map(dispatch36.capture, todo, chunksize=1)
    caps = [pickle.loads((dispatch36.CACHE / ("%s_%d_%d.pkl" % j[:3])).read_bytes()) for j in jobs]
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(evaluate, caps, chunksize=1)
    for r in rows:
        r["measured"] = float(meas[(r["api"], r["stages"], r["N"])]["span_over_steady"])
    write_rows(HERE / "model40b.csv", rows)
    for r in rows:
        print(f"{r['api']:4} S={r['stages']} N={r['N']}: measured {r['measured']:.3f}  before {r['before']:.3f}  "
              f"now {r['now']:.3f}")


if __name__ == "__main__":
    main()
