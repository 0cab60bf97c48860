"""Set-conflict figure (experiments/leading_dimension.yaml): how many lines of one column of B each L1 set receives,
for the worst leading dimension of the run and the same N padded. Drawn only when the rows hold the same N with
and without padding."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.analytic.layouts import set_histogram  # noqa: E402
from gemmsim.report.figures.common import Drawn  # noqa: E402
from gemmsim.trace import Layout, LayoutSpec  # noqa: E402


def _sets(n: int) -> str:
    return f"{n} set" if n == 1 else f"{n} sets"


def _layout(r: dict) -> Layout:
    spec = {k[7:]: v for k, v in r.items() if k.startswith("layout_") and v is not None and k[7:] in LayoutSpec.model_fields}
    return Layout.build(r["M"], r["N"], r["K"], r.get("dtype", "fp32"), LayoutSpec(**spec))


def set_histogram_figure(rows: list[dict], machines: dict) -> Drawn | None:
    """Lines of one B column per L1 set: unpadded (fewest sets) against padded, the ways as the capacity line."""
    panels = []
    for name, m in machines.items():
        if getattr(m, "kind", None) != "cpu":
            continue
        rs = [r for r in rows if r.get("machine") == name and isinstance(r.get("b_column_sets_L1"), int)
              and all(isinstance(r.get(x), int) for x in "MNK")]
        key = lambda r: (r["N"], r["kernel"], tuple(sorted((k, str(v)) for k, v in r.items() if k.startswith("p_"))))  # noqa: E731
        plain = [r for r in rs if not r.get("layout_pad")]
        padded = {key(r): r for r in rs if r.get("layout_pad")}
        cands = [r for r in plain if key(r) in padded]
        if not cands:
            continue
        worst = min(cands, key=lambda r: (r["b_column_sets_L1"], r.get("L1_hit_rate", 1.0), -r["N"]))
        panels.append((name, m, worst, padded[key(worst)]))
    if not panels:
        return None
    fig = Figure(figsize=(10, 2.8 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 2, squeeze=False)
    reading = []
    for row_axes, (name, m, bad, good) in zip(axes, panels):
        l1 = m.caches[0]
        texts = []
        for ax, r in zip(row_axes, (bad, good)):
            lay = _layout(r)
            h = set_histogram(lay.b_base, lay.b_rs, lay.K, l1.line_bytes, l1.sets)
            ax.bar(range(l1.sets), h, width=1.0, color="#0072B2" if r is bad else "#009E73")
            ax.axhline(l1.ways, color="k", ls="--", lw=1, label=f"{l1.ways} ways: lines a set can hold")
            ax.set_xlabel(f"{l1.name} set index (of {l1.sets})")
            ax.set_ylabel("lines of one B column")
            ldb = max(lay.b_rs, lay.b_cs) // lay.elem
            ax.set_title(f"{name}: ldb = {ldb} ({r.get('label', r['kernel'])}), {_sets(int((h > 0).sum()))} used", fontsize=9)
            ax.set_ylim(0, max(int(h.max()), l1.ways) * 1.3)
            ax.legend(fontsize=7, loc="upper right")
            over = int((h - l1.ways).clip(min=0).sum())
            texts.append(f"ldb = {ldb}: the column's {int(h.sum())} lines fall into {_sets(int((h > 0).sum()))}, "
                         f"{over} more than their ways hold (L1 hit rate {r.get('L1_hit_rate', float('nan')):.2f})")
        reading.append(f"On {name}, " + "; ".join(texts) + ".")
    fig.suptitle("Where one column of B lands in the L1 sets: a power-of-two stride against a padded one")
    return Drawn("set_histogram", "Set histogram of one column of B", fig, " ".join(reading))


def pyramid_figure(rows: list[dict]) -> Drawn | None:
    """Pointer-chase latency (ns) against the working set per machine, log-log; where a row carries the host's
    measured staircase, the measurement beside it (hollow markers: sizes the machine file's latencies were set from)."""
    from gemmsim.report.figures.common import _finite, style

    rs = [r for r in rows if _finite(r.get("avg_latency_ns")) and _finite(r.get("chase_bytes"))]
    if not rs:
        return None
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    reading = []
    machines = list(dict.fromkeys(r["machine"] for r in rs))
    for i, m in enumerate(machines):
        pts = sorted((r for r in rs if r["machine"] == m), key=lambda r: r["chase_bytes"])
        st = style(i)
        name = m.rsplit("/", 1)[-1].removesuffix(".yaml")
        xs = [p["chase_bytes"] for p in pts]
        ax.plot(xs, [p["avg_latency_ns"] for p in pts], label=f"{name} (model)", **st)
        meas = [p for p in pts if _finite(p.get("measured_latency_ns"))]
        if meas:
            ax.plot([p["chase_bytes"] for p in meas], [p["measured_latency_ns"] for p in meas], ls="--", color=st["color"],
                    lw=1.2, label=f"{name} (measured)")
            fit = [p for p in meas if p.get("fit_point")]
            ax.scatter([p["chase_bytes"] for p in fit], [p["measured_latency_ns"] for p in fit], facecolors="none",
                       edgecolors=st["color"], s=60, zorder=3)
            held = [p for p in meas if not p.get("fit_point")]
            if held:
                err = [abs(p["model_over_measured"] - 1) for p in held]
                worst = max(held, key=lambda p: abs(p["model_over_measured"] - 1))
                reading.append(f"{name}: on the {len(held)} sizes not used to set the machine file, the model is within "
                               f"{sorted(err)[len(err) // 2]:.0%} of the measurement at the median and off by "
                               f"{worst['model_over_measured']:.2f}x at worst ({worst['chase_bytes']:,} B)")
        reading.append(f"{name}: {pts[0]['avg_latency_ns']:.3g} ns at {xs[0]:,} B ({pts[0]['served_by']}) to "
                       f"{pts[-1]['avg_latency_ns']:.3g} ns at {xs[-1]:,} B ({pts[-1]['served_by']})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("ns per dependent load")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax.set_title("The latency pyramid: pointer chase against the working set")
    return Drawn("latency_pyramid", "Latency pyramid", fig, "; ".join(reading) + ".")


def tile_quantization_figure(rows: list[dict]) -> Drawn | None:
    """Tile efficiency and sectors per request against the size, one bar per kernel, sizes as categories (64 and 65
    side by side); first GPU of the run. Drawn when the sizes mix aligned and unaligned leading dimensions."""
    from gemmsim.report.figures.common import _finite, style

    rs = [r for r in rows if _finite(r.get("tile_efficiency")) and _finite(r.get("sectors_per_request"))
          and isinstance(r.get("N"), int) and "vector_load_16B_possible" in r]
    if len({r["vector_load_16B_possible"] for r in rs}) < 2 or len({r["N"] for r in rs}) < 3:
        return None
    m = rs[0]["machine"]
    rs = [r for r in rs if r["machine"] == m]
    sizes = sorted({r["N"] for r in rs})
    labels = list(dict.fromkeys(r.get("label") or r["kernel"] for r in rs))
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_t, ax_s = fig.subplots(1, 2)
    width = 0.8 / len(labels)
    for j, lab in enumerate(labels):
        by_n = {r["N"]: r for r in rs if (r.get("label") or r["kernel"]) == lab}
        xs = [i + (j - (len(labels) - 1) / 2) * width for i, n in enumerate(sizes) if n in by_n]
        col = style(j)["color"]
        ax_t.bar(xs, [100 * by_n[n]["tile_efficiency"] for n in sizes if n in by_n], width, color=col, label=lab)
        ax_s.bar(xs, [by_n[n]["sectors_per_request"] for n in sizes if n in by_n], width, color=col, label=lab,
                 hatch=None)
        for x, n in zip(xs, [n for n in sizes if n in by_n]):
            if not by_n[n]["vector_load_16B_possible"]:
                ax_s.text(x, by_n[n]["sectors_per_request"], "x", ha="center", va="bottom", fontsize=8)
    for ax in (ax_t, ax_s):
        ax.set_xticks(range(len(sizes)), [str(n) for n in sizes])
        ax.set_xlabel("M = N = K")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    ax_t.set_ylabel("tile efficiency (%)")
    ax_t.set_title("Useful outputs / computed outputs")
    ax_s.set_ylabel("32-byte sectors per global request")
    ax_s.set_title("Alignment: x = rows not 16-byte aligned")
    fig.suptitle(f"Tile quantization and alignment on {m}")
    reading = []
    for r in rs:
        if r["N"] % 32 == 1 and r.get("threads_launched") and r["threads_launched"] > r["tile_outputs_useful"] and r.get("p_TILE"):
            reading.append(f"At {r['N']} x {r['N']} the {r.get('label') or r['kernel']} kernel launches {r['threads_launched']:,} threads "
                           f"for {r['tile_outputs_useful']:,} outputs ({r['tile_efficiency']:.1%} busy)")
            break
    al = [r for r in rs if r["vector_load_16B_possible"]]
    un = [r for r in rs if not r["vector_load_16B_possible"]]
    lab0 = labels[0]
    a0 = [r["sectors_per_request"] for r in al if (r.get("label") or r["kernel"]) == lab0]
    u0 = [r["sectors_per_request"] for r in un if (r.get("label") or r["kernel"]) == lab0]
    if a0 and u0:
        span = lambda v: f"{min(v):.3g}" if min(v) == max(v) else f"{min(v):.3g}-{max(v):.3g}"  # noqa: E731
        reading.append(f"{lab0}: {span(a0)} sectors per request with 16-byte aligned rows, {span(u0)} without")
    return Drawn("tile_quantization", f"Tile quantization and alignment on {m}", fig, "; ".join(reading) + ".")
