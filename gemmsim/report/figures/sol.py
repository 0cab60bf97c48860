"""Speed of light, as Nsight Compute draws it: per GPU case, each unit's busy fraction over the modelled time
(``sol_*_pct`` columns, ``gemmsim.timing.sol``)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.common import Drawn, _finite, _labeler, _machines_of, _slug  # noqa: E402

UNITS = (("compute", "sol_compute_pct", "#1f77b4"), ("shared memory", "sol_smem_pct", "#ff7f0e"),
         ("L1", "sol_l1_pct", "#2ca02c"), ("L2", "sol_l2_pct", "#9467bd"), ("DRAM", "sol_dram_pct", "#d62728"))  # fmt: skip
#: most cases one panel shows (the largest problem of each kernel label first)
MAX_CASES = 8


def _pick(rs: list[dict]) -> list[dict]:
    if len(rs) <= MAX_CASES:
        return rs
    best: dict = {}
    for r in rs:  # the largest problem of each label
        lab = r.get("label") or r.get("kernel")
        size = (r.get("M") or 0) * (r.get("N") or 0) * (r.get("K") or 0)
        if lab not in best or size > best[lab][0]:
            best[lab] = (size, r)
    return [v[1] for v in best.values()][:MAX_CASES]


def _sol(rows: list[dict], machines: dict) -> list[Drawn]:
    rows = [r for r in rows if _finite(r.get("sol_compute_pct")) or _finite(r.get("sol_dram_pct"))]
    out: list[Drawn] = []
    if not rows:
        return out
    name = _labeler(rows)
    for m in _machines_of(rows):
        rs = _pick([r for r in rows if r["machine"] == m])
        fig = Figure(figsize=(9, 0.75 * len(rs) + 1.4), layout="constrained")
        ax = fig.subplots()
        h = 0.8 / len(UNITS)
        for j, (unit, col, colour) in enumerate(UNITS):
            ys = [i + (j - (len(UNITS) - 1) / 2) * h for i in range(len(rs))]
            vals = [r.get(col) if _finite(r.get(col)) else 0.0 for r in rs]
            ax.barh(ys, vals, h, color=colour, label=unit)
        ax.set_yticks(range(len(rs)), [name(r) for r in rs], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 105)
        ax.axvline(100, color="k", lw=0.8)
        ax.set_xlabel("% of the unit's peak over the modelled time (Nsight Compute's speed of light)")
        ax.grid(axis="x", alpha=0.3)
        fig.legend(fontsize=8, loc="outside right upper")
        ax.set_title(f"{m}: how busy each unit is")
        parts = []
        for r in rs[:3]:
            vals = {u: r.get(c) for u, c, _ in UNITS if _finite(r.get(c))}
            if vals:
                top = max(vals, key=vals.get)
                low = min(vals, key=vals.get)
                if vals[top] >= 70:
                    parts.append(f"{name(r)}: {top} at {vals[top]:.0f} % of its peak (the roof it runs into), {low} at {vals[low]:.0f} %")
                else:
                    parts.append(f"{name(r)}: no unit above {vals[top]:.0f} % ({top}): the GPU is underused (too few blocks "
                                 "to fill the SMs, or latency not hidden)")  # fmt: skip
        reading = "; ".join(parts) + ". A unit near 100 % bounds the kernel; speeding up any other unit would not help."
        out.append(Drawn(f"speed_of_light_{_slug(m)}", f"{m}: speed of light", fig, reading))
    return out
