"""Figures of model_vs_measured_tc.py: the S sweep, where a step's time goes, the cuBLAS sweep (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

PART_COLORS = {"mma": "C2", "contention": "C1", "barrier": "C4", "copy_wait": "C3"}
PART_LABELS = {"mma": "MMAs and instruction issue", "contention": "shared pipes (other blocks, smem)",
               "barrier": "barrier + first smem read", "copy_wait": "waiting for the copy (latency)"}


def _kernels(rows):
    return sorted({r["kernel"] for r in rows})


def _size_panels(rows: list[dict], height: float):
    """One panel a kernel, N = 4096 (circles, C0) and 8192 (squares, C1) in each: the figure, its axes, and per panel
    (ax, kernel, [(N, marker, colour, the rows in S order, their S)])."""
    ks = _kernels(rows)
    fig = Figure(figsize=(4.2 * len(ks), height), layout="constrained")
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    panels = []
    for ax, k in zip(axes, ks):
        groups = []
        for size, mk, col in ((4096, "o", "C0"), (8192, "s", "C1")):
            g = sorted((r for r in rows if r["kernel"] == k and r["M"] == size), key=lambda r: r["stages"])
            if g:
                groups.append((size, mk, col, g, [r["stages"] for r in g]))
        panels.append((ax, k, groups))
    return fig, axes, panels


def fig_stages(rows: list[dict], path: Path) -> None:
    fig, axes, panels = _size_panels(rows, 3.8)
    for ax, k, groups in panels:
        for size, mk, col, g, S in groups:
            ax.plot(S, [r["measured_tflops"] for r in g], mk, color=col, ms=8, mfc="none", mew=1.5, label=f"measured, N={size}")
            ax.plot(S, [r["model_tflops"] for r in g], mk + "-", color=col, ms=4, label=f"model at the launch's clock, N={size}")
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


#: ncu stall reasons (cycles per issued instruction) grouped as the model's parts
STALL_GROUPS = {
    "copy_wait": ("stall_long_scoreboard",),
    "barrier": ("stall_barrier",),
    "contention": ("stall_mio_throttle", "stall_short_scoreboard", "stall_lg_throttle"),
    "mma": ("stall_math_pipe_throttle", "stall_wait", "stall_selected", "stall_not_selected", "stall_dispatch_stall"),
}


def fig_stage_parts(rows: list[dict], stalls: list[dict], path: Path) -> None:
    """Per kernel: for each S, the model's split of a k-step (left bar) beside ncu's stall reasons grouped the same
    way (right bar), both as fractions of the step."""
    ks = _kernels(rows)
    fig = Figure(figsize=(4.3 * len(ks), 4.0), layout="constrained")
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    for ax, k in zip(axes, ks):
        g = sorted((r for r in rows if r["kernel"] == k and r["M"] == 4096), key=lambda r: r["stages"])
        meas = {int(r["stages"]): r for r in stalls if r["kernel"] == k}
        for dx, source in ((-0.18, "model"), (0.18, "ncu")):
            bottom = [0.0] * len(g)
            for part in ("mma", "contention", "barrier", "copy_wait"):
                vals = []
                for r in g:
                    if source == "model":
                        tot = sum((r.get(f"model_{p}") or 0.0) for p in PART_COLORS)
                        vals.append((r.get(f"model_{part}") or 0.0) / tot if tot else 0.0)
                    else:
                        m = meas.get(r["stages"])
                        if m is None:
                            vals.append(0.0)
                            continue
                        tot = sum(float(m[c]) for cols in STALL_GROUPS.values() for c in cols if c in m)
                        vals.append(sum(float(m[c]) for c in STALL_GROUPS[part] if c in m) / tot if tot else 0.0)
                ax.bar([r["stages"] + dx for r in g], vals, bottom=bottom, width=0.34, color=PART_COLORS[part],
                       label=PART_LABELS[part] if source == "model" else None, hatch=None if source == "model" else "//",
                       edgecolor="white")
                bottom = [b + v for b, v in zip(bottom, vals)]
        r0 = g[0] if g else {"BM": "?", "BN": "?", "warps": "?"}
        ax.set(title=f"{r0['BM']}x{r0['BN']}, {r0['warps']} warps (left: model, right hatched: ncu)",
               xlabel="stages S", xticks=[1, 2, 3, 4], ylim=(0, 1.0))
        ax.title.set_fontsize(8.5)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("fraction of a k-step (model) / of warp stall cycles (ncu)")
    axes[-1].legend(fontsize=7, loc="lower right", framealpha=0.9)
    fig.suptitle("Where a k-step's time goes, M=N=K=4096: model against ncu stall reasons "
                 "(long scoreboard = copy wait; mio/short scoreboard = shared pipe; wait/math/selected = MMA issue)",
                 fontsize=9)
    fig.savefig(path, dpi=130)


PHASE_COLORS = {"copy": "C0", "wait_barrier": "C3", "mma": "C2", "mma_barrier": "C2", "rest": "0.7"}
PHASE_LABELS = {"copy": "copy code (address arithmetic + cp.async)", "wait_barrier": "waiting for data + barrier",
                "mma": "MMAs (ldmatrix + mma.sync)", "rest": "rest of the loop"}


def fig_step_phases(rows: list[dict], schedule: list[dict], phases: dict, path: Path) -> None:
    """Per kernel at M = 4096: one k-step of block 0 (model) and of thread 0 (round 10b's in-kernel clock, median over
    steps 32-55) cut where the kernel reads its clock, in cycles, for S = 1 and 2: what a step is made of and how the
    model's pieces compare with the H200's."""
    ks = _kernels(rows)
    meas = {(r["kernel"], int(r["M"]), int(r["stages"])): r for r in schedule}
    fig = Figure(figsize=(4.3 * len(ks), 3.4), layout="constrained")
    axes = fig.subplots(1, len(ks), squeeze=False, sharex=True)[0]
    seen = set()
    for ax, k in zip(axes, ks):
        bars = []
        for S in (2, 1):
            r = next((r for r in rows if r["kernel"] == k and r["M"] == 4096 and r["stages"] == S), None)
            m = meas.get((k, 4096, S))
            if r is None or m is None:
                continue
            names = phases[1 if S == 1 else 2]
            bars.append((f"S={S} H200", [(n, float(m[f"{n}_clk"])) for n in names]))
            bars.append((f"S={S} model", [(n, r.get(f"model_phase_{n}_clk") or 0.0) for n in names]))
        for y, (label, parts) in enumerate(bars):
            left = 0.0
            for n, v in parts:
                key = "mma" if n == "mma_barrier" else n
                ax.barh(y, v, left=left, color=PHASE_COLORS[n], edgecolor="white", height=0.7,
                        hatch="//" if "H200" in label else None,
                        label=PHASE_LABELS[key] if key not in seen and "model" in label else None)
                if "model" in label:
                    seen.add(key)
                left += v
            ax.text(left + 30, y, f"{left:.0f}", va="center", fontsize=7)
        ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
        r0 = next(r for r in rows if r["kernel"] == k)
        ax.set(title=f"{r0['BM']}x{r0['BN']}, {r0['warps']} warps", xlabel="SM cycles of one k-step")
        ax.title.set_fontsize(9)
        ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=7, loc="outside lower center", ncol=4, framealpha=0.9)
    fig.suptitle("One k-step, M=N=K=4096, cut where the kernel reads its clock (median of each piece; the total is their sum): "
                 "H200 (hatched; round 10b) and model. S = 1: copy code, then wait; S = 2: wait, then copy code", fontsize=8.5)
    fig.savefig(path, dpi=130)


def fig_cublas(rows: list[dict], path: Path) -> None:
    fig = Figure(figsize=(11, 4.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, sweep, xkey, xlabel in ((axes[0], "coarse", "M", "M = N (K = 4096)"), (axes[1], "fine", "N", "N (M = K = 4096)")):
        for dtype, color in (("fp16", "C0"),):  # bf16 behaves the same (the printed table has both)
            g = sorted((r for r in rows if r["sweep"] == sweep and r["dtype"] == dtype), key=lambda r: r[xkey])
            if not g:
                continue
            x = [r[xkey] for r in g]
            ax.plot(x, [r["measured_tflops"] for r in g], "o", color="0.45", ms=4, mfc="none",
                    label=f"{dtype}: CUDA events around torch.matmul")
            ax.plot(x, [r.get("kernel_tflops", float("nan")) for r in g], "x", color="k", ms=6,
                    label=f"{dtype}: kernel duration (profiler)")
            ax.plot(x, [r.get("model_tflops_no_launch", r["model_tflops"]) for r in g], "-", color="C1", lw=1,
                    label=f"{dtype}: model at the probe clock (1880-1980 MHz)")
            ax.plot(x, [r.get("model_tflops_sustained_clock", float("nan")) for r in g], "-", color="C0", lw=2,
                    label=f"{dtype}: model at the sustained 1430 MHz")
        ax.set(title=f"{sweep} sweep", xlabel=xlabel, ylabel="TFLOP/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("H200 torch.matmul fp16 (cuBLAS) against the warp-specialised model with the tile cuBLAS chose\n"
                 "(event times include torch's host dispatch, which dominates below 3072; the profiler's kernel duration "
                 "does not)", fontsize=9)
    fig.savefig(path, dpi=130)


def fig_twins(rows: list[dict], path: Path) -> None:
    """The compute term alone: round 4's copy-less twins, measured and modelled, as the rate of their k-loop."""
    fig, axes, panels = _size_panels(rows, 3.6)
    for ax, k, groups in panels:
        for size, mk, col, g, S in groups:
            rate = lambda ms: 2.0 * size ** 3 / (ms * 1e-3) / 1e12  # noqa: E731
            ax.plot(S, [rate(r["measured_ms"]) for r in g], mk, color=col, ms=8, mfc="none", mew=1.5, label=f"twin measured, N={size}")
            ax.plot(S, [rate(r["model_ms"]) for r in g], mk + "-", color=col, ms=4, label=f"model, N={size}")
        blocks = "/".join(str(r["blocks_per_sm"]) for r in sorted((r for r in rows if r["kernel"] == k and r["M"] == 4096),
                                                                   key=lambda r: r["stages"]))
        ax.set(title=f"{k.replace('mma_', '')} (blocks/SM {blocks})", xlabel="stages S (buffers only: no copies)", xticks=[1, 2, 3, 4])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("2MNK / time, TFLOP/s")
    axes[-1].legend(fontsize=8, loc="lower right")
    fig.suptitle("H200, copy-less twins of the mma_pipe kernels (round 4): the model's compute term alone, each at its launch's clock")
    fig.savefig(path, dpi=110)
