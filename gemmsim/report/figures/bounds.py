"""The Hong-Kung / red-blue pebbling floor (``gemmsim.analytic.bounds``) drawn on the traffic figures: a black tick
over every bar of bytes moved below a cache level at the least any schedule of the classical GEMM can move through
that much fast memory, and a line on DRAM-bytes plots. The rows carry ``hong_kung_bytes_<level>`` and
``traffic_over_bound_<level>`` (CPU) or ``hong_kung_bytes`` and ``traffic_over_bound`` (DRAM, CPU and GPU)."""

from __future__ import annotations

from gemmsim.report.figures.common import _finite


def bound_ticks(ax, rs: list[dict], levels: list[str], name) -> str:
    """Ticks at ``hong_kung_bytes_<level>`` over the grouped bars of ``_level_bars`` (same positions); a sentence on
    the case closest to the floor of the first level, or '' when the rows have no bounds."""
    width = 0.8 / max(1, len(levels))
    drawn = False
    for j, lv in enumerate(levels):
        xs, ys = [], []
        for i, r in enumerate(rs):
            b = r.get(f"hong_kung_bytes_{lv}")
            if _finite(b) and b > 0:
                xs.append(i + (j - (len(levels) - 1) / 2) * width)
                ys.append(b)
        if xs:
            ax.scatter(xs, ys, marker="_", s=max(60, 500 * width), color="k", linewidths=2, zorder=3,
                       label="Hong-Kung floor" if not drawn else None)
            drawn = True
    if not drawn:
        return ""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    first = levels[0]
    ok = [r for r in rs if _finite(r.get(f"traffic_over_bound_{first}"))]
    if not ok:
        return ""
    best = min(ok, key=lambda r: r[f"traffic_over_bound_{first}"])
    worst = max(ok, key=lambda r: r[f"traffic_over_bound_{first}"])
    return (f"Black ticks: the Hong-Kung floor, the least traffic any schedule can move through that level's fast memory; "
            f"below {first}, {name(best)} moves {best[f'traffic_over_bound_{first}']:.3g}x its floor and {name(worst)} "
            f"{worst[f'traffic_over_bound_{first}']:.3g}x.")


def bound_line(ax, ns: list, ref: dict) -> bool:
    """A line at each N's ``hong_kung_bytes`` (DRAM against all on-chip memory); False when the rows have none."""
    ys = [ref[n].get("hong_kung_bytes") for n in ns]
    if not all(_finite(y) for y in ys):
        return False
    ax.plot(ns, ys, color="#D55E00", ls="-.", lw=1.2, label="Hong-Kung floor (all on-chip memory)")
    return True
