"""Figures of a results folder, drawn with matplotlib's object API on the Agg backend, each with a reading.

Every figure is drawn from the result rows (results.json) and the machine files saved beside them
(``machines/*.yaml``) alone, so ``gemmsim report RESULTS_DIR`` can redraw it later. A figure is drawn only when
the rows have what it needs:

- ``hit_rates``: hit rate per cache level per kernel (rows with ``*_hit_rate``);
- ``bytes_per_level``: bytes moved below each cache level and from DRAM (rows with ``*_traffic_bytes``);
- ``modelled_time``: modelled time per case, the bound that dominates written on each bar;
- ``misses_<machine>``: heatmaps over the elements of A, B and C of where the L1 misses fall (single-threaded CPU
  cases with M*N*K <= HEATMAP_MAX_MNK; the trace is replayed through the real L1, see ``gemmsim.explain``);
- ``roofline_<machine>``: the machine's roofs for the dtype (peak from the machine file, DRAM bandwidth slope)
  with each case at its ``intensity_flop_per_byte`` and ``gflops``;
- ``waves``: modelled time against the number of tiles (rows with a ``tiles`` / ``grid_blocks`` column beside
  ``waves``): the wave staircase;
- ``banks``: lanes -> shared-memory banks for the access of each ``smem_pattern`` row, conflicts in red;
- ``systolic_utilization``: utilization against matrix size (rows with ``utilization``);
- one line plot per entry of the experiment's ``plots:``.

``draw_all`` writes ``figures/NAME.png`` and ``figures/index.json`` (file, title, reading for each figure); the
readings are plain-language statements computed from the same rows (which case is fastest and by how much,
which bound dominates, where misses fall), with the seed section the figure illustrates.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import yaml

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


# ------------------------------------------------------------------------------------------------------
# Small helpers


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


# ------------------------------------------------------------------------------------------------------
# Hit rates and bytes per level


def hit_rate_figure(rows: list[dict]) -> Figure | None:
    """Hit rate of every cache level, per kernel, one panel per machine (rows with ``*_hit_rate``)."""
    d = _hit_rates(rows)
    return d.fig if d else None


def _level_panels(rows: list[dict], suffix: str, name) -> tuple[Figure, list[tuple]]:
    """One panel per machine, cases along x: (figure, [(axes, machine, its rows, its levels with ``suffix``)]).
    The x tick labels are set here; the caller draws the bars (``_level_bars``) and titles the panel."""
    machines = _machines_of(rows)
    per = max(len([r for r in rows if r["machine"] == m]) for m in machines)
    fig = Figure(figsize=(max(6, 1.1 * per + 3), 3.2 * len(machines)), layout="constrained")
    axes = fig.subplots(len(machines), 1, squeeze=False)[:, 0]
    panels = []
    for ax, m in zip(axes, machines):
        rs = [r for r in rows if r["machine"] == m]
        ax.set_xticks(range(len(rs)), [name(r, "\n") for r in rs], fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        panels.append((ax, m, rs, _levels(rs, suffix)))
    return fig, panels


def _level_bars(ax, rs: list[dict], labels: list[str], values: list[list[float]]) -> None:
    """Grouped bars: one group per case, one bar per level (``values[level][case]``), legend beside the axes."""
    width = 0.8 / max(1, len(labels))
    for j, (lab, ys) in enumerate(zip(labels, values)):
        ax.bar([i + (j - (len(labels) - 1) / 2) * width for i in range(len(rs))], ys, width, label=lab)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _hit_rates(rows: list[dict]) -> Drawn | None:
    cpu = [r for r in rows if _levels([r], "_hit_rate")]
    if not cpu:
        return None
    name = _labeler(cpu)
    fig, panels = _level_panels(cpu, "_hit_rate", name)
    reading = []
    for ax, m, rs, levels in panels:
        _level_bars(ax, rs, levels, [[100 * r[f"{lv}_hit_rate"] if _finite(r.get(f"{lv}_hit_rate")) else 0.0 for r in rs] for lv in levels])
        ax.set_ylabel("hit rate (%)")
        ax.set_ylim(0, 105)
        ax.set_title(f"{m}: hit rate per cache level")
        first = levels[0]
        ok = [r for r in rs if _finite(r.get(f"{first}_hit_rate"))]
        best = max(ok, key=lambda r: r[f"{first}_hit_rate"]) if ok else None
        worst = min(ok, key=lambda r: r[f"{first}_hit_rate"]) if ok else None
        if len(ok) >= 2 and best[f"{first}_hit_rate"] - worst[f"{first}_hit_rate"] >= 0.0005:
            s = f"On {m}, {name(best)} hits {_pct(best[f'{first}_hit_rate'])} in {first} and {name(worst)} {_pct(worst[f'{first}_hit_rate'])}"
            mb, mw = best.get(f"{first}_misses"), worst.get(f"{first}_misses")
            if _finite(mb) and _finite(mw) and mb > 0 and mw > mb:
                s += f": {mw / mb:.1f}x the misses ({int(mw):,} against {int(mb):,})"
            elif _finite(mb) and _finite(mw) and mw < mb:
                s += f" (though with fewer misses, {int(mw):,} against {int(mb):,}: it makes fewer accesses)"
            elif _finite(mw) and mw == mb:
                s += f", with the same {int(mw):,} misses (the accesses differ in number, not the misses)"
            reading.append(s + ".")
        elif len(ok) >= 2:
            rate = best[f"{first}_hit_rate"]
            why = (
                "at this size the data fit and the order does not matter" if rate >= 0.9
                else "every case streams through it the same way (nothing here is reused from that level)" if rate < 0.05
                else "the cases differ in another level, not this one"
            )
            reading.append(f"On {m}, all {len(ok)} cases hit about {_pct(rate)} in {first}: {why}.")
        elif ok:
            reading.append(f"On {m}, {name(ok[0])} hits {_pct(ok[0][f'{first}_hit_rate'])} in {first}.")
    reading.append(f"This is {_SECTION['hit_rates']}.")
    return Drawn("hit_rates", "Hit rate per cache level", fig, " ".join(reading))


def _bytes_per_level(rows: list[dict]) -> Drawn | None:
    from gemmsim.units import dtype_bytes

    rs_all = [r for r in rows if _levels([r], "_traffic_bytes")]
    if not rs_all:
        return None
    name = _labeler(rs_all)
    fig, panels = _level_panels(rs_all, "_traffic_bytes", name)
    reading = []
    for ax, m, rs, levels in panels:
        # a level's traffic is what moves between it and the level below; the last one is the DRAM traffic
        labels = [f"{a} <-> {b}" for a, b in zip(levels, levels[1:] + ["DRAM"])]
        _level_bars(ax, rs, labels, [[max(r.get(f"{lv}_traffic_bytes") or 0, 0) for r in rs] for lv in levels])
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylabel("bytes moved")
        ax.set_title(f"{m}: bytes moved between levels")
        ok = [r for r in rs if _finite(r.get("dram_bytes"))]
        if ok:
            lo = min(ok, key=lambda r: r["dram_bytes"])
            hi = max(ok, key=lambda r: r["dram_bytes"])
            s = f"On {m}, DRAM traffic runs from {_si(lo['dram_bytes'], 'B')} ({name(lo)}) to {_si(hi['dram_bytes'], 'B')} ({name(hi)})"
            if lo["dram_bytes"] == hi["dram_bytes"]:
                s = f"On {m}, every case moves {_si(lo['dram_bytes'], 'B')} to and from DRAM"
            elif lo["dram_bytes"] > 0:
                s += f", {hi['dram_bytes'] / lo['dram_bytes']:.1f}x"
            r0 = lo
            if all(isinstance(r0.get(x), int) for x in "MNK") and r0.get("dtype"):
                M, N, K = r0["M"], r0["N"], r0["K"]
                ideal = dtype_bytes(r0["dtype"]) * (M * K + K * N + 2 * M * N)
                s += f"; reading A, B and C once and writing C once would move {_si(ideal, 'B')} for {M}x{N}x{K} {r0['dtype']}"
            reading.append(s + ".")
    reading.append(f"This is {_SECTION['bytes']}.")
    return Drawn("bytes_per_level", "Bytes moved per level", fig, " ".join(reading))


# ------------------------------------------------------------------------------------------------------
# Modelled time


def time_figure(rows: list[dict]) -> Figure | None:
    """Modelled time per case, bars grouped by kernel with one colour per machine (log scale), bound written on top."""
    d = _time(rows)
    return d.fig if d else None


def _time(rows: list[dict]) -> Drawn | None:
    rs = [r for r in rows if _finite(r.get("time_s")) and r["time_s"] > 0]
    if not rs:
        return None
    name = _labeler(rs)
    keys = list(dict.fromkeys(name(r, "\n") for r in rs))
    machines = _machines_of(rs)
    width = 0.8 / len(machines)
    fig = Figure(figsize=(max(6, 0.9 * len(keys) * max(1, len(machines) / 2) + 2), 4.2), layout="constrained")
    ax = fig.add_subplot()
    for j, m in enumerate(machines):
        first = True
        for i, key in enumerate(keys):
            match = [r for r in rs if r["machine"] == m and name(r, "\n") == key]
            if not match:
                continue
            x = i + (j - (len(machines) - 1) / 2) * width
            t = match[0]["time_s"]
            ax.bar(x, t, width, color=f"C{j}", label=m if first else None)
            first = False
            ax.text(x, t, str(match[0].get("bound", "")), rotation=90, fontsize=6, ha="center", va="bottom")
    ax.set_yscale("log")
    lo, hi = min(r["time_s"] for r in rs), max(r["time_s"] for r in rs)
    ax.set_ylim(lo / 2, hi * 6)  # room above the tallest bar for its bound
    ax.set_xticks(range(len(keys)), keys, fontsize=8)
    ax.set_ylabel("modelled time (s)")
    ax.set_title("Modelled time (label: the bound that dominates)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3, which="both")
    reading = []
    for m in machines:
        ms = [r for r in rs if r["machine"] == m]
        groups: dict[tuple, list[dict]] = {}
        for r in ms:
            groups.setdefault((r.get("M"), r.get("N"), r.get("K"), r.get("dtype")), []).append(r)
        if len(groups) > 1 and all(len(g) == 1 for g in groups.values()):
            # one case per shape: the shapes, not the kernels, differ
            fast = min(ms, key=lambda r: r["time_s"])
            slow = max(ms, key=lambda r: r["time_s"])
            reading.append(
                f"On {m}, times run from {_seconds(fast['time_s'])} ({name(fast)}, {fast.get('bound', '?')} bound) "
                f"to {_seconds(slow['time_s'])} ({name(slow)}, {slow.get('bound', '?')} bound)."
            )
            groups = {}
        for (M, N, K, dt), g in groups.items():
            shape = f" at {M}x{N}x{K} {dt}" if len(groups) > 1 and M is not None else ""
            fast = min(g, key=lambda r: r["time_s"])
            slow = max(g, key=lambda r: r["time_s"])
            if slow["time_s"] <= 1.005 * fast["time_s"]:
                who = name(fast) if len(g) == 1 else f"all {len(g)} cases"
                reading.append(f"On {m}{shape}, {who} take{'s' if len(g) == 1 else ''} {_seconds(fast['time_s'])} ({fast.get('bound', '?')} bound).")
                continue
            reading.append(
                f"On {m}{shape}, {name(fast)} is fastest ({_seconds(fast['time_s'])}, {fast.get('bound', '?')} bound) and "
                f"{name(slow)} slowest ({_seconds(slow['time_s'])}, {slow.get('bound', '?')} bound), {slow['time_s'] / fast['time_s']:.1f}x apart."
            )
        bounds: dict[str, int] = {}
        for r in ms:
            bounds[str(r.get("bound"))] = bounds.get(str(r.get("bound")), 0) + 1
        top = max(bounds, key=bounds.get)
        reading.append(f"The {top} bound dominates {bounds[top]} of the {len(ms)} cases on {m}.")
    if len(machines) > 1:
        # the same case on several machines: which runs it fastest
        by_case: dict[str, list[dict]] = {}
        for r in rs:
            by_case.setdefault(name(r), []).append(r)
        shared = [(k, v) for k, v in by_case.items() if len(v) > 1]
        for k, v in shared[:4]:
            fast = min(v, key=lambda r: r["time_s"])
            slow = max(v, key=lambda r: r["time_s"])
            if slow["time_s"] > 1.005 * fast["time_s"]:
                reading.append(
                    f"{k} runs fastest on {fast['machine']} ({_seconds(fast['time_s'])}) and slowest on {slow['machine']} "
                    f"({_seconds(slow['time_s'])}), {slow['time_s'] / fast['time_s']:.0f}x apart."
                )
        if len(shared) > 4:
            reading.append(f"({len(shared) - 4} more cases run on several machines.)")
    reading.append(f"This is {_SECTION['time']}.")
    return Drawn("modelled_time", "Modelled time and the bound that dominates", fig, " ".join(reading))


# ------------------------------------------------------------------------------------------------------
# Where the misses fall


def _row_params(r: dict) -> dict:
    out = {}
    for k, v in r.items():
        if k.startswith("p_") and v is not None:
            if isinstance(v, str) and v[:1] in "[{":
                try:
                    v = json.loads(v)
                except json.JSONDecodeError:
                    pass
            out[k[2:]] = v
    return out


def _row_layout(r: dict) -> dict:
    return {k[7:]: v for k, v in r.items() if k.startswith("layout_") and v is not None}


def _heatmap_cases(rows: list[dict], machines: dict) -> list[dict]:
    from gemmsim.sim_cpu import CPU_KERNELS

    out = []
    for r in rows:
        m = machines.get(str(r.get("machine")))
        if m is None or getattr(m, "kind", None) != "cpu" or r.get("kernel") not in CPU_KERNELS:
            continue
        if not all(isinstance(r.get(x), int) for x in "MNK") or r["M"] * r["N"] * r["K"] > HEATMAP_MAX_MNK:
            continue
        if (r.get("threads") or 1) != 1 or not _finite(r.get(f"{m.caches[0].name}_misses")):
            continue
        out.append(r)
    return out


def _miss_image(mm) -> tuple[np.ndarray, list[tuple[float, str, int]]]:
    """A, B and C side by side in one image (NaN columns between them); the centre, name and misses of each."""
    h = max(mm.A.shape[0], mm.B.shape[0], mm.C.shape[0])
    gap = max(1, h // 8)
    parts, x0, centers = [], 0, []
    for mat, arr in (("A", mm.A), ("B", mm.B), ("C", mm.C)):
        block = np.full((h, arr.shape[1]), np.nan)
        block[: arr.shape[0]] = arr
        parts += [block, np.full((h, gap), np.nan)]
        centers.append((x0 + arr.shape[1] / 2 - 0.5, mat, int(arr.sum())))
        x0 += arr.shape[1] + gap
    return np.concatenate(parts[:-1], axis=1), centers


def _heatmaps(rows: list[dict], machines: dict) -> list[Drawn]:
    from gemmsim.explain import miss_map

    cases = _heatmap_cases(rows, machines)
    name = _labeler(cases)
    out = []
    for mname in _machines_of(cases):
        machine = machines[mname]
        l1 = machine.caches[0]
        rs = [r for r in cases if r["machine"] == mname]
        shown, left = rs[:HEATMAP_MAX_CASES], rs[HEATMAP_MAX_CASES:]
        maps = [(r, miss_map(machine, r["kernel"], r["M"], r["N"], r["K"], r.get("dtype", "fp32"), _row_params(r), _row_layout(r))) for r in shown]
        images = [_miss_image(mm) for _, mm in maps]
        width = 9.0
        heights = [min(4.0, max(0.8, 0.8 * width * img.shape[0] / img.shape[1])) + 0.55 for img, _ in images]
        fig = Figure(figsize=(width, sum(heights) + 0.5))
        top_in = 0.5
        for (r, mm), (img, centers), hgt, y in zip(maps, images, heights, np.cumsum([0.0] + heights[:-1])):
            # each case gets a band of the figure: image, its labels below, its title above
            H = fig.get_figheight()
            ax = fig.add_axes([0.04, 1 - (top_in + y + hgt - 0.3) / H, 0.82, (hgt - 0.55) / H])
            vmax = max(1.0, float(np.nanmax(img)))
            im = ax.imshow(img, cmap="magma_r", vmin=0, vmax=vmax, interpolation="nearest")
            ax.set_xticks([c for c, _, _ in centers], [f"{m}: {n:,} misses" for _, m, n in centers], fontsize=7)
            ax.set_yticks([])
            ax.tick_params(length=0)
            ax.set_title(f"{name(r)}  ({int(vmax)} = most misses on one element)", fontsize=8)
            if img.shape[1] <= 100:  # thin borders between elements when they are big enough to see
                hgt_img, wid_img = img.shape
                ax.vlines(np.arange(-0.5, wid_img), -0.5, hgt_img - 0.5, color="white", lw=0.4)
                ax.hlines(np.arange(-0.5, hgt_img), -0.5, wid_img - 0.5, color="white", lw=0.4)
            ax.apply_aspect()
            box = ax.get_position()
            cax = fig.add_axes([box.x1 + 0.01, box.y0, 0.012, box.height])
            fig.colorbar(im, cax=cax)
            cax.tick_params(labelsize=6)
        reading = _heatmap_readings(maps, name, l1.line_bytes)
        size = f"{l1.size // 1024} KiB" if l1.size >= 1024 else f"{l1.size} B"
        fig.suptitle(f"{mname}: where the {l1.name} misses fall ({size}, {l1.ways}-way, {l1.line_bytes} B lines)", fontsize=10, y=1 - 0.12 / fig.get_figheight())
        if left:
            reading.append(f"Not drawn (at most {HEATMAP_MAX_CASES} cases per figure): {', '.join(name(r) for r in left)}.")
        reading.append(f"This is {_SECTION['heatmap']}.")
        out.append(Drawn(f"misses_{_slug(mname)}", f"Where the {l1.name} misses fall on {mname}", fig, " ".join(reading)))
    return out


def _heatmap_readings(maps: list, name, line_bytes: int) -> list[str]:
    """One sentence per group of cases whose misses fall the same way: where most fall, and how often each
    matrix's lines were fetched (1.0 = once, the ideal)."""
    from gemmsim.units import dtype_bytes

    groups: dict[tuple, list[str]] = {}
    for r, mm in maps:
        per = mm.by_matrix()
        elem = dtype_bytes(r.get("dtype", "fp32"))
        lines = {k: max(1, -(-getattr(mm, k).size * elem // line_bytes)) for k in "ABC"}
        top = max("ABC", key=lambda k: per[k])
        key = (mm.total, top, per[top], tuple(round(per[k] / lines[k], 1) for k in "ABC"), mm.other)
        groups.setdefault(key, []).append(name(r))
    out = []
    for (total, top, n_top, fetch, other), names in groups.items():
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        if total == 0:
            out.append(f"{who}: no L1 misses at all.")
            continue
        if 3 * n_top == total:
            s = f"{who}: the {total:,} L1 misses split evenly over A, B and C"
        else:
            s = f"{who}: {n_top:,} of {total:,} L1 misses ({_pct(n_top / total)}) fall on {top}"
        s += "; each line of A, B, C was fetched " + ", ".join(f"{f:g}" for f in fetch) + " times on average (1 = once, the ideal)"
        if other:
            s += f"; {other:,} misses fall outside A, B and C (packing buffers)"
        out.append(s + ".")
    return out


# ------------------------------------------------------------------------------------------------------
# Roofline


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


# ------------------------------------------------------------------------------------------------------
# Waves


_TILE_COLUMNS = ("tiles", "grid_blocks", "blocks", "grid")


def _waves(rows: list[dict], machines: dict) -> Drawn | None:
    rs = [r for r in rows if "waves" in r and _finite(r.get("time_s"))]
    xcol = next((c for c in _TILE_COLUMNS if any(_finite(r.get(c)) for r in rs)), None)
    if not rs or xcol is None:
        return None
    rs = [r for r in rs if _finite(r.get(xcol))]
    tied = {p for p in _varying_params(rs) if all(r.get(p) == r[xcol] for r in rs)}  # e.g. p_grid when x is tiles
    keyf = lambda r: (r["machine"], r.get("label") or r.get("kernel"), *[r.get(p) for p in _varying_params(rs) if p not in tied])  # noqa: E731
    counts: dict[tuple, set] = {}
    for r in rs:
        counts.setdefault(keyf(r), set()).add(r[xcol])
    if not counts or max(len(v) for v in counts.values()) < 3:
        return None  # a staircase needs at least three tile counts on one line
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.add_subplot()
    lines: dict[tuple, list[dict]] = {}
    for r in rs:
        lines.setdefault(keyf(r), []).append(r)
    reading = []
    for n, (key, pts) in enumerate(lines.items()):
        pts.sort(key=lambda r: r[xcol])
        x = [p[xcol] for p in pts]
        y = [p["time_s"] for p in pts]
        ax.step(x, y, where="post", color=f"C{n % 10}", lw=1, alpha=0.6)
        ax.plot(x, y, "o", ms=3, color=f"C{n % 10}", label=" ".join(str(k) for k in key if k is not None))
        wave = _wave_size(pts[0], machines.get(str(key[0])))
        if wave:
            for w in range(wave, int(max(x)) + 1, wave):
                ax.axvline(w, color=f"C{n % 10}", ls=":", lw=0.8)
        jumps = [
            (pts[i][xcol], pts[i]["time_s"] / pts[i - 1]["time_s"])
            for i in range(1, len(pts))
            if pts[i - 1]["time_s"] > 0 and pts[i]["time_s"] > 1.1 * pts[i - 1]["time_s"]
        ]
        s = f"{' '.join(str(k) for k in key if k is not None)}: time runs from {_seconds(y[0])} at {x[0]} {xcol} to {_seconds(y[-1])} at {x[-1]}"
        if wave:
            s += f"; a wave holds {wave} blocks"
        if jumps:
            s += f"; it steps up at {xcol} = " + ", ".join(f"{a:g} ({b:.2f}x)" for a, b in jumps[:6])
        else:
            s += "; no step larger than 10 % between neighbouring points"
        reading.append(s + ".")
    ax.set_xlabel(xcol)
    ax.set_ylabel("modelled time (s)")
    ax.set_title("The wave staircase: time against the number of tiles (dotted: wave boundaries)")
    ax.grid(alpha=0.3)
    if len(lines) <= 12:
        ax.legend(fontsize=7)
    reading.append(f"This is {_SECTION['waves']}.")
    return Drawn("waves", "Wave staircase", fig, " ".join(reading))


def _wave_size(r: dict, machine) -> int | None:
    if _finite(r.get("wave_size")):
        return int(r["wave_size"])
    if _finite(r.get("blocks_per_sm")) and machine is not None and hasattr(machine, "sms"):
        return int(r["blocks_per_sm"]) * int(machine.sms)
    return None


# ------------------------------------------------------------------------------------------------------
# Shared-memory banks


def _lane_addresses(r: dict) -> tuple[np.ndarray, int] | None:
    """The 32 byte addresses and access width of an smem_pattern row, rebuilt from its parameters by the GPU
    simulator's own ``smem_pattern_addresses`` (strided patterns and transposed tile columns)."""
    from pydantic import ValidationError

    from gemmsim.sim_gpu import SmemPatternParams, smem_pattern_addresses

    try:
        p = SmemPatternParams(**_row_params(r))
    except ValidationError:
        return None
    return np.asarray(smem_pattern_addresses(p), dtype=np.int64), int(p.width)


def _banks(rows: list[dict], machines: dict) -> Drawn | None:
    from gemmsim.models.banks import smem_wavefronts

    rs = []
    for r in rows:
        m = machines.get(str(r.get("machine")))
        if r.get("kernel") == "smem_pattern" and m is not None and getattr(m, "kind", None) == "gpu":
            la = _lane_addresses(r)
            if la is not None:
                rs.append((r, m, *la))
    if not rs:
        return None
    name = _labeler([x[0] for x in rs])
    shown = rs[:BANKS_MAX_ROWS]
    fig = Figure(figsize=(10, 2.3 * len(shown) + 0.4), layout="constrained")
    axes = fig.subplots(len(shown), 1, squeeze=False)[:, 0]
    reading = []
    for ax, (r, m, addrs, width) in zip(axes, shown):
        nb, bb = int(m.smem.banks), int(m.smem.bank_bytes)
        wpl = max(1, width // bb)  # words each lane touches
        phases = max(1, width // 4)  # 8-byte accesses go in 2 half-warp phases, 16-byte ones in 4 quarter-warp phases
        per_phase = 32 // phases
        wf = smem_wavefronts(m, addrs, width)
        worst, busy_total = 0, set()
        for ph in range(phases):
            lanes = range(ph * per_phase, (ph + 1) * per_phase)
            # lanes reading one word share it (broadcast); distinct words of one bank are served one after the other
            words = {int(addrs[ln]) // bb + w for ln in lanes for w in range(wpl)}
            load: dict[int, int] = {}
            for wd in words:
                load[wd % nb] = load.get(wd % nb, 0) + 1
            worst = max(worst, max(load.values()))
            busy_total |= {(ph, b) for b in load}
            for ln in lanes:
                for w in range(wpl):
                    b = (int(addrs[ln]) // bb + w) % nb
                    bad = load[b] > 1
                    ax.plot([ln, b], [1, 0], color="tab:red" if bad else "tab:green", lw=1.2 if bad else 0.7, alpha=0.8)
            ax.scatter(list(load), [0] * len(load), s=[14 + 8 * (v - 1) for v in load.values()],
                       color=["tab:red" if v > 1 else "tab:gray" for v in load.values()], marker="s", zorder=3)
        ax.scatter(range(32), [1] * 32, s=14, color="k", zorder=3)
        ax.set_yticks([0, 1], ["bank", "lane"])
        ax.set_xticks(range(0, max(32, nb), 4))
        ax.set_ylim(-0.3, 1.3)
        ph_text = f", {phases} phases of {per_phase} lanes" if phases > 1 else ""
        ax.set_title(f"{r['machine']} {name(r)}: {width} B accesses{ph_text}, {wf} wavefront(s); red: banks holding several words", fontsize=9)
        banks_hit = len({b for _, b in busy_total})
        s_ph = f" in each of its {phases} phases ({per_phase} lanes each)" if phases > 1 else ""
        reading.append(
            f"{name(r)}: the lanes touch {banks_hit} of {nb} banks; the busiest bank holds {worst} distinct word(s){s_ph}, "
            f"so the instruction takes {wf} wavefront(s)"
            + (f" ({int(r['wavefronts'])} in the results)" if _finite(r.get("wavefronts")) else "")
            + (f", the ideal for {width}-byte accesses" if wf == phases else f", {wf - phases} more than the ideal {phases}")
            + "."
        )
    if len(rs) > len(shown):
        reading.append(f"Not drawn (at most {BANKS_MAX_ROWS} per figure): {', '.join(name(x[0]) for x in rs[len(shown):])}.")
    reading.append(f"This is {_SECTION['banks']}.")
    return Drawn("banks", "Shared-memory lanes to banks", fig, " ".join(reading))


# ------------------------------------------------------------------------------------------------------
# Systolic utilization


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


# ------------------------------------------------------------------------------------------------------
# The experiment's own line plots


def line_figure(rows: list[dict], x: str, y: str, group: list[str], title: str | None, logx: bool, logy: bool) -> Figure | None:
    """y against x, one line per distinct value of the group columns."""
    d = _line(rows, x, y, group, title, logx, logy)
    return d.fig if d else None


def _line_reading(lab: str, pts: list[dict], x: str, y: str) -> str:
    """One line of a line plot in words: its ends, the change between them, and its extremes when they lie inside."""
    xs = sorted({p[x] for p in pts})
    if len(xs) == 1:
        ys = sorted({p[y] for p in pts})
        vals = f"{ys[0]:.4g}" if len(ys) == 1 else f"{ys[0]:.4g} to {ys[-1]:.4g}"
        return f"{lab}: one point, {y} = {vals} at {x} = {xs[0]:.4g}."
    first, last = pts[0], pts[-1]
    s = f"{lab}: {y} goes from {first[y]:.4g} at {x} = {first[x]:.4g} to {last[y]:.4g} at {x} = {last[x]:.4g}"
    if first[y] and last[y] and (first[y] > 0) == (last[y] > 0):
        s += f" ({last[y] / first[y]:.3g}x)"
    lo, hi = min(pts, key=lambda p: p[y]), max(pts, key=lambda p: p[y])
    inner = [f"lowest {lo[y]:.4g} at {x} = {lo[x]:.4g}" for p in (lo,) if p is not first and p is not last]
    inner += [f"highest {hi[y]:.4g} at {x} = {hi[x]:.4g}" for p in (hi,) if p is not first and p is not last]
    return s + (f"; {', '.join(inner)}" if inner else "") + "."


def _line(rows, x, y, group, title, logx, logy) -> Drawn | None:
    rs = [r for r in rows if _finite(r.get(x)) and _finite(r.get(y))]
    if not rs:
        return None
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    lines: dict[tuple, list[dict]] = {}
    for r in rs:
        lines.setdefault(tuple(r.get(g) for g in group), []).append(r)
    reading = []
    for key, pts in lines.items():
        pts.sort(key=lambda r: r[x])
        lab = " ".join(str(k) for k in key)
        ax.plot([p[x] for p in pts], [p[y] for p in pts], marker="o", ms=3, label=lab)
        reading.append(_line_reading(lab or "all", pts, x, y))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    t = title or f"{y} vs {x}"
    ax.set_title(t)
    if len(lines) <= 12:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    name = re.sub(r"[^A-Za-z0-9_]+", "_", f"{y}_vs_{x}")
    return Drawn(name, t, fig, " ".join(reading[:12]) + (f" ({len(reading) - 12} more lines not described.)" if len(reading) > 12 else ""))


# ------------------------------------------------------------------------------------------------------
# Putting it together


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", Path(s).stem) or "machine"


def _plots(exp) -> list:
    from gemmsim.experiment import Plot

    raw = exp.get("plots") if isinstance(exp, dict) else getattr(exp, "plots", None)
    return [p if isinstance(p, Plot) else Plot.model_validate(p) for p in raw or []]


def load_result_machines(folder: str | Path, rows: list[dict]) -> dict:
    """The machines of a results folder (``machines/<name>.yaml``) by the names the rows use; missing ones left out."""
    from gemmsim.machine import machine_from_dict

    out = {}
    for name in _machines_of(rows):
        path = Path(folder) / "machines" / f"{Path(name).stem}.yaml"
        if path.is_file():
            out[name] = machine_from_dict(yaml.safe_load(path.read_text()), source=str(path))
    return out


def build_figures(rows: list[dict], exp=None, machines: dict | None = None) -> list[Drawn]:
    """Every figure that applies to the rows (see the module docstring), with its reading.

    A figure whose drawing fails (rows from a simulator whose columns it does not expect) comes back with its
    ``error`` set and no figure, so that one figure cannot lose a whole run; the report lists it as a problem.
    """
    machines = machines or {}
    builders = [
        ("hit_rates", lambda: _hit_rates(rows)),
        ("bytes_per_level", lambda: _bytes_per_level(rows)),
        ("modelled_time", lambda: _time(rows)),
        ("misses", lambda: _heatmaps(rows, machines)),
        ("roofline", lambda: _rooflines(rows, machines)),
        ("waves", lambda: _waves(rows, machines)),
        ("banks", lambda: _banks(rows, machines)),
        ("systolic_utilization", lambda: _systolic(rows, machines)),
    ]
    try:
        plots = _plots(exp) if exp is not None else []
    except ValueError as exc:  # pydantic's ValidationError is a ValueError: a hand-edited experiment.yaml
        plots = []
        builders.append(("plots", lambda exc=exc: (_ for _ in ()).throw(exc)))
    for p in plots:
        builders.append((f"{p.y}_vs_{p.x}", lambda p=p: _line(rows, p.x, p.y, p.group, p.title, p.logx, p.logy)))
    out: list[Drawn] = []
    for name, build in builders:
        try:
            got = build()
        except Exception as exc:  # noqa: BLE001 - reported in index.json and report.html, never silent
            out.append(Drawn(_slug(name), name.replace("_", " "), None, "", error=f"{type(exc).__name__}: {exc}"))
            continue
        out += got if isinstance(got, list) else [got] if got is not None else []
    return out


def draw_all(folder: Path, exp, rows: list[dict]) -> list[Path]:
    """Draw every figure that applies into ``folder/figures``; write ``figures/index.json``; return the PNGs written.

    ``exp`` is the Experiment (or its dict, as in experiment.yaml); machines are read from ``folder/machines``.
    """
    out = Path(folder) / "figures"
    out.mkdir(exist_ok=True)
    written, index, seen = [], [], set()
    for d in build_figures(rows, exp, load_result_machines(folder, rows)):
        if d.fig is None:
            index.append({"file": f"{d.name}.png", "title": d.title, "reading": "", "error": d.error})
            continue
        stem = d.name
        n = 2
        while stem in seen:
            stem, n = f"{d.name}_{n}", n + 1
        seen.add(stem)
        path = out / f"{stem}.png"
        d.fig.savefig(path, dpi=110)
        written.append(path)
        index.append({"file": path.name, "title": d.title, "reading": d.reading})
    (out / "index.json").write_text(json.dumps(index, indent=1))
    return written
