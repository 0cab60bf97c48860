"""Round 30, a diagnostic (not the model's default): the S sweep of round 28 with every launch's blocks starting in
lockstep (``gpu_memory.start_stagger`` -> 0), memory sampled in two whole waves, at each launch's clock.

    python validation/h200/round30/lockstep30.py     # -> lockstep30.csv (~12 min)

Why: round 30's traces show every launch's first wave starting at once, the 128x128 waves staying in lockstep at
S = 1, 2, and the 64x64 waves spreading wave by wave; the model's default spreads the first wave evenly over a block.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round28"))
sys.path.insert(0, str(HERE.parent))
from h200_io import write_rows  # noqa: E402
import predict28 as p  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402


def main() -> None:
    gm.start_stagger = lambda spec: 0.0
    h = load_machine("h200")
    launch = p.mv.launch_overhead_s(p.mv.HERE)
    inputs = {(r["kernel"], int(r["S"])): r for r in p.read(HERE.parent / "round28" / "inputs28.csv")}
    rows = []
    for r in p.read(HERE.parent / "round28" / "compare28.csv"):
        S, n = int(r["stages"]), int(r["M"])
        prm = p.wmma_params(inputs[(r["kernel"], S)]) if r["api"] == "wmma" else p.mma_params(r["kernel"], S)
        m = p.model(h, prm, n, float(r["sm_mhz"]), launch)
        rows.append(dict(api=r["api"], kernel=r["kernel"], stages=S, M=n, sm_mhz=r["sm_mhz"],
                         measured_tflops=r["measured_tflops"], committed_ratio=r["ratio"],
                         lockstep_tflops=round(m["tflops"], 1), lockstep_ratio=round(m["tflops"] / float(r["measured_tflops"]), 3)))
        print(rows[-1], flush=True)
    write_rows(HERE / "lockstep30.csv", rows)
    for api in ("wmma", "mma"):
        sel = [x for x in rows if x["api"] == api]
        print(api, "within 10 %:", sum(abs(x["lockstep_ratio"] - 1) <= 0.10 for x in sel), "of", len(sel),
              "(committed", sum(abs(float(x["committed_ratio"]) - 1) <= 0.10 for x in sel), ")")


if __name__ == "__main__":
    main()
