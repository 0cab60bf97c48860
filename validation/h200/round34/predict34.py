"""Round 34 (issue 12): predictions, written before the run, of how the 64x64 launches end as their last wave fills.

    python validation/h200/round34/predict34.py predict   # -> predictions34.csv (~10 min, 2 processes)
    python validation/h200/round34/predict34.py compare   # -> compare34.csv, after the run (raw/round34.tar.gz)

The observable: the whole launch over its steady pace (``round30/steady30.py``'s span_over_steady: the blocks' L2
bytes per second over the middle 60 % of the launch against the whole launch). Round 30 found 1.12 for S = 1 and
1.04 for S = 3, 4 at N = 4096, where S = 1's part-wave is 0.43 of a wave and S = 3's 0.17. Three predictions per launch:

* whole_rounds: ceil(w) / w, w = blocks / (132 x blocks per SM) -- every wave a round that ends together, the last
  one as long as the others (the most a part-wave can cost);
* pace: 1.0 -- the GPU keeps its pace to the end (the least);
* model: gemmsim's own, the busiest SM's cycles (``sm_pipeline.grid_cycles``: whole rounds, the last one at its
  own smaller load) over all blocks at the full round's pace, for mma.sync, with the launch clock at 1750 MHz.

Expected before the run: S = 1 near whole_rounds x 0.95-1.0 (round 30's S = 1 at 4096: 1.116 against 1.128), S >= 3
within 1.06 at every N. If so, the part-wave costs S = 1 what whole rounds cost and S >= 3 little, whatever the
fraction; if S = 1 follows the pace at some fractions, the 4096 result is a matter of its fraction.
"""
from __future__ import annotations

import csv
import math
import sys
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
sys.path.insert(0, str(HERE.parent / "round3"))
sys.path.insert(0, str(HERE.parent / "round30"))

NS = (3712, 3968, 4096, 4352, 4608)
MK = 4096
SMS = 132
MHZ = 1750.0
BPS = {("mma", 1): 7, ("mma", 2): 6, ("mma", 3): 6, ("mma", 4): 5,  # round 28's occupancy (blocks per SM)
       ("wmma", 1): 6, ("wmma", 2): 7, ("wmma", 3): 7, ("wmma", 4): 5}


def whole_rounds(n: int, bps: int) -> float:
    w = MK // 64 * (n // 64) / (SMS * bps)
    return math.ceil(w) / w


def _model(job: tuple) -> dict:
    S, n = job
    import predict28
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.sim.gpu import simulate_gpu
    import model_vs_measured_tc as mv

    seen = {}
    orig = sp.grid_cycles
    sp.DISPATCH = False  # the lockstep rounds, as predicted (round 36's dispatch model: round36/dispatch36.py)

    def grab(cost, grid, sms, bps, *more):
        out = orig(cost, grid, sms, bps, *more)
        seen.update(grid=grid, bps=bps, cycles=out.cycles, full=out.resident.cycles)
        return out

    sp.grid_cycles = grab
    at = simulate_gpu(mv.machine_at(load_machine("h200"), MHZ), "tensorcore", M=MK, N=n, K=MK, dtype="fp16",
                      **predict28.mma_params("mma_64x64_w2x2", S))
    pace = seen["grid"] / (SMS * seen["bps"]) * seen["full"]
    return dict(api="mma", stages=S, N=n, blocks_per_sm=seen["bps"], model_span_over_steady=round(seen["cycles"] / pace, 4),
                model_tflops=round(at["tflops"], 1))


def predict() -> None:
    jobs = [(S, n) for S in (1, 2, 3, 4) for n in NS]
    with Pool(2) as pool:
        model = {(r["stages"], r["N"]): r for r in pool.map(_model, jobs)}
    rows = []
    for api in ("mma", "wmma"):
        for S in (1, 2, 3, 4):
            for n in NS:
                bps = BPS[(api, S)]
                row = dict(api=api, kernel="mma_64x64_w2x2", stages=S, N=n, blocks=MK // 64 * (n // 64), blocks_per_sm=bps,
                           waves=round(MK // 64 * (n // 64) / (SMS * bps), 3), whole_rounds=round(whole_rounds(n, bps), 4),
                           pace=1.0)
                m = model.get((S, n)) if api == "mma" else None
                row.update(model_span_over_steady=m["model_span_over_steady"] if m else "",
                           model_tflops=m["model_tflops"] if m else "")
                rows.append(row)
    with (HERE / "predictions34.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(r)


def compare() -> None:
    import steady30
    from process30 import launches

    pred = {(r["api"], int(r["stages"]), int(r["N"])): r for r in csv.DictReader((HERE / "predictions34.csv").open())}
    rows = []
    for r in launches(HERE / "raw" / "round34.tar.gz", sizes=NS, tag="34"):
        if r["copy"] != "1" or "64x64" not in r["kernel"]:
            continue
        s = steady30.steady(r)
        p = pred[(r["api"], int(r["stages"]), int(r["N"]))]
        rows.append(dict(api=r["api"], stages=int(r["stages"]), N=int(r["N"]), blocks_per_sm=s["blocks_per_sm"],
                         waves=s["waves"], sm_mhz=r["sm_mhz"], tflops=r["tflops"], rel_err=r["rel_err"],
                         steady_gbps=s["steady_gbps"], span_over_steady=s["span_over_steady"],
                         whole_rounds=p["whole_rounds"], model_span_over_steady=p["model_span_over_steady"],
                         last_wave_spread=s["last_wave_spread"], tail_blocks=s["tail_blocks"], tail_sms=s["tail_sms"],
                         tail_full_sms=s["tail_full_sms"]))
    with (HERE / "compare34.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(f"{r['api']:4} S={r['stages']} N={r['N']} waves {r['waves']:5.2f}: measured {r['span_over_steady']:.3f}  "
              f"whole rounds {float(r['whole_rounds']):.3f}  model {r['model_span_over_steady'] or '-'}  "
              f"tail on {r['tail_sms']} SMs ({r['tail_full_sms']} full)")


if __name__ == "__main__":
    {"predict": predict, "compare": compare}[sys.argv[1]]()
