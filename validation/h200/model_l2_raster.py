"""The GPU memory-system model on the H200's tiled SGEMM (validation/h200/sgemm.cu), for the comparison figure.

Writes validation/h200/model_l2_raster.csv: DRAM bytes read, L2 hit rate and modelled time of gemmsim's
``tiled_smem`` (TILE 32) on machines/h200.yaml for each N and launch order measured in l2_raster.csv, up to
--max-n (larger sizes take minutes each). Run from the repository root:

    python validation/h200/model_l2_raster.py            # N = 1024 .. 4096, about 3 minutes on one core
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from gemmsim.machine import load_machine
from gemmsim.sim.gpu import simulate_gpu

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=int, default=4096)
    args = ap.parse_args()
    h200 = load_machine("h200")
    measured = list(csv.DictReader(open(HERE / "l2_raster.csv")))
    out = []
    for m in measured:
        n = int(m["N"])
        if n > args.max_n:
            continue
        params = {"TILE": 32, "raster": m["order"]}
        if m["order"] == "grouped":
            params["group_m"] = int(m["group_m"])
        r = simulate_gpu(h200, "tiled_smem", M=n, N=n, K=n, dtype="fp32", **params)
        out.append({"N": n, "order": m["order"], "dram_bytes_read": r["dram_bytes_read"], "l2_hit_rate_pct": 100 * r["l2_hit_rate"],
                    "time_ms": 1e3 * r["time_s"], "sampled": r.get("sampled", False)})
        print(f"N={n} {m['order']:8s} model {r['dram_bytes_read'] / 1e9:8.3f} GB  measured {float(m['dram_bytes_read']) / 1e9:8.3f} GB", flush=True)
    with open(HERE / "model_l2_raster.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
