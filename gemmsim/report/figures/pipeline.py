"""Pipeline-depth figures (seed 003): throughput against stages S per machine, and where a k-step's time goes.

Drawn from rows that carry the SM pipeline model's columns (``pipe_step_clk`` and the per-step parts
``pipe_copy_wait_clk``, ``pipe_barrier_clk``, ``pipe_mma_clk``, ``pipe_contention_clk``: see
``gemmsim.models.sm_pipeline``) over at least two values of ``p_stages``. Reference throughputs that rows carry
(``seed_measured_tflops``: seed 003's RTX 4060; ``measured_tflops``: the H200 measurements of
validation/h200/round3, mma.sync, and round28, its WMMA variant) are drawn as hollow markers beside the model, never
used by it; where several measured kernels share a panel, their markers sit side by side, each in its model line's colour.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.common import Drawn, _finite  # noqa: E402

PARTS = ("mma", "contention", "barrier", "copy_wait")
PART_LABELS = {
    "mma": "MMAs / instruction issue",
    "contention": "tensor / shared pipe taken by other work",
    "barrier": "barrier + first shared read",
    "copy_wait": "waiting for the stage's copy (latency, bandwidth)",
}
PART_COLORS = {"mma": "C2", "contention": "C1", "barrier": "C4", "copy_wait": "C3"}
REFS = (("seed_measured_tflops", "seed 003, measured"),
        ("measured_tflops_at_model_clock", "measured, rescaled to the model's clock"))
#: model-line markers per kernel on one panel, so kernels of near-equal throughput (mma.sync and WMMA) stay apart
MARKERS = "o^vDsP"
#: a reference line this far above the panel's data is named in the legend, not drawn, so the data keep the height
OFF_SCALE = 1.6


def _rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if _finite(r.get("pipe_step_clk")) and _finite(r.get("p_stages")) and _finite(r.get("tflops"))]


def _label(r: dict) -> str:
    return str(r.get("label") or r.get("kernel"))


def _pipeline(rows: list[dict], machines: dict) -> list[Drawn] | None:
    rs = _rows(rows)
    if len({r["p_stages"] for r in rs}) < 2:
        return None
    ms = list(dict.fromkeys(r["machine"] for r in rs))
    return [_throughput(rs, ms, machines), _parts(rs, ms)]


def _throughput(rs: list[dict], ms: list[str], machines: dict) -> Drawn:
    fig = Figure(figsize=(4.0 * len(ms), 3.9), layout="constrained")
    axes = fig.subplots(1, len(ms), squeeze=False)[0]
    reading = []
    for ax, m in zip(axes, ms):
        mine = [r for r in rs if r["machine"] == m]
        kernels = list(dict.fromkeys(_label(r) for r in mine))
        measured = [k for k in kernels if any(_finite(r.get(c)) for r in mine if _label(r) == k for c, _ in REFS)]
        top = 0.0
        for n, k in enumerate(kernels):
            pts = sorted((r for r in mine if _label(r) == k), key=lambda r: r["p_stages"])
            S = [r["p_stages"] for r in pts]
            ax.plot(S, [r["tflops"] for r in pts], "-", marker=MARKERS[n % len(MARKERS)], color=f"C{n}",
                    label=f"{k}: model")
            top = max([top] + [r["tflops"] for r in pts])
            # measured kernels' markers side by side (each beside its own model point) where several share a panel
            dx = 0.08 * (measured.index(k) - (len(measured) - 1) / 2) if k in measured else 0.0
            for col, what in REFS:
                ref = [(r["p_stages"] + dx, r[col]) for r in pts if _finite(r.get(col))]
                if ref:
                    ax.plot(*zip(*ref), "s", ms=8, mfc="none", mew=1.5, color=f"C{n}", label=f"{k}: {what}")
                    top = max([top] + [v for _, v in ref])
            model = ", ".join(f"S={r['p_stages']} {r['tflops']:.1f}" for r in pts)
            text = f"{m} {k}: model {model} TFLOP/s"
            for col, what in REFS:
                ref = [f"S={r['p_stages']} {r[col]:.1f}" for r in pts if _finite(r.get(col))]
                if ref:
                    text += f"; {what} {', '.join(ref)}"
            reading.append(text)
        peak = next((r.get("peak_tflops") for r in mine if _finite(r.get("peak_tflops"))), None)
        if peak:
            # the reference lines are legend entries, not text on the plot, so the legend never covers their labels;
            # one far above the data (the H200's wgmma peak) is only named, so the kernels' lines keep the height
            frac = getattr(machines.get(m), "mma_sync_fraction", 1.0)
            lines = [(peak, "--", "datasheet peak")]
            if frac < 1:  # Hopper: mma.sync reaches only part of the wgmma peak
                lines.append((peak * frac, ":", "mma.sync rate"))
            off = [top > 0 and y > OFF_SCALE * top for y, _, _ in lines]
            for (y, ls, what), o in zip(lines, off):
                value = f"{y:.0f}" if y >= 100 else f"{y:.1f}"
                ax.axhline(y, color="0.5", ls=ls, lw=0.8, label=f"{what} {value}" + (" (above the axis)" if o else ""))
            if any(off):
                ax.set_ylim(top=max([1.1 * top] + [1.05 * y for (y, _, _), o in zip(lines, off) if not o]))
        ax.set(title=m, xlabel="pipeline stages S", xticks=sorted({r["p_stages"] for r in mine}))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="best")
    axes[0].set_ylabel("TFLOP/s")
    fig.suptitle("Throughput against pipeline depth (model lines; hollow squares: measurements it was not fitted to)", fontsize=9)
    return Drawn("pipeline_depth", "TFLOP/s against pipeline stages", fig,
                 " | ".join(reading) + " (seed 003: more stages hide more of the copy latency, until shared memory runs out)")


def _parts(rs: list[dict], ms: list[str]) -> Drawn:
    fig = Figure(figsize=(4.0 * len(ms), 3.9), layout="constrained")
    axes = fig.subplots(1, len(ms), squeeze=False)[0]
    reading = []
    for ax, m in zip(axes, ms):
        mine = [r for r in rs if r["machine"] == m]
        k = _label(mine[0])
        pts = sorted((r for r in mine if _label(r) == k), key=lambda r: r["p_stages"])
        S = [r["p_stages"] for r in pts]
        bottom = [0.0] * len(pts)
        for part in PARTS:
            v = [r.get(f"pipe_{part}_clk", 0.0) if _finite(r.get(f"pipe_{part}_clk")) else 0.0 for r in pts]
            ax.bar(S, v, bottom=bottom, width=0.6, color=PART_COLORS[part], label=PART_LABELS[part])
            bottom = [b + x for b, x in zip(bottom, v)]
        for s, r, b in zip(S, pts, bottom):
            ax.annotate(f"{r.get('blocks_per_sm', '?')} blk/SM", (s, b), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=7)
        ax.set(title=f"{m}: {k}", xlabel="pipeline stages S", xticks=S)
        ax.set_ylim(top=max(bottom) * 1.15 if bottom else 1)
        ax.grid(axis="y", alpha=0.3)
        worst = max(pts, key=lambda r: r.get("pipe_copy_wait_clk", 0) or 0)
        reading.append(f"{m} {k}: at S={worst['p_stages']} a block waits {worst.get('pipe_copy_wait_clk', 0):.0f} of "
                       f"{worst['pipe_step_clk']:.0f} cycles per k-step for its copy; "
                       + ", ".join(f"S={r['p_stages']}: {r.get('pipe_copy_wait_clk', 0):.0f}" for r in pts))
    axes[0].set_ylabel("SM cycles per k-step of one block")
    axes[-1].legend(fontsize=6.5, loc="upper right")
    fig.suptitle("Where a k-step's time goes (model): S-1 copies in flight hide the latency; one stage exposes all of it", fontsize=9)
    return Drawn("pipeline_stage_parts", "Where each stage's time goes", fig, " | ".join(reading))
