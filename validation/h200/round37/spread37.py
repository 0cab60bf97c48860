"""Round 37 (issue 12): where the spread of block times sits -- within an SM or between SMs -- in round 30's traces.

    python validation/h200/round37/spread37.py     # -> spread37.csv; ~10 s

The dispatch model (``sm_pipeline.dispatch_cycles``) spreads every block's work by its own draw (``work_spread``).
Round 30 traced every block's SM, start and end. For each copy launch (the copy-less twins left out), the first
wave's block times over the launch's median block time, split into the spread of each SM's mean (between SMs) and
each block about its SM's mean (within an SM), as standard deviations; and the 5-95 % range of the first wave's
times (round 31's spread of the second wave's starts, as the first wave starts together).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round30"))
import process30  # noqa: E402
from h200_io import write_rows  # noqa: E402


def split(r: dict) -> dict:
    bps = int(r["blocks_per_sm"])
    first = r["block"] < process30.SMS * bps
    dur = (r["end"] - r["start"]).astype(float)
    d = dur[first] / np.median(dur)
    sm = r["sm"][first]
    ids = np.unique(sm)
    mean = {s: d[sm == s].mean() for s in ids}
    within = d - np.array([mean[s] for s in sm])
    return dict(api=r["api"], kernel=r["kernel"], stages=int(r["stages"]), M=int(r["M"]), blocks_per_sm=bps,
                range_5_95=round(float(np.percentile(d, 95) - np.percentile(d, 5)), 4), std=round(float(d.std()), 4),
                between_sm_std=round(float(np.std(list(mean.values()))), 4), within_sm_std=round(float(within.std()), 4))


def main() -> None:
    rows = [split(r) for r in process30.launches() if r["copy"] == "1"]
    write_rows(HERE / "spread37.csv", rows)
    for r in rows:
        print(f"{r['api']:4} {r['kernel']:17} S={r['stages']} N={r['M']} bps={r['blocks_per_sm']}: 5-95 {r['range_5_95']:.3f}"
              f"  between SMs {r['between_sm_std']:.3f}  within {r['within_sm_std']:.3f}")


if __name__ == "__main__":
    main()
