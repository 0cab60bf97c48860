"""Rounds 7 and 15-21's figure -> figures/near_whole19.png.

    python validation/h200/round19/figures19.py

The naive kernel in column order at 39 sizes (rounds 7, 15-21). Left: ncu's DRAM bytes over the memory model's
lockstep bytes against how many block columns a wave holds, beside gemmsim (``gpu_memory.column_drift_offsets``:
round 14's rate against a pull-back of d / g a wave, spread exponentially) and the rule it replaced (round 18's hold
criterion); colour: the traced mean partner offset. Right: the traced mean partner offset against gemmsim's (sizes
the model holds in step, ``TIED_PERIODS``, are named, not plotted).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path[:0] = [str(H200), str(HERE), str(H200 / "round15"), str(H200 / "round5"), str(H200 / "round12"),
                str(H200 / "round14")]
import process15 as p15  # noqa: E402
from h200_io import save_figure  # noqa: E402
from predict19 import previous_rule  # noqa: E402

ROUNDS = (15, 16, 17, 18, 19, 20, 21)


def rows() -> list[dict]:
    grids = {r: p15.model_runs(p15.ROUNDS[r]) for r in ROUNDS}
    out = []
    for rnd in ROUNDS:
        traced: dict = {}
        for r in csv.DictReader((H200 / f"round{rnd}" / f"drift{rnd}.csv").open()):
            traced.setdefault(int(r["N"]), []).append(float(r["offset_pair_mean"]))
        for r in csv.DictReader((H200 / f"round{rnd}" / f"model{rnd}.csv").open()):
            n, lock = int(r["N"]), float(r["model_lockstep_gb"])
            out.append(dict(N=n, C=float(r["columns_per_wave"]), round=rnd, ncu=[float(r["ncu_gb"]) / lock],
                            model=float(r["model_gb"]) / lock, previous=previous_rule(n, grids[rnd][str(n)]) / 1e9 / lock,
                            traced=float(np.mean(traced[n])), model_offset=float(r["model_offset_mean"])))
    r7 = H200 / "round7"
    ncu: dict = {}
    for r in csv.DictReader((r7 / "ncu7.csv").open()):
        if r["order"] == "column":
            ncu.setdefault(int(r["N"]), []).append(float(r["dram_bytes_read"]))
    model7 = {(int(r["N"]), r["order"]): float(r["model_dram_bytes_read"]) for r in csv.DictReader((r7 / "model7.csv").open())}
    done = {r["N"] for r in out}
    for n, v in ncu.items():
        if n in done:
            continue
        lock = model7[(n, "row")]  # row order holds lockstep: the lockstep's bytes in either order
        out.append(dict(N=n, C=1056 / (n // 16), round=7, ncu=[x / lock for x in v], model=model7[(n, "column")] / lock,
                        previous=None, traced=None, model_offset=None))
    return out


def main() -> None:
    data = rows()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(14, 5.2), gridspec_kw={"width_ratios": [2.1, 1]})
    cmap, norm = plt.get_cmap("viridis"), plt.Normalize(0, 0.3)
    for r in data:
        c = "0.55" if r["traced"] is None else cmap(norm(r["traced"]))
        ax.scatter([r["C"]] * len(r["ncu"]), r["ncu"], color=c, s=26, zorder=3, edgecolor="k", lw=0.3)
        ax.scatter([r["C"]], [r["model"]], marker="x", color="C3", s=40, zorder=4)
        if r["previous"] is not None:
            ax.scatter([r["C"]], [r["previous"]], marker="_", color="0.3", s=60, zorder=2)
    for k in (2, 3, 4):
        ax.axvline(k, color="0.7", lw=0.8, ls=":")
    ax.scatter([], [], color=cmap(0.5), s=26, edgecolor="k", lw=0.3, label="ncu (colour: traced mean offset)")
    ax.scatter([], [], color="0.55", s=26, label="ncu, round 7 (several launches)")
    ax.scatter([], [], marker="x", color="C3", s=40, label="gemmsim: drift against a pull-back, spread")
    ax.scatter([], [], marker="_", color="0.3", s=60, label="round 18's hold criterion (replaced)")
    ax.set_xlabel("block columns a wave (1056 resident blocks / (N / 16)); dotted: whole numbers")
    ax.set_ylabel("DRAM bytes / the model's lockstep bytes")
    ax.set_title("Naive kernel, column order, H200: the further the block columns drift apart, the more DRAM traffic")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_ylim(0.8, 3.2)
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01, label="traced mean partner offset (blocks)")
    pts = [r for r in data if r["traced"] is not None and r["model_offset"] > 0]
    still = sorted({r["N"] for r in data if r["traced"] is not None and r["model_offset"] == 0})
    if still:
        bx.text(0.98, 0.02, "held in step by the model (C = p/q, q = 2 or 3), off the log axes: "
                + ", ".join(map(str, still)), transform=bx.transAxes, ha="right", va="bottom", fontsize=7.5)
    x = np.array([r["model_offset"] for r in pts])
    y = np.array([r["traced"] for r in pts])
    bx.scatter(x, y, s=24, color=[f"C{r['round'] - 15}" for r in pts], edgecolor="k", lw=0.3, zorder=3)
    for r in pts:
        if not 0.5 <= r["model_offset"] / r["traced"] <= 2:
            bx.annotate(str(r["N"]), (r["model_offset"], r["traced"]), fontsize=8, xytext=(4, 2), textcoords="offset points")
    lim = np.array([0.005, 0.6])
    bx.plot(lim, lim, color="k", lw=0.8)
    bx.fill_between(lim, lim / 2, lim * 2, color="0.9", zorder=0, label="within a factor 2")
    for rnd in ROUNDS:
        bx.scatter([], [], s=24, color=f"C{rnd - 15}", label=f"round {rnd}")
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlim(*lim)
    bx.set_ylim(*lim)
    bx.set_xlabel("gemmsim's mean partner offset (blocks)")
    bx.set_ylabel("traced mean partner offset (blocks)")
    bx.set_title("How far apart neighbouring block columns run")
    bx.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save_figure(fig, HERE, "near_whole19.png", dpi=100)


if __name__ == "__main__":
    main()
