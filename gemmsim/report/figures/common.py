"""Shared pieces of the figures: the Drawn record, labels, number formats, the seed sections each figure illustrates."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report import format as fmt  # noqa: E402

#: Largest M*N*K for which the miss heatmaps replay a CPU case (64^3).


HEATMAP_MAX_MNK = 64**3


#: Most cases one heatmap figure shows (the rest are named in its reading).


HEATMAP_MAX_CASES = 8


#: Most smem_pattern rows one bank diagram shows.


BANKS_MAX_ROWS = 8


_SECTION = {
    "hit_rates": "experiments/CLAIMS.md 000-2: a cache line brings its neighbours; a walk along a row uses them, a walk down a column wastes them",
    "bytes": "experiments/CLAIMS.md 000-8: the traffic Q that sets the arithmetic intensity W/Q",
    "time": "experiments/CLAIMS.md 000-9: which ceiling a kernel hits decides what would speed it up",
    "heatmap": "experiments/CLAIMS.md 000-3, the 8x8 lab: which elements keep coming back from memory",
    "roofline": "experiments/CLAIMS.md 000-9: the roofline, ridge point = peak / bandwidth",
    "waves": "experiments/CLAIMS.md 001-waves: a partial last wave costs as much as a full one",
    "banks": "experiments/CLAIMS.md 000-10: 32 banks of 4 bytes; lanes that hit one bank at different words wait for each other",
    "systolic": "experiments/CLAIMS.md 001-systolic: a small matrix leaves most of the array multiplying zeros",
    "sectors": "experiments/CLAIMS.md 000-10: a warp's loads are served in 32-byte sectors",
    "raster": "experiments/CLAIMS.md 001-raster: the truth lies between no reuse and perfect reuse, set by the L2 and the launch order",
    "blocking": "experiments/CLAIMS.md 000-4: the working set s(BM*BK + BK*BN + BM*BN) against each cache level",
}

#: Most lines one panel draws; a figure with more is split into panels (LINE_BUDGET is what the tests check).
LINE_BUDGET = 8

#: Eight colours that stay apart (Okabe-Ito, colour-blind safe) and markers to go with them.
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def style(i: int) -> dict:
    """Colour and marker of the i-th line of a panel (distinct for the first LINE_BUDGET lines)."""
    return {"color": COLORS[i % len(COLORS)], "marker": MARKERS[(i // len(COLORS) + i) % len(MARKERS)]}


def panel_axes(fig: Figure, n: int, cols: int = 2, sharey: bool = False) -> list:
    """``n`` axes in a grid of at most ``cols`` columns."""
    cols = max(1, min(cols, n))
    rows = -(-n // cols)
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return list(axes[:n])


def sentences(text: str, n: int = 3) -> str:
    """The first ``n`` sentences of ``text`` (readings stay short)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9(])", text.strip())
    return " ".join(parts[:n])


def eng_axis(ax, which: str, unit: str) -> None:
    """Engineering tick labels with a unit on an axis ('x' or 'y'): 1 MB, 10 us."""
    from matplotlib.ticker import EngFormatter

    fmtr = EngFormatter(unit=unit, sep=" ")
    (ax.xaxis if which == "x" else ax.yaxis).set_major_formatter(fmtr)



@dataclass


class Drawn:
    """One figure with its file stem, title and reading (or, when drawing it failed, no figure and the error)."""

    name: str
    title: str
    fig: Figure | None
    reading: str
    error: str | None = None
    headline: bool = False  # one of the figures the experiment's headline names (report.html shows them first)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _many_shapes(rows: list[dict]) -> bool:
    return len({(r.get("M"), r.get("N"), r.get("K"), r.get("dtype")) for r in rows}) > 1


def _varying_params(rows: list[dict]) -> list[str]:
    """Parameter columns (p_*) whose value differs between rows of the same label and machine."""
    out: list[str] = []
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r.get("machine"), r.get("label") or r.get("kernel")), []).append(r)
    for rs in groups.values():
        for k in {k for r in rs for k in r if k.startswith("p_")}:
            if k not in out and len({json.dumps(r.get(k), default=str) for r in rs}) > 1:
                out.append(k)
    return sorted(out)


def _labeler(rows: list[dict]):
    """A function row -> short case name: label, plus the shape and parameters that tell same-label rows apart."""
    many = _many_shapes(rows)
    params = _varying_params(rows)

    def name(r: dict, sep: str = " ") -> str:
        lab = str(r.get("label") or r.get("kernel"))
        extra = [f"{p[2:]}={r.get(p)}" for p in params if r.get(p) is not None]
        if many and r.get("M") is not None:
            extra.insert(0, f"{r['M']}x{r['N']}x{r['K']}" + (f" {r['dtype']}" if len({x.get('dtype') for x in rows}) > 1 else ""))
        return lab + (sep + " ".join(extra) if extra else "")

    return name


def _case_label(r: dict, many_shapes: bool) -> str:
    lab = str(r.get("label") or r.get("kernel"))
    if many_shapes and r.get("M") is not None:
        lab += f"\n{r['M']}x{r['N']}x{r['K']}"
    return lab


# the figures' number words, all through the shared formatter (gemmsim.report.format)
def _pct(x: float) -> str:
    return fmt.percent(x)


def _si(x: float, unit: str = "") -> str:
    return fmt.eng(x, unit)


def _g(x: float) -> str:
    """Three significant digits without an exponent (2699 -> '2,699', 1.406 -> '1.41')."""
    return f"{x:,.0f}" if 1000 <= abs(x) < 1e6 else fmt.number(x)


def _seconds(s: float) -> str:
    return fmt.seconds(s)


def _machines_of(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(str(r.get("machine")) for r in rows))


def _levels(rs: list[dict], suffix: str) -> list[str]:
    out: list[str] = []
    for r in rs:
        for k in r:
            if k.endswith(suffix) and _finite(r[k]) and k.removesuffix(suffix) not in out:
                out.append(k.removesuffix(suffix))
    return out


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", Path(s).stem) or "machine"


def format_axis(ax, which: str, col: str, values=None) -> None:
    """Label an axis for a result column through the shared formatter: engineering ticks with the unit for times,
    bytes and rates ('10 us', '1 MB'), plain numbers on log axes, and the data's own values as ticks when they are few."""
    from matplotlib.ticker import EngFormatter, FuncFormatter, NullFormatter

    from gemmsim.report import format as fmt

    axis = ax.xaxis if which == "x" else ax.yaxis
    c = fmt.column(col)
    kind = c.kind if c else ""
    unit = {"time": "s", "bytes": "B", "flop_rate": "FLOP/s", "tflop_rate": "FLOP/s"}.get(kind)
    label = fmt.axis_label(col)
    scale = ax.get_xscale() if which == "x" else ax.get_yscale()
    if unit:
        axis.set_major_formatter(EngFormatter(unit=unit, sep=" "))
        lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()
        few = scale == "log" and lo > 0 and hi / lo < 30  # less than ~1.5 decades: label the minor ticks too
        axis.set_minor_formatter(EngFormatter(unit=unit, sep=" ") if few else NullFormatter())
        if few:
            axis.set_tick_params(which="minor", labelsize=7)
        label = label.replace(f" ({unit})", "")
    elif scale == "log":
        axis.set_major_formatter(FuncFormatter(lambda v, _: fmt.number(v)))
        axis.set_minor_formatter(NullFormatter())
        vals = sorted({float(v) for v in values or [] if _finite(v) and v > 0})
        if 1 < len(vals) <= 12:
            (ax.set_xticks if which == "x" else ax.set_yticks)(vals)
    (ax.set_xlabel if which == "x" else ax.set_ylabel)(label)
