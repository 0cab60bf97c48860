"""What a drift between block columns costs in DRAM bytes (naive kernel, column order, N = 5632) -> offset_bytes7.csv.

    python validation/h200/round7/offset_bytes7.py      # ~2 min

Part 1, the model alone: the DRAM bytes of a launch whose block columns start as groups ``delta`` of a block apart
(``simulate_memory(stagger=delta * columns_per_wave, stagger_group=N/16)``), for a grid of ``delta``. Part 2, the
traces: each traced 5632 column-order launch's partners' offset, wave by wave (the median over the partner pairs in
the wave, cohorts7.py's measure), turned into bytes through part 1's curve (linear between grid points) and summed
over the launch -- against ncu's bytes of four other launches of the same configuration (ncu7.csv).

5632 only: there a wave holds exactly three block columns, and the model's placement (slot s on SM s % 132) puts
partners on different SMs, as the H200 does. At 4224 and 8448 (N/16 a multiple of 132) it puts them on one SM,
which the H200 does for 2 % of them, and the curve would not be the hardware's.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round5"))

import model_measured_schedule as mms  # noqa: E402
from process7 import WAVE, launches, write_csv  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402

N = 5632
GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 1 / 3)


def bytes_at(delta: float) -> float:
    """DRAM bytes read by the launch with block columns ``delta`` of a block apart (the model, sampled)."""
    m, spec, occ, L, l1 = mms.setup("naive", N, "column")
    T = N // 16
    c = gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1, stagger=delta * WAVE / T, stagger_group=T)
    return float(c.counters["dram_bytes_read"])


def wave_offsets(d: np.ndarray) -> np.ndarray:
    """Per wave of a traced launch: the median start offset of the partner pairs in that wave, in block times."""
    T = N // 16
    bt = float(np.median(d[:, 3] - d[:, 2]))
    t = (d[:, 2] / bt).reshape(T, T)
    off = np.abs(t[1:] - t[:-1])
    first = (np.arange(T - 1)[:, None] * T + np.arange(T)[None, :]) // WAVE  # wave of the leading block of each pair
    n_waves = -(-T * T // WAVE)
    out = np.full(n_waves, np.nan)
    for w in range(n_waves):
        sel = (first == w) & (off < 0.5)
        if sel.any():
            out[w] = np.median(off[sel])
    return out


def main() -> None:
    rows = []
    curve = []
    for delta in GRID:
        b = bytes_at(delta)
        curve.append(b)
        rows.append(dict(part="model", launch="", delta=round(delta, 4), dram_bytes_read=int(b)))
        print(rows[-1], flush=True)
    ncu = [float(r["dram_bytes_read"]) for r in csv.DictReader((HERE / "ncu7.csv").open())
           if int(r["N"]) == N and r["order"] == "column"]
    for (n, order, ta, tb, rep), d in sorted(launches(), key=lambda x: x[0]):
        if n != N or order != "column" or ta or tb:
            continue
        off = wave_offsets(d)
        off = np.where(np.isnan(off), np.nanmedian(off), off)
        per_wave = np.interp(off, GRID, curve) / len(off)
        rows.append(dict(part="traced launch", launch=rep, delta=round(float(np.mean(off)), 4),
                         dram_bytes_read=int(per_wave.sum())))
        print(rows[-1], f"ncu, four other launches: {min(ncu) / 1e9:.1f}-{max(ncu) / 1e9:.1f} GB", flush=True)
    write_csv("offset_bytes7.csv", rows)


if __name__ == "__main__":
    main()
