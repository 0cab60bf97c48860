"""The GPU memory model on round 7's sizes (naive 16x16 kernel, row and column order) -> model7.csv.

    python validation/h200/round7/model7.py [N ...]     # default 5120 5632 6144 6656 7168; a minute or two a case

One row per (N, order): the model's DRAM bytes read (its default schedule: lockstep for this kernel in both orders,
steady-state sampling) beside ncu's bytes of every launch measured in rounds 7b (ncu7.csv: min, max, launches).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from gemmsim.machine import load_machine
from gemmsim.sim.gpu import simulate_gpu

HERE = Path(__file__).resolve().parent


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [5120, 5632, 6144, 6656, 7168]
    meas: dict = {}
    for r in csv.DictReader((HERE / "ncu7.csv").open()):
        meas.setdefault((int(r["N"]), r["order"]), []).append(float(r["dram_bytes_read"]))
    m = load_machine("h200")
    out = HERE / "model7.csv"
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    done = {(int(r["N"]), r["order"]) for r in rows}
    for n in sizes:
        for order in ("row", "column"):
            if (n, order) in done:
                continue
            t = time.perf_counter()
            r = simulate_gpu(m, "naive", M=n, N=n, K=n, dtype="fp32", raster=order, BX=16, BY=16)
            ms = meas.get((n, order), [])
            rows.append(dict(N=n, order=order, model_dram_bytes_read=int(r["dram_bytes_read"]),
                             blocks_simulated=r["blocks_simulated"], launches=len(ms),
                             measured_min=int(min(ms)) if ms else "", measured_max=int(max(ms)) if ms else "",
                             seconds=round(time.perf_counter() - t, 1)))
            print(rows[-1], flush=True)
            with out.open("w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(sorted(rows, key=lambda x: (int(x["N"]), x["order"])))


if __name__ == "__main__":
    main()
