"""Tensor-core GEMMs on the H200: gemmsim's SM-pipeline model against round 3's measurements (issue 12).

Usage (from the repository root):  python validation/h200/round3/model_vs_measured_tc.py [DATA_DIR [stages,cublas]]
DATA_DIR holds round 3's CSVs (default: this folder: mma_pipeline.csv, mma_stalls.csv, cublas_sweep.csv). Writes
  validation/h200/round3/model_tc_stages.csv   one row per measured mma_pipe launch configuration, with the model
  validation/h200/round3/model_tc_cublas.csv   one row per cuBLAS size and dtype, with the model
  validation/h200/round3/figures/tc_stages.png, tc_stage_parts.png, tc_cublas.png
and prints the acceptance numbers of issue 12, whatever they come out to.

What is an input and what is predicted:
* inputs from the machine file (machines/h200.yaml): SMs, tensor rates, mma.sync fraction, L1/L2/DRAM latencies,
  L2 and DRAM bandwidths, the async-copy throughput per SM (a separate cp.async microbenchmark), the clocks;
* inputs from each measured launch: the problem, the kernel's tile, warps, stages, registers and shared memory
  (properties of the compiled kernel) and the SM clock the launch ran at (read inside the kernel / by a probe).
  The model predicts SM cycles; at the launch's own clock they become seconds. The model at the machine
  file's sustained clock is given too (what one gets without measuring the clock).
* never an input: the measured times or TFLOP/s.

cuBLAS: torch.matmul(a, b) with row-major a (M x K), b (K x N) is the column-major product C^T = B^T A^T, so
cuBLAS's m is torch's N and its n is torch's M; the tile in the kernel name (BM x BN) is in cuBLAS's terms.
The model is run on the m x n = N x M problem.
"""

from __future__ import annotations

import csv
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # validation/h200: sass_loops
from sass_loops import functions, longest_loop  # noqa: E402
from tables import write_csv  # noqa: E402

from gemmsim.errors import GemmsimError  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models.sm_pipeline import PHASES  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

HERE = Path(__file__).resolve().parent
FIG = HERE / "figures"
# mma_pipe's variants: name -> warps along M x N (mma_pipe.cu, variants())
WARP_GRID = {"mma_128x128_w2x4": (2, 4), "mma_64x64_w2x2": (2, 2), "mma_128x128_w2x2": (2, 2)}
STAGE_FILES = ("mma_pipeline.csv",)
# instructions one warp issues per k-step: the main-loop body of each kernel in the SASS (raw/run2_bulk.tar.gz,
# bulk/sass_mma_pipe.txt; counted by sass_loop_counts() below), the same for S = 1..4 within 4 %
SASS_LOOP = {"mma_128x128_w2x4": 403, "mma_64x64_w2x2": 358, "mma_128x128_w2x2": 406}


def read(path: Path) -> list[dict]:
    with path.open() as f:
        return [r for r in csv.DictReader(f) if any(v for v in r.values())]


def machine_at(h, mhz: float):
    """The machine with its tensor-core timing clock set to ``mhz`` (peaks stay at the datasheet clock)."""
    return h.model_copy(update={"clock_mhz_tensor_sustained": float(mhz)})


def sass_loop_counts(sass_text: str) -> dict:
    """Instructions in the longest backward-branch loop of every mma_gemm instantiation of a cuobjdump -sass dump:
    {(BM, BN, WM, WN, S): (instructions, HMMA)}."""
    out = {}
    for m, ins in functions(sass_text, r"mma_gemmILi(\d+)ELi(\d+)ELi\d+ELi(\d+)ELi(\d+)ELi(\d+)"):
        loop = longest_loop(ins)
        if loop:
            body = [t for _, t in ins[loop[0]:loop[1] + 1]]
            out[tuple(int(x) for x in m.groups())] = (len(body), sum("HMMA" in t for t in body))
    return out


def launch_overhead_s(data: Path) -> float:
    """An empty kernel's CUDA-event time (waves3.csv, kernel 'empty'): what every timed launch pays beyond the model."""
    f = data / "waves3.csv"
    if f.exists():
        for r in read(f):
            if r["kernel"] == "empty":
                return float(r["time_ms"]) * 1e-3
    return 0.0


def pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


# ---------------------------------------------------------------------------------------------------
# The S sweep of mma_pipe (cp.async + ldmatrix + mma.sync)
# ---------------------------------------------------------------------------------------------------
def sass_counts(data: Path) -> dict:
    """Per-(BM, BN, warps_m, warps_n, S) loop instruction counts from the SASS in the bulk archive, {} without it."""
    import tarfile

    path = data / "raw" / "run2_bulk.tar.gz"
    if not path.exists():
        return {}
    with tarfile.open(path) as tar:
        f = tar.extractfile("bulk/sass_mma_pipe.txt")
        return sass_loop_counts(f.read().decode()) if f else {}


NCU4 = HERE.parent / "round4" / "mma_ncu4.csv"
PIPE4 = HERE.parent / "round4" / "mma_pipeline4.csv"


def executed_counts() -> dict:
    """Executed instructions per warp and k-step (ncu inst_executed / (blocks x warps x k-steps), round 4 at 4096^3):
    {(kernel, S): (compute phase = the copy-less twin's, copy issue = the kernel's minus the twin's)}."""
    if not NCU4.exists():
        return {}
    ex = {(r["kernel"], r["copy"], int(r["stages"])): float(r["inst_per_warp_step"]) for r in read(NCU4)}
    return {(k, S): (v0, ex[(k, "1", S)] - v0) for (k, c, S), v0 in ex.items() if c == "0" and (k, "1", S) in ex}


SASS4 = HERE.parent / "round4" / "run2_raw.tar.gz"  # raw/sass_mma_pipe4.txt: the SASS of every round-4 kernel


def fragment_trace(body: list[str], mma_per_step: int) -> str:
    """One warp's ldmatrix / mma sequence of one k-step (``sm_pipeline.fragment_groups``' tokens) from a k-loop's SASS
    lines: the first segment between block barriers that holds the step's ``mma_per_step`` HMMAs (a loop unrolled
    over several steps has one such segment per step)."""
    import re

    segs, cur = [], []
    for t in body + body:  # the loop is a cycle: a step may wrap around its end
        t = re.sub(r"^@!?U?P\w+\s+", "", t)
        if t.startswith("BAR.SYNC"):
            segs.append(cur)
            cur = []
            continue
        m = re.match(r"LDSM\.16\.M88(?:\.(\d))?\S* R(\d+),", t)
        if m:
            n = int(m.group(1) or 1)
            cur.append(f"L{n}:{m.group(2)}+{n}")  # .x4 = 4 wavefronts when conflict-free (padded rows)
            continue
        m = re.match(r"HMMA\.16816\S* R\d+, R(\d+)(?:\.reuse)?, R(\d+)", t)
        if m:
            cur.append(f"H:{m.group(1)}+4,{m.group(2)}+2")
    for seg in segs[1:]:  # whole segments only (each starts at a barrier)
        if sum(x.startswith("H") for x in seg) == mma_per_step:
            return " ".join(seg)
    # ptxas moved some of a step's HMMAs past the next barrier (64x64 twins, S = 1, 2): from a barrier on, the
    # step's first mma_per_step HMMAs and the ldmatrix among them
    flat = [x for seg in segs[1:] for x in seg]
    hs = [k for k, x in enumerate(flat) if x.startswith("H")]
    if len(hs) >= mma_per_step:
        return " ".join(flat[:hs[mma_per_step - 1] + 1])
    raise ValueError(f"no k-step segment with {mma_per_step} HMMA")


def fragment_traces(sass: str | None = None) -> dict:
    """{(kernel, copy, S): fragment trace} from a cuobjdump -sass dump of mma_pipe4's kernels (the k-loop: longest
    backward branch holding HMMA), by default round 4's; {} without the archive."""
    import tarfile

    if sass is None:
        if not SASS4.exists():
            return {}
        with tarfile.open(SASS4) as tar:
            sass = tar.extractfile("raw/sass_mma_pipe4.txt").read().decode()
    out = {}
    for m, ins in functions(sass, r"mma_gemmILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELb([01])"):
        BM, BN, BK, wm, wn, S, cp = (int(x) for x in m.groups())
        i0, i1 = longest_loop(ins, "HMMA")
        mma = (BM // wm // 16) * (BN // wn // 8) * (BK // 16)
        out[(f"mma_{BM}x{BN}_w{wm}x{wn}", cp, S)] = fragment_trace([t.strip() for _, t in ins[i0:i1 + 1]], mma)
    return out


ROUND6 = HERE.parent / "round6"
ROUND10 = HERE.parent / "round10"


def copy_traces() -> dict:
    """{(kernel, S): the copy phase of one warp and k-step as sm_pipeline.copy_phase tokens}: each copy kernel's executed
    path through its copy code, from round 6's ncu source page (SASS + per-instruction executed counts of the same
    binaries as round 4, raw/ncu_plain_source.csv.gz; round6/copy_trace.py); {} without it."""
    src = ROUND6 / "raw" / "ncu_plain_source.csv.gz"
    if not src.exists():
        return {}
    sys.path.insert(0, str(ROUND6))
    from copy_trace import copy_region, kernels, trace  # noqa: PLC0415

    out = {}
    for (BM, BN, BK, wm, wn, S, cp), ins in kernels(src).items():
        if cp:
            region, n = copy_region(ins)
            out[(f"mma_{BM}x{BN}_w{wm}x{wn}", S)] = trace(region, n)
    return out


def stage_rows(h, data: Path, launch_s: float = 0.0) -> list[dict]:
    out = []
    sass = sass_counts(data)
    executed = executed_counts()
    traces = fragment_traces()
    ctraces = copy_traces()
    for name in STAGE_FILES:
        if not (data / name).exists():
            continue
        for r in read(data / name):
            name = r["kernel"]
            wm, wn = WARP_GRID.get(name, (None, None))
            BM, BN, BK, S = (int(r[k]) for k in ("BM", "BN", "BK", "stages"))
            M, N, K = (int(r[k]) for k in ("M", "N", "K"))
            compute, copy = executed[(name, S)]  # executed, per warp and k-step (ncu, round 4)
            params = dict(BM=BM, BN=BN, BK=BK, WM=BM // wm, WN=BN // wn, stages=S, regs=int(r["regs"]), pad=8,
                          warp_instructions_per_step=compute, warp_copy_instructions_per_step=copy, max_blocks=264,
                          fragment_trace=traces.get((name, 1, S)), copy_trace=ctraces.get((name, S)))
            mhz = float(r["sm_mhz"])
            row = dict(kernel=name, BM=BM, BN=BN, warps=int(r["warps"]), stages=S, M=M, N=N, K=K, sm_mhz=mhz,
                       sass_loop_instructions=sass.get((BM, BN, wm, wn, S), (SASS_LOOP[name],))[0],
                       executed_compute_instructions=compute, executed_copy_instructions=copy,
                       measured_tflops=float(r["tflops"]), blocks_per_sm_api=int(r["blocks_per_sm"]))
            try:
                at = simulate_gpu(machine_at(h, mhz), "tensorcore", M=M, N=N, K=K, dtype="fp16", **params)
                sus = simulate_gpu(h, "tensorcore", M=M, N=N, K=K, dtype="fp16", **params)
            except GemmsimError as err:
                row.update(model_tflops=float("nan"), note=str(err))
                out.append(row)
                continue
            flops = 2.0 * M * N * K
            row.update(model_tflops=flops / (at["time_s"] + launch_s) / 1e12, model_tflops_no_launch=at["tflops"],
                       model_tflops_sustained_clock=flops / (sus["time_s"] + launch_s) / 1e12,
                       model_blocks_per_sm=at["blocks_per_sm"], model_bound=at["bound"],
                       model_step_clk=at.get("pipe_step_clk", float("nan")),
                       model_latency_clk=at.get("pipe_latency_clk", float("nan")),
                       model_queue_wait_clk=at.get("pipe_queue_wait_clk", float("nan")),
                       model_copy_phase_clk=at.get("pipe_copy_phase_clk", float("nan")),
                       **{k.replace("pipe_", "model_"): v for k, v in at.items() if k.startswith("pipe_rho_")},
                       **{f"model_{k}": at.get(f"pipe_{k}_clk", float("nan")) for k in ("copy_wait", "barrier", "mma", "contention")},
                       **{k.replace("pipe_", "model_"): v for k, v in at.items() if k.startswith(("pipe_phase_", "pipe_blocks_"))})
            row["ratio"] = row["model_tflops"] / row["measured_tflops"]
            out.append(row)
    return out


def twin_rows(h) -> list[dict]:
    """The compute term alone against round 4's copy-less twins (same k-loop, no copies after the prologue): the
    model's step with the twin's executed instructions (ncu), the twin's occupancy (its own registers) and no copy
    (no port, no latency, no queue; the shared pipe without the copies' writes), at the twin's own clock. An
    independent check: none of these timings is an input anywhere."""
    import gemmsim.models.sm_pipeline as sp
    import gemmsim.sim.gpu as sg

    if not PIPE4.exists():
        return []
    executed = executed_counts()
    traces = fragment_traces()
    seen = {}
    orig = sg._pipeline_cost

    def spy(*a, **k):
        seen["cost"] = orig(*a, **k)
        return seen["cost"]

    out = []
    sg._pipeline_cost = spy
    try:
        for r in read(PIPE4):
            if r["copy"] != "0":
                continue
            name = r["kernel"]
            wm, wn = WARP_GRID[name]
            BM, BN, BK, S, M, N, K = (int(r[k]) for k in ("BM", "BN", "BK", "stages", "M", "N", "K"))
            mhz = float(r["sm_mhz"])
            compute, _ = executed[(name, S)]
            at = simulate_gpu(machine_at(h, mhz), "tensorcore", M=M, N=N, K=K, dtype="fp16", BM=BM, BN=BN, BK=BK,
                              WM=BM // wm, WN=BN // wn, stages=S, regs=int(r["regs"]), pad=8,
                              warp_instructions_per_step=compute, warp_copy_instructions_per_step=0.0, max_blocks=264,
                              fragment_trace=traces.get((name, 0, S)))
            c = seen["cost"]
            stage_bytes = (BM + BN) * BK * 2  # the copies' shared writes: one 128-byte wavefront per 128 bytes
            twin = replace(c, copy_clk=0.0, copy_latency_clk=0.0, queues=(), copy_issue_clk=0.0,
                              smem_clk=max(c.smem_clk - stage_bytes / 128, 0.0))
            bps = int(r["blocks_per_sm"])
            sched = sp.grid_cycles(twin, (M // BM) * (N // BN), h.sms, bps)
            t = sched.cycles / (mhz * 1e6) + launch_overhead_s(HERE)
            meas = float(r["time_ms"]) * 1e-3
            out.append(dict(kernel=name, M=M, stages=S, blocks_per_sm=bps, model_blocks_per_sm=at["blocks_per_sm"],
                            sm_mhz=mhz, compute_instructions=compute, step_clk=sched.resident.step_clk,
                            measured_ms=meas * 1e3, model_ms=t * 1e3, ratio=meas / t))
    finally:
        sg._pipeline_cost = orig
    return out


def report_twins(rows: list[dict]) -> None:
    if not rows:
        return
    print("\n== compute term alone: round 4's copy-less twins, model (time ratio predicted speed / measured) ==")
    for r in rows:
        print(f"  {r['kernel']:18s} {r['M']:5d} S={r['stages']} {r['blocks_per_sm']} blocks/SM (model {r['model_blocks_per_sm']})"
              f" {r['compute_instructions']:5.1f} instr  step {r['step_clk']:5.0f} clk  measured {r['measured_ms']:.4f} ms"
              f"  model {r['model_ms']:.4f} ms  ratio {r['ratio']:.3f}")
    e = [r["ratio"] - 1 for r in rows]
    print(f"twins: median error {statistics.median(e):+.1%}, range {min(e):+.1%} to {max(e):+.1%}, "
          f"within 10 %: {sum(abs(x) <= 0.10 for x in e)} of {len(e)}")


def report_stages(rows: list[dict]) -> None:
    print("\n== S sweep (mma_pipe: cp.async + mma.sync), model at each launch's own clock ==")
    print(f"{'kernel':20s} {'M':>5s} {'S':>2s} {'MHz':>5s} {'meas':>6s} {'model':>6s} {'ratio':>6s}  bound")
    for r in rows:
        print(f"{r['kernel']:20s} {r['M']:5d} {r['stages']:2d} {r['sm_mhz']:5.0f} {r['measured_tflops']:6.1f} "
              f"{r['model_tflops']:6.1f} {r.get('ratio', float('nan')):6.3f}  {r.get('model_bound', r.get('note', ''))}")
    ok = [r for r in rows if r["model_tflops"] == r["model_tflops"]]
    errs = [abs(r["ratio"] - 1) for r in ok]
    within = sum(e <= 0.10 for e in errs)
    print(f"within 10 %: {within} of {len(ok)} (max error {max(errs):.1%}, median {statistics.median(errs):.1%})" if ok else "no rows")
    groups = {}
    for r in ok:
        groups.setdefault((r["kernel"], r["M"]), []).append(r)
    exact = first = 0
    for (k, M), g in sorted(groups.items()):
        meas = [r["stages"] for r in sorted(g, key=lambda r: -r["measured_tflops"])]
        mod = [r["stages"] for r in sorted(g, key=lambda r: -r["model_tflops"])]
        exact += meas == mod
        first += meas[-1] == mod[-1]
        spread = lambda key: max(r[key] for r in g if r["stages"] > 1) / min(r[key] for r in g if r["stages"] > 1) - 1
        print(f"  ranking {k} M={M}: measured S order {meas}, model {mod} -> {'exact' if meas == mod else 'differs'} "
              f"(S >= 2 spread: measured {spread('measured_tflops'):.1%}, model {spread('model_tflops'):.1%})")
    print(f"S ranking exact in {exact} of {len(groups)} (kernel, size) groups; the slowest S the same in {first}")
    rank_with_ties(groups, tie_threshold(DATA), round4_launches())


def copy_phase_vs_measured(rows: list[dict]) -> None:
    """A warp's copy phase under load in the model (M = 4096) against round 6's in-kernel clock of the same kernels'
    copy phase (-DCOPY_CLOCK build, the full 4096^3 grid; and one block alone): a check, not an input."""
    import csv as _csv

    meas = {}
    for size in (128, 4096):
        f = ROUND6 / "raw" / f"copyclock_clk_{size}.csv"
        if not f.exists():
            return
        by = {}
        for r in _csv.DictReader(f.open()):
            by.setdefault((r["kernel"], int(r["stages"])), []).append(float(r["copy_clk_per_warp_phase"]))
        for k, v in by.items():
            meas[(*k, size)] = statistics.median(v[1:])
    print("copy phase per warp and k-step under load (M = 4096): model vs round 6's in-kernel clock (full grid; one block alone)")
    for r in rows:
        if r["M"] != 4096 or not r.get("model_copy_phase_clk") == r.get("model_copy_phase_clk"):
            continue
        full, alone = meas.get((r["kernel"], r["stages"], 4096)), meas.get((r["kernel"], r["stages"], 128))
        if full:
            print(f"  {r['kernel']:18s} S={r['stages']}: model {r['model_copy_phase_clk']:6.0f}   measured {full:6.0f} "
                  f"(ratio {r['model_copy_phase_clk'] / full:.2f}; alone {alone:4.0f})")


def phases_vs_schedule(rows: list[dict]) -> None:
    """Block 0's step in the model between the four points where round 10b's kernel reads its clock, against the
    medians round 10b measured (thread 0 of the first 400 blocks, k-steps 32-55; its clock reads and stores cost the
    launch 0-8 %): a check, not an input."""
    f = ROUND10 / "schedule10b.csv"
    if not f.exists():
        return
    meas = {(r["kernel"], int(r["M"]), int(r["stages"])): r for r in read(f)}
    print("a step between the kernel's clock reads (cycles): model / round 10b's in-kernel clock (thread 0, steps 32-55)")
    for r in rows:
        m = meas.get((r["kernel"], r["M"], r["stages"]))
        if m is None:
            continue
        names = PHASES[1 if r["stages"] == 1 else 2]
        cells = "  ".join(f"{n} {r.get(f'model_phase_{n}_clk', float('nan')):5.0f} / {float(m[f'{n}_clk']):5.0f}" for n in names)
        arr = (f"  blocks together / alternating {r.get('model_blocks_together', float('nan')):.2f} / "
               f"{float(m['together']):.2f}, {r.get('model_blocks_alternating', float('nan')):.2f} / {float(m['alternating']):.2f}")
        print(f"  {r['kernel']:18s} {r['M']} S={r['stages']}: step {r['model_step_clk']:5.0f} / {float(m['step_clk']):5.0f}  {cells}{arr}")


def tie_threshold(data: Path) -> float:
    """Fallback tie threshold when round 4's launches are absent: p5-p95 of SM cycles per launch (time x in-kernel
    clock) of the 2,022 back-to-back launches of the 128x128/8-warp S=3 kernel in mma_sustain.csv
    (raw/run2_raw.tar.gz), over the first second. 0.024 when the archive is absent too."""
    import tarfile

    path = data / "raw" / "run2_raw.tar.gz"
    if not path.exists():
        return 0.024
    with tarfile.open(path) as tar:
        rows = list(csv.DictReader(tar.extractfile("raw/mma_sustain.csv").read().decode().splitlines()))
    c = np.array([float(r["time_ms"]) * float(r["sm_mhz"]) for r in rows if float(r["t_s"]) < 1.0])
    return float((np.percentile(c, 95) - np.percentile(c, 5)) / np.median(c))


ROUND4 = HERE.parent / "round4" / "mma_launches4.csv"


def round4_launches() -> dict:
    """Round 4's repeat of the S sweep, every launch kept (validation/h200/round4/mma_launches4.csv, run 2, the copy
    kernels): {(kernel, S, M): (median TFLOP/s per SM cycle x 1980 MHz, p5-p95 of the launches / median)}."""
    if not ROUND4.exists():
        return {}
    per = {}
    for r in read(ROUND4):
        if r["run"] == "run2" and r["copy"] == "1":
            per.setdefault((r["kernel"], int(r["stages"]), int(r["M"])), []).append(float(r["tflops_at_1980"]))
    out = {}
    for k, v in per.items():
        v = np.asarray(v)
        med = float(np.median(v))
        out[k] = (med, float((np.percentile(v, 95) - np.percentile(v, 5)) / med))
    return out


def rank_with_ties(groups: dict, tie: float, r4: dict | None = None) -> int:
    """S ranked as measured, with ties. Compared per SM cycle (TFLOP/s x 1980 / the launch's clock, measured and model
    alike), because the launches of one group ran at clocks up to 9 % apart, more than the S effect. A pair of S is
    *separated* when round 3's medians differ by more than the larger of the two configurations' own launch spreads
    (p5-p95 of round 4's 20 launches each, per cycle) AND round 4's repeat differs the same way by more than that
    too; anything else is a tie (without round 4: round 3 alone against the one-kernel spread ``tie``). The model
    must order every separated pair as measured. Prints each group; returns the number of groups ranked right."""
    r4 = r4 or {}
    print("ranking with ties, per SM cycle: separated = round 3 and round 4 differ the same way by more than the "
          "larger p5-p95 launch spread of the two" if r4 else f"ranking with ties, per SM cycle, tie below {tie:.1%}")
    right_groups = pairs_right = pairs = 0
    for (k, M), g in sorted(groups.items()):
        meas = {r["stages"]: r["measured_tflops"] * 1980 / r["sm_mhz"] for r in g}
        mod = {r["stages"]: r["model_tflops"] * 1980 / r["sm_mhz"] for r in g}
        bad, sep, ties = [], 0, []
        for a in sorted(meas):
            for b in sorted(meas):
                if b <= a:
                    continue
                d = (meas[a] - meas[b]) / ((meas[a] + meas[b]) / 2)
                ra, rb = r4.get((k, a, M)), r4.get((k, b, M))
                if ra and rb:
                    thr = max(ra[1], rb[1])
                    d4 = (ra[0] - rb[0]) / ((ra[0] + rb[0]) / 2)
                    separated = abs(d) > thr and abs(d4) > thr and d * d4 > 0
                else:
                    separated = abs(d) > tie
                if not separated:
                    ties.append(f"{a}={b}")
                    continue
                sep += 1
                if (mod[a] - mod[b]) * d <= 0:
                    bad.append(f"S={a} vs {b}")
        pairs += sep
        pairs_right += sep - len(bad)
        right_groups += not bad
        order = " > ".join(f"{s}" for s in sorted(meas, key=lambda s: -meas[s]))
        morder = " > ".join(f"{s}" for s in sorted(mod, key=lambda s: -mod[s]))
        print(f"  {k} M={M}: measured {order} ({', '.join(f'{meas[s]:.0f}' for s in sorted(meas))}; ties {' '.join(ties) or '-'}), "
              f"model {morder} ({', '.join(f'{mod[s]:.0f}' for s in sorted(mod))}): {sep} separated pairs, "
              f"{'all in order' if not bad else 'wrong: ' + '; '.join(bad)}")
    print(f"ranked as measured (ties allowed): {right_groups} of {len(groups)} groups; {pairs_right} of {pairs} separated pairs")
    return right_groups


def copy_wait_vs_ncu(rows: list[dict], stalls: list[dict]) -> None:
    """The model's copy-wait share of a block's step against ncu's long-scoreboard share of a warp's stall cycles."""
    if not stalls:
        return
    print("copy wait, share of the step: model (with loaded latency: its queue wait) vs ncu long scoreboard (M = 4096)")
    for st in stalls:
        r = next((r for r in rows if r["kernel"] == st["kernel"] and r["stages"] == int(st["stages"]) and r["M"] == 4096), None)
        if r is None:
            continue
        tot = sum(float(v) for c, v in st.items() if c.startswith("stall_") and v)
        parts = sum(r[f"model_{p}"] for p in ("copy_wait", "barrier", "mma", "contention"))
        print(f"  {r['kernel']:18s} S={r['stages']}: model {r['model_copy_wait'] / parts:5.1%} (latency "
              f"{r.get('model_latency_clk', float('nan')):4.0f} clk, queue {r.get('model_queue_wait_clk', float('nan')):4.0f})"
              f"   ncu {float(st['stall_long_scoreboard']) / tot:5.1%}")


ROUND8 = HERE.parent / "round8" / "l2_throughput8.csv"
R8_TILE = {"mma_128x128_w2x4": "128x128_w8", "mma_64x64_w2x2": "64x64_w4", "mma_128x128_w2x2": "128x128_w4"}


def latency_vs_copy_only(rows: list[dict]) -> None:
    """A check, not an input: the model's loaded copy round trip against round 8's copy-only kernel with the GEMM's own
    copy shape, stages, occupancy and footprint (`stages_pad`: a group's commit to its wait, no compute in the loop;
    it issues its copies at once and saturates the chip at every S, so the two compare only where the GEMM saturates
    it too -- the 64x64 tile; its round trip at S >= 3 includes the wait behind the group's predecessors)."""
    if not ROUND8.exists():
        return
    meas = {(r["tile"], int(r["stages"]), int(r["size"])): float(r["lat_clk_mean"]) for r in read(ROUND8) if r["set"] == "stages_pad"}
    print("copy round trip under load: model (cycles, its launch clock) vs round 8's copy-only kernel, same shape, S, occupancy, "
          "footprint (~1975 MHz; comparable where the GEMM saturates the chip too: utilisation 0.95)")
    for r in sorted(rows, key=lambda r: (r["kernel"], r["M"], r["stages"])):
        m = meas.get((R8_TILE.get(r["kernel"]), r["stages"], r["M"]))
        if m:
            print(f"  {r['kernel']:18s} {r['M']:5d} S={r['stages']}: model {r.get('model_latency_clk', float('nan')):5.0f}   "
                  f"copy-only {m:5.0f}   chip L2 utilisation {r.get('model_rho_l2', float('nan')):.2f}")


# ---------------------------------------------------------------------------------------------------
# The cuBLAS sweep (hopper_ws with the tile of the kernel cuBLAS chose)
# ---------------------------------------------------------------------------------------------------
def kernel_durations(data: Path) -> dict:
    """GPU-side duration (us) and grid of the one profiled product per size, from the torch.profiler trace in the bulk
    archive: {(dtype, sweep, M, N, K): (us, grid)}, in cublas_sweep.py's order (fill kernels separate the sizes)."""
    import json
    import tarfile

    path = data / "raw" / "run2_bulk.tar.gz"
    if not path.exists():
        return {}
    with tarfile.open(path) as tar:
        f = tar.extractfile("bulk/cublas_trace.json")
        ev = json.load(f) if f else []
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    kern = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    groups, cur = [], None
    for e in kern:
        if "elementwise" in e["name"] or "fill" in e["name"].lower():
            if cur is not None:
                groups.append(cur)
            cur = []
        elif cur is not None:
            cur.append(e)
    sizes = [("coarse", m, m, 4096) for m in range(1024, 8192 + 1, 512)] + [("fine", 4096, n, 4096) for n in range(3840, 4736 + 1, 32)]
    keys = [(d, *sz) for d in ("fp16", "bf16") for sz in sizes]
    out = {}
    for key, g in zip(keys, groups):
        if g:
            e = max(g, key=lambda e: e["dur"])
            grid = e.get("args", {}).get("grid", [0])
            out[key] = (float(e["dur"]), int(np.prod(grid)))
    return out


def cublas_rows(h, data: Path, launch_s: float = 0.0) -> list[dict]:
    out = []
    durations = kernel_durations(data)
    for r in read(data / "cublas_sweep.csv"):
        M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
        name = r["kernel"].strip('"')
        clocks = [float(r[k]) for k in ("mhz_before", "mhz_after") if r.get(k) and float(r[k]) > 0]
        mhz = statistics.mean(clocks) if clocks else h.clock_mhz_tensor
        row = dict(sweep=r["sweep"], dtype=r["dtype"], M=M, N=N, K=K, kernel=name, sm_mhz=mhz,
                   measured_tflops=float(r["tflops"]))
        us, grid = durations.get((r["dtype"], r["sweep"], M, N, K), (float("nan"), 0))
        row.update(kernel_us=us, kernel_grid=grid, kernel_tflops=2.0 * M * N * K / (us * 1e-6) / 1e12 if us == us else float("nan"))
        try:
            # cuBLAS's m x n = torch's N x M (column-major C^T = B^T A^T)
            extra = {"ctas": grid} if grid else {}  # the persistent grid cuBLAS launched (profiler), an input like the tile
            at = simulate_gpu(machine_at(h, mhz), "hopper_ws", M=N, N=M, K=K, dtype=r["dtype"], kernel_name=name,
                              max_blocks=264, **extra)
            sus = simulate_gpu(h, "hopper_ws", M=N, N=M, K=K, dtype=r["dtype"], kernel_name=name, max_blocks=264, **extra)
        except (GemmsimError, ValueError) as err:
            row.update(model_tflops=float("nan"), note=str(err)[:120])
            out.append(row)
            continue
        row.update(model_tflops=2.0 * M * N * K / (at["time_s"] + launch_s) / 1e12, model_tflops_no_launch=at["tflops"],
                   model_bound=at["bound"], BM=at["BM"], BN=at["BN"], stages=at["stages"],
                   tiles=at["tiles"], tiles_per_sm=at.get("blocks_on_busiest_sm"))
        row["ratio"] = row["model_tflops"] / row["measured_tflops"]
        row["ratio_kernel"] = row["model_tflops_no_launch"] / row["kernel_tflops"]
        row["model_tflops_sustained_clock"] = sus["tflops"]
        row["ratio_kernel_sustained"] = sus["tflops"] / row["kernel_tflops"]
        out.append(row)
    return out


def report_cublas(rows: list[dict]) -> None:
    print("\n== cuBLAS sweep (torch.matmul), hopper_ws with the tile of the kernel cuBLAS ran ==")
    for dtype in ("fp16", "bf16"):
        for sweep in ("coarse", "fine"):
            g = [r for r in rows if r["dtype"] == dtype and r["sweep"] == sweep and r["model_tflops"] == r["model_tflops"]]
            if not g:
                continue
            p = pearson([r["model_tflops"] for r in g], [r["measured_tflops"] for r in g])
            med = statistics.median(r["ratio"] for r in g)
            print(f"{dtype} {sweep:6s}: n={len(g):2d}  Pearson {p:+.3f} (target >= 0.8)  median predicted/measured "
                  f"{med:.3f} (target 0.8-1.25)  range {min(r['ratio'] for r in g):.2f}-{max(r['ratio'] for r in g):.2f}"
                  "   [CUDA events around torch.matmul, model + launch overhead]")
            k = [r for r in g if r["kernel_tflops"] == r["kernel_tflops"]]
            if k:
                pk = pearson([r["model_tflops_no_launch"] for r in k], [r["kernel_tflops"] for r in k])
                mk = statistics.median(r["ratio_kernel"] for r in k)
                print(f"{'':12s} n={len(k):2d}  Pearson {pk:+.3f}                median predicted/measured {mk:.3f}"
                      f"                    range {min(r['ratio_kernel'] for r in k):.2f}-{max(r['ratio_kernel'] for r in k):.2f}"
                      "   [kernel duration from the profiler trace, model alone at the probe clock]")
                ps = pearson([r["model_tflops_sustained_clock"] for r in k], [r["kernel_tflops"] for r in k])
                ms = statistics.median(r["ratio_kernel_sustained"] for r in k)
                print(f"{'':12s} n={len(k):2d}  Pearson {ps:+.3f}                median predicted/measured {ms:.3f}"
                      f"                    range {min(r['ratio_kernel_sustained'] for r in k):.2f}-"
                      f"{max(r['ratio_kernel_sustained'] for r in k):.2f}"
                      f"   [kernel duration, model alone at the sustained clock]")
    bad = [r for r in rows if r["model_tflops"] != r["model_tflops"]]
    for r in bad:
        print(f"  not modelled: {r['dtype']} {r['M']}x{r['N']}x{r['K']} {r['kernel'][:60]}: {r.get('note')}")


DATA = HERE


def main(argv: list[str]) -> int:
    global DATA
    data = Path(argv[1]) if len(argv) > 1 else HERE
    DATA = data
    h = load_machine("h200")
    FIG.mkdir(exist_ok=True)
    launch = launch_overhead_s(data)
    print(f"model times include the measured launch overhead of an empty kernel, {launch * 1e6:.1f} us")
    only = set(argv[2].split(",")) if len(argv) > 2 else {"stages", "cublas"}
    st = stage_rows(h, data, launch) if "stages" in only else []
    tw = []
    if "stages" in only:
        tw = twin_rows(h)
        if tw:
            write_csv(HERE / "model_tc_twins.csv", tw)
            report_twins(tw)
    if st:
        write_csv(HERE / "model_tc_stages.csv", st)
        report_stages(st)
        copy_wait_vs_ncu(st, read(data / "mma_stalls.csv") if (data / "mma_stalls.csv").exists() else [])
        copy_phase_vs_measured(st)
        latency_vs_copy_only(st)
        phases_vs_schedule(st)
    cb = cublas_rows(h, data, launch) if (data / "cublas_sweep.csv").exists() and "cublas" in only else []
    if cb:
        write_csv(HERE / "model_tc_cublas.csv", cb)
        report_cublas(cb)
    from tc_figures import fig_cublas, fig_stage_parts, fig_stages, fig_step_phases, fig_twins  # noqa: E402 (beside this script)

    if "stages" in only and tw:
        fig_twins(tw, FIG / "tc_twins.png")
    if st:
        fig_stages(st, FIG / "tc_stages.png")
        stalls = read(data / "mma_stalls.csv") if (data / "mma_stalls.csv").exists() else []
        fig_stage_parts(st, stalls, FIG / "tc_stage_parts.png")
        if (ROUND10 / "schedule10b.csv").exists():
            fig_step_phases(st, read(ROUND10 / "schedule10b.csv"), PHASES, FIG / "tc_step_phases.png")
    if cb:
        fig_cublas(cb, FIG / "tc_cublas.png")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main(sys.argv))
