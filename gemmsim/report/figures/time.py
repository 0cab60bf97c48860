"""Time figures: modelled time per case with its bound, and the roofline of each machine."""

from __future__ import annotations

import math

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from gemmsim.report import format as fmt
from gemmsim.report.figures.common import (
    _SECTION,
    COLORS,
    Drawn,
    format_axis,
    _finite,
    _g,
    _labeler,
    _machines_of,
    _pct,
    _seconds,
    _si,
    _slug,
)


def time_figure(rows: list[dict]) -> Figure | None:
    """Modelled time per case, bars grouped by kernel with one colour per machine (log scale), bound written on top."""
    d = _time(rows)
    return d.fig if d else None


#: Most cases one panel of the modelled-time figure lists (the rest are named in its reading).
TIME_MAX_CASES = 40


def _time(rows: list[dict]) -> Drawn | None:
    """Modelled time per case as horizontal bars (log scale), one panel per machine, the bound written beside each bar."""
    rs = [r for r in rows if _finite(r.get("time_s")) and r["time_s"] > 0]
    if not rs:
        return None
    name = _labeler(rs)
    machines = _machines_of(rs)
    per = {m: [r for r in rs if r["machine"] == m][:TIME_MAX_CASES] for m in machines}
    heights = [0.26 * len(v) + 1.0 for v in per.values()]
    fig = Figure(figsize=(9, sum(heights) + 0.4), layout="constrained")
    axes = fig.subplots(len(machines), 1, squeeze=False, height_ratios=heights)[:, 0]
    bounds = sorted({str(r.get("bound")) for r in rs})
    colour = {b: COLORS[i % len(COLORS)] for i, b in enumerate(bounds)}
    lo, hi = min(r["time_s"] for r in rs), max(r["time_s"] for r in rs)
    for ax, (m, ms) in zip(axes, per.items()):
        ys = list(range(len(ms)))[::-1]
        ax.barh(ys, [r["time_s"] for r in ms], height=0.7, color=[colour[str(r.get("bound"))] for r in ms])
        for y, r in zip(ys, ms):
            ax.text(r["time_s"] * 1.08, y, f"{fmt.seconds(r['time_s'])}, {r.get('bound', '?')}", va="center", fontsize=7)
        ax.set_yticks(ys, [name(r) for r in ms], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(lo / 2, hi * 30)
        format_axis(ax, "x", "time_s")
        ax.set_title(m, fontsize=10)
        ax.grid(axis="x", alpha=0.3, which="both")
        handles = [Patch(color=colour[b], label=f"{b} bound") for b in bounds if any(str(r.get("bound")) == b for r in ms)]
        ax.legend(handles=handles, fontsize=7, loc="lower right")
    fig.suptitle("Modelled time per case (colour: the bound that sets it)", fontsize=11)
    reading = []
    for m in machines[:2]:
        ms = [r for r in rs if r["machine"] == m]
        fast, slow = min(ms, key=lambda r: r["time_s"]), max(ms, key=lambda r: r["time_s"])
        if slow["time_s"] <= 1.01 * fast["time_s"]:
            reading.append(f"On {m} all {len(ms)} cases take {fmt.seconds(fast['time_s'])} within 1 % ({fast.get('bound', '?')} bound): the model cannot tell them apart at this size.")
        else:
            reading.append(
                f"On {m}, {name(fast)} is fastest ({fmt.seconds(fast['time_s'])}, {fast.get('bound', '?')} bound) and {name(slow)} "
                f"slowest ({fmt.seconds(slow['time_s'])}, {slow.get('bound', '?')} bound), {slow['time_s'] / fast['time_s']:.3g}x apart."
            )
    left = sum(max(0, len([r for r in rs if r["machine"] == m]) - TIME_MAX_CASES) for m in machines)
    if left:
        reading.append(f"{left} more cases are in the table, not drawn.")
    reading.append(f"({_SECTION['time']}.)")
    return Drawn("modelled_time", "Modelled time and the bound that sets it", fig, " ".join(reading))


def _roofs(machine, dtype: str, threads: int) -> list[tuple[str, float]]:
    """(label, peak GFLOP/s) of the ceilings a machine file gives for a dtype."""
    kind = getattr(machine, "kind", None)
    out: list[tuple[str, float]] = []
    if kind == "cpu":
        one = machine.peak_gflops(dtype, cores=1)
        if threads > 1:
            out.append((f"peak, {threads} cores", machine.peak_gflops(dtype, cores=min(threads, machine.cores))))
        out.append(("peak, 1 core (SIMD + FMA)", one))
        out.append(("scalar, 1 core (1 lane)", one / machine.lanes(dtype)))
    elif kind == "gpu":
        for label, tensor in (("tensor cores", True), ("CUDA cores", False)):
            try:
                out.append((f"peak, {label}", machine.peak_tflops(dtype, tensor=tensor) * 1e3))
            except (ValueError, KeyError):
                pass
    elif kind == "systolic":
        try:
            out.append((f"peak, {machine.rows}x{machine.cols} array", machine.peak_tops(dtype) * 1e3))
        except (ValueError, KeyError, AttributeError):
            pass
    return out


def _dram_gbps(machine) -> float | None:
    dram = getattr(machine, "dram", None)
    bw = getattr(dram, "bandwidth_gbps", None) if dram is not None else getattr(machine, "dram_bandwidth_gbps", None)
    return float(bw) if _finite(bw) else None


def _rooflines(rows: list[dict], machines: dict) -> list[Drawn]:
    pts = [r for r in rows if _finite(r.get("intensity_flop_per_byte")) and _finite(r.get("gflops")) and r["gflops"] > 0]
    out = []
    name = _labeler(pts)
    for mname in _machines_of(pts):
        machine = machines.get(mname)
        bw = _dram_gbps(machine) if machine is not None else None
        rs = [r for r in pts if r["machine"] == mname]
        dtypes = list(dict.fromkeys(str(r.get("dtype", "fp32")) for r in rs))
        threads = max(int(r.get("threads") or 1) for r in rs)
        fig = Figure(figsize=(9.5, 4.8), layout="constrained")
        ax = fig.add_subplot()
        xs = [r["intensity_flop_per_byte"] for r in rs]
        lo, hi = min(xs) / 4, max(xs) * 4
        reading = []
        roof_of = {}
        for d in dtypes:
            roofs = _roofs(machine, d, threads) if machine is not None else []
            if not roofs:  # the peak the simulator itself used: gflops / peak_fraction
                ps = [r["gflops"] / r["peak_fraction"] for r in rs if r.get("dtype") == d and _finite(r.get("peak_fraction")) and r["peak_fraction"] > 0]
                roofs = [("peak (from the rows)", float(np.median(ps)))] if ps else []
            for label, peak in roofs:
                if bw:
                    ridge = peak / bw
                    lo, hi = min(lo, ridge / 8), max(hi, ridge * 8)
            grid = np.logspace(math.log10(max(lo, 1e-6)), math.log10(hi), 200)
            for k, (label, peak) in enumerate(roofs):
                y = np.minimum(peak, bw * grid) if bw else np.full_like(grid, peak)
                ax.plot(grid, y, color=("k", "tab:brown", "tab:olive", "tab:cyan")[dtypes.index(d) % 4], lw=1.6 - 0.4 * k,
                        ls=("-", "--", ":")[min(k, 2)], label=f"{label} {d}: {_si(peak * 1e9, 'FLOP/s')}")
            if roofs:
                roof_of[d] = roofs
                main = roofs[0][1]
                if bw:
                    reading.append(
                        f"{mname} {d}: ridge point {_g(main / bw)} FLOP/B ({_si(main * 1e9, 'FLOP/s')} over {_si(bw * 1e9, 'B/s')} of DRAM)."
                    )
        for i, r in enumerate(rs):
            ax.plot(r["intensity_flop_per_byte"], r["gflops"], "osD^v<>"[(i // 10) % 7], ms=5, color=f"C{i % 10}", zorder=3, label=name(r))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
        ax.set_ylabel("GFLOP/s (modelled)")
        ax.set_title(f"Roofline of {mname}")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncols=2 if len(rs) > 16 else 1)
        if bw and roof_of:
            below, best = [], None
            for r in rs:
                roofs = roof_of.get(str(r.get("dtype", "fp32")))
                if not roofs:
                    continue
                if r["intensity_flop_per_byte"] < roofs[0][1] / bw:
                    below.append(r)
                # a scalar CPU kernel is held to the one-lane roof (the timing model's compute peak for it)
                label, peak = next((x for x in roofs if x[0].startswith("scalar")), roofs[0]) if r.get("simd") is False else roofs[0]
                frac = r["gflops"] / min(peak, bw * r["intensity_flop_per_byte"])
                if best is None or frac > best[1]:
                    best = (r, frac, label)
            reading.append(
                f"{len(below)} of the {len(rs)} cases sit left of the ridge point: there the DRAM slope, not the peak, is their roof."
            )
            same = len({(round(math.log(r["intensity_flop_per_byte"]), 2), round(math.log(r["gflops"]), 2)) for r in rs}) == 1
            if same and len(rs) > 1:
                reading.append(f"All {len(rs)} cases fall on one point: at this size they move the same bytes in the same time.")
            if best:
                reading.append(f"Closest to its roof: {name(best[0])} at {_pct(best[1])} of the roof at its intensity ({best[2]}).")
            far = [r for r in rs if r.get("bound") not in (None, "dram", "compute")]
            if far:
                kinds = sorted({str(r.get("bound")) for r in far})
                reading.append(
                    f"{len(far)} case(s) are bound by {', '.join(kinds)}, a ceiling this picture does not draw."
                )
        elif not bw:
            reading.append(f"The machine file of {mname} gives no DRAM bandwidth, so only the compute roof is drawn.")
        reading.append(f"This is {_SECTION['roofline']}.")
        out.append(Drawn(f"roofline_{_slug(mname)}", f"Roofline of {mname}", fig, " ".join(reading)))
    return out
