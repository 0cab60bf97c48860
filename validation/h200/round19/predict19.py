"""A round's predictions (19 or later), from its stored model runs (roundR/gridR.json) -> roundR/predictionsR.csv,
written before measuring.

    python validation/h200/round19/predict19.py [R]       # R = 19 (default), 20

Per size: block columns a wave C, slot groups g = ceil(C), shortfall d, round 14's rate r, where the offset settles
(g r / d), gemmsim's mean partner offset over the launch and its DRAM bytes (``simulate_memory_drifting``: the
weighted mean of the stored runs), the lockstep's bytes, and what the previous rule gave (round 18's criterion:
lockstep where r / d < 0.03, else the law's offsets min(1 / g, r (w + 1/2)) through the same runs, uniform).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
import model_grid19 as mg  # noqa: E402
from h200_io import write_rows  # noqa: E402


def previous_rule(N: int, runs: dict) -> float:
    T = N // 16
    C = 1056 / T
    g = math.ceil(C)
    d = g - C
    r = 0.0048 * (T / 352) ** 3
    if d > 0 and r / d < 0.03:
        return runs[repr(0.0)]
    xs = sorted(float(k) for k in runs)
    off = np.minimum(1 / g, r * (np.arange(-(-T * T // 1056)) + 0.5))
    return float(np.mean(np.interp(off, xs, [runs[repr(x)] for x in xs])))


def main(R: int = 19) -> None:
    import process15 as p15

    rnd = p15.ROUNDS[R]
    grid = p15.model_runs(rnd)
    rows = []
    for N in rnd.sizes:
        T = N // 16
        C = 1056 / T
        g = math.ceil(C)
        d = g - C
        r = 0.0048 * (T / 352) ** 3
        own = mg.model_bytes(grid, N)
        rows.append(dict(N=N, columns_per_wave=round(C, 3), groups=g, shortfall=round(d, 3), rate=round(r, 5),
                         settles=round(g * r / d, 3) if d else "", model_offset_mean=round(p15.model_offset_mean(N), 3),
                         model_gb=round(own / 1e9, 2), lockstep_gb=round(grid[str(N)][repr(0.0)] / 1e9, 2),
                         previous_rule_gb=round(previous_rule(N, grid[str(N)]) / 1e9, 2)))
    write_rows(rnd.dir / f"predictions{R}.csv", rows)
    for r in rows:
        print(r)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent / "round15"))
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 19)
