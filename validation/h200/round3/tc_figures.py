"""Figures of model_vs_measured_tc.py: the S sweep, where a step's time goes, the cuBLAS sweep (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

PART_COLORS = {"mma": "C2", "contention": "C1", "barrier": "C4", "copy_wait": "C3"}
PART_LABELS = {"mma": "MMAs at the tensor rate", "contention": "shared pipes (other blocks, smem)",
               "barrier": "barrier + first smem read", "copy_wait": "waiting for the copy (latency)"}


def _kernels(rows):
    return sorted({r["kernel"] for r in rows})


def fig_stages(rows: list[dict], path: Path) -> None:
    ks = _kernels(rows)
    fig = Figure(figsize=(4.2 * len(ks), 3.8), layout="constrained")
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    for ax, k in zip(axes, ks):
        for size, mk in ((4096, "o"), (8192, "s")):
            g = sorted((r for r in rows if r["kernel"] == k and r["M"] == size), key=lambda r: r["stages"])
            if not g:
                continue
            S = [r["stages"] for r in g]
            ax.plot(S, [r["measured_tflops"] for r in g], mk, color="k", ms=7, mfc="none", label=f"measured, N={size}")
            ax.plot(S, [r["model_tflops"] for r in g], mk + "-", color="C0", label=f"model at the launch's clock, N={size}")
            if size == 4096:
                ax.plot(S, [r.get("model_tflops_sustained_clock", float("nan")) for r in g], ":", color="C0", alpha=0.6,
                        label="model at the file's sustained clock")
        r0 = next(r for r in rows if r["kernel"] == k)
        ax.set(title=f"{r0['BM']}x{r0['BN']} tile, {r0['warps']} warps", xlabel="stages S", xticks=[1, 2, 3, 4])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("TFLOP/s (fp16 in, fp32 accumulate)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("H200, cp.async + mma.sync GEMM: stages against throughput, measured and modelled", fontsize=10)
    fig.savefig(path, dpi=130)


def fig_stage_parts(rows: list[dict], path: Path) -> None:
    ks = _kernels(rows)
    fig = Figure(figsize=(4.2 * len(ks), 3.8), layout="constrained")
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    for ax, k in zip(axes, ks):
        g = sorted((r for r in rows if r["kernel"] == k and r["M"] == 4096), key=lambda r: r["stages"])
        bottom = [0.0] * len(g)
        x = [r["stages"] for r in g]
        for part in ("mma", "contention", "barrier", "copy_wait"):
            v = [r.get(f"model_{part}", 0.0) or 0.0 for r in g]
            ax.bar(x, v, bottom=bottom, color=PART_COLORS[part], label=PART_LABELS[part], width=0.6)
            bottom = [b + y for b, y in zip(bottom, v)]
        r0 = g[0] if g else {"BM": "?", "BN": "?", "warps": "?", "model_blocks_per_sm": "?"}
        bps = ", ".join(str(r.get("model_blocks_per_sm")) for r in g)
        ax.set(title=f"{r0['BM']}x{r0['BN']}, {r0['warps']} warps (blocks/SM: {bps})", xlabel="stages S", xticks=[1, 2, 3, 4])
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("SM cycles per k-step of one block (model)")
    axes[-1].legend(fontsize=7, loc="upper right")
    fig.suptitle("Where a k-step's time goes (model, M=N=K=4096): one stage waits for every copy", fontsize=10)
    fig.savefig(path, dpi=130)


def fig_cublas(rows: list[dict], path: Path) -> None:
    fig = Figure(figsize=(11, 4.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, sweep, xkey, xlabel in ((axes[0], "coarse", "M", "M = N (K = 4096)"), (axes[1], "fine", "N", "N (M = K = 4096)")):
        for dtype, color in (("fp16", "C0"), ("bf16", "C1")):
            g = sorted((r for r in rows if r["sweep"] == sweep and r["dtype"] == dtype), key=lambda r: r[xkey])
            if not g:
                continue
            x = [r[xkey] for r in g]
            ax.plot(x, [r["measured_tflops"] for r in g], "o", color=color, ms=4, mfc="none", label=f"cuBLAS {dtype}, measured")
            ax.plot(x, [r["model_tflops"] for r in g], "-", color=color, label=f"hopper_ws model, {dtype}")
        ax.set(title=f"{sweep} sweep", xlabel=xlabel, ylabel="TFLOP/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("H200 torch.matmul (cuBLAS) against the warp-specialised model with the tile cuBLAS chose, "
                 "each at its launch's clock", fontsize=10)
    fig.savefig(path, dpi=130)
