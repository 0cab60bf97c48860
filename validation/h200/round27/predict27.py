"""Round 27's predictions, written before measuring (issue 11): gemmsim's mean partner offset and DRAM bytes of the
naive kernel in column order at N = 2848, 3440, 4384, 5920 with the runaway (machines/h200.yaml as committed) and
with round 19's pull-back law alone, from the memory model's runs in grid27.json (round19/model_grid19.py).

    python validation/h200/round19/model_grid19.py validation/h200/round27/grid27.json 2848 3440 4384 5920
    python validation/h200/round27/predict27.py      # -> predictions27.csv
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent), str(HERE.parent / "round5")]
import model_measured_schedule as mms  # noqa: E402
from h200_io import write_rows  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402

SIZES = (2848, 3440, 4384, 5920)


def _bytes(m, spec, L, occ, runs: dict) -> tuple[float, float]:
    off = gm.column_drift_offsets(m, spec, L, occ.blocks_per_sm)
    if off is None:
        return 0.0, runs[repr(0.0)]
    w = gm.column_drift_weights(off, 1 / -(-132 * 8 // (L.M // 16)))
    return float(off.mean()), sum(v * runs[repr(float(d))] for d, v in w.items())


def predictions() -> list[dict]:
    grid = json.loads((HERE / "grid27.json").read_text())
    rows = []
    for N in SIZES:
        m, spec, occ, L, _ = mms.setup("naive", N, "column")
        pulled = m.model_copy(update={"column_drift": m.column_drift.model_copy(update={"runaway_rate": None})})
        T = N // 16
        g = -(-1056 // T)
        o, b = _bytes(m, spec, L, occ, grid[str(N)])
        po, pb = _bytes(pulled, spec, L, occ, grid[str(N)])
        rows.append(dict(N=N, columns_per_wave=round(1056 / T, 3), g=g, d=round(g - 1056 / T, 3),
                         offset_mean=round(o, 4), gemmsim_gb=round(b / 1e9, 3),
                         pullback_offset_mean=round(po, 4), pullback_gb=round(pb / 1e9, 3),
                         lockstep_gb=round(grid[str(N)][repr(0.0)] / 1e9, 3),
                         even_gb=round(grid[str(N)][repr(float(1 / g))] / 1e9, 3)))
    return rows


if __name__ == "__main__":
    rows = predictions()
    for r in rows:
        print(r)
    write_rows(HERE / "predictions27.csv", rows)
