"""Round 37 (issue 12), offline: how smooth the dispatch model's launch end is in the spread of block times.

    python validation/h200/round37/jitter37.py    # ~3 min on 2 cores (round 36's captures in /tmp/capture36) -> jitter37.csv

For the 64x64 tile at M = N = K = 4096 (mma.sync, S = 1..4, the machine file's favoured SMs), the whole launch over
its steady pace with the blocks' work spread over 0.15, 0.16, ... 0.50 of a block (``work_spread``'s range; the rule
gives 0.21-0.29 here, the traces 0.25-0.42). Each value is one realisation: block i's work is the i-th point of the
golden-ratio sequence, so a small change of the spread reorders which blocks end last.
"""
from __future__ import annotations

import pickle
import sys
from multiprocessing import get_context
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round36"))
from h200_io import write_rows  # noqa: E402
import dispatch36  # noqa: E402  (round 36's captured step costs)

SPREADS = np.round(np.arange(0.15, 0.5001, 0.01), 3)


def scan(S: int) -> list[dict]:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp

    h = load_machine("h200")
    c = pickle.loads((dispatch36.CACHE / f"mma_{S}_4096.pkl").read_bytes())
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    pace = grid * sp.pipeline_time(cost, bps).cycles / (sms * bps)
    return [dict(stages=S, spread=float(s), end=round(sp.grid_cycles(cost, grid, sms, bps, h.l2_favoured_sms or 0,
                                                                      h.l2_favoured_share or 1.0, float(s)).cycles / pace, 4))
            for s in SPREADS]


def main() -> None:
    with get_context("spawn").Pool(2) as pool:
        rows = [r for part in pool.map(scan, (1, 2, 3, 4), chunksize=1) for r in part]
    write_rows(HERE / "jitter37.csv", rows)
    for S in (1, 2, 3, 4):
        e = np.array([r["end"] for r in rows if r["stages"] == S])
        jump = np.abs(np.diff(e))
        print(f"S={S}: end {e.min():.3f}-{e.max():.3f}, mean {e.mean():.3f}, sd {e.std():.4f}; "
              f"between neighbouring spreads (0.01 apart) median {np.median(jump):.4f}, max {jump.max():.4f}")


if __name__ == "__main__":
    main()
