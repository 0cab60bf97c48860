"""GPU figures: the wave staircase and the lane-to-bank diagram of shared-memory accesses."""

from __future__ import annotations

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report import format as fmt
from gemmsim.report.figures.bounds import bound_line
from gemmsim.report.figures.common import (
    _SECTION,
    BANKS_MAX_ROWS,
    LINE_BUDGET,
    Drawn,
    format_axis,
    panel_axes,
    style,
    _finite,
    _labeler,
    _seconds,
    _varying_params,
)
from gemmsim.report.figures.cpu import _row_params

_TILE_COLUMNS = ("tiles", "grid_blocks", "blocks", "grid")


def _waves(rows: list[dict], machines: dict) -> Drawn | None:
    """The wave staircase, one panel per GPU (each on its own time scale), one line per kernel, dotted lines at every
    wave boundary (a multiple of SMs x blocks per SM)."""
    rs = [r for r in rows if "waves" in r and _finite(r.get("time_s"))]
    xcol = next((c for c in _TILE_COLUMNS if any(_finite(r.get(c)) for r in rs)), None)
    if not rs or xcol is None:
        return None
    rs = [r for r in rs if _finite(r.get(xcol))]
    tied = {p for p in _varying_params(rs) if all(r.get(p) == r[xcol] for r in rs)}  # e.g. p_grid when x is tiles
    keyf = lambda r: (r.get("label") or r.get("kernel"), *[r.get(p) for p in _varying_params(rs) if p not in tied])  # noqa: E731
    per_machine: dict[str, dict[tuple, list[dict]]] = {}
    for r in rs:
        per_machine.setdefault(str(r["machine"]), {}).setdefault(keyf(r), []).append(r)
    if max(len({p[xcol] for p in pts}) for lines in per_machine.values() for pts in lines.values()) < 3:
        return None  # a staircase needs at least three tile counts on one line
    n = len(per_machine)
    fig = Figure(figsize=(7 if n == 1 else 12, 3.9 * (-(-n // 2))), layout="constrained")
    axes = panel_axes(fig, n, 2)
    steps = []
    for ax, (m, lines) in zip(axes, per_machine.items()):
        for i, (key, pts) in enumerate(list(lines.items())[:LINE_BUDGET]):
            pts.sort(key=lambda r: r[xcol])
            x = [p[xcol] for p in pts]
            y = [p["time_s"] for p in pts]
            st = style(i)
            lab = " ".join(str(k) for k in key if k is not None)
            wave = _wave_size(pts[0], machines.get(m))
            ax.step(x, y, where="post", color=st["color"], lw=1.2, alpha=0.7)
            ax.plot(x, y, ls="none", ms=4, label=lab + (f" (wave = {wave} tiles)" if wave else ""), **st)
            if wave:
                for w in range(wave, int(max(x)) + 1, wave):
                    ax.axvline(w, color=st["color"], ls=":", lw=1)
            for a, b in zip(pts, pts[1:]):
                if a["time_s"] > 0 and b["time_s"] > 1.3 * a["time_s"]:
                    steps.append((b["time_s"] / a["time_s"], m, lab, a[xcol], b[xcol], wave))
        ax.set_ylim(bottom=0)
        format_axis(ax, "y", "time_s")
        ax.set_xlabel(f"{xcol} (thread blocks launched)")
        ax.set_title(m, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("The wave staircase: modelled time against tiles (dotted: wave boundaries)", fontsize=11)
    sizes = ", ".join(
        f"{m} {w}" for m, lines in per_machine.items() for w in [_wave_size(next(iter(lines.values()))[0], machines.get(m))] if w
    )
    reading = f"Time climbs in steps where the tiles pass a multiple of the wave size ({sizes} tiles for the first kernel)."
    if steps:
        # the first step of the first GPU's first kernel: the lesson's 108 -> 117 tiles on the A100
        r, m, lab, a, b, wave = steps[0]
        reading += f" On {m}, {lab} steps from {a:g} to {b:g} tiles: {r:.2f}x the time for {b / a:.2f}x the tiles."
    else:
        reading += " No step of more than 30 % between neighbouring points: the tile counts stay within one wave."
    return Drawn("waves", "Wave staircase", fig, reading + f" ({_SECTION['waves']}.)")


def _wave_size(r: dict, machine) -> int | None:
    if _finite(r.get("wave_size")):
        return int(r["wave_size"])
    if _finite(r.get("blocks_per_sm")) and machine is not None and hasattr(machine, "sms"):
        return int(r["blocks_per_sm"]) * int(machine.sms)
    return None


def _lane_addresses(r: dict) -> tuple[np.ndarray, int] | None:
    """The 32 byte addresses and access width of an smem_pattern row, rebuilt from its parameters by the GPU
    simulator's own ``smem_pattern_addresses`` (strided patterns and transposed tile columns)."""
    from pydantic import ValidationError

    from gemmsim.sim.gpu import SmemPatternParams, smem_pattern_addresses

    try:
        p = SmemPatternParams(**_row_params(r))
    except ValidationError:
        return None
    return np.asarray(smem_pattern_addresses(p), dtype=np.int64), int(p.width)


def _lane_panel(ax, r: dict, m, addrs: np.ndarray, width: int, name: str) -> tuple[int, int, int]:
    """Draw one warp access as lanes (top) joined to the banks they hit (bottom), conflicts in red.
    Returns (wavefronts, busiest bank's distinct words, banks touched)."""
    from gemmsim.models.banks import smem_wavefronts

    nb, bb = int(m.smem.banks), int(m.smem.bank_bytes)
    wpl = max(1, width // bb)  # words each lane touches
    phases = max(1, width // 4)  # 8-byte accesses go in 2 half-warp phases, 16-byte ones in 4 quarter-warp phases
    per_phase = 32 // phases
    wf = smem_wavefronts(m, addrs, width)
    worst, busy = 0, set()
    for ph in range(phases):
        lanes = range(ph * per_phase, (ph + 1) * per_phase)
        # lanes reading one word share it (broadcast); distinct words of one bank are served one after the other
        words = {int(addrs[ln]) // bb + w for ln in lanes for w in range(wpl)}
        load: dict[int, int] = {}
        for wd in words:
            load[wd % nb] = load.get(wd % nb, 0) + 1
        worst = max(worst, max(load.values()))
        busy |= set(load)
        for ln in lanes:
            for w in range(wpl):
                b = (int(addrs[ln]) // bb + w) % nb
                bad = load[b] > 1
                ax.plot([ln, b], [1, 0], color="#D55E00" if bad else "#009E73", lw=1.3 if bad else 0.8, alpha=0.8)
        ax.scatter(list(load), [0] * len(load), s=[min(90, 18 + 4 * (v - 1)) for v in load.values()],
                   color=["#D55E00" if v > 1 else "0.4" for v in load.values()], marker="s", zorder=3)
    ax.scatter(range(32), [1] * 32, s=16, color="k", zorder=3)
    ax.set_yticks([0, 1], ["bank", "lane"])
    ax.set_xticks(range(0, max(32, nb), 4))
    ax.set_xlim(-1, max(32, nb))
    ax.set_ylim(-0.3, 1.3)
    ax.set_title(f"{name}: {wf} wavefront{'s' if wf != 1 else ''}", fontsize=10)
    return wf, worst, len(busy)


def _bank_rows(rows: list[dict], machines: dict) -> list[tuple]:
    out = []
    for r in rows:
        m = machines.get(str(r.get("machine")))
        if r.get("kernel") == "smem_pattern" and m is not None and getattr(m, "kind", None) == "gpu":
            la = _lane_addresses(r)
            if la is not None:
                out.append((r, m, *la))
    return out


def _banks_padding(rows: list[dict], machines: dict) -> Drawn | None:
    """The padding fix as a textbook draws it: lanes reading a column of float [T][T] (all in one bank) beside
    [T][T+1] (one padding float per row spreads them over every bank)."""
    rs = _bank_rows(rows, machines)
    pairs = {}
    for x in rs:
        r = x[0]
        t = r.get("p_transpose_tile")
        if _finite(t) and t > 0 and r.get("p_pad") in (0, 1):
            pairs.setdefault((r["machine"], int(t)), {})[int(r["p_pad"])] = x
    full = [(k, v) for k, v in pairs.items() if 0 in v and 1 in v]
    if not full:
        return None
    (mname, t), pair = max(full, key=lambda kv: kv[0][1])  # the largest tile of the first machine that has both
    fig = Figure(figsize=(12, 3.4), layout="constrained")
    axes = fig.subplots(1, 2)
    got = []
    for ax, pad in zip(axes, (0, 1)):
        r, m, addrs, width = pair[pad]
        got.append(_lane_panel(ax, r, m, addrs, width, f"float tile[{t}][{t + pad}], lanes read one column"))
    axes[0].plot([], [], color="#D55E00", label="bank holding several words (lanes wait)")
    axes[1].plot([], [], color="#009E73", label="one word per bank")
    for ax in axes:
        ax.legend(fontsize=8, loc="upper right", bbox_to_anchor=(1.0, 0.93))
    fig.suptitle(f"{mname}: the padding fix for a column read of a shared-memory tile", fontsize=11)
    (wf0, worst0, b0), (wf1, worst1, b1) = got
    reading = (
        f"Reading a column of float [{t}][{t}], the {min(32, t)} lanes land in {b0} bank(s), the busiest holding {worst0} "
        f"words: {wf0} wavefronts. One padding float per row ([{t}][{t + 1}]) shifts each row by one bank, so they land "
        f"in {b1} banks: {wf1} wavefront{'s' if wf1 != 1 else ''}. ({_SECTION['banks']}.)"
    )
    return Drawn("banks_padding", "Bank conflicts and the padding fix", fig, reading)


def _banks(rows: list[dict], machines: dict) -> Drawn | None:
    """Wavefronts of every smem_pattern row against the ideal for its width, one bar per pattern (first GPU;
    the reading says whether the others agree)."""
    rs = [x for x in _bank_rows(rows, machines) if _finite(x[0].get("wavefronts"))]
    if not rs:
        return None
    name = _labeler([x[0] for x in rs])
    first = rs[0][0]["machine"]
    mine = [x for x in rs if x[0]["machine"] == first]
    fig = Figure(figsize=(9, 0.32 * len(mine) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    ys = list(range(len(mine)))[::-1]
    wf = [x[0]["wavefronts"] for x in mine]
    ideal = [x[0].get("ideal_wavefronts") or max(1, x[3] // 4) for x in mine]
    ax.barh(ys, wf, color=["#D55E00" if w > i else "#0072B2" for w, i in zip(wf, ideal)], height=0.7, label="wavefronts (red: conflicts)")
    ax.scatter(ideal, ys, marker="|", s=160, color="k", zorder=3, label="ideal for the access width")
    for y, w in zip(ys, wf):
        ax.text(w + 0.3, y, f"{int(w)}", va="center", fontsize=8)
    ax.set_yticks(ys, [name(x[0]) for x in mine], fontsize=8)
    ax.set_xlabel("wavefronts per warp instruction (128 B per clock each)")
    ax.set_xlim(0, max(wf) * 1.12 + 1)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=2)
    ax.set_title(f"{first}: shared-memory wavefronts per access pattern", fontsize=11)
    worst = max(mine, key=lambda x: x[0]["wavefronts"])
    others = {x[0]["machine"] for x in rs} - {first}
    same = all(
        any(y[0]["machine"] == o and name(y[0]) == name(x[0]) and y[0]["wavefronts"] == x[0]["wavefronts"] for y in rs)
        for o in others for x in mine
    )
    conflicted = sum(w > i for w, i in zip(wf, ideal))
    reading = (
        f"{conflicted} of {len(mine)} patterns take more wavefronts than their ideal; the worst, {name(worst[0])}, takes "
        f"{int(worst[0]['wavefronts'])}."
    )
    if others:
        reading += f" {', '.join(sorted(others))} give {'the same counts' if same else 'different counts (see the table)'}."
    return Drawn("banks", "Shared-memory wavefronts per pattern", fig, reading + f" ({_SECTION['banks']}.)")


def _sectors(rows: list[dict], machines: dict) -> Drawn | None:
    """Sectors one warp request moves for each global_pattern row against the ideal, with the efficiency."""
    rs = [r for r in rows if r.get("kernel") == "global_pattern" and _finite(r.get("sectors"))]
    if not rs:
        return None
    name = _labeler(rs)
    first = rs[0]["machine"]
    mine = [r for r in rs if r["machine"] == first]
    fig = Figure(figsize=(9, 0.34 * len(mine) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    ys = list(range(len(mine)))[::-1]
    sec = [r["sectors"] for r in mine]
    # a broadcast (every lane one word) needs one sector: no ideal marker where fewer bytes move than the lanes ask for
    ideal = [r.get("sectors_ideal") if _finite(r.get("sectors_ideal")) and r["sectors_ideal"] <= r["sectors"] else None for r in mine]
    ax.barh(ys, sec, height=0.7, color=["#D55E00" if i is not None and s > i else "#0072B2" for s, i in zip(sec, ideal)],
            label="sectors moved (red: more than needed)")
    ax.scatter([i for i in ideal if i is not None], [y for y, i in zip(ys, ideal) if i is not None], marker="|", s=160,
               color="k", zorder=3, label="sectors the used bytes need")
    for y, r in zip(ys, mine):
        eff = r.get("coalescing_efficiency")
        note = "" if not _finite(eff) else "  (lanes share one word)" if eff > 1 else f"  ({fmt.percent(eff)} of the bytes used)"
        ax.text(r["sectors"] + 0.3, y, f"{int(r['sectors'])}{note}", va="center", fontsize=8)
    ax.set_yticks(ys, [name(r) for r in mine], fontsize=8)
    ax.set_xlabel("32-byte sectors per warp request")
    ax.set_xlim(0, max(sec) * 1.45 + 1)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=2)
    ax.set_title(f"{first}: sectors one warp load moves, per access pattern", fontsize=11)
    worst = min(mine, key=lambda r: r.get("coalescing_efficiency") if _finite(r.get("coalescing_efficiency")) else 1.0)
    best = [r for r in mine if _finite(r.get("coalescing_efficiency")) and r["coalescing_efficiency"] >= 0.999]
    reading = (
        f"{len(best)} of {len(mine)} patterns use every byte they move; the worst, {name(worst)}, moves "
        f"{int(worst['sectors'])} sectors ({fmt.nbytes(32 * worst['sectors'])}) and uses {fmt.percent(worst.get('coalescing_efficiency'))} of them."
    )
    return Drawn("sectors", "Sectors per warp request", fig, reading + f" ({_SECTION['sectors']}.)")


def _l2_raster(rows: list[dict], machines: dict) -> Drawn | None:
    """DRAM bytes against N per launch order, one panel per machine and dtype, with seed 001's two references:
    no reuse (every block reads its panels from DRAM) and perfect reuse (A, B read once, C written once)."""
    rs = [r for r in rows if r.get("p_raster") is not None and _finite(r.get("dram_bytes")) and _finite(r.get("dram_bytes_no_reuse"))]
    if len({r["p_raster"] for r in rs}) < 2:
        return None
    panels: dict[tuple, list[dict]] = {}
    for r in rs:
        panels.setdefault((r["machine"], r.get("dtype")), []).append(r)
    n = len(panels)
    fig = Figure(figsize=(7 if n == 1 else 12, 4.2 * (-(-n // 2))), layout="constrained")
    axes = panel_axes(fig, n, 2)
    gaps = []
    for ax, ((m, dt), prs) in zip(axes, panels.items()):
        ns = sorted({r["N"] for r in prs})
        ref = {N: next(r for r in prs if r["N"] == N) for N in ns}
        ax.plot(ns, [ref[N]["dram_bytes_no_reuse"] for N in ns], color="0.45", ls="--", lw=1.5, marker="_", ms=18, label="no reuse (every block reads its panels)")
        ax.plot(ns, [ref[N]["dram_bytes_perfect_reuse"] for N in ns], color="k", ls=":", lw=1.5, marker="_", ms=18, label="perfect reuse (A, B once, C once)")
        bound_line(ax, ns, ref)  # the Hong-Kung floor (issue 15)
        for i, order in enumerate(dict.fromkeys(r["p_raster"] for r in prs)):
            pts = sorted((r for r in prs if r["p_raster"] == order), key=lambda r: r["N"])
            # later lines thinner with smaller markers, so an order that coincides with another stays visible
            ax.plot([p["N"] for p in pts], [p["dram_bytes"] for p in pts], lw=2.4 - 0.6 * i, ms=8 - 2 * i, label=f"{order} order", **style(i))
        big = max(ns)
        at = {r["p_raster"]: r["dram_bytes"] for r in prs if r["N"] == big}
        if at:
            gaps.append((max(at.values()) / max(min(at.values()), 1), m, dt, big, min(at, key=at.get), max(at, key=at.get), ref[big]))
        ax.set_yscale("log")
        if len(ns) > 1:
            ax.set_xscale("log", base=2)
        format_axis(ax, "x", "N", ns)
        ax.set_xlabel("N (M = N = K)")
        format_axis(ax, "y", "dram_bytes")
        ax.set_title(f"{m} {dt}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("DRAM bytes by launch order, between no reuse and perfect reuse", fontsize=11)
    g = max(gaps, key=lambda t: t[0])
    ratio, m, dt, big, lo, hi, ref = g
    first = (
        f"At N = {big} on {m} ({dt}) the {hi} order moves {ratio:.2g}x the DRAM bytes of the {lo} order. " if ratio > 1.01
        else f"Up to N = {big} every launch order moves the same DRAM bytes: A and B fit the L2 whatever the order. "
    )
    reading = (
        first + 
        f"Every order stays between perfect reuse ({fmt.nbytes(ref['dram_bytes_perfect_reuse'])}) and no reuse "
        f"({fmt.nbytes(ref['dram_bytes_no_reuse'])}): the L2 keeps what neighbouring blocks share. ({_SECTION['raster']}.)"
    )
    within = all(r["dram_bytes_perfect_reuse"] * 0.99 <= r["dram_bytes"] <= r["dram_bytes_no_reuse"] * 1.01 for r in rs)
    if not within:
        reading = reading.replace("Every order stays between", "Not every point stays between").replace(": the L2 keeps what neighbouring blocks share", "")
    return Drawn("l2_raster", "DRAM bytes by launch order", fig, reading)
