"""Round 38 (issue 12), offline: round 31's drift fit with S in the form.

    python validation/h200/round38/drift38.py      # -> drift38.csv, ~5 s

Round 31 (``../round31/drift31.py``) fitted how fast a launch's waves spread, g x wave, on the mma.sync launches at
4096 and kept g = k x blocks per SM (held-out rms 0.16). The traced spread of the 64x64 tile grows with S at equal
blocks per SM (round 37), so the same fit is repeated here with S in the form, on the same points, fit set and held-out
set (mma.sync at 8192, every WMMA launch).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for d in ("", "round30", "round31"):
    sys.path.insert(0, str(HERE.parent / d))
import drift31  # noqa: E402
import process30  # noqa: E402
from h200_io import write_rows  # noqa: E402

FORMS = {"constant": lambda L: 1.0, "blocks": lambda L: L["bps"], "S": lambda L: L["S"],
         "blocks x S": lambda L: L["bps"] * L["S"], "blocks x sqrt(S)": lambda L: L["bps"] * math.sqrt(L["S"])}


def launches() -> list[dict]:
    out = []
    for r in process30.launches():
        if r["copy"] != "1":
            continue
        x = drift31.wave_spreads(r)
        out.append(dict(S=int(r["stages"]), bps=int(r["blocks_per_sm"]), x=x, held=len(x) >= 3 and x[-1] < drift31.HELD,
                        fit=r["api"] == "mma" and int(r["M"]) == 4096))
    return out


def fit(a, subset: list[dict]) -> float:
    num = den = 0.0
    for L in subset:
        for w, v in drift31.points(L["x"]):
            num += a(L) * w * v
            den += (a(L) * w) ** 2
    return num / den


def rms(a, k: float, subset: list[dict]) -> float:
    e = [min(k * a(L) * w, 0.9) - v for L in subset for w, v in enumerate(L["x"]) if w >= 1]
    return math.sqrt(sum(d * d for d in e) / len(e))


def main() -> None:
    drifting = [L for L in launches() if not L["held"]]
    fit_set = [L for L in drifting if L["fit"]]
    held_out = [L for L in drifting if not L["fit"]]
    rows = []
    for name, a in FORMS.items():
        k = fit(a, fit_set)
        rows.append(dict(form=name, k=round(k, 4), rms_fit_set=round(rms(a, k, fit_set), 3),
                         rms_held_out=round(rms(a, k, held_out), 3), fit_launches=len(fit_set), held_out_launches=len(held_out)))
        print(f"{name:16s} k = {k:.4f}  rms fit set {rows[-1]['rms_fit_set']:.3f}, held out {rows[-1]['rms_held_out']:.3f}")
    write_rows(HERE / "drift38.csv", rows)


if __name__ == "__main__":
    main()
