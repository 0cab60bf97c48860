"""Round 28's figure: the S sweep of the WMMA and mma.sync kernels on the H200, measured and modelled.

    python validation/h200/round28/figures28.py     # compare28.csv -> figures/wmma28.png

One panel per tile; TFLOP/s per SM cycle (stated at 1980 MHz, so launches at different clocks compare) against S:
measured (solid, markers) and modelled at the launch's own clock (dashed), WMMA and mma.sync, 4096^3 and 8192^3.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import save_figure  # noqa: E402
TILES = (("mma_128x128_w2x4", "128x128, 8 warps"), ("mma_128x128_w2x2", "128x128, 4 warps"), ("mma_64x64_w2x2", "64x64, 4 warps"))
STYLE = {"wmma": ("tab:red", "WMMA"), "mma": ("tab:blue", "mma.sync")}


def main() -> Path:
    with (HERE / "compare28.csv").open() as f:
        rows = list(csv.DictReader(f))
    fig = Figure(figsize=(13, 4.6))
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (tile, title) in zip(axes, TILES):
        for api, (color, label) in STYLE.items():
            for n, marker in ((4096, "o"), (8192, "s")):
                sel = sorted((r for r in rows if r["api"] == api and r["kernel"] == tile and int(r["M"]) == n),
                             key=lambda r: int(r["stages"]))
                if not sel:
                    continue
                S = [int(r["stages"]) for r in sel]
                meas = [float(r["measured_tflops_at_1980"]) for r in sel]
                mod = [float(r["model_tflops"]) * 1980 / float(r["sm_mhz"]) for r in sel]
                ax.plot(S, meas, marker=marker, color=color, lw=1.8, label=f"{label} {n}: measured")
                ax.plot(S, mod, marker=marker, color=color, lw=1.2, ls="--", mfc="none", label=f"{label} {n}: model")
        ax.set_title(title)
        ax.set_xlabel("pipeline stages S")
        ax.set_xticks([1, 2, 3, 4])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("TFLOP/s per SM cycle (at 1980 MHz)")
    axes[0].set_ylim(bottom=0)
    axes[-1].legend(fontsize=7, loc="lower right", ncol=2)
    fig.suptitle("H200, fp16 GEMM with fp32 accumulation: WMMA and mma.sync kernels, same copies and stages "
                 "(round 28; model dashed, at each launch's clock)", fontsize=10)
    return save_figure(fig, HERE, "wmma28.png", dpi=110)


if __name__ == "__main__":
    main()
