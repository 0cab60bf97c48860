"""The memory model's DRAM bytes of the naive kernel in column order at the offsets ``simulate_memory_drifting`` runs
(``gpu_memory.DRIFT_GRID`` and evenly spaced columns) -> roundR/gridR.json, {N: {offset: bytes read}}.

    python validation/h200/round19/model_grid19.py OUT.json N [N ...]   # ~10-30 s a run, up to 10 runs a size

Each entry is the same ``simulate_memory`` call ``simulate_memory_drifting`` makes at that offset (block columns
``delta`` apart, ``stagger_group`` = tiles per column, sampled as the model samples), so the model's bytes for a size
are ``sum(weight * grid[offset])`` over ``column_drift_weights`` -- exactly what gemmsim computes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

H200 = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(H200.parents[1]), str(H200 / "round5")]
import model_measured_schedule as mms  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402


def offsets(N: int) -> list[float]:
    slots, T = 132 * 8, N // 16
    cap = 1 / -(-slots // T)
    return sorted({g for g in gm.DRIFT_GRID if g < cap} | {cap})


def run(out: Path, sizes: list[int]) -> dict:
    data = json.loads(out.read_text()) if out.exists() else {}
    for N in sizes:
        m, spec, occ, L, l1 = mms.setup("naive", N, "column")
        T = N // 16
        have = data.setdefault(str(N), {})
        for d in offsets(N):
            key = repr(float(d))
            if key in have:
                continue
            c = gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1, stagger=d * 132 * 8 / T, stagger_group=T).counters
            have[key] = float(c["dram_bytes_read"])
            out.write_text(json.dumps(data, indent=0, sort_keys=True))
            print(N, key, round(have[key] / 1e9, 3), flush=True)
    return data


def model_bytes(grid: dict, N: int) -> float:
    """gemmsim's DRAM bytes read at N from the stored runs (the weighted mean ``simulate_memory_drifting`` takes)."""
    m, spec, occ, L, _ = mms.setup("naive", N, "column")
    off = gm.column_drift_offsets(m, spec, L, occ.blocks_per_sm)
    runs = grid[str(N)]
    if off is None:
        return runs[repr(0.0)]
    w = gm.column_drift_weights(off, 1 / -(-132 * 8 // (N // 16)))
    return sum(v * runs[repr(float(d))] for d, v in w.items())


if __name__ == "__main__":
    run(Path(sys.argv[1]), [int(x) for x in sys.argv[2:]])
