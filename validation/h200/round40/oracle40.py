"""Round 40 (issue 12), offline: do an SM's slots that free together, refilled together, give round 34's launch ends?

    python validation/h200/round40/oracle40.py   # ~25 min on 2 cores (round 36's captures in /tmp/capture36) -> oracle40.csv

Round 39 found an SM serving its blocks in two ways: evenly, so that its co-started blocks end together (the copy-only
benchmark, copy39.csv, below ~12 copy groups in flight on an SM; the GEMM traces at S <= 2), or oldest first (above).
The dispatch model (``sm_pipeline.dispatch_cycles``) spreads every block's work on its own, so an SM's slots free one
at a time and the last part-wave spreads over many SMs. Here the same fluid model (round 39's loop, ``oracle39.fluid``)
runs round 34's 40 launches (64x64, M = K = 4096, N = 3712..4608) with:

* ``shipped``: dispatch_cycles as shipped (each block its own work);
* ``cohort``: the blocks an SM takes at one instant share one work (drawn from the same spread), so they end together
  and the SM's slots refill together: the last part-wave sits on few, full SMs;
* ``split``: ``cohort`` where the copy-only benchmark serves an SM's blocks evenly (its span at the GEMM's groups in
  flight and blocks per SM below ``EVEN_SPAN``), ``shipped`` where it orders them;
* ``split_age``: ``split`` with the benchmark's age weights where it orders them (round 39's ``copy_age_spread``);
* ``model``: the model as it now ships (``sm_even_copy_groups: 12`` in machines/h200.yaml, i.e. ``split``), in its
  one realisation (checked against this script's loop).

No GEMM timing or trace goes into any variant: the spread is round 31's rule, the even/ordered split and the age
weights come from the copy-only benchmark. Each launch's cycles over its steady pace, averaged over ``REALISATIONS``
shifts of the spread's sequence (round 37: one realisation's end moves by up to 2 %), against round 34's measured
``span_over_steady``; then the whole launches at 4096 as S ratios beside the H200's per SM cycle.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round39", "round36", "round28", "round3"):
    sys.path.insert(0, str(H200 / d))
from h200_io import agreement, write_rows  # noqa: E402
import dispatch36  # noqa: E402
import oracle39  # noqa: E402

VARIANTS = ("shipped", "cohort", "split", "split_age", "model")
REALISATIONS = 4
EVEN_SPAN = 0.05  # copy39 span under which co-started blocks end together (GEMM keys: <= 0.035 at <= 12, >= 0.127 above)


def copy_span() -> dict:
    """(S', k) -> the copy-only benchmark's rank span (round 39b's device, a barrier per k-step)."""
    with (H200 / "round39" / "copy39.csv").open() as f:
        return {(int(r["S"]), int(r["k"])): float(r["span"]) for r in csv.DictReader(f)
                if r["run"] == "39b" and r["barrier"] == "1"}


def evaluate(c: dict) -> dict:
    L = oracle39.launch(c)
    key = (max(c["stages"] - 1, 1), L["bps"])
    even = copy_span()[key] < EVEN_SPAN
    age_w = oracle39.copy_profiles()[key]
    shifts = [r / REALISATIONS for r in range(REALISATIONS)]
    setups = dict(shipped=(None, False), cohort=(None, True), split=(None, even),
                  split_age=(None if even else age_w, even))
    ends = {v: float(np.mean([L["run"](s, w, co) for s in shifts])) for v, (w, co) in setups.items()}
    # the model as it now ships (machines/h200.yaml's sm_even_copy_groups): one realisation, ``split`` at shift 0
    model = _shipped_now(c)
    check = L["run"](0.0, None, even)
    if abs(check - model) > 1e-6 * model:
        raise SystemExit(f"{c['api']} S={c['stages']} N={c['N']}: split gives {check:.0f}, dispatch_cycles {model:.0f}")
    ends["model"] = model
    return dict(api=c["api"], stages=c["stages"], N=c["N"], grid=L["grid"], blocks_per_sm=L["bps"],
                spread=round(L["spread"], 4), even=int(even), **{k: round(v / L["pace"], 4) for k, v in ends.items()})


def _shipped_now(c: dict) -> float:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    h = load_machine("h200")
    spread = tcs.work_spread(bool(c["holds"]), c["bps"])
    return sp.grid_cycles(c["cost"], c["grid"], c["sms"], c["bps"], h.l2_favoured_sms, h.l2_favoured_share, spread,
                          h.sm_even_copy_groups).cycles


def main() -> None:
    rows = dispatch36.round34_rows(evaluate)
    write_rows(HERE / "oracle40.csv", rows)
    y = np.array([r["measured"] for r in rows])
    for v in VARIANTS:
        x = np.array([r[v] for r in rows])
        print(f"{v:9s} {agreement(x, y)}")
    for r in rows:
        print(f"{r['api']:4} S={r['stages']} N={r['N']} even={r['even']}: measured {r['measured']:.3f}  "
              + "  ".join(f"{v} {r[v]:.3f}" for v in VARIANTS))


if __name__ == "__main__":
    main()
