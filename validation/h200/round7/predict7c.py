"""The model's predictions for round 7c, made before it was measured -> predictions7c.csv.

    python validation/h200/round7/predict7c.py [N ...]     # default 4224 4608 8448; ~10-20 s a case

Column order, two schedules: the model's default (``start_stagger``: lockstep) and one group per block column
(``simulate_memory(stagger=1, stagger_group=N/16)``: each block column, the blocks that share B's panel, starts as
one group, the groups spread evenly over a block). Sections 7 and 7b found drifted column-order launches breaking
into such groups; the hypothesis tested in 7c is that a launch keeps them where a wave of 1,056 blocks holds a whole
number of block columns (4 at 4224, 2 at 8448; 4608's 3.67 is the control).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round5"))

import model_measured_schedule as mms  # noqa: E402
from process7 import write_csv  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402

NOTE = {"lockstep": "the model's default (start_stagger 0); written before round 7c was measured",
        "cohorts": "each block column (cohort, T={T} blocks) starts as one group, groups spread over a block "
                   "({k:.3g} per wave)"}


def predict(N: int, schedule: str) -> float:
    """DRAM bytes read by the naive 16x16 kernel in column order at N under ``schedule``."""
    m, spec, occ, L, l1 = mms.setup("naive", N, "column")
    if schedule == "lockstep":
        c = gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1)
    else:
        c = gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1, stagger=1.0, stagger_group=N // 16)
    return c.counters["dram_bytes_read"]


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [4224, 4608, 8448]
    rows = []
    for n in sizes:
        for sch in ("lockstep", "cohorts"):
            gb = predict(n, sch) / 1e9
            rows.append(dict(N=n, order="column", schedule=sch, model_dram_bytes_read_gb=round(gb, 2),
                             note=NOTE[sch].format(T=n // 16, k=1056 / (n // 16))))
            print(rows[-1], flush=True)
    write_csv("predictions7c.csv", rows)


if __name__ == "__main__":
    main()
