"""Line plots an experiment declares under ``plots:`` (``Plot``), drawn one line per group."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from pydantic import Field

from gemmsim.report.figures.common import Drawn, _finite
from gemmsim.schema import Strict


class Plot(Strict):
    """An extra line plot of the results: y against x, one line per group."""

    x: str = Field(description="Result column on the x axis.")
    y: str = Field(description="Result column on the y axis.")
    group: list[str] = Field(default_factory=lambda: ["machine", "kernel"], description="Columns whose values make one line each.")
    title: str | None = Field(None, description="Figure title.")
    logx: bool = Field(False, description="Logarithmic x axis.")
    logy: bool = Field(False, description="Logarithmic y axis.")


def line_figure(rows: list[dict], x: str, y: str, group: list[str], title: str | None, logx: bool, logy: bool) -> Figure | None:
    """y against x, one line per distinct value of the group columns."""
    d = _line(rows, x, y, group, title, logx, logy)
    return d.fig if d else None


def _line_reading(lab: str, pts: list[dict], x: str, y: str) -> str:
    """One line of a line plot in words: its ends, the change between them, and its extremes when they lie inside."""
    xs = sorted({p[x] for p in pts})
    if len(xs) == 1:
        ys = sorted({p[y] for p in pts})
        vals = f"{ys[0]:.4g}" if len(ys) == 1 else f"{ys[0]:.4g} to {ys[-1]:.4g}"
        return f"{lab}: one point, {y} = {vals} at {x} = {xs[0]:.4g}."
    first, last = pts[0], pts[-1]
    s = f"{lab}: {y} goes from {first[y]:.4g} at {x} = {first[x]:.4g} to {last[y]:.4g} at {x} = {last[x]:.4g}"
    if first[y] and last[y] and (first[y] > 0) == (last[y] > 0):
        s += f" ({last[y] / first[y]:.3g}x)"
    lo, hi = min(pts, key=lambda p: p[y]), max(pts, key=lambda p: p[y])
    inner = [f"lowest {lo[y]:.4g} at {x} = {lo[x]:.4g}" for p in (lo,) if p is not first and p is not last]
    inner += [f"highest {hi[y]:.4g} at {x} = {hi[x]:.4g}" for p in (hi,) if p is not first and p is not last]
    return s + (f"; {', '.join(inner)}" if inner else "") + "."


def _line(rows, x, y, group, title, logx, logy) -> Drawn | None:
    rs = [r for r in rows if _finite(r.get(x)) and _finite(r.get(y))]
    if not rs:
        return None
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    lines: dict[tuple, list[dict]] = {}
    for r in rs:
        lines.setdefault(tuple(r.get(g) for g in group), []).append(r)
    reading = []
    for key, pts in lines.items():
        pts.sort(key=lambda r: r[x])
        lab = " ".join(str(k) for k in key)
        ax.plot([p[x] for p in pts], [p[y] for p in pts], marker="o", ms=3, label=lab)
        reading.append(_line_reading(lab or "all", pts, x, y))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    t = title or f"{y} vs {x}"
    ax.set_title(t)
    if len(lines) <= 12:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    name = re.sub(r"[^A-Za-z0-9_]+", "_", f"{y}_vs_{x}")
    return Drawn(name, t, fig, " ".join(reading[:12]) + (f" ({len(reading) - 12} more lines not described.)" if len(reading) > 12 else ""))


def _plots(exp) -> list:
    raw = exp.get("plots") if isinstance(exp, dict) else getattr(exp, "plots", None)
    return [p if isinstance(p, Plot) else Plot.model_validate(p) for p in raw or []]
