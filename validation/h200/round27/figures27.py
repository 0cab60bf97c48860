"""Round 27's figure -> figures/runaway27.png.

    python validation/h200/round27/figures27.py

Left: gemmsim's DRAM bytes over ncu's for every launch of the naive kernel in column order (rounds 15-27), against
block columns a wave, with the runaway (``gpu_memory.column_drift_offsets`` as the machine file has it) and with round
19's pull-back alone; the band is 1.5x. Right: where the runaway's plateau comes from: the mean partner offset over
each launch's last five tenths, as a fraction of even spacing, against the shortfall d (rounds 15-24: the fit;
rounds 26-27: held out), with the plateau line 0.70 (1 - d / 0.40).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path[:0] = [str(H200.parents[1]), str(H200), str(HERE)]
import runaway27 as ra  # noqa: E402
from h200_io import save_figure  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402
from gemmsim.kernels.gpu import KERNELS  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.trace import Layout  # noqa: E402


def launches() -> list[tuple[int, int, float]]:
    """(N, round, ncu GB) for every launch with stored memory-model runs."""
    out = []
    for rnd in range(15, 22):
        out += [(int(r["N"]), rnd, float(r["ncu_gb"])) for r in csv.DictReader((H200 / f"round{rnd}" / f"model{rnd}.csv").open())]
    for rnd in (24, 26, 27):
        out += [(int(r["N"]), rnd, float(r["ncu_gb"])) for r in csv.DictReader((H200 / f"round{rnd}" / f"drift{rnd}.csv").open())]
    return out


def model_gb(machine, runs: dict, N: int) -> float:
    spec = KERNELS["naive"].spec({"BX": 16, "BY": 16, "raster": "column"}, "fp32")
    off = gm.column_drift_offsets(machine, spec, Layout.build(N, N, 64, "fp32"), 8)
    if off is None:
        return runs[0.0] / 1e9
    w = gm.column_drift_weights(off, 1 / -(-1056 // (N // 16)))
    return sum(v * runs[d] for d, v in w.items()) / 1e9


def main() -> None:
    runs: dict = {}
    for path in sorted(H200.glob("round*/grid*.json")):
        for n, v in json.loads(path.read_text()).items():
            runs.setdefault(int(n), {}).update({float(k): b for k, b in v.items()})
    h = load_machine("h200")
    pulled = h.model_copy(update={"column_drift": h.column_drift.model_copy(update={"runaway_rate": None})})
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5.2))
    ax.axhspan(1 / 1.5, 1.5, color="0.93", zorder=0)
    ax.axhline(1, color="0.6", lw=0.8)
    first = {"now": True, "old": True, "new": True}
    for N, rnd, gb in launches():
        C = 1056 / (N // 16)
        now, old = model_gb(h, runs[N], N) / gb, model_gb(pulled, runs[N], N) / gb
        ax.plot([C, C], [old, now], color="0.75", lw=0.8, zorder=1)
        ax.scatter([C], [old], facecolors="none", edgecolors="0.45", s=22, zorder=2,
                   label="pull-back alone (round 19)" if first["old"] else None)
        if rnd == 27:
            ax.scatter([C], [now], marker="*", color="C3", s=90, zorder=4,
                       label="with the runaway, round 27 (predicted)" if first["new"] else None)
            first["new"] = False
        else:
            ax.scatter([C], [now], color="C0", s=22, zorder=3,
                       label="with the runaway, rounds 15-26" if first["now"] else None)
            first["now"] = False
        first["old"] = False
        if not 1 / 1.5 <= now <= 1.5:
            ax.annotate(f"{N}", (C, now), fontsize=8, xytext=(4, 3), textcoords="offset points")
    ax.set_yscale("log")
    ax.set_yticks([0.5, 0.67, 1, 1.5, 2])
    ax.set_yticklabels(["0.5", "1/1.5", "1", "1.5", "2"])
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("block columns a wave (1056 blocks / tiles per column)")
    ax.set_ylabel("gemmsim DRAM bytes / ncu's (one point a launch)")
    ax.set_title("Naive kernel, column order, H200: gemmsim against every launch")
    ax.legend(fontsize=8, loc="upper left")

    pts = ra.plateau_points()
    d = np.array([p[2] for p in pts])
    f = np.array([p[3] for p in pts])
    bx.scatter(d, f, color="C0", s=22, label="rounds 15-24 (the fit)")
    held = []
    for rnd in (26, 27):
        for r in csv.DictReader((H200 / f"round{rnd}" / f"drift{rnd}.csv").open()):
            _, g, dd, _ = ra._shape(int(r["N"]))
            if 0 < dd < 0.75:
                held.append((dd, float(np.mean([float(x) for x in r["offset_pair_tenths"].split()][5:])) * g, int(r["N"])))
    bx.scatter([x[0] for x in held], [x[1] for x in held], marker="*", color="C3", s=90,
               label="rounds 26-27 (held out)")
    for dd, ff, n in {(round(x[0], 3), 0, x[2]) for x in held}:
        top = max(x[1] for x in held if x[2] == n)
        bx.annotate(str(n), (dd, top), fontsize=8, xytext=(4, 3), textcoords="offset points")
    xs = np.linspace(0, 0.4, 50)
    c = h.column_drift
    bx.plot(xs, c.runaway_plateau * (1 - xs / c.runaway_end), color="k", lw=1.2,
            label=f"plateau {c.runaway_plateau:.2f} (1 - d / {c.runaway_end:.2f}) (machine file)")
    bx.axhline(1, color="0.6", lw=0.8, ls=":")
    bx.text(0.7, 1.01, "even spacing", fontsize=8, ha="right", va="bottom", color="0.4")
    bx.set_xlim(0, 0.75)
    bx.set_ylim(0, 1.1)
    bx.set_xlabel("d: a wave's shortfall from a whole number of block columns")
    bx.set_ylabel("late offset (last five tenths) / even spacing 1/g")
    bx.set_title("Just short of a whole number the columns run away")
    bx.legend(fontsize=8, loc="center right")
    save_figure(fig, HERE, "runaway27.png", 130)


if __name__ == "__main__":
    main()
