"""Systolic-array figures: utilization against one varied dimension at a time."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report import format as fmt
from gemmsim.report.figures.common import LINE_BUDGET, _SECTION, Drawn, _finite, format_axis, panel_axes, style


def _series(rs: list[dict]) -> dict[tuple, list[dict]]:
    """Rows grouped into series along which exactly one thing varies: square sizes n (M = N = K), or one of M, N, K
    with the other two fixed. Key: (varied, fixed description)."""
    out: dict[tuple, list[dict]] = {}
    square = [r for r in rs if r["M"] == r["N"] == r["K"]]
    if len({r["M"] for r in square}) >= 2:
        out[("n", "M = N = K")] = square
    for d, others in (("M", "NK"), ("N", "MK"), ("K", "MN")):
        groups: dict[tuple, list[dict]] = {}
        for r in rs:
            groups.setdefault(tuple(r[o] for o in others), []).append(r)
        for fixed, g in groups.items():
            if len({r[d] for r in g}) >= 2 and not all(r["M"] == r["N"] == r["K"] for r in g):
                out[(d, ", ".join(f"{o} = {v}" for o, v in zip(others, fixed)))] = g
    return out


def _systolic(rows: list[dict], machines: dict) -> Drawn | None:
    rs = [r for r in rows if _finite(r.get("utilization")) and all(_finite(r.get(x)) for x in "MNK")]
    if not rs:
        return None
    series = _series(rs)
    if not series:
        return None
    panels: dict[tuple, dict[str, list[dict]]] = {}
    for (d, fixed), g in series.items():
        for r in g:
            line = " ".join(str(v) for v in (r.get("label") or r.get("kernel"), f"array {r['p_array']}" if r.get("p_array") else None) if v)
            panels.setdefault((r["machine"], d, fixed), {}).setdefault(line, []).append(r)
    # more lines than the budget: split the panel by label
    split: dict[tuple, dict[str, list[dict]]] = {}
    for (m, d, fixed), lines in panels.items():
        if len(lines) <= LINE_BUDGET:
            split[(m, d, fixed, None)] = lines
            continue
        for line, pts in lines.items():
            lab = str(pts[0].get("label") or pts[0].get("kernel"))
            split.setdefault((m, d, fixed, lab), {})[line.removeprefix(lab).strip() or line] = pts
    n = len(split)
    fig = Figure(figsize=(7 if n == 1 else 12, 3.9 * (-(-n // 2))), layout="constrained")
    axes = panel_axes(fig, n, 2)
    best_gain = None
    for ax, ((m, d, fixed, lab), lines) in zip(axes, split.items()):
        xs = set()
        for i, (line, pts) in enumerate(lines.items()):
            key = (lambda r: r["M"]) if d == "n" else (lambda r, d=d: r[d])
            pts = sorted(pts, key=key)
            x = [key(p) for p in pts]
            xs |= set(x)
            ax.plot(x, [100 * p["utilization"] for p in pts], lw=1.5, ms=5, label=line, **style(i))
            if len(pts) >= 2 and pts[0]["utilization"] > 0:
                g = pts[-1]["utilization"] / pts[0]["utilization"]
                if best_gain is None or g > best_gain[0]:
                    best_gain = (g, m, line, d, fixed, pts[0], pts[-1])
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 105)
        format_axis(ax, "x", d, sorted(xs))
        ax.set_xlabel(f"{d} ({fixed})" if d != "n" else "n (M = N = K)")
        ax.set_ylabel("utilization (%)")
        ax.set_title(f"{m}" + (f": {lab}" if lab else "") + (f", {fixed}" if d != "n" else ""), fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Systolic utilization against one varied dimension", fontsize=11)
    reading = ""
    if best_gain:
        g, m, line, d, fixed, a, b = best_gain
        dim = "n" if d == "n" else d
        xa, xb = (a["M"], b["M"]) if d == "n" else (a[d], b[d])
        reading = (
            f"Utilization rises with the varied dimension: on {m} {line} it goes from {fmt.percent(a['utilization'])} at "
            f"{dim} = {xa} to {fmt.percent(b['utilization'])} at {dim} = {xb}."
        )
    low = min(rs, key=lambda r: r["utilization"])
    reading += (
        f" The lowest, {fmt.percent(low['utilization'])} ({low['machine']} {low.get('label') or low.get('kernel')} "
        f"{low['M']}x{low['N']}x{low['K']}), leaves most of the array idle. ({_SECTION['systolic']}.)"
    )
    return Drawn("systolic_utilization", "Systolic utilization against one varied dimension", fig, reading.strip())
