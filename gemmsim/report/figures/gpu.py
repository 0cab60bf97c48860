"""GPU figures: the wave staircase and the lane-to-bank diagram of shared-memory accesses."""

from __future__ import annotations

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.common import (
    _SECTION,
    BANKS_MAX_ROWS,
    Drawn,
    _finite,
    _labeler,
    _seconds,
    _varying_params,
)
from gemmsim.report.figures.cpu import _row_params

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
