"""Round 38 (issue 12), offline: how much a favoured SM gains at each S, and what the favoured count does to the S order.

    python validation/h200/round38/favoured38.py            # -> favoured38.csv, ~1 min (round 36's captures in /tmp/capture36)
    python validation/h200/round38/favoured38.py dispatch   # + dispatch38.csv, ~5 min on 2 cores

The dispatch model gives the machine file's favoured SMs ``l2_favoured_share`` (1.41, round 35's copy benchmark: pure
copies, every SM asking all the time) times the others' part of the chip, up to their cap (``sm_pipeline.water_fill``).
Under that cap every S gains about the same (1.25-1.29). The traces say otherwise: mid-launch, the favoured SMs' blocks
take 0.85-0.91 of the others' time at mma.sync S = 1 and 0.69-0.83 at S >= 2 (rounds 30, 35b and 38b, ``traced``).

A mechanism (in the model since this round: ``sm_pipeline.FAVOURED_AT_LOAD``): a favoured SM's copies wait 1 / share as long in the chip's queues, and the rest of
its step (its own path, pipes, barriers) is unchanged. Its step is then ``sm_pipeline._pipeline_time`` at the copy
latency L0 + W / share, where the others' is at L0 + W (W: the loaded queue wait ``pipeline_time`` settles on). A
block that waits for each copy (S = 1) gains only on that wait; one with copies in flight throughout gains nearly the
whole share. ``model_ratio``: the favoured SM's step over the others'.

``dispatch``: each 64x64 launch at 4096 through ``fluid_dispatch`` (the rule's spread, 4 shifted realisations as in
round 37's ``expected37``) with 12 or 24 favoured SMs, at the machine file's share (``file``) or the mechanism's
(``at_load``); S's mean cycles over S = 1's. ``fluid_dispatch`` is called directly, so the flag does not matter here.
"""
from __future__ import annotations

import csv
import pickle
import sys
from multiprocessing import get_context
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round30", "round35", "round36"):
    sys.path.insert(0, str(H200 / d))
from h200_io import write_rows  # noqa: E402

REALISATIONS = 4


def favoured_step_ratio(cost, blocks: int, share: float) -> float:
    """A favoured SM's steady step over the others' (written here first; now the model's own,
    ``sm_pipeline.favoured_step_ratio``)."""
    from gemmsim.models import sm_pipeline as sp

    return sp.favoured_step_ratio(cost, blocks, share)


def traced() -> dict:
    """(device, api, S) -> the favoured SMs' mean block time over the others', mid-launch (process35's measure)."""
    import process30
    import process35

    out = {}
    for r in process30.launches(sizes=(4096,)):
        if r["copy"] == "1" and "64x64" in r["kernel"]:
            st, en = r["start"].astype(float), r["end"].astype(float)
            mid = (st > 0.2 * en.max()) & (en < 0.8 * en.max())
            fast, ratio = process35.fast_sms(r["sm"], en - st, mid)
            out[("30", r["api"], int(r["stages"]))] = (len(fast), ratio)
    for path in (H200 / "round35" / "fast35.csv", HERE / "fast38.csv"):
        with path.open() as f:
            for r in csv.DictReader(f):
                if r["launch"].startswith(("mma ", "wmma ")):
                    api, _, s, _ = r["launch"].split()
                    out[(r["source"], api, int(s[2:]))] = (int(r["fast_sms"]), float(r["fast_over_other"]))
    return out


def _ratio(job: tuple) -> dict:
    from gemmsim.machine import load_machine

    api, S = job
    import dispatch36

    c = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())
    h = load_machine("h200")
    return dict(api=api, stages=S, blocks_per_sm=c["bps"],
                model_ratio=round(favoured_step_ratio(c["cost"], c["bps"], h.l2_favoured_share), 4))


def _dispatch(job: tuple) -> tuple:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs
    import dispatch36

    api, S, fav, mode, r = job
    h = load_machine("h200")
    c = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    share = h.l2_favoured_share if mode == "file" else 1.0 / favoured_step_ratio(cost, bps, h.l2_favoured_share)
    full = sp.pipeline_time(cost, bps).cycles
    free = sp.unloaded(cost)
    known = sorted({1, (1 + bps) // 2, bps})  # dispatch_cycles' caps, as it builds them (DISPATCH_PROLOGUE off)
    sm_rate = [j * max(1.0 / sp.pipeline_time(free, j).cycles, 1.0 / full) for j in known]
    caps = {j: float(np.interp(j, known, sm_rate)) / j for j in range(1, bps + 1)}
    weight = np.ones(sms)
    weight[(np.arange(fav) * sms) // fav] = share
    spread = tcs.work_spread(bool(c["holds"]), bps)
    work = 1.0 + spread * ((np.arange(grid) * sp.GOLDEN + r / REALISATIONS) % 1.0 - 0.5)
    t, _ = sp.fluid_dispatch(grid, sms, bps, bps, caps.__getitem__, sms * bps / full, weight, work)
    return api, S, fav, mode, t


def main(dispatch: bool) -> None:
    seen = traced()
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(_ratio, [(api, S) for api in ("mma", "wmma") for S in (1, 2, 3, 4)], chunksize=1)
        for r in rows:
            for dev in ("30", "35b", "38b"):
                n, q = seen.get((dev, r["api"], r["stages"]), (0, 1.0))
                r[f"traced_{dev}_fast_sms"], r[f"traced_{dev}_ratio"] = n, round(q, 4)
        write_rows(HERE / "favoured38.csv", rows)
        for r in rows:
            print(f"{r['api']:4} S={r['stages']}: model {r['model_ratio']:.3f}  traced round 30 {r['traced_30_ratio']:.3f} "
                  f"({r['traced_30_fast_sms']} SMs), round 35b {r['traced_35b_ratio']:.3f} ({r['traced_35b_fast_sms']} SMs), "
                  f"round 38b {r['traced_38b_ratio']:.3f} ({r['traced_38b_fast_sms']} SMs)")
        if not dispatch:
            return
        jobs = [(api, S, fav, mode, k) for api in ("mma", "wmma") for S in (1, 2, 3, 4) for fav in (12, 24)
                for mode in ("file", "at_load") for k in range(REALISATIONS)]
        out = pool.map(_dispatch, jobs, chunksize=1)
    mean: dict = {}
    for api, S, fav, mode, t in out:
        mean.setdefault((api, fav, mode, S), []).append(t)
    rows = []
    for api in ("mma", "wmma"):
        for fav in (12, 24):
            for mode in ("file", "at_load"):
                cyc = {S: float(np.mean(mean[(api, fav, mode, S)])) for S in (1, 2, 3, 4)}
                rows.append(dict(api=api, favoured_sms=fav, share=mode, **{f"s{S}_over_s1": round(cyc[S] / cyc[1], 4)
                                                                            for S in (2, 3, 4)}))
                print(f"{api:4} {fav} favoured, share {mode:7}: S / S1 " + " ".join(f"{cyc[S] / cyc[1]:.3f}" for S in (2, 3, 4)))
    write_rows(HERE / "dispatch38.csv", rows)


if __name__ == "__main__":
    main(len(sys.argv) > 1 and sys.argv[1] == "dispatch")
