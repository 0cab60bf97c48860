"""Tensor-core GEMMs on the H200: gemmsim's SM-pipeline model against round 3's measurements (issue 12).

Usage (from the repository root):  python validation/h200/round3/model_vs_measured_tc.py [DATA_DIR]
DATA_DIR holds round 3's CSVs (default: validation/h200/round3/data). Writes
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
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.errors import GemmsimError  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

HERE = Path(__file__).resolve().parent
FIG = HERE / "figures"
# mma_pipe's variants: name -> warps along M x N (mma_pipe.cu, variants())
WARP_GRID = {"mma_128x128_w2x4": (2, 4), "mma_64x64_w2x2": (2, 2), "mma_128x128_w2x2": (2, 2)}


def read(path: Path) -> list[dict]:
    with path.open() as f:
        return [r for r in csv.DictReader(f) if any(v for v in r.values())]


def machine_at(h, mhz: float):
    """The machine with its tensor-core timing clock set to ``mhz`` (peaks stay at the datasheet clock)."""
    return h.model_copy(update={"clock_mhz_tensor_sustained": float(mhz)})


def pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


# ---------------------------------------------------------------------------------------------------
# The S sweep of mma_pipe (cp.async + ldmatrix + mma.sync)
# ---------------------------------------------------------------------------------------------------
def stage_rows(h, data: Path) -> list[dict]:
    out = []
    for f in sorted(data.glob("mma_*.csv")):
        if "sustain" in f.name:
            continue
        for r in read(f):
            name = r["kernel"]
            wm, wn = WARP_GRID.get(name, (None, None))
            BM, BN, BK, S = (int(r[k]) for k in ("BM", "BN", "BK", "stages"))
            M, N, K = (int(r[k]) for k in ("M", "N", "K"))
            params = dict(BM=BM, BN=BN, BK=BK, WM=BM // wm, WN=BN // wn, stages=S, regs=int(r["regs"]),
                          smem=int(r["smem_bytes"]), max_blocks=264)
            mhz = float(r["sm_mhz"])
            row = dict(kernel=name, BM=BM, BN=BN, warps=int(r["warps"]), stages=S, M=M, N=N, K=K, sm_mhz=mhz,
                       measured_tflops=float(r["tflops"]), blocks_per_sm_api=int(r["blocks_per_sm"]))
            try:
                at = simulate_gpu(machine_at(h, mhz), "tensorcore", M=M, N=N, K=K, dtype="fp16", **params)
                sus = simulate_gpu(h, "tensorcore", M=M, N=N, K=K, dtype="fp16", **params)
            except GemmsimError as err:
                row.update(model_tflops=float("nan"), note=str(err))
                out.append(row)
                continue
            row.update(model_tflops=at["tflops"], model_tflops_sustained_clock=sus["tflops"],
                       model_blocks_per_sm=at["blocks_per_sm"], model_bound=at["bound"],
                       model_step_clk=at.get("pipe_step_clk", float("nan")),
                       **{f"model_{k}": at.get(f"pipe_{k}_clk", float("nan")) for k in ("copy_wait", "barrier", "mma", "contention")})
            row["ratio"] = row["model_tflops"] / row["measured_tflops"]
            out.append(row)
    return out


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
    exact = 0
    for (k, M), g in sorted(groups.items()):
        meas = [r["stages"] for r in sorted(g, key=lambda r: -r["measured_tflops"])]
        mod = [r["stages"] for r in sorted(g, key=lambda r: -r["model_tflops"])]
        exact += meas == mod
        print(f"  ranking {k} M={M}: measured S order {meas}, model {mod} -> {'exact' if meas == mod else 'differs'}")
    print(f"S ranking exact in {exact} of {len(groups)} (kernel, size) groups")


# ---------------------------------------------------------------------------------------------------
# The cuBLAS sweep (hopper_ws with the tile of the kernel cuBLAS chose)
# ---------------------------------------------------------------------------------------------------
def cublas_rows(h, data: Path) -> list[dict]:
    out = []
    for r in read(data / "cublas_sweep.csv"):
        M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
        name = r["kernel"].strip('"')
        clocks = [float(r[k]) for k in ("mhz_before", "mhz_after") if r.get(k) and float(r[k]) > 0]
        mhz = statistics.mean(clocks) if clocks else h.clock_mhz_tensor
        row = dict(sweep=r["sweep"], dtype=r["dtype"], M=M, N=N, K=K, kernel=name, sm_mhz=mhz,
                   measured_tflops=float(r["tflops"]))
        try:
            # cuBLAS's m x n = torch's N x M (column-major C^T = B^T A^T)
            at = simulate_gpu(machine_at(h, mhz), "hopper_ws", M=N, N=M, K=K, dtype=r["dtype"], kernel_name=name,
                              max_blocks=264)
        except (GemmsimError, ValueError) as err:
            row.update(model_tflops=float("nan"), note=str(err)[:120])
            out.append(row)
            continue
        row.update(model_tflops=at["tflops"], model_bound=at["bound"], BM=at["BM"], BN=at["BN"], stages=at["stages"],
                   tiles=at["tiles"], tiles_per_sm=at.get("blocks_on_busiest_sm"))
        row["ratio"] = row["model_tflops"] / row["measured_tflops"]
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
                  f"{med:.3f} (target 0.8-1.25)  range {min(r['ratio'] for r in g):.2f}-{max(r['ratio'] for r in g):.2f}")
    bad = [r for r in rows if r["model_tflops"] != r["model_tflops"]]
    for r in bad:
        print(f"  not modelled: {r['dtype']} {r['M']}x{r['N']}x{r['K']} {r['kernel'][:60]}: {r.get('note')}")


def write_csv(path: Path, rows: list[dict]) -> None:
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})


def main(argv: list[str]) -> int:
    data = Path(argv[1]) if len(argv) > 1 else HERE / "data"
    h = load_machine("h200")
    FIG.mkdir(exist_ok=True)
    st = stage_rows(h, data)
    if st:
        write_csv(HERE / "model_tc_stages.csv", st)
        report_stages(st)
    cb = cublas_rows(h, data) if (data / "cublas_sweep.csv").exists() else []
    if cb:
        write_csv(HERE / "model_tc_cublas.csv", cb)
        report_cublas(cb)
    from tc_figures import fig_cublas, fig_stage_parts, fig_stages  # noqa: E402 (beside this script)

    if st:
        fig_stages(st, FIG / "tc_stages.png")
        fig_stage_parts(st, FIG / "tc_stage_parts.png")
    if cb:
        fig_cublas(cb, FIG / "tc_cublas.png")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main(sys.argv))
