"""CPU cache figures: hit rate per level, bytes per level, heatmaps of where the L1 misses fall."""

from __future__ import annotations

import json

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.bounds import bound_ticks
from gemmsim.report.figures.common import (
    _SECTION,
    HEATMAP_MAX_CASES,
    HEATMAP_MAX_MNK,
    Drawn,
    _finite,
    _labeler,
    _levels,
    _machines_of,
    _pct,
    _si,
    _slug,
)


def hit_rate_figure(rows: list[dict]) -> Figure | None:
    """Hit rate of every cache level, per kernel, one panel per machine (rows with ``*_hit_rate``)."""
    d = _hit_rates(rows)
    return d.fig if d else None


def _level_panels(rows: list[dict], suffix: str, name) -> tuple[Figure, list[tuple]]:
    """One panel per machine, cases along x: (figure, [(axes, machine, its rows, its levels with ``suffix``)]).
    The x tick labels are set here; the caller draws the bars (``_level_bars``) and titles the panel."""
    # a machine with more than LEVEL_MAX_CASES cases gets several panels, so the figure keeps a readable width
    chunks = []
    for m in _machines_of(rows):
        rs = [r for r in rows if r["machine"] == m]
        for k in range(0, len(rs), LEVEL_MAX_CASES):
            chunks.append((m, rs[k : k + LEVEL_MAX_CASES]))
    per = max(len(rs) for _, rs in chunks)
    fig = Figure(figsize=(max(6, 1.1 * per + 3), 3.2 * len(chunks)), layout="constrained")
    axes = fig.subplots(len(chunks), 1, squeeze=False)[:, 0]
    panels = []
    for ax, (m, rs) in zip(axes, chunks):
        ax.set_xticks(range(len(rs)), [name(r, "\n") for r in rs], fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        panels.append((ax, m, rs, _levels(rs, suffix)))
    return fig, panels


#: Most cases one panel of the per-level bar figures shows (more cases: more panels, not a wider strip).
LEVEL_MAX_CASES = 10


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
        floor = bound_ticks(ax, rs, levels, name)  # the Hong-Kung floor per level (issue 15)
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
        if floor:
            reading.append(floor)
    reading.append(f"This is {_SECTION['bytes']}.")
    return Drawn("bytes_per_level", "Bytes moved per level", fig, " ".join(reading))


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
    from gemmsim.sim.cpu import CPU_KERNELS

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
    from gemmsim.report.explain import miss_map

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


def _blocking(rows: list[dict], machines: dict) -> Drawn | None:
    """Bytes moved below each cache level against the blocked working set, one panel per machine and dtype, with
    each cache's capacity marked: traffic below a level falls while the working set fits it."""
    from gemmsim.report import format as fmt
    from gemmsim.report.figures.common import format_axis, panel_axes, style

    rs = [r for r in rows if _finite(r.get("working_set_bytes")) and _levels([r], "_traffic_bytes")]
    if len({r["working_set_bytes"] for r in rs}) < 3:
        return None
    panels: dict[tuple, list[dict]] = {}
    for r in rs:
        panels.setdefault((r["machine"], r.get("dtype"), r.get("M"), r.get("N"), r.get("K")), []).append(r)
    n = len(panels)
    fig = Figure(figsize=(7 if n == 1 else 12, 4.3 * (-(-n // 2))), layout="constrained")
    axes = panel_axes(fig, n, 2)
    reading = []
    for ax, ((m, dt, M, N, K), prs) in zip(axes, panels.items()):
        prs.sort(key=lambda r: r["working_set_bytes"])
        levels = _levels(prs, "_traffic_bytes")
        below = levels[1:] + ["DRAM"]
        ws = [r["working_set_bytes"] for r in prs]
        for i, (lv, nxt) in enumerate(zip(levels, below)):
            ax.plot(ws, [r[f"{lv}_traffic_bytes"] for r in prs], lw=1.6, ms=5, label=f"{lv} <-> {nxt}", **style(i))
        machine = machines.get(m)
        top = ax.get_ylim()
        lo_x, hi_x = min(ws) / 2, max(ws) * 2
        off = []
        for c in getattr(machine, "caches", []) or []:
            if lo_x <= c.size <= hi_x * 4:
                ax.axvline(c.size, color="0.5", ls="--", lw=1)
                ax.text(c.size, 0.98, f"{c.name} {_kib(c.size)} ", rotation=90, va="top", ha="right", fontsize=8, color="0.3",
                        transform=ax.get_xaxis_transform())
                hi_x = max(hi_x, c.size * 1.5)
            else:
                off.append(f"{c.name} {_kib(c.size)}")
        if off:
            ax.text(0.99, 0.02, "off the axis: " + ", ".join(off), transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="0.3")
        ax.set_ylim(*top)
        ax.set_xscale("log", base=2)
        ax.set_xlim(lo_x, hi_x)
        ax.set_yscale("log")
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _kib(int(round(v)))))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("block working set s(BM*BK + BK*BN + BM*BN)")
        format_axis(ax, "y", "dram_bytes")
        ax.set_ylabel("bytes moved below the level")
        ax.set_title(f"{m} {dt} {M}x{N}x{K}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left", title="dashed: cache sizes", title_fontsize=7)
        d = [r["dram_bytes"] for r in prs if _finite(r.get("dram_bytes"))]
        if d and len(reading) < 2:
            if max(d) <= 1.01 * min(d):
                reading.append(f"On {m} ({dt}) DRAM moves {fmt.nbytes(min(d))} for every block size: A, B and C fit its last cache, so only the levels above change.")
            else:
                lo, hi = min(prs, key=lambda r: r["dram_bytes"]), max(prs, key=lambda r: r["dram_bytes"])
                reading.append(
                    f"On {m} ({dt}) DRAM traffic runs from {fmt.nbytes(lo['dram_bytes'])} (working set {fmt.nbytes(lo['working_set_bytes'])}) "
                    f"to {fmt.nbytes(hi['dram_bytes'])} (working set {fmt.nbytes(hi['working_set_bytes'])})."
                )
    fig.suptitle("Blocking: traffic below each level against the block's working set", fontsize=11)
    first = next(iter(panels.values()))
    l1 = _levels(first, "_traffic_bytes")[0]
    best = min(first, key=lambda r: r[f"{l1}_traffic_bytes"])
    reading.insert(0, f"{l1} traffic is lowest at a working set of {fmt.nbytes(best['working_set_bytes'])} on {best['machine']} ({best.get('dtype')}).")
    return Drawn("blocking", "Traffic below each level against the working set", fig, " ".join(reading[:3]) + f" ({_SECTION['blocking']}.)")


def _kib(n: int) -> str:
    """A cache size in binary units as machine files write it: 32768 -> '32 KiB'."""
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"
