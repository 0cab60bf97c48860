"""How partner offsets spread about their wave's mean, rounds 15-21 -> spread19.csv.

    python validation/h200/round19/spread19.py       # ~1 min (reads the rounds' trace archives)

Every traced launch: the partners' offsets (``drift_law14.pairs``: block tm of block column c against block tm of
c + 1, less than half a block apart) over their wave's mean, in waves whose mean is above 0.03 of a block; the
10/25/50/75/90 % quantiles per launch, and pooled by the launch's mean offset: 0.05-0.13 of a block ("edge": the
columns drift part of the time), and the rest. The exponential distribution's quantiles are the last row.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

H200 = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(H200), str(H200 / "round5"), str(H200 / "round12"), str(H200 / "round14"), str(H200 / "round15"),
                str(H200 / "round19")]
import drift_law14 as dl  # noqa: E402
import process12 as p12  # noqa: E402
import process15 as p15  # noqa: E402
from h200_io import write_rows  # noqa: E402

Q = (10, 25, 50, 75, 90)


def scaled(start, end, N: int) -> tuple[np.ndarray, float]:
    """Partner offsets over their wave's mean (waves with a mean above 0.03), and the launch's mean offset."""
    off, wave = dl.pairs(start, end, N)
    n = np.bincount(wave)
    mean = np.bincount(wave, off) / np.maximum(n, 1)
    keep = mean[wave] > 0.03
    return off[keep] / mean[wave][keep], float(mean[n > 0].mean())


def main(rounds=(15, 16, 17, 18, 19, 20, 21)) -> list[dict]:
    rows, pool = [], {"edge": [], "rest": []}
    for R in rounds:
        rnd = p15.ROUNDS[R]
        if not rnd.npz.exists():
            continue
        tr = p12.load12((rnd.npz,))
        for key in sorted(tr):
            N = int(key.split("_")[0])
            smid, start, end = tr[key]
            z, m = scaled(start, end, N)
            group = "edge" if 0.05 <= m <= 0.13 else "rest"
            if len(z):
                pool[group].append(z)
            q = np.percentile(z, Q) if len(z) else [np.nan] * len(Q)
            rows.append(dict(round=R, launch=key, N=N, mean_offset=round(m, 3), group=group, pairs=len(z),
                             **{f"q{p}": round(float(x), 2) for p, x in zip(Q, q)}))
    for g, zs in pool.items():
        z = np.concatenate(zs)
        rows.append(dict(round="all", launch=f"pooled {g}", N="", mean_offset="", group=g, pairs=len(z),
                         **{f"q{p}": round(float(x), 2) for p, x in zip(Q, np.percentile(z, Q))}))
    rows.append(dict(round="", launch="exponential", N="", mean_offset="", group="", pairs="",
                     **{f"q{p}": round(float(-np.log(1 - p / 100)), 2) for p in Q}))
    write_rows(H200 / "round19" / "spread19.csv", rows)
    return rows


if __name__ == "__main__":
    for r in main():
        print(r)
