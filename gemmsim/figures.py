"""Figures of a results folder, drawn with matplotlib's object API on the Agg backend.

Each figure is a PNG in ``figures/`` and is drawn from the result rows alone (results.json), so
``gemmsim report`` can redraw it later.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _case_label(r: dict, many_shapes: bool) -> str:
    lab = str(r.get("label") or r.get("kernel"))
    if many_shapes and r.get("M") is not None:
        lab += f"\n{r['M']}x{r['N']}x{r['K']}"
    return lab


def _many_shapes(rows: list[dict]) -> bool:
    return len({(r.get("M"), r.get("N"), r.get("K"), r.get("dtype")) for r in rows}) > 1


def hit_rate_figure(rows: list[dict]) -> Figure | None:
    """Hit rate of every cache level, per kernel, one panel per machine (CPU rows only)."""
    cpu = [r for r in rows if any(k.endswith("_hit_rate") for k in r)]
    if not cpu:
        return None
    machines = list(dict.fromkeys(r["machine"] for r in cpu))
    many = _many_shapes(cpu)
    fig = Figure(figsize=(max(6, 1.2 * len(cpu) / max(1, len(machines)) + 3), 3.2 * len(machines)), layout="constrained")
    axes = fig.subplots(len(machines), 1, squeeze=False)[:, 0]
    for ax, m in zip(axes, machines):
        rs = [r for r in cpu if r["machine"] == m]
        levels = [k.removesuffix("_hit_rate") for k in rs[0] if k.endswith("_hit_rate")]
        width = 0.8 / max(1, len(levels))
        for j, lv in enumerate(levels):
            xs = [i + (j - (len(levels) - 1) / 2) * width for i in range(len(rs))]
            ys = [100 * r.get(f"{lv}_hit_rate", float("nan")) for r in rs]
            ax.bar(xs, ys, width, label=lv)
        ax.set_xticks(range(len(rs)), [_case_label(r, many) for r in rs], fontsize=8)
        ax.set_ylabel("hit rate (%)")
        ax.set_ylim(0, 105)
        ax.set_title(f"{m}: hit rate per cache level")
        ax.legend(fontsize=8, ncols=len(levels), loc="lower right")
        ax.grid(axis="y", alpha=0.3)
    return fig


def time_figure(rows: list[dict]) -> Figure | None:
    """Modelled time per case, bars grouped by kernel with one colour per machine (log scale), bound written on top."""
    rs = [r for r in rows if _finite(r.get("time_s"))]
    if not rs:
        return None
    many = _many_shapes(rs)
    keys = list(dict.fromkeys(_case_label(r, many) for r in rs))
    machines = list(dict.fromkeys(r["machine"] for r in rs))
    width = 0.8 / len(machines)
    fig = Figure(figsize=(max(6, 0.9 * len(keys) * max(1, len(machines) / 2) + 2), 4), layout="constrained")
    ax = fig.add_subplot()
    for j, m in enumerate(machines):
        for i, key in enumerate(keys):
            match = [r for r in rs if r["machine"] == m and _case_label(r, many) == key]
            if not match:
                continue
            x = i + (j - (len(machines) - 1) / 2) * width
            t = match[0]["time_s"]
            ax.bar(x, t, width, color=f"C{j}", label=m if i == 0 or not ax.get_legend_handles_labels()[1].count(m) else None)
            ax.text(x, t, str(match[0].get("bound", "")), rotation=90, fontsize=6, ha="center", va="bottom")
    ax.set_yscale("log")
    ax.set_xticks(range(len(keys)), keys, fontsize=8)
    ax.set_ylabel("modelled time (s)")
    ax.set_title("Modelled time (label: the bound that dominates)")
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), fontsize=8)
    ax.grid(axis="y", alpha=0.3, which="both")
    return fig


def line_figure(rows: list[dict], x: str, y: str, group: list[str], title: str | None, logx: bool, logy: bool) -> Figure | None:
    """y against x, one line per distinct value of the group columns."""
    rs = [r for r in rows if _finite(r.get(x)) and _finite(r.get(y))]
    if not rs:
        return None
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    lines: dict[tuple, list[dict]] = {}
    for r in rs:
        lines.setdefault(tuple(r.get(g) for g in group), []).append(r)
    for key, pts in lines.items():
        pts.sort(key=lambda r: r[x])
        ax.plot([p[x] for p in pts], [p[y] for p in pts], marker="o", ms=3, label=" ".join(str(k) for k in key))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title or f"{y} vs {x}")
    if len(lines) <= 12:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def draw_all(folder: Path, exp, rows: list[dict]) -> list[Path]:
    """Draw every figure that applies into ``folder/figures``; return the files written."""
    out = Path(folder) / "figures"
    out.mkdir(exist_ok=True)
    written = []
    figs = [("hit_rates", hit_rate_figure(rows)), ("modelled_time", time_figure(rows))]
    for i, p in enumerate(getattr(exp, "plots", []) or []):
        name = re.sub(r"[^A-Za-z0-9_]+", "_", f"{p.y}_vs_{p.x}") or f"plot{i}"
        figs.append((name, line_figure(rows, p.x, p.y, p.group, p.title, p.logx, p.logy)))
    for name, fig in figs:
        if fig is None:
            continue
        path = out / f"{name}.png"
        fig.savefig(path, dpi=110)
        written.append(path)
    return written
