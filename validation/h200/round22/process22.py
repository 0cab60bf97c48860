"""Rounds 22-23: traced block-column offsets and ncu's DRAM bytes at C = p / q block columns a wave -> roundR/driftR.csv.

    python validation/h200/round22/process22.py [R] [--pack TAR]      # R = 22 (default) or 23

Per launch: the partners' mean and median offsets over the launch (``drift_law14.pairs`` / ``per_wave``, as rounds
15-21), clock and check; per size ncu's DRAM bytes and the memory model's lockstep bytes (lockstepR.json: one
``simulate_memory`` run with the columns in step, as the 0 offset of ``round19/model_grid19.py``).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path[:0] = [str(H200), str(H200 / "round5"), str(H200 / "round12"), str(H200 / "round14"), str(H200 / "round15")]
import drift_law14 as dl  # noqa: E402
import process12 as p12  # noqa: E402
import process15 as p15  # noqa: E402
from h200_io import write_rows  # noqa: E402

ROUNDS = {22: p15.Round(22, (9216, 10560, 12672, 12800), (9216, 10560, 12672, 12800), 1, (0.0,)),
          23: p15.Round(23, (6336,), (6336,), 2, (0.0,))}


def main(argv: list[str]) -> list[dict]:
    rnd = ROUNDS[int(argv.pop(0))] if argv and argv[0].isdigit() else ROUNDS[22]
    if argv and argv[0] == "--pack":
        p12.pack(argv[1:], rnd.npz)
    tr = p12.load12((rnd.npz,))
    lines = [ln for ln in (rnd.dir / "raw" / f"launches{rnd.number}.txt").read_text().splitlines()
             if ln.startswith("launch,")]
    keys = [f"{n}_column{t}" for n in rnd.launch_sizes for t in ("", "_2")[:rnd.launches_per_size]]
    assert len(lines) == len(keys)
    nc = p15.ncu(rnd)
    lock = {int(k): v for k, v in json.loads((rnd.dir / f"lockstep{rnd.number}.json").read_text()).items()}
    rows = []
    for key, ln in zip(keys, lines):
        N = int(key.split("_")[0])
        assert int(ln.split(",")[1]) == N
        kv = dict(x.split("=", 1) for x in ln.split(",") if "=" in x)
        smid, start, end = tr[key]
        T = N // 16
        rows.append(dict(N=N, launch=2 if key.endswith("_2") else 1, columns_per_wave=round(1056 / T, 4),
                         fraction=str(Fraction(1056, T)),
                         sm_mhz=int(kv["sm_mhz"]), max_rel_err=kv["max_rel_err"], span_ms=float(kv["span_ms"]),
                         offset_mean=round(float(np.nanmean(dl.per_wave(start, end, N))), 3),
                         offset_pair_mean=round(float(np.nanmean(dl.per_wave(start, end, N, np.mean))), 3),
                         ncu_gb=round(nc[N] / 1e9, 2), lockstep_gb=round(lock[N] / 1e9, 2),
                         ncu_over_lockstep=round(nc[N] / lock[N], 3)))
    write_rows(rnd.dir / f"drift{rnd.number}.csv", rows)
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1:]):
        print(r)
