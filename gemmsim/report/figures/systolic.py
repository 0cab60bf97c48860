"""Systolic-array figures: utilization against matrix size."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.common import _SECTION, Drawn, _finite, _pct


def _systolic(rows: list[dict], machines: dict) -> Drawn | None:
    rs = [r for r in rows if _finite(r.get("utilization")) and all(_finite(r.get(x)) for x in "MNK")]
    if not rs:
        return None
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    lines: dict[tuple, list[dict]] = {}
    for r in rs:
        lines.setdefault((r["machine"], r.get("label") or r.get("kernel"), r.get("p_dataflow")), []).append(r)
    reading = []
    for n, (key, pts) in enumerate(lines.items()):
        pts.sort(key=lambda r: r["M"] * r["N"] * r["K"])
        x = [(p["M"] * p["N"] * p["K"]) ** (1 / 3) for p in pts]
        y = [100 * p["utilization"] for p in pts]
        lab = " ".join(str(k) for k in key if k is not None)
        ax.plot(x, y, marker="o", ms=3, color=f"C{n % 10}", label=lab)
        shape = lambda p: f"{p['M']}x{p['N']}x{p['K']}"  # noqa: E731
        best = max(pts, key=lambda p: p["utilization"])
        s = f"{lab}: utilization {_pct(pts[0]['utilization'])} at {shape(pts[0])}"
        if len(pts) > 1:
            s += f", {_pct(pts[-1]['utilization'])} at {shape(pts[-1])} (best {_pct(best['utilization'])} at {shape(best)})"
        reading.append(s + ".")
    ax.set_xscale("log")
    ax.set_ylim(0, 105)
    ax.set_xlabel("matrix size: (M*N*K)^(1/3)")
    ax.set_ylabel("utilization (%)")
    ax.set_title("Systolic array utilization against matrix size")
    ax.grid(alpha=0.3, which="both")
    if len(lines) <= 12:
        ax.legend(fontsize=7)
    reading.append(f"This is {_SECTION['systolic']}.")
    return Drawn("systolic_utilization", "Systolic utilization against matrix size", fig, " ".join(reading))
