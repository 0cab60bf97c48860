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

#: Largest M*N*K for which the miss heatmaps replay a CPU case (64^3).


HEATMAP_MAX_MNK = 64**3


#: Most cases one heatmap figure shows (the rest are named in its reading).


HEATMAP_MAX_CASES = 8


#: Most smem_pattern rows one bank diagram shows.


BANKS_MAX_ROWS = 8


_SECTION = {
    "hit_rates": "seed 000 sections 2-3.1: a cache line brings its neighbours; a walk along a row uses them, a walk down a column of a row-major matrix wastes them",
    "bytes": "seed 000 section 8: the traffic Q that sets the arithmetic intensity W/Q",
    "time": "seed 000 section 9: which ceiling a kernel hits decides what would speed it up",
    "heatmap": "seed 000 sections 3 and 3.1 (the 8x8 lab): which elements keep coming back from memory",
    "roofline": "seed 000 section 9 (the roofline: ridge point = peak / bandwidth)",
    "waves": "seed 001, wave quantization: a partial last wave costs as much as a full one",
    "banks": "seed 000 section 10 and seed 001: 32 banks of 4 bytes; lanes that hit one bank at different words wait for each other",
    "systolic": "seed 001, systolic arrays: a small matrix leaves most of the array multiplying zeros",
}


@dataclass


class Drawn:
    """One figure with its file stem, title and reading (or, when drawing it failed, no figure and the error)."""

    name: str
    title: str
    fig: Figure | None
    reading: str
    error: str | None = None


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


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _si(x: float, unit: str = "") -> str:
    for p, f in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= f:
            return f"{x / f:.3g} {p}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def _g(x: float) -> str:
    """Three significant digits without an exponent below a million (2699 -> '2,699', 1.406 -> '1.41')."""
    return f"{x:,.0f}" if 1000 <= abs(x) < 1e6 else f"{x:.3g}"


def _seconds(s: float) -> str:
    for unit, f in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("ps", 1e-12)):
        if s >= f:
            return f"{s / f:.3g} {unit}"
    return f"{s:.3g} s"


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
