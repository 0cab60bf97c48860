"""Round 36 (issue 12), offline: the dispatch model (``sm_pipeline.dispatch_cycles``) against round 34's launch ends.

    python validation/h200/round36/dispatch36.py        # ~45 min on 2 cores (~15 with /tmp/capture36 filled)
                                                        # -> dispatch36.csv, correlations printed

For each of round 34's 40 launches (64x64 tile, M = K = 4096, N = 3712..4608, mma.sync and WMMA, S = 1..4) the model's
step cost is captured from ``simulate_gpu`` at the launch's own clock, each launch in a fresh process (the capture
checks that it saw the launch's own grid), and the launch's length over its steady pace (all slots busy) is computed:

* ``rounds``: the lockstep rounds of the busiest SM (``DISPATCH`` off: the model before round 36);
* ``alike``: the dispatch model with every SM alike and every block one unit of work;
* ``fav12`` / ``fav24``: 12 / 24 SMs drawing ``SHARE`` times the others' part of the chip (round 35's copy benchmark:
  12 such SMs on its device, 24 in the GEMM traces of rounds 30, 32 and 34's devices);
* ``*_sp``: the same with the blocks' times spread (``tc_schedule.work_spread``: round 31's drift rate a wave, from
  block-start traces; 0 where the launch holds in step). ``fav12_sp`` is the model as the machine file sets it.

Against round 34's measured span_over_steady (round34/compare34.csv). Nothing here is fitted to it.
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
for d in ("", "round28", "round3"):
    sys.path.insert(0, str(H200 / d))
from h200_io import agreement, write_rows  # noqa: E402

MK = 4096
CACHE = Path("/tmp/capture36")  # captured costs (pickles), reused by later runs of this script
VARIANTS = (("alike", 0, False), ("fav12", 12, False), ("fav24", 24, False), ("alike_sp", 0, True), ("fav12_sp", 12, True),
            ("fav24_sp", 24, True))
SHARE = 1 / 0.708  # round 35, copy35 / fast35: the favoured SMs' time over the others' at saturation, median 0.708


def _job(job: tuple) -> dict:
    api, S, n, mhz = job
    import predict28
    import model_vs_measured_tc as mv
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.sim.gpu import simulate_gpu

    seen = {}
    orig = sp.grid_cycles

    def grab(cost, grid, sms, bps, *a, **k):
        seen.update(cost=cost, grid=grid, sms=sms, bps=bps)
        return orig(cost, grid, sms, bps, *a, **k)

    sp.grid_cycles = grab
    from gemmsim.sim import gpu as sg
    orig_mem = sg._launch_memory

    def grab_mem(*a, **k):
        c = orig_mem(*a, **k)
        seen["holds"] = c.get("tc_holds")
        return c

    sg._launch_memory = grab_mem
    inputs = {(r["kernel"], int(r["S"])): r for r in predict28.read(H200 / "round28" / "inputs28.csv")}
    name = "mma_64x64_w2x2"
    params = predict28.wmma_params(inputs[(name, S)]) if api == "wmma" else predict28.mma_params(name, S)
    simulate_gpu(mv.machine_at(load_machine("h200"), mhz), "tensorcore", M=MK, N=n, K=MK, dtype="fp16", **params)
    sp.grid_cycles = orig
    sg._launch_memory = orig_mem
    grid = (MK // 64) * (n // 64)
    if seen.get("grid") != grid:
        raise SystemExit(f"captured grid {seen.get('grid')} for {api} S={S} N={n}, expected {grid}")
    return dict(api=api, stages=S, N=n, cost=seen["cost"], grid=grid, sms=seen["sms"], bps=seen["bps"],
                holds=seen["holds"])


def capture(job: tuple) -> dict:
    """Capture one launch's cost into CACHE (run in a fresh process per launch)."""
    got = _job(job)
    CACHE.mkdir(exist_ok=True)
    (CACHE / ("%s_%d_%d.pkl" % job[:3])).write_bytes(pickle.dumps(got))
    return got


def evaluate(c: dict) -> dict:
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    sp.DISPATCH_PROLOGUE = False  # round 36 as it shipped: a block's fill and drain are work (round 37 made them a wait)
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    full = sp.pipeline_time(cost, bps)
    pace = grid * full.cycles / (sms * bps)
    spread = 0.0 if c["holds"] else tcs.DRIFT_PER_WAVE * bps / tcs.EVEN_SPREAD
    out = dict(api=c["api"], stages=c["stages"], N=c["N"], grid=grid, blocks_per_sm=bps, holds=c["holds"],
               spread=spread)
    sp.DISPATCH = False
    out["rounds"] = sp.grid_cycles(cost, grid, sms, bps).cycles / pace
    sp.DISPATCH = True
    for label, fav, sd in VARIANTS:
        out[label] = sp.grid_cycles(cost, grid, sms, bps, fav, SHARE, spread if sd else 0.0).cycles / pace
    free = sp.pipeline_time(sp.unloaded(cost), bps).cycles
    out["cap_over_loaded"] = full.cycles / free  # how much faster a full SM runs with the chip otherwise idle
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


def round34_rows(evaluate) -> list[dict]:
    """Round 34's 40 launches, each launch's captured cost (captured into CACHE first where missing) through
    ``evaluate`` (a module-level function, run in a pool of 2), with the launch's measured end cost as ``measured``."""
    meas = {}
    with (H200 / "round34" / "compare34.csv").open() as f:
        for r in csv.DictReader(f):
            meas[(r["api"], int(r["stages"]), int(r["N"]))] = (float(r["span_over_steady"]), float(r["sm_mhz"]))
    jobs = [(api, S, n, mhz) for (api, S, n), (_, mhz) in sorted(meas.items())]
    todo = [j for j in jobs if not (CACHE / ("%s_%d_%d.pkl" % j[:3])).exists()]
    with get_context("spawn").Pool(2, maxtasksperchild=1) as pool:
        pool.map(capture, todo, chunksize=1)
    caps = [pickle.loads((CACHE / ("%s_%d_%d.pkl" % j[:3])).read_bytes()) for j in jobs]
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(evaluate, caps, chunksize=1)
    for r in rows:
        r["measured"] = meas[(r["api"], r["stages"], r["N"])][0]
    return rows


def main() -> None:
    rows = round34_rows(evaluate)
    write_rows(HERE / "dispatch36.csv", rows)
    y = np.array([r["measured"] for r in rows])
    for label in ("rounds",) + tuple(v[0] for v in VARIANTS):
        x = np.array([r[label] for r in rows])
        print(f"{label:7s} {agreement(x, y)}")
    for r in rows:
        print(f"{r['api']:4} S={r['stages']} N={r['N']}: measured {r['measured']:.3f} "
              + " ".join(f"{v[0]} {r[v[0]]:.3f}" for v in (("rounds",),) + VARIANTS) + f" cap {r['cap_over_loaded']:.2f}")


if __name__ == "__main__":
    main()
