"""Round 38 (issue 12), offline: the two pace corrections round 37 and ``lookups38`` point to, on the S order at 4096.

    python validation/h200/round38/pace38.py     # -> pace38.csv, ~9 min on 2 cores (round 36's captures in /tmp/capture36)

The H200's steady rate of the 64x64 tile is the same at every S (round 30, steady30.csv); the model's per-block pace
is 3 % slower at S = 4 than at S = 1 (round 37). Two parts of that have measurements against them:

* the fill and drain run as work at the block's rate (``sm_pipeline.DISPATCH_PROLOGUE`` off, the default);
* the L2 station's service per copy grows with the memory model's lookups per sector (+1.5 % from S = 1 to 4), where
  ncu's tag requests per sector do not (``lookups38.csv``). ``eq_l2``: every launch's L2 service set to mma.sync
  S = 1's (2.89 cycles per copy), a what-if, not a model.

Each 64x64 launch at M = N = K = 4096 through ``grid_cycles`` at round 37's favoured SMs (12, drawing the file's share:
``FAVOURED_AT_LOAD`` off) and the rule's spread,
over 4 realisations (block i's work the golden-ratio sequence shifted by r / 4, round 37's ``expected37``; realisation
0 is the model itself). Reported: each S's cycles over S = 1's, for realisation 0 and the mean.
"""
from __future__ import annotations

import pickle
import sys
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path.insert(0, str(H200))
sys.path.insert(0, str(H200 / "round36"))
from h200_io import write_rows  # noqa: E402

REALISATIONS = 4
FAVOURED = 12  # the machine file's count when this ran (round 38 set it to 24)
L2_SERVICE = 2.89  # mma.sync S = 1's L2 service per copy in round 36's capture (cycles)


def _job(job: tuple) -> tuple:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs
    import dispatch36

    api, S, prologue, eq_l2, r = job
    sp.DISPATCH_PROLOGUE = prologue
    sp.FAVOURED_AT_LOAD = False  # the model this ran on (before section 6 of the README): 12 SMs at the file's share
    h = load_machine("h200")
    c = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    if eq_l2:
        cost = replace(cost, queues=tuple((n, L2_SERVICE if n == "l2" else s, m) for n, s, m in cost.queues))
    spread = tcs.work_spread(bool(c["holds"]), bps)
    orig = sp.fluid_dispatch

    def shifted(grid_, sms_, bps_, first, cap, rate, weight, work=None, *a, **k):
        w = 1.0 + spread * ((np.arange(grid_) * sp.GOLDEN + r / REALISATIONS) % 1.0 - 0.5) if spread else work
        return orig(grid_, sms_, bps_, first, cap, rate, weight, w, *a, **k)

    sp.fluid_dispatch = shifted
    try:
        t = sp.grid_cycles(cost, grid, sms, bps, FAVOURED, h.l2_favoured_share, spread).cycles
    finally:
        sp.fluid_dispatch = orig
    return api, S, prologue, eq_l2, r, t


def main() -> None:
    jobs = [(api, S, p, e, r) for api in ("mma", "wmma") for S in (1, 2, 3, 4) for p in (False, True)
            for e in (False, True) for r in range(REALISATIONS)]
    with get_context("spawn").Pool(2) as pool:
        out = pool.map(_job, jobs, chunksize=1)
    got: dict = {}
    for api, S, p, e, r, t in out:
        got.setdefault((api, p, e, S), {})[r] = t
    rows = []
    for api in ("mma", "wmma"):
        for p in (False, True):
            for e in (False, True):
                one = {S: got[(api, p, e, S)][0] for S in (1, 2, 3, 4)}
                mean = {S: float(np.mean(list(got[(api, p, e, S)].values()))) for S in (1, 2, 3, 4)}
                row = dict(api=api, prologue_as_wait=int(p), eq_l2=int(e))
                row.update({f"one_s{S}_over_s1": round(one[S] / one[1], 4) for S in (2, 3, 4)})
                row.update({f"mean_s{S}_over_s1": round(mean[S] / mean[1], 4) for S in (2, 3, 4)})
                rows.append(row)
                print(f"{api:4} fill {'wait' if p else 'work'}, L2 {'equal ' if e else 'as is '}: one "
                      + " ".join(f"{one[S] / one[1]:.3f}" for S in (2, 3, 4)) + "  mean "
                      + " ".join(f"{mean[S] / mean[1]:.3f}" for S in (2, 3, 4)))
    write_rows(HERE / "pace38.csv", rows)


if __name__ == "__main__":
    main()
