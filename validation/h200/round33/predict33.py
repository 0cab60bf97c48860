"""Round 33 (issue 12): the S sweep with one block per SM, predicted before the run.

    python validation/h200/round33/predict33.py predict [mma|wmma]   # -> predictions33_<api>.csv
    python validation/h200/round33/predict33.py compare              # after the run: compare33.csv, printed
    python validation/h200/round33/predict33.py now                  # the model as it stands -> model33_now_<api>.csv

Round 32's traces at N = 2048 held something no round had used: the 8 SMs with one block beside the 124 with two.
There the model's step (``sm_pipeline.pipeline_time``) agrees with the H200 alone and shared at S >= 2, but at S = 1
the H200's two blocks take no longer than one alone (2,108 against 2,091 cycles a step, 8-warp 128x128 tile), where
the model's take 1.43x (their MMA phases run together). This round asks the model's other half: the same binaries
(round 28's, S = 1..4, three tiles, both APIs) at N = 4096 and 8192 with ``SMEM_MIN`` = 120,000 bytes of dynamic
shared memory per block (``smem33.patch``), so every SM holds one block. The model gets the same shared memory
(``smem``) and nothing else new. Predicted per launch, at 1980 MHz: TFLOP/s and the SM cycles of a block's step.
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
sys.path.insert(0, str(HERE.parent / "round32"))
import predict28 as p  # noqa: E402
import predict32 as p32  # noqa: E402
from h200_io import write_rows  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

SIZES = (4096, 8192)
SMEM_MIN = 120_000  # bytes: two blocks need 2 x (120,000 + 1,024 reserved) > 228 KiB, so one block per SM
TILES = p32.TILES


def run(h, api: str, kernel: str, S: int, n: int, mhz: float) -> dict:
    prm = dict(p32.params(api, kernel, S), smem=SMEM_MIN)
    r = simulate_gpu(p.mv.machine_at(h, mhz), "tensorcore", M=n, N=n, K=n, dtype="fp16", **prm)
    return dict(tflops=2.0 * n ** 3 / (r["time_s"] + p.mv.launch_overhead_s(p.mv.HERE)) / 1e12, row=r)


def _predict(job: tuple) -> dict:
    api, kernel, S, n = job
    h = load_machine("h200")
    r = run(h, api, kernel, S, n, p.MHZ)
    row = r["row"]
    return dict(api=api, kernel=kernel, stages=S, M=n, blocks_per_sm=int(row["blocks_per_sm"]),
                tflops_at_1980=round(r["tflops"], 1), step_clk=round(float(row.get("pipe_step_clk", 0) or 0), 1),
                holds=int(row["tc_holds"]), bound=row["bound"])


def predict(api: str, name: str = "predictions33") -> None:
    """The model on every configuration -> <name>_<api>.csv. ``predictions33`` was written before the run and is not
    rewritten by ``now`` (``model33_now``: the model as it stands, after round 33's changes)."""
    from multiprocessing import Pool
    jobs = [(api, k, S, n) for k in TILES for S in (1, 2, 3, 4) for n in SIZES]
    with Pool(2) as pool:
        out = pool.map(_predict, jobs)
    for r in out:
        print(r)
    write_rows(HERE / f"{name}_{api}.csv", out)


ARCHIVE = HERE / "raw" / "round33.tar.gz"


def compare() -> None:
    """The predictions against the run, per SM cycle (both at 1980 MHz: the H200's TFLOP/s scaled by its launch's own
    clock), and each launch's median step (a block's clock64 cycles over its K / 32 steps) against the model's:
    compare33.csv, printed. Also the copy-less twins' steps (not predicted) and the hold in step."""
    import numpy as np

    drift31, process30 = p32.trace_modules()
    pred = p32.by_launch(HERE, "predictions33")
    now = p32.by_launch(HERE, "model33_now")
    rows = []
    for r in process30.launches(ARCHIVE, SIZES, "33"):
        n = int(r["M"])
        step = float(np.median(r["cycles"])) / (n // 32)
        row = dict(api=r["api"], kernel=r["kernel"], copy=int(r["copy"]), stages=int(r["stages"]), M=n,
                   blocks_per_sm=int(r["blocks_per_sm"]), sm_mhz=float(r["sm_mhz"]),
                   measured_at_1980=float(r["tflops_at_1980"]), measured_step_clk=round(step))
        if r["copy"] == "1":
            pr = pred[(r["api"], r["kernel"], int(r["stages"]), n)]
            x = drift31.wave_spreads(r)
            row.update(predicted_at_1980=float(pr["tflops_at_1980"]),
                       ratio=round(float(pr["tflops_at_1980"]) / float(r["tflops_at_1980"]), 3),
                       model_step_clk=float(pr["step_clk"]), step_ratio=round(float(pr["step_clk"]) / step, 3),
                       model_holds=int(pr["holds"]), measured_held=int(x[-1] < drift31.HELD) if len(x) >= 3 else "",
                       measured_wave_spreads=" ".join(f"{v:.2f}" for v in x[:8]))
            nw = now.get((r["api"], r["kernel"], int(r["stages"]), n))
            if nw:  # the model as it stands (round 33's changes), beside the prediction
                row.update(now_at_1980=float(nw["tflops_at_1980"]),
                           now_ratio=round(float(nw["tflops_at_1980"]) / float(r["tflops_at_1980"]), 3),
                           now_step_clk=float(nw["step_clk"]))
        rows.append(row)
    write_rows(HERE / "compare33.csv", rows)
    for api in ("mma", "wmma"):
        sel = [x for x in rows if x["api"] == api and x["copy"] == 1]
        e = [abs(x["ratio"] - 1) for x in sel]
        print(f"{api}: predicted / measured per SM cycle, one block per SM: within 10 % {sum(v <= 0.10 for v in e)} of "
              f"{len(e)} (median {statistics.median(e):.1%})")
        if all("now_ratio" in x for x in sel):
            e2 = [abs(x["now_ratio"] - 1) for x in sel]
            print(f"  the model now: within 10 % {sum(v <= 0.10 for v in e2)} of {len(e2)} (median {statistics.median(e2):.1%})")
        for x in sel:
            print(f"  {x['kernel']:18s} {x['M']} S={x['stages']}  measured {x['measured_at_1980']:6.1f}  predicted "
                  f"{x['predicted_at_1980']:6.1f}  ratio {x['ratio']:.2f}  step {x['measured_step_clk']:5d} / model "
                  f"{x['model_step_clk']:6.0f}  held: model {x['model_holds']} H200 {x['measured_held']}"
                  + (f"  | now {x['now_ratio']:.2f} step {x['now_step_clk']:6.0f}" if "now_ratio" in x else ""))
    held = [x for x in rows if x["copy"] == 1 and x["measured_held"] != ""]
    print(f"hold in step, model against the traces: {sum(x['model_holds'] == x['measured_held'] for x in held)} of {len(held)}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "predict"
    if what == "predict":
        for api in (sys.argv[2:] or ["mma", "wmma"]):
            predict(api)
    elif what == "now":
        for api in ("mma", "wmma"):
            predict(api, "model33_now")
    elif what == "compare":
        compare()
    else:
        raise SystemExit(f"usage: {sys.argv[0]} predict [mma|wmma] | compare")
