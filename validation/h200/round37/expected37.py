"""Round 37 (issue 12), offline: the dispatch model's launch end as an expectation over realisations -- a sketch.

    python validation/h200/round37/expected37.py    # ~10 min on 2 cores (round 36's captures in /tmp/capture36) -> expected37.csv

``jitter37.py`` shows one realisation of the end (block i's work the i-th golden-ratio point) jumping up to 2 % between
spreads 0.01 apart. Here each 64x64 launch at M = N = K = 4096 (both APIs, S = 1..4, the machine file's favoured SMs
and the rule's spread) is run over ``REALISATIONS`` realisations, the sequence shifted by r / REALISATIONS, and the
whole launch's cycles averaged. Not in the model: ``fluid_dispatch`` is called directly with the shifted work.
"""
from __future__ import annotations

import pickle
import sys
from multiprocessing import get_context
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path.insert(0, str(H200))
sys.path.insert(0, str(H200 / "round36"))
from h200_io import write_rows  # noqa: E402
import dispatch36  # noqa: E402  (round 36's captured step costs)

REALISATIONS = 8


def expected(job: tuple) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    api, S = job
    h = load_machine("h200")
    c = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    spread = tcs.work_spread(bool(c["holds"]), bps)
    one = sp.grid_cycles(cost, grid, sms, bps, h.l2_favoured_sms, h.l2_favoured_share, spread)
    full = one.resident.cycles
    # dispatch_cycles' rate and caps, as it builds them (DISPATCH_PROLOGUE off)
    free = sp.unloaded(cost)
    known = sorted({1, (1 + bps) // 2, bps})
    sm_rate = [j * max(1.0 / sp.pipeline_time(free, j).cycles, 1.0 / full) for j in known]
    caps = {j: float(np.interp(j, known, sm_rate)) / j for j in range(1, bps + 1)}
    weight = np.ones(sms)
    weight[(np.arange(h.l2_favoured_sms) * sms) // h.l2_favoured_sms] = h.l2_favoured_share
    ends = []
    for r in range(REALISATIONS):
        work = 1.0 + spread * ((np.arange(grid) * sp.GOLDEN + r / REALISATIONS) % 1.0 - 0.5)
        t, _ = sp.fluid_dispatch(grid, sms, bps, bps, caps.__getitem__, sms * bps / full, weight, work)
        ends.append(t)
    if abs(ends[0] - one.cycles) > 1e-6 * one.cycles:
        raise SystemExit(f"{api} S={S}: realisation 0 gives {ends[0]:.0f}, dispatch_cycles {one.cycles:.0f}")
    pace = grid * full / (sms * bps)
    return dict(api=api, stages=S, blocks_per_sm=bps, spread=round(spread, 4), end_one=round(one.cycles / pace, 4),
                end_mean=round(float(np.mean(ends)) / pace, 4), end_sd=round(float(np.std(ends)) / pace, 4),
                cycles_mean=round(float(np.mean(ends))))


def main() -> None:
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(expected, [(api, S) for api in ("mma", "wmma") for S in (1, 2, 3, 4)], chunksize=1)
    write_rows(HERE / "expected37.csv", rows)
    for r in rows:
        print(f"{r['api']:4} S={r['stages']}: end one {r['end_one']:.3f}, mean of {REALISATIONS} {r['end_mean']:.3f} "
              f"(sd {r['end_sd']:.3f})")
    for api in ("mma", "wmma"):
        by = {r["stages"]: r["cycles_mean"] for r in rows if r["api"] == api}
        print(f"{api:4}: S = 1's mean cycles over S = 1..4's " + " ".join(f"{by[1] / by[S]:.3f}" for S in (1, 2, 3, 4)))


if __name__ == "__main__":
    main()
