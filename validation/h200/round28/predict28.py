"""Round 28 (issue 12): gemmsim's SM pipeline model on the WMMA kernels, before they are timed.

    python validation/h200/round28/predict28.py            # inputs28.csv -> predictions28.csv
    python validation/h200/round28/predict28.py compare    # + wmma_pipeline28.csv -> compare28.csv, printed

Every input is the machine file's (machines/h200.yaml) or a property of the compiled kernel (inputs28.csv, from its
SASS, ptxas and ncu's executed-instruction counts; process28.py profile); no timing of these kernels is one. The
model gives SM cycles; predictions28.csv states them as TFLOP/s at 1980 MHz (per SM cycle, launch overhead
included), and the comparison runs the model again at each configuration's own measured clock, as round 3 does.
The mma.sync kernels (round 4's binary, rebuilt here) are predicted with round 3's inputs beside them, so the
WMMA / mma.sync ratio is predicted too.
"""
from __future__ import annotations

import csv
import functools
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round3"))
import model_vs_measured_tc as mv  # noqa: E402
from tables import write_csv  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

SIZES = (4096, 8192)
MHZ = 1980.0


def read(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def wmma_params(r: dict) -> dict:
    name = r["kernel"]
    wm, wn = mv.WARP_GRID[name]
    BM, BN = (int(x) for x in name.split("_")[1].split("x"))
    return dict(BM=BM, BN=BN, BK=32, WM=BM // wm, WN=BN // wn, stages=int(r["S"]), regs=int(r["regs"]), pad=8,
                warp_instructions_per_step=float(r["compute_instructions"]),
                warp_copy_instructions_per_step=float(r["copy_instructions"]), max_blocks=264,
                fragment_trace=r["fragment_trace"], copy_trace=r["copy_trace"])


@functools.cache
def round3_inputs() -> tuple:
    """Round 3's inputs of the mma.sync kernels: executed counts (round 4), fragment traces, copy traces (round 6)."""
    return mv.executed_counts(), mv.fragment_traces(), mv.copy_traces()


def mma_params(name: str, S: int) -> dict:
    """Round 3's inputs of the mma.sync kernel (model_vs_measured_tc.stage_rows), registers from round 4."""
    wm, wn = mv.WARP_GRID[name]
    BM, BN = (int(x) for x in name.split("_")[1].split("x"))
    executed, frags, copies = round3_inputs()
    compute, copy = executed[(name, S)]
    regs = next(int(r["regs"]) for r in mv.read(mv.PIPE4) if r["kernel"] == name and r["copy"] == "1" and int(r["stages"]) == S)
    return dict(BM=BM, BN=BN, BK=32, WM=BM // wm, WN=BN // wn, stages=S, regs=regs, pad=8,
                warp_instructions_per_step=compute, warp_copy_instructions_per_step=copy, max_blocks=264,
                fragment_trace=frags.get((name, 1, S)), copy_trace=copies.get((name, S)))


def model(h, params: dict, n: int, mhz: float, launch_s: float) -> dict:
    at = simulate_gpu(mv.machine_at(h, mhz), "tensorcore", M=n, N=n, K=n, dtype="fp16", **params)
    return dict(tflops=2.0 * n ** 3 / (at["time_s"] + launch_s) / 1e12, blocks_per_sm=at["blocks_per_sm"],
                bound=at["bound"], step_clk=at.get("pipe_step_clk", float("nan")),
                copy_wait_clk=at.get("pipe_copy_wait_clk", float("nan")))


def predict() -> list[dict]:
    h = load_machine("h200")
    launch_s = mv.launch_overhead_s(mv.HERE)
    out = []
    for r in read(HERE / "inputs28.csv"):
        S = int(r["S"])
        for n in SIZES:
            w = model(h, wmma_params(r), n, MHZ, launch_s)
            m = model(h, mma_params(r["kernel"], S), n, MHZ, launch_s)
            out.append(dict(kernel=r["kernel"], stages=S, M=n, model_wmma_tflops_at_1980=round(w["tflops"], 1),
                            model_mma_tflops_at_1980=round(m["tflops"], 1), model_wmma_over_mma=round(w["tflops"] / m["tflops"], 3),
                            model_blocks_per_sm=w["blocks_per_sm"], model_bound=w["bound"],
                            model_step_clk=round(w["step_clk"], 1), model_mma_step_clk=round(m["step_clk"], 1)))
    return out


def compare() -> None:
    h = load_machine("h200")
    launch_s = mv.launch_overhead_s(mv.HERE)
    inputs = {(r["kernel"], int(r["S"])): r for r in read(HERE / "inputs28.csv")}
    pred = {(r["kernel"], int(r["stages"]), int(r["M"])): r for r in read(HERE / "predictions28.csv")}
    meas = [r for r in read(HERE / "wmma_pipeline28.csv") if r["copy"] == "1"]
    by = {(r["api"], r["kernel"], int(r["stages"]), int(r["M"])): r for r in meas}
    rows = []
    for (api, name, S, n), r in sorted(by.items()):
        mhz = float(r["sm_mhz"])
        params = wmma_params(inputs[(name, S)]) if api == "wmma" else mma_params(name, S)
        m = model(h, params, n, mhz, launch_s)
        p = pred[(name, S, n)]
        pre = float(p[f"model_{api}_tflops_at_1980"])
        rows.append(dict(api=api, kernel=name, stages=S, M=n, sm_mhz=mhz, regs=r["regs"], blocks_per_sm=r["blocks_per_sm"],
                         measured_tflops=float(r["tflops"]), measured_tflops_at_1980=float(r["tflops_at_1980"]),
                         model_tflops=round(m["tflops"], 1), ratio=round(m["tflops"] / float(r["tflops"]), 3),
                         predicted_tflops_at_1980=pre, predicted_ratio_at_1980=round(pre / float(r["tflops_at_1980"]), 3),
                         model_bound=m["bound"]))
    write_csv(HERE / "compare28.csv", rows)
    for api in ("wmma", "mma"):
        sel = [x for x in rows if x["api"] == api]
        if not sel:
            continue
        e = [abs(x["ratio"] - 1) for x in sel]
        print(f"{api}: model / measured at each launch's clock: within 10 % {sum(v <= 0.10 for v in e)} of {len(e)} "
              f"(median {statistics.median(e):.1%}, max {max(e):.1%})")
        for x in sel:
            print(f"  {x['kernel']:18s} {x['M']} S={x['stages']} {x['sm_mhz']:5.0f} MHz  measured {x['measured_tflops']:6.1f}"
                  f"  model {x['model_tflops']:6.1f}  ratio {x['ratio']:.3f}  ({x['model_bound']})")
        groups = {}
        for x in sel:
            groups.setdefault((x["kernel"], x["M"]), []).append(x)
        exact = 0
        for (k, n), g in sorted(groups.items()):
            mo = [x["stages"] for x in sorted(g, key=lambda x: -x["measured_tflops_at_1980"])]
            po = [x["stages"] for x in sorted(g, key=lambda x: -x["model_tflops"] * 1980 / x["sm_mhz"])]
            exact += mo == po
            print(f"  order per SM cycle {k} {n}: measured {mo}, model {po}")
        print(f"  S order exact in {exact} of {len(groups)} groups")
    # the WMMA / mma.sync ratio, measured in one call and predicted
    for (name, S, n), p in sorted(pred.items()):
        a, b = by.get(("wmma", name, S, n)), by.get(("mma", name, S, n))
        if a and b:
            print(f"  wmma / mma.sync {name:18s} {n} S={S}: measured {float(a['tflops_at_1980']) / float(b['tflops_at_1980']):.3f}"
                  f"  predicted {float(p['model_wmma_over_mma']):.3f}")


def tie_order(stat: dict, model: dict) -> tuple[int, list[str]]:
    """One (kernel, N) group's S order with ties: ``stat`` S -> (median SM cycles, p5-p95 spread over the median) of
    its launches, ``model`` S -> the model's SM cycles. A pair is separated when the medians differ by more than the
    larger spread; returns (separated pairs, those the model orders the other way)."""
    bad, sep = [], 0
    for a in sorted(stat):
        for b in sorted(stat):
            if b <= a:
                continue
            (ca, sa), (cb, sb) = stat[a], stat[b]
            d = (ca - cb) / ((ca + cb) / 2)
            if abs(d) <= max(sa, sb):
                continue
            sep += 1
            if (model[a] - model[b]) * d <= 0:
                bad.append(f"S={a} vs {b}")
    return sep, bad


def ranking(api: str) -> tuple[int, int, int, int]:
    """The S order per SM cycle with ties, as round 3 counts it: a pair of S is separated when their median cycles
    differ by more than the larger p5-p95 spread of the two configurations' 20 launches (launches28.csv); the model must
    order every separated pair as measured. Prints each group; returns (groups right, groups, pairs right, pairs)."""
    cyc = {}
    for r in read(HERE / "launches28.csv"):
        if r["api"] == api and r["copy"] == "1":
            cyc.setdefault((r["kernel"], int(r["M"]), int(r["stages"])), []).append(float(r["time_ms"]) * float(r["sm_mhz"]))
    rows = [r for r in read(HERE / "compare28.csv") if r["api"] == api]
    model = {(r["kernel"], int(r["M"]), int(r["stages"])): 1.0 / (float(r["model_tflops"]) / float(r["sm_mhz"])) for r in rows}
    return rank_groups(api, cyc, model)


def rank_groups(api: str, cyc: dict, model: dict) -> tuple[int, int, int, int]:
    """``ranking`` on given data: ``cyc`` (kernel, N, S) -> the launches' SM cycles, ``model`` (kernel, N, S) -> the
    model's SM cycles. Prints each group; returns (groups right, groups, pairs right, pairs)."""
    import numpy as np

    stat = {k: (float(np.median(v)), float((np.percentile(v, 95) - np.percentile(v, 5)) / np.median(v))) for k, v in cyc.items()}
    right = groups = pr = pairs = 0
    for kernel, n in sorted({k[:2] for k in model}):
        sep, bad = tie_order({S: stat[(kernel, n, S)] for S in range(1, 5)}, {S: model[(kernel, n, S)] for S in range(1, 5)})
        groups += 1
        right += not bad
        pairs += sep
        pr += sep - len(bad)
        print(f"  {api} {kernel} {n}: {sep} separated pairs, {'all in order' if not bad else 'wrong: ' + '; '.join(bad)}")
    print(f"  {api}: ranked as measured (ties allowed): {right} of {groups} groups, {pr} of {pairs} separated pairs")
    return right, groups, pr, pairs


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "compare":
        compare()
        ranking("wmma")
        ranking("mma")
    elif len(sys.argv) > 1 and sys.argv[1] == "ranking":
        ranking("wmma")
        ranking("mma")
    else:
        rows = predict()
        write_csv(HERE / "predictions28.csv", rows)
        for r in rows:
            print(r)
