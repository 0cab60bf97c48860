"""Round 31 (issue 12): how fast the waves of a tensor-core launch spread, from round 30's block-start traces.

    python validation/h200/round31/drift31.py      # -> drift31.csv (per launch and wave), fit printed; ~5 s

Round 30 traced every block of the S sweep (../round30/raw/round30.tar.gz). The first wave of every launch starts
at once; after it, a wave's starts either stay together (the 128x128 tiles at S = 1, 2) or spread further each wave
until they are spread evenly over a block. This script measures that growth and fits the rate the model uses
(``gemmsim.models.tc_schedule.DRIFT_PER_WAVE``) on one part of the traces, then reports the error on the rest:

* spread of wave w: the 5-95 % range of its block starts over the launch's median block time (round 30's measure:
  ~0.9 for starts spread evenly over a block, ~0 for lockstep); waves of SMs x blocks per SM blocks in launch order;
  the last, partial wave left out;
* the fit: spread_w = g x w (least squares through the origin) on the points before the spread reaches
  ``SATURATED`` (the even spread's 0.9 less the scatter of the saturated waves, 0.75-1.0 in round 30);
* fit set: the mma.sync launches at 4096; held out: mma.sync at 8192 and every WMMA launch. Launches whose waves
  hold together (spread of the last whole wave under ``HELD``) are listed but not fitted: which launches
  hold is the model's own criterion (``tc_schedule.restoring_gain``), not a fit;
* two forms are fitted, g a constant and g = k x blocks per SM; the one with the smaller error on the fit set is kept.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round30"))
import process30  # noqa: E402
from h200_io import write_rows  # noqa: E402

SATURATED = 0.7
HELD = 0.1


def wave_spreads(r: dict) -> list[float]:
    bps, n = int(r["blocks_per_sm"]), len(r["block"])
    wave = process30.SMS * bps
    dur = float(np.median(r["end"] - r["start"]))
    out = []
    for w in range(n // wave):  # whole waves only
        st = r["start"][w * wave:(w + 1) * wave]
        out.append(float((np.percentile(st, 95) - np.percentile(st, 5)) / dur))
    return out


def points(x: list[float]) -> list[tuple[int, float]]:
    """(wave, spread) before saturation, first wave excluded (it is 0 by construction of the fit)."""
    pts = []
    for w in range(1, len(x)):
        if x[w] >= SATURATED:
            break
        pts.append((w, x[w]))
    return pts


def main() -> None:
    rows, launches = [], []
    for r in process30.launches():
        if r["copy"] != "1":
            continue
        x = wave_spreads(r)
        held = len(x) >= 3 and x[-1] < HELD
        fit = r["api"] == "mma" and int(r["M"]) == 4096
        launches.append(dict(api=r["api"], kernel=r["kernel"], S=int(r["stages"]), M=int(r["M"]),
                             bps=int(r["blocks_per_sm"]), x=x, held=held, fit=fit))
        for w, v in enumerate(x):
            rows.append(dict(api=r["api"], kernel=r["kernel"], stages=r["stages"], M=r["M"],
                             blocks_per_sm=r["blocks_per_sm"], wave=w, spread=round(v, 4),
                             held=int(held), fit_set=int(fit)))
    write_rows(HERE / "drift31.csv", rows)

    def fit(form: str, subset: list[dict]) -> float:
        num = den = 0.0
        for L in subset:
            a = 1.0 if form == "constant" else L["bps"]
            for w, v in points(L["x"]):
                num += a * w * v
                den += (a * w) ** 2
        return num / den

    def rms(form: str, k: float, subset: list[dict]) -> float:
        e = [min(k * (1.0 if form == "constant" else L["bps"]) * w, 0.9) - v
             for L in subset for w, v in enumerate(L["x"]) if w >= 1]
        return math.sqrt(sum(d * d for d in e) / len(e))

    drifting = [L for L in launches if not L["held"]]
    fit_set = [L for L in drifting if L["fit"]]
    held_out = [L for L in drifting if not L["fit"]]
    print(f"held launches (spread < {HELD} at the last whole wave): "
          + ", ".join(f"{L['api']} {L['kernel'][4:]} S={L['S']} {L['M']}" for L in launches if L["held"]))
    best = None
    for form in ("constant", "per_block"):
        k = fit(form, fit_set)
        a, b = rms(form, k, fit_set), rms(form, k, held_out)
        print(f"{form:9s}: k = {k:.4f}  rms on the fit set {a:.3f} ({len(fit_set)} launches), held out {b:.3f} "
              f"({len(held_out)} launches; with the spread capped at 0.9)")
        if best is None or a < best[1]:
            best = (form, a, k, b)
    print(f"kept: {best[0]}, k = {best[2]:.4f} (fit-set rms {best[1]:.3f}, held-out rms {best[3]:.3f})")
    for L in held_out:
        a = 1.0 if best[0] == "constant" else L["bps"]
        pred = [min(best[2] * a * w, 0.9) for w in range(len(L["x"]))]
        print(f"  held out {L['api']:4s} {L['kernel'][4:]:14s} S={L['S']} {L['M']}: measured "
              + " ".join(f"{v:.2f}" for v in L["x"][:8]) + "  | fit " + " ".join(f"{v:.2f}" for v in pred[:8]))


if __name__ == "__main__":
    main()
