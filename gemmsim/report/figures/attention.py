"""Attention figures (experiments/attention.yaml): naive against FlashAttention bytes and time over L, and the
decode crossover where the KV cache overtakes the weights, for MHA, GQA and MQA. Each simulated line has its
closed form (``gemmsim.analytic.attention``) dashed beside it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.common import Drawn, _finite, style  # noqa: E402


def _by_label(rows: list[dict], x: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        if _finite(r.get(x)) and _finite(r.get("dram_bytes")):
            out.setdefault(r.get("label") or r["kernel"], []).append(r)
    for pts in out.values():
        pts.sort(key=lambda r: r[x])
    return out


def _first_machine(rows: list[dict], kernels: tuple[str, ...]) -> tuple[str | None, list[dict]]:
    rs = [r for r in rows if r.get("kernel") in kernels]
    if not rs:
        return None, []
    m = rs[0]["machine"]
    return m, [r for r in rs if r["machine"] == m]


def prefill_figure(rows: list[dict]) -> Drawn | None:
    """DRAM bytes and modelled time against L, naive and flash, one machine (the first); closed forms dashed."""
    machine, rs = _first_machine(rows, ("attention_naive", "attention_flash"))
    lines = _by_label(rs, "seq_len")
    if not lines:
        return None
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax_b, ax_t = fig.subplots(1, 2)
    for i, (lab, pts) in enumerate(lines.items()):
        st = style(i)
        xs = [p["seq_len"] for p in pts]
        ax_b.plot(xs, [p["dram_bytes"] for p in pts], label=f"{lab} (simulated)", **st)
        ax_b.plot(xs, [p["closed_form_dram_bytes"] for p in pts], ls="--", color=st["color"], lw=1, label=f"{lab} (closed form)")
        ax_t.plot(xs, [p["time_s"] * 1e3 for p in pts], label=lab, **st)
    for ax, yl in ((ax_b, "DRAM bytes"), (ax_t, "modelled time (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length L (tokens)")
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    ax_b.set_title("Bytes: scores grow as L^2, Q/K/V/O as L")
    ax_t.set_title("Time (roofline of each launch)")
    fig.suptitle(f"Prefill attention on {machine}")
    naive = next((p for p in lines.values() if p[0]["kernel"] == "attention_naive"), None)
    flash = next((p for p in lines.values() if p[0]["kernel"] == "attention_flash"), None)
    reading = f"On {machine}: "
    if naive and flash:
        n, f = naive[-1], next((p for p in flash if p["seq_len"] == naive[-1]["seq_len"]), flash[-1])
        reading += (f"at L = {n['seq_len']} naive attention moves {n['dram_bytes'] / f['dram_bytes']:.0f}x the DRAM bytes of the "
                    f"tiled kernel and takes {n['time_s'] / f['time_s']:.1f}x as long ({n['bound']}-bound against {f['bound']}-bound); "
                    f"doubling L multiplies naive bytes by {naive[-1]['dram_bytes'] / naive[-2]['dram_bytes']:.1f} and flash bytes by "
                    f"{flash[-1]['dram_bytes'] / flash[-2]['dram_bytes']:.1f}." if len(naive) > 1 and len(flash) > 1 else "")
    reading += " Dashed: the closed forms 4Lde + 4L^2 s (naive) and 4Lde (flash, K and V reused in L2) per head."
    return Drawn("attention_prefill", f"Prefill attention on {machine}: naive against tiled", fig, reading)


def decode_figure(rows: list[dict]) -> Drawn | None:
    """Bytes per decoded token against context for each KV-head count, the weights as a line, crossovers marked."""
    machine, rs = _first_machine(rows, ("attention_decode",))
    lines = _by_label(rs, "context")
    if not lines:
        return None
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    reading = []
    xs_all = sorted({p["context"] for pts in lines.values() for p in pts})
    for i, (lab, pts) in enumerate(lines.items()):
        st = style(i)
        xs = [p["context"] for p in pts]
        ax.plot(xs, [p["bytes_per_token"] for p in pts], label=lab, **st)
        cross = pts[0]["crossover_context"]
        if xs_all[0] <= cross <= xs_all[-1]:
            ax.axvline(cross, color=st["color"], ls=":", lw=1)
        reading.append(f"{lab}: the KV cache passes the weights at {cross:,.0f} tokens of context"
                       f"{'' if xs_all[0] <= cross <= xs_all[-1] else ' (outside the sweep)'}; at {xs[-1]:,} tokens it is "
                       f"{pts[-1]['kv_fraction']:.0%} of the bytes")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context (tokens in the KV cache)")
    ax.set_ylabel("DRAM bytes per generated token, one layer")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, title="dotted: KV cache = weights")
    ax.set_title(f"Decode on {machine}: weights + KV cache per token")
    return Drawn("attention_decode", f"Decode on {machine}: KV cache against weights", fig, "; ".join(reading) + ".")


def attention_figures(rows: list[dict]) -> list[Drawn]:
    """Every attention figure that applies to the rows."""
    return [d for d in (prefill_figure(rows), decode_figure(rows)) if d is not None]
