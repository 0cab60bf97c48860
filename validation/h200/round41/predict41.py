"""Round 41b (issue 12): the model's favour at each blocks-per-SM count k, predicted before the H200 ran
``run_round41.sh`` (the 64x64 tile at M = N = K = 4096 with extra shared memory so that fewer blocks fit).

    python validation/h200/round41/predict41.py   # ~3 min on 2 cores (round 36's captures at 4096) -> predictions41.csv

For mma.sync and WMMA, S = 1..4, k = 2 up to the kernel's own count: the copy groups outstanding on an SM
(``copy_groups_outstanding``), the share a favoured SM draws (``favoured_share_at_load`` with the machine file's
ramp) and the favoured SM's step over the others' (``favoured_step_ratio``), now and with the whole share (before).
"""
from __future__ import annotations

import pickle
import sys
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
for d in ("", "round36"):
    sys.path.insert(0, str(HERE.parent / d))
from h200_io import write_rows  # noqa: E402
import dispatch36  # noqa: E402


def one(job: tuple) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp

    api, S, k = job
    h = load_machine("h200")
    cost = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())["cost"]
    share = sp.favoured_share_at_load(cost, k, h.l2_favoured_share, h.l2_favoured_ramp)
    return dict(api=api, stages=S, k=k, groups=round(sp.copy_groups_outstanding(cost, k), 2), share=round(share, 3),
                ratio_now=round(sp.favoured_step_ratio(cost, k, share), 3),
                ratio_before=round(sp.favoured_step_ratio(cost, k, h.l2_favoured_share), 3))


def main() -> None:
    natural = {}
    for api in ("mma", "wmma"):
        for S in (1, 2, 3, 4):
            natural[(api, S)] = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())["bps"]
    jobs = [(api, S, k) for (api, S), top in natural.items() for k in range(2, top + 1)]
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(one, jobs, chunksize=1)
    write_rows(HERE / "predictions41.csv", rows)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
