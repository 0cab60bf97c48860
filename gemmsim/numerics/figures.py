"""Figures of the numerics lab, one per study, drawn from the study's rows (gemmsim.numerics.lab)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.numerics.arith import FORMATS  # noqa: E402
from gemmsim.numerics.error import gamma  # noqa: E402

COLORS = {"fp32": "tab:blue", "fp16": "tab:red", "bf16": "tab:green", "fp8_e4m3": "tab:purple", "fp8_e5m2": "tab:brown", "fp64": "black"}


def _fig(ncols: int, title: str, width: float = 6.0, height: float = 4.6) -> tuple[Figure, list]:
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    fig.suptitle(title, fontsize=12)
    return fig, axes


def _finish(ax, xlabel: str, ylabel: str, title: str) -> None:
    """Axis labels, a panel title, a light grid and the legend: the same on every panel of the lab."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def _style(inp: str, acc: str) -> dict:
    return {"color": COLORS.get(inp, "gray"), "linestyle": "-" if acc == "fp32" else "--", "marker": "o" if acc == "fp32" else "s"}


def error_vs_k(rows, cfg) -> Figure:
    fig, axes = _fig(2, "Error of C = AB against K (sequential sum, FMA): measured largest error and Higham's bound gamma_K |A||B|", width=5.6)
    Ks = np.array(sorted({r["K"] for r in rows}), float)
    accs = sorted({c.split("/")[1] for c in cfg.configs}, key=lambda a: FORMATS[a].p)
    for ax, data in zip(axes, ("positive", "signed")):
        for c in cfg.configs:
            rs = sorted((r for r in rows if r["data"] == data and r["config"] == c), key=lambda r: r["K"])
            inp, acc = c.split("/")
            u = FORMATS[acc].u
            ax.plot([r["K"] for r in rs], [max(r["max_err_u"] * u, 1e-12) for r in rs], label=f"{inp} in, {acc} acc", **_style(inp, acc))
        for acc in accs:
            g = np.array([gamma(k, FORMATS[acc].u) for k in Ks])
            ok = np.isfinite(g)
            ax.plot(Ks[ok], g[ok], color=COLORS.get(acc, "gray"), linewidth=3, alpha=0.35, label=f"bound gamma_K, u = {acc}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("K (length of each dot product)")
        ax.set_ylabel("max_ij |C_hat - C|_ij / (|A||B|)_ij")
        ax.set_title({"positive": "all-positive inputs U[0,1)", "signed": "random-sign inputs N(0,1)"}[data], fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside right center", fontsize=8)
    return fig


def fma(rows, cfg) -> Figure:
    fig, axes = _fig(2, "FMA (one rounding) against multiply then add (two), N(0,1) inputs, sequential order")
    ax = axes[0]
    for inp, acc in (("fp32", "fp32"), ("fp16", "fp16")):
        rs = sorted((r for r in rows if r["input"] == inp and r["acc"] == acc), key=lambda r: r["K"])
        ks = [r["K"] for r in rs]
        ax.plot(ks, [r["fma_mean_err_u"] for r in rs], color=COLORS[inp], marker="o", label=f"{inp}/{acc} FMA")
        ax.plot(ks, [r["muladd_mean_err_u"] for r in rs], color=COLORS[inp], marker="x", linestyle="--", label=f"{inp}/{acc} mul + add")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    _finish(ax, "K", "mean |C_hat - C| / (u |A||B|)", "mean error, in units of the accumulator's u")
    ax = axes[1]
    for inp, acc in (("fp32", "fp32"), ("fp16", "fp16"), ("bf16", "bf16"), ("fp16", "fp32")):
        rs = sorted((r for r in rows if r["input"] == inp and r["acc"] == acc), key=lambda r: r["K"])
        ax.plot([r["K"] for r in rs], [100 * r["differ"] for r in rs], marker="o", color=COLORS[inp], linestyle="-" if inp == acc else ":",
                label=f"{inp} in, {acc} acc" + (" (product exact in fp32)" if inp != acc else ""))
    ax.set_xscale("log", base=2)
    ax.set_ylim(-3, 103)
    _finish(ax, "K", "% of elements of C whose bits differ", "share of C whose bits change between FMA and mul + add")
    return fig


def orders(rows, cfg) -> Figure:
    fig, axes = _fig(2, f"One GEMM, K = {cfg.order_K}, all-positive U[0,1) inputs, summed in different orders (FMA)", height=5.0)
    for ax, acc in zip(axes, ("fp32", "fp16")):
        rs = [r for r in rows if r["data"] == "positive" and r["acc"] == acc]
        loops = [r for r in rs if r["order"] in LOOP_LABELS]
        same = all(r["differ_from_ijk"] == 0 for r in loops)
        bars = ([("six loop orders\nijk ... kji" + (" (identical)" if same else ""), loops[0])] if same else [(r["order"], r) for r in loops])
        names = {"sequential": "sequential k", "blocked": f"blocked BK={cfg.blocked_BK}", "lanes": f"{cfg.lanes} SIMD lanes",
                 "splitk": f"split-K S={cfg.split_k}", "pairwise": "pairwise", "kahan": "Kahan"}
        bars += [(names[r["order"]], r) for r in rs if r["order"] in names]
        y = np.arange(len(bars))
        ax.barh(y, [max(r["mean_err_u"], 1e-3) for _, r in bars], color=COLORS[acc], alpha=0.8)
        for yi, (_, r) in zip(y, bars):
            ax.text(max(r["mean_err_u"], 1e-3) * 1.1, yi, f"{100 * r['differ_from_ijk']:.0f}% of C differs from ijk; depth {r['depth']}", va="center", fontsize=7.5)
        ax.set_yticks(y, [b for b, _ in bars], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        lo, hi = ax.get_xlim()
        ax.set_xlim(lo, hi * 80)
        ax.set_xlabel("mean |C_hat - C| / (u |A||B|)   (depth = n of the bound gamma_n)")
        ax.set_title(f"{acc} inputs, {acc} accumulator", fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
    return fig


LOOP_LABELS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


def mixed(rows, cfg) -> Figure:
    fig, axes = _fig(1, "Mixed precision: storage and accumulator types, N(0,1) data, error against the unrounded fp64 product", width=11.5, height=5.0)
    ax = axes[0]
    combos = [("fp16", "fp32"), ("fp16", "fp16"), ("bf16", "fp32"), ("bf16", "bf16"), ("fp8_e4m3", "fp32"), ("fp8_e5m2", "fp32")]
    for inp, acc in combos:
        rs = sorted((r for r in rows if r["input"] == inp and r["acc"] == acc), key=lambda r: r["K"])
        ax.plot([r["K"] for r in rs], [r["total_rel"] for r in rs], label=f"{inp} storage, {acc} accumulate", **_style(inp, acc))
    for inp in ("fp16", "bf16"):
        rs = sorted((r for r in rows if r["input"] == inp and r["acc"] == "fp32"), key=lambda r: r["K"])
        ax.plot([r["K"] for r in rs], [r["input_rel"] for r in rs], color=COLORS[inp], linestyle=":", linewidth=2.5, alpha=0.6,
                label=f"{inp}: rounding the inputs alone (exact arithmetic)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("K")
    ax.set_ylabel("||C_hat - C||_F / ||C||_F")
    ax.set_title("dotted: the error of rounding the inputs alone, with exact arithmetic afterwards", fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right center", fontsize=8)
    return fig


def loss_scaling(rows, cfg) -> Figure:
    fig, axes = _fig(2, "Loss scaling: gradients ~ 2^N(-22, 3) stored in fp16 as S*g, dW = X^T G with fp32 accumulation, then / S")
    f16 = sorted((r for r in rows if r["format"] == "fp16"), key=lambda r: r["log2_scale"])
    ax = axes[0]
    xs = [r["log2_scale"] for r in f16]
    ys = [r["rel_error"] for r in f16]
    fin = [(x, y) for x, y in zip(xs, ys) if math.isfinite(y)]
    ax.plot([x for x, _ in fin], [y for _, y in fin], marker="o", color=COLORS["fp16"], label="fp16 storage, scaled by S")
    over = [x for x, y in zip(xs, ys) if not math.isfinite(y)]
    if over:
        ax.scatter(over, [1.0] * len(over), marker="^", color="black", zorder=3, label="overflow: Inf in G, dW is Inf/NaN")
    for r in rows:
        if r["format"] != "fp16":
            ax.axhline(r["rel_error"], color=COLORS[r["format"]], linestyle="--", label=f"{r['format']} storage, no scaling")
    ax.set_yscale("log")
    _finish(ax, "log2 S (loss scale)", "||dW_hat - dW||_F / ||dW||_F", "too small: gradients flush to zero; too large: overflow")
    ax = axes[1]
    ax.plot(xs, [100 * r["zero"] for r in f16], marker="o", label="% flushed to zero")
    ax.plot(xs, [100 * r["subnormal"] for r in f16], marker="s", label="% subnormal (fewer than 11 bits)")
    ax.plot(xs, [100 * r["overflow"] for r in f16], marker="^", color="black", label="% overflow to Inf")
    _finish(ax, "log2 S", "% of gradient entries", "what happens to the gradients in fp16")
    return fig


def quant(rows, cfg) -> Figure:
    fig, axes = _fig(2, "Quantization (claim 000-12, experiments/CLAIMS.md): accuracy and bytes", width=6.6, height=5.0)
    ax = axes[0]
    y = np.arange(len(rows))
    ax.barh(y, [r["rel_error"] for r in rows], color=["tab:blue" if not r["mode"] else "tab:orange" for r in rows])
    for yi, r in zip(y, rows):
        ax.text(r["rel_error"] * 1.15, yi, f"{r['rel_error']:.1e}", va="center", fontsize=8)
    ax.set_yticks(y, [r["scheme"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi * 10)
    ax.set_xlabel("||Y_hat - Y||_F / ||Y||_F  (Y = X W, K = %d)" % cfg.quant_K)
    ax.set_title("error against the fp64 product (weights with per-column scales)\nblue: float storage, orange: integer codes with scales", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    ax = axes[1]
    seen, labels, wb, dq = set(), [], [], []
    for r in rows:
        if r["dtype"] in seen:
            continue
        seen.add(r["dtype"])
        labels.append(r["dtype"])
        wb.append(r["decode_weight_bytes"] / 2**20)
        dq.append(r["decode_dequant_ops"] / r["decode_flops"])
    x = np.arange(len(labels))
    ax.bar(x, wb, color="tab:gray")
    for xi, b, d, r in zip(x, wb, dq, [next(q for q in rows if q["dtype"] == lab) for lab in labels]):
        ax.text(xi, b * 1.02, f"{r['decode_intensity']:.2f} FLOP/B" + (f"\n+{d:.1f} dequant op/FLOP" if d else ""), ha="center", fontsize=7.5)
    ax.set_xticks(x, labels)
    ax.set_ylabel("weight bytes read per decode step (MiB)")
    ax.set_ylim(0, max(wb) * 1.25)
    ax.set_title("decode GEMV 4096x4096, batch 1: bytes fall, but every weight\nneeds convert + subtract + multiply (group scales of 128)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def strassen(rows, cfg) -> Figure:
    fig, axes = _fig(2, f"Strassen and Winograd (cutoff {cfg.strassen_cutoff}) against classical GEMM, fp32 with FMA", height=5.0)
    ax = axes[0]
    algs = ("classical", "strassen", "winograd")
    col = {"classical": "tab:blue", "strassen": "tab:red", "winograd": "tab:orange"}
    for data, ls in (("positive", "-"), ("signed", "--")):
        for alg in algs:
            rs = sorted((r for r in rows if r["data"] == data and r["algorithm"] == alg), key=lambda r: r["n"])
            ax.plot([r["n"] for r in rs], [r["err_u_norm"] for r in rs], color=col[alg], linestyle=ls, marker="o",
                    label=f"{alg}, {'U[0,1)' if data == 'positive' else 'N(0,1)'}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (square matrices)")
    ax.set_ylabel("max |C_hat - C| / (u max|A| max|B|)")
    ax.set_title("measured error (Higham's bounds: n^2 classical, ~n^3.58 Strassen)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7.5)
    ax = axes[1]
    from gemmsim.numerics.strassen import flop_counts

    n0 = cfg.strassen_cutoff
    L = np.arange(0, 8)
    for alg in ("strassen", "winograd"):
        ratios = [flop_counts(n0 * 2**lv, n0, alg)["flops"] / flop_counts(n0 * 2**lv, n0, "classical")["flops"] for lv in L]
        ax.plot(L, ratios, marker="o", color=col[alg], label=f"{alg}: all FLOPs / classical")
    ax.plot(L, (7 / 8) ** L, color="black", linestyle=":", label="multiplications: (7/8)^levels")
    ax.axhline(0.51, color="gray", linewidth=0.8, label="0.51, the seed's figure for 5 levels")
    ax.set_xlabel(f"recursion levels (n = {n0} * 2^levels)")
    ax.set_ylabel("operations relative to classical")
    ax.set_title("FLOPs saved; the extra block additions do 1 FLOP per 12 bytes (fp32)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def strassen_time(rows, cfg) -> Figure:
    machines = list(dict.fromkeys(r["machine"] for r in rows))
    fig, axes = _fig(len(machines), f"Modelled time of Strassen / Winograd (cutoff {cfg.time_cutoff}, packed_micro below it) relative to packed_micro, fp32\n"
                     "each bar: the ratio and the limit that binds (compute, latency, ...)",
                     width=6.0, height=4.8)
    kern = [k for k in dict.fromkeys(r["kernel"] for r in rows) if k != "blocked"]
    col = {"packed_micro": "tab:blue", "strassen": "tab:red", "winograd": "tab:orange"}
    for ax, mname in zip(axes, machines):
        sizes = sorted({r["n"] for r in rows if r["machine"] == mname})
        w = 0.8 / len(kern)
        top = 1.0
        for i, k in enumerate(kern):
            x = np.arange(len(sizes)) + (i - (len(kern) - 1) / 2) * w
            for xi, n in zip(x, sizes):
                by = {r["kernel"]: r for r in rows if r["machine"] == mname and r["n"] == n}
                rel = by[k]["time_ms"] / by["packed_micro"]["time_ms"]
                top = max(top, rel)
                ax.bar(xi, rel, width=w, color=col.get(k, "gray"), label=k if n == sizes[0] else None)
                ax.text(xi, rel + 0.02, f"{rel:.2f}\n{by[k]['bound']}", ha="center", va="bottom", fontsize=7)
        for xi, n in enumerate(sizes):
            by = {r["kernel"]: r for r in rows if r["machine"] == mname and r["n"] == n}
            if "blocked" in by:
                ax.text(xi, top * 1.28, f"blocked 64^3: {by['blocked']['time_ms'] / by['packed_micro']['time_ms']:.0f}x\n"
                        f"(packed_micro {by['packed_micro']['time_ms']:.2f} ms)", ha="center", fontsize=7.5, color="dimgray")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylim(0, top * 1.5)
        ax.set_xticks(np.arange(len(sizes)), [f"n = {n}" for n in sizes])
        ax.set_ylabel("modelled time / packed_micro's time")
        ax.set_title(mname, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    return fig


FIGURES = {"error_vs_k": error_vs_k, "fma": fma, "orders": orders, "mixed": mixed, "loss_scaling": loss_scaling, "quant": quant, "strassen": strassen, "strassen_time": strassen_time}

__all__ = ["FIGURES", "FORMATS", "gamma"]
