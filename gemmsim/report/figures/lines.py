"""Line plots an experiment declares under ``plots:`` (``Plot``), drawn one line per group."""

from __future__ import annotations

import math
import re

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from pydantic import Field

from gemmsim.report import format as fmt
from gemmsim.report.figures.common import LINE_BUDGET, Drawn, _finite, format_axis, panel_axes, style
from gemmsim.schema import Strict


class Plot(Strict):
    """An extra line plot of the results: y against x, one line per group."""

    x: str = Field(description="Result column on the x axis.")
    y: str = Field(description="Result column on the y axis.")
    group: list[str] = Field(default_factory=lambda: ["machine", "kernel"], description="Columns whose values make one line each ('kernel' means the label); more than 8 lines are split into panels by the first of them that varies.")
    title: str | None = Field(None, description="Figure title.")
    logx: bool = Field(False, description="Logarithmic x axis.")
    logy: bool = Field(False, description="Logarithmic y axis.")


def line_figure(rows: list[dict], x: str, y: str, group: list[str], title: str | None, logx: bool, logy: bool) -> Figure | None:
    """y against x, one line per distinct value of the group columns."""
    d = _line(rows, x, y, group, title, logx, logy)
    return d.fig if d else None


def _key_value(r: dict, g: str):
    """A group column's value; 'kernel' means the label when one is set (four labelled variants of one kernel are four lines)."""
    if g == "kernel":
        return r.get("label") or r.get("kernel")
    return r.get(g)


def _line_reading(lines: dict, x: str, y: str) -> str:
    """At most three sentences: the range of y over every line, and the line that changes most along x."""
    xs = sorted({p[x] for pts in lines.values() for p in pts})
    allp = [(lab, p) for lab, pts in lines.items() for p in pts]
    lo = min(allp, key=lambda t: t[1][y])
    hi = max(allp, key=lambda t: t[1][y])
    v = lambda col, val: fmt.value(col, val)  # noqa: E731
    if lo[1][y] == hi[1][y]:
        return f"Every point has {fmt.header(y)} = {v(y, hi[1][y])}: {fmt.header(x)} changes nothing here."
    s = (f"{fmt.header(y)} runs from {v(y, lo[1][y])} ({lo[0]}, {fmt.header(x)} = {v(x, lo[1][x])}) "
         f"to {v(y, hi[1][y])} ({hi[0]}, {fmt.header(x)} = {v(x, hi[1][x])}).")
    if len(xs) < 2:
        return s
    best = None
    for lab, pts in lines.items():
        if len(pts) < 2 or not pts[0][y]:
            continue
        r = pts[-1][y] / pts[0][y]
        if r > 0 and (best is None or abs(math.log(r)) > abs(math.log(best[1]))):
            best = (lab, r, pts[0], pts[-1])
    if best and abs(best[1] - 1) > 0.005:
        lab, r, a, b = best
        s += (f" Along {fmt.header(x)}, {lab} changes most: from {v(y, a[y])} at {v(x, a[x])} to {v(y, b[y])} at "
              f"{v(x, b[x])} ({r:.3g}x).")
    elif best:
        s += f" No line changes by more than 0.5 % along {fmt.header(x)}."
    return s


def _line(rows, x, y, group, title, logx, logy) -> Drawn | None:
    rs = [r for r in rows if _finite(r.get(x)) and _finite(r.get(y))]
    if not rs:
        return None
    lines: dict[tuple, list[dict]] = {}
    for r in rs:
        lines.setdefault(tuple(_key_value(r, g) for g in group), []).append(r)
    # group columns whose value is the same everywhere say nothing in a legend
    live = [i for i in range(len(group)) if len({k[i] for k in lines}) > 1]
    # more than LINE_BUDGET lines: one panel per value of the first varying group column
    split = live[0] if len(lines) > LINE_BUDGET and len(live) > 1 else None
    panels: dict = {}
    for key, pts in lines.items():
        panels.setdefault(key[split] if split is not None else None, {})[key] = pts
    # a panel still over the budget (one group column with many values) is cut into panels of LINE_BUDGET lines
    cut: dict = {}
    for pkey, plines in panels.items():
        items = list(plines.items())
        if len(items) <= LINE_BUDGET:
            cut[pkey] = plines
            continue
        for k in range(0, len(items), LINE_BUDGET):
            part = f"lines {k + 1}-{min(k + LINE_BUDGET, len(items))} of {len(items)}"
            cut[f"{pkey}, {part}" if pkey is not None else part] = dict(items[k : k + LINE_BUDGET])
    panels = cut
    n = len(panels)
    cols = 1 if n == 1 else 2
    fig = Figure(figsize=(7 if n == 1 else 11, 4.2 * (-(-n // cols))), layout="constrained")
    axes = panel_axes(fig, n, cols)
    sx, sy = fmt.scale(x), fmt.scale(y)
    labelled: dict[str, list[dict]] = {}
    for ax, (pkey, plines) in zip(axes, panels.items()):
        for i, (key, pts) in enumerate(plines.items()):
            pts.sort(key=lambda r: r[x])
            lab = " ".join(str(key[j]) for j in live if j != split) or " ".join(str(k) for k in key)
            st = style(i)
            ax.plot([p[x] * sx for p in pts], [p[y] * sy for p in pts], lw=1.4, ms=4, label=lab, **st)
            labelled[(f"{pkey} " if pkey is not None else "") + lab] = pts
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        format_axis(ax, "x", x, [p[x] * sx for pts in plines.values() for p in pts])
        format_axis(ax, "y", y, [p[y] * sy for pts in plines.values() for p in pts])
        if pkey is not None:
            ax.set_title(str(pkey), fontsize=10)
        ax.legend(fontsize=8, title=" ".join(fmt.header(group[j]) for j in live if j != split) or None, title_fontsize=8)
        ax.grid(alpha=0.3, which="both")
    t = title or f"{fmt.header(y)} against {fmt.header(x)}"
    fig.suptitle(t, fontsize=11)
    name = re.sub(r"[^A-Za-z0-9_]+", "_", f"{y}_vs_{x}")
    return Drawn(name, t, fig, _line_reading(labelled, x, y))


def _plots(exp) -> list:
    raw = exp.get("plots") if isinstance(exp, dict) else getattr(exp, "plots", None)
    return [p if isinstance(p, Plot) else Plot.model_validate(p) for p in raw or []]
