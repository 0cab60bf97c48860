"""The runaway of the naive kernel's block columns just short of a whole number of columns a wave, measured from the
block-start traces of rounds 15-24 (not from any byte count) -> runaway27.csv and the three ``column_drift`` fields
of machines/h200.yaml (``runaway_rate``, ``runaway_plateau``, ``runaway_end``).

    python validation/h200/round27/runaway27.py            # prints the fit, writes runaway27.csv

- rate: round 24's partner offsets by tenth of a launch (pair offsets, seven launches that run away at 3.83-3.94
  columns a wave): ln(offset in the first tenth at or above 0.6 of even spacing / offset in the first tenth) over the
  waves between them; the median over the launches.
- plateau and end: every launch of rounds 15-24 with 0 < d < 0.75 (d = g - C, a little less than g = ceil(C) block
  columns a wave; q = 2, 3 left out: they hold) at g >= 3: the mean offset over the last five tenths, as a fraction
  of even spacing (1 / g), against d by least squares: plateau (1 - d / end). g = 2 is left out: there the machine's
  rate alone drives the offsets past the plateau (N >= 8576, r >= 0.019 a wave).
Round 26 (4160, 4256, 4320) is not used: it is the held-out check.
"""

from __future__ import annotations

import csv
import math
from fractions import Fraction
from pathlib import Path

import numpy as np

H200 = Path(__file__).resolve().parents[1]
SLOTS = 132 * 8  # the naive 16x16 kernel: 8 blocks on each of 132 SMs


def _shape(N: int) -> tuple[int, int, float, Fraction]:
    T = N // 16
    g = -(-SLOTS // T)
    return T, g, g - SLOTS / T, Fraction(SLOTS, T)


def _tenths(row: dict) -> list[float] | None:
    if row.get("offset_pair_tenths"):
        return [float(x) for x in row["offset_pair_tenths"].split()]
    if row.get("offset_tenth1"):
        return [float(row[f"offset_tenth{i}"]) for i in range(1, 11)]
    return None


def rates() -> list[tuple[int, int, float]]:
    out = []
    for r in csv.DictReader((H200 / "round24" / "drift24.csv").open()):
        N = int(r["N"])
        T, g, _, _ = _shape(N)
        t = _tenths(r)
        k = next((i for i, x in enumerate(t) if x >= 0.6 / g), None)
        if k:
            out.append((N, int(r["launch"]), math.log(t[k] / t[0]) / (k * -(-T * T // SLOTS) / 10)))
    return out


def plateau_points() -> list[tuple[int, int, float, float]]:
    pts = []
    for rnd in range(15, 25):
        path = H200 / f"round{rnd}" / f"drift{rnd}.csv"
        if not path.exists():
            continue
        for r in csv.DictReader(path.open()):
            N = int(r["N"])
            _, g, d, frac = _shape(N)
            t = _tenths(r)
            if g < 3 or t is None or frac.denominator in (2, 3) or not 0 < d < 0.75:
                continue
            pts.append((N, rnd, d, float(np.mean(t[5:])) * g))
    return pts


def main() -> int:
    rs = rates()
    rate = float(np.median([x for *_, x in rs]))
    pts = plateau_points()
    d = np.array([p[2] for p in pts])
    f = np.array([p[3] for p in pts])
    a, b = np.linalg.lstsq(np.c_[np.ones_like(d), d], f, rcond=None)[0]
    plateau, end = float(a), float(-a / b)
    rms = float(np.sqrt(np.mean((f - (a + b * d)) ** 2)))
    out = H200 / "round27" / "runaway27.csv"
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kind", "N", "round_or_launch", "d", "value"])
        for N, launch, x in rs:
            w.writerow(["rate", N, launch, "", round(x, 4)])
        for N, rnd, dd, x in pts:
            w.writerow(["late_fraction", N, rnd, round(dd, 4), round(x, 4)])
    print(f"runaway rate {rate:.3f} a wave (median of {len(rs)} launches, {min(x for *_, x in rs):.3f}-"
          f"{max(x for *_, x in rs):.3f})")
    print(f"plateau {plateau:.3f} of even spacing at d -> 0, reaching 0 at d = {end:.3f} ({len(pts)} launches, "
          f"rms {rms:.3f})")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
