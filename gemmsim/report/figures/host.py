"""Host figures: the measured latency staircase of this computer, and modelled against measured time.

- ``staircase_figure``: ns per dependent load against working-set size (pointer chase, ``gemmsim.machine.measure``),
  the cache sizes of the machine file marked, and the streaming bandwidth measured in each level and DRAM
  (seed 000 section 3: each level is a step; the step heights are the latencies the timing model uses).
- ``_modelled_vs_measured``: one point per host row (modelled ``time_s`` against the fastest measured repeat
  ``host_time_min_s``, a bar up to the median ``host_time_s``), log-log, with the y = x line and the band within 2x; the
  single-threaded BLAS time of each shape as a mark on the measured axis ("what a library reaches here").
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.common import Drawn, _finite

#: Colours (colour-blind-safe Okabe-Ito order).
_C = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]

#: Markers by kernel family, so that no legend lists more than a handful of entries.
_FAMILIES = [
    ("loop order (ijk ... kji)", lambda k: len(k) == 3 and set(k) == set("ijk")),
    ("blocked", lambda k: k == "blocked"),
    ("packed (scalar micro)", lambda k: k == "packed"),
    ("packed_micro / gemm (SIMD micro)", lambda k: k in ("packed_micro", "gemm")),
]


def _family(kernel: str) -> int:
    for i, (_, test) in enumerate(_FAMILIES):
        if test(kernel):
            return i
    return len(_FAMILIES)


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v >= 10 or v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def staircase_figure(staircase: list, machine, bandwidth: list | None = None) -> Drawn:
    """Latency staircase (and, when given, streaming bandwidth per level) of a measured host."""
    fig = Figure(figsize=(11, 4.2) if bandwidth else (7, 4.2), layout="constrained")
    axes = fig.subplots(1, 2 if bandwidth else 1, squeeze=False, width_ratios=[3, 2] if bandwidth else None)[0]
    ax = axes[0]
    xs = [s for s, _ in staircase]
    ys = [ns for _, ns in staircase]
    ax.plot(xs, ys, "o-", color=_C[0], ms=4, label="measured (pointer chase)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    clk = machine.clock_ghz
    for i, c in enumerate(machine.caches):
        ax.axvline(c.size, color="0.5", ls="--", lw=1)
        ax.text(c.size, 0.97, f"{c.name} {_bytes(c.size)} ", rotation=90, va="top", ha="right", fontsize=8,
                transform=ax.get_xaxis_transform(), color="0.3")
        # the latency the timing model now uses for a hit in this level
        ax.hlines(c.latency_cycles / clk, xs[0] if i == 0 else machine.caches[i - 1].size, c.size, color=_C[1], lw=2,
                  label="machine file (cycles / clock)" if i == 0 else None)
    ax.hlines(machine.dram.latency_ns, machine.caches[-1].size, xs[-1] * 1.4, color=_C[1], lw=2)
    ax.set_xlabel("working set (bytes, log scale)")
    ax.set_ylabel("ns per dependent load (log scale)")
    ticks = [x for x in (1 << 12, 1 << 15, 1 << 18, 1 << 21, 1 << 24, 1 << 27, 1 << 30) if xs[0] <= x <= xs[-1] * 1.5]
    ax.set_xticks(ticks, [_bytes(t) for t in ticks])
    ax.set_title(f"Latency staircase ({clk:.2f} GHz measured)", fontsize=10)
    ax.legend(fontsize=8, loc="center left")
    ax.set_ylim(min(ys) / 2, max(max(ys), machine.dram.latency_ns) * 1.5)
    ax.grid(True, which="major", alpha=0.3)
    if bandwidth:
        bx = axes[1]
        names = [c.name for c in machine.caches][: len(bandwidth) - 1] + ["DRAM"]
        rd = [b[1] for b in bandwidth]
        wr = [b[2] for b in bandwidth]
        pos = list(range(len(bandwidth)))
        bx.bar([p - 0.2 for p in pos], rd, width=0.4, color=_C[0], label="read (sum)")
        bx.bar([p + 0.2 for p in pos], wr, width=0.4, color=_C[2], label="write (fill)")
        for p, v in zip(pos, rd):
            bx.text(p - 0.2, v * 1.05, f"{v:.0f}" if v >= 10 else f"{v:.1f}", ha="center", fontsize=8)
        bx.set_xticks(pos, [f"{n}\n{_bytes(b[0])}" for n, b in zip(names, bandwidth)], fontsize=8)
        bx.set_yscale("log")
        bx.set_ylabel("bytes per cycle, one core (log scale)")
        bx.set_title("Streaming bandwidth by level", fontsize=10)
        bx.legend(fontsize=8)
    steps = ", ".join(f"{c.name} {c.latency_cycles:.0f} cycles" for c in machine.caches)
    reading = (
        f"Each step of the staircase is a cache level: a dependent load costs {steps} and DRAM "
        f"{machine.dram.latency_ns:.0f} ns on this host (measured). Working sets just past a level's size pay the next "
        "level's latency on most loads, which is why blocking for the cache sizes marked pays (claim 000-3, experiments/CLAIMS.md)."
    )
    return Drawn("latency_staircase", "Latency staircase of this host (measured)", fig, reading)


def _short(r: dict) -> str:
    k = str(r.get("kernel"))
    return {"blocked": "blocked", "packed": "packed", "packed_micro": "micro", "gemm": "gemm"}.get(k, k)


def magnitude_rows(rows: list[dict]) -> list[dict]:
    """Host rows with a modelled and a measured time."""
    return [r for r in rows if _finite(r.get("time_s")) and _finite(r.get("host_time_s")) and r["time_s"] > 0 and r["host_time_s"] > 0]


def _modelled_vs_measured(rows: list[dict]) -> Drawn | None:
    """Modelled against measured time of every host row, log-log, y = x and the 2x band (None without host rows)."""
    rs = magnitude_rows(rows)
    if not rs:
        return None
    fig = Figure(figsize=(7.5, 6), layout="constrained")
    ax = fig.subplots()
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in rs})
    colour = {s: _C[i % len(_C)] for i, s in enumerate(sizes)}
    markers = ["o", "s", "^", "D", "v"]
    seen_f, seen_s = set(), set()
    vals = []
    for r in rs:
        y = r["time_s"]
        x = r.get("host_time_min_s", r["host_time_s"])
        lo, hi = x, r["host_time_s"]
        f = _family(str(r.get("kernel")))
        s = (r["M"], r["N"], r["K"])
        ax.errorbar([x], [y], xerr=[[max(0.0, x - lo)], [max(0.0, hi - x)]], fmt=markers[f % len(markers)], color=colour[s],
                    ms=6, mfc="none" if f == 0 else colour[s], capsize=2, lw=1)
        seen_f.add(f)
        seen_s.add(s)
        vals += [x, y, lo, hi]
    # name the points, points that fall together (within 15 % on both axes) named once: "ikj/kij/blocked"
    groups: list[list] = []
    for r in rs:
        x, y = r.get("host_time_min_s", r["host_time_s"]), r["time_s"]
        for g in groups:
            if abs(math.log(g[0] / x)) < 0.14 and abs(math.log(g[1] / y)) < 0.14:
                g[2].append(_short(r))
                break
        else:
            groups.append([x, y, [_short(r)]])
    for x, y, names in groups:
        ax.annotate("/".join(dict.fromkeys(names)), (x, y), xytext=(6, -3), textcoords="offset points", fontsize=7, color="0.25")
    blas = {}
    for r in rs:
        if _finite(r.get("host_blas_time_s")):
            blas[(r["M"], r["N"], r["K"])] = r["host_blas_time_s"]
    vals = [v for v in vals if v > 0]
    lo, hi = min(vals + list(blas.values())) / 1.6, max(vals) * 1.6
    hi *= 2.5  # room for the names on the right
    xs = [lo, hi]
    ax.plot(xs, xs, color="0.2", lw=1)
    ax.fill_between(xs, [v / 2 for v in xs], [v * 2 for v in xs], color="0.85", zorder=0)
    for s, t in blas.items():
        ax.axvline(t, color=colour[s], ls=":", lw=1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("measured on this host: fastest repeat (s; bar reaches the median)")
    ax.set_ylabel("modelled (s)")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="0.3", marker=markers[f % len(markers)], ls="none", mfc="none" if f == 0 else "0.3",
                      label=(_FAMILIES[f][0] if f < len(_FAMILIES) else "other")) for f in sorted(seen_f)]
    handles += [Line2D([], [], color=colour[s], lw=6, label=f"{s[0]}x{s[1]}x{s[2]}") for s in sorted(seen_s)]
    handles += [Line2D([], [], color="0.2", lw=1, label="model = measured"),
                Line2D([], [], color="0.85", lw=6, label="within 2x")]
    if blas:
        handles.append(Line2D([], [], color="0.3", ls=":", label="numpy BLAS, 1 thread"))
    ax.legend(handles=handles[:12], fontsize=8, loc="upper left")
    ax.set_title("Modelled against measured time (host)", fontsize=10)
    def ratio(r: dict) -> float:
        return r["time_s"] / r.get("host_time_min_s", r["host_time_s"])

    inside = sum(0.5 <= ratio(r) <= 2.0 for r in rs)
    worst = max(rs, key=lambda r: abs(math.log(ratio(r))))
    q = ratio(worst)
    reading = (
        f"{inside} of {len(rs)} host cases are within 2x of the measurement (the grey band). "
        f"Furthest: {worst.get('label') or worst.get('kernel')} at {worst['M']}x{worst['N']}x{worst['K']}, "
        f"model {'over' if q > 1 else 'under'}estimates by {max(q, 1 / q):.1f}x ({worst.get('bound', '?')} bound). "
        "Points above the line are cases the model thinks slower than they are."
    )
    return Drawn("modelled_vs_measured", "Modelled against measured time (host)", fig, reading)
