"""Round 31's schedule rule against the H200's waves: figures/drift31.png.

    python validation/h200/round31/figure31.py      # ~2 s

The spread of each whole wave (5-95 % of its block starts over the median block time) for three mma.sync launches
at N = 4096 and 8192 (round 30, drift31.csv; 4096 is the fit set) and 6144 (round 32, compare32.csv, predicted
before it ran), beside the rule (``tc_schedule``: 0 where the blocks hold, else DRIFT_PER_WAVE x blocks per SM a
wave up to an even spread).
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import save_figure  # noqa: E402

from gemmsim.models import tc_schedule as tcs  # noqa: E402

PANELS = (("mma_128x128_w2x2", 2, "128x128, 4 warps, S = 2: held in step"),
          ("mma_128x128_w2x4", 4, "128x128, 8 warps, S = 4: drifts slowly"),
          ("mma_64x64_w2x2", 3, "64x64, 4 warps, S = 3: drifts fast"))


def measured() -> dict:
    out = {}
    with (HERE / "drift31.csv").open() as f:
        for r in csv.DictReader(f):
            if r["api"] == "mma":
                key = (r["kernel"], int(r["stages"]), int(r["M"]))
                out.setdefault(key, dict(bps=int(r["blocks_per_sm"]), x=[]))["x"].append(float(r["spread"]))
    with (HERE.parent / "round32" / "compare32.csv").open() as f:
        for r in csv.DictReader(f):
            if r["api"] == "mma" and r["M"] == "6144":
                out[(r["kernel"], int(r["stages"]), 6144)] = dict(bps=int(r["blocks_per_sm"]), holds=r["model_holds"] == "1",
                                                                   x=[float(v) for v in r["measured_wave_spreads"].split()])
    return out


def main() -> None:
    data = measured()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    colours = {4096: "tab:blue", 6144: "tab:green", 8192: "tab:orange"}
    for ax, (kernel, S, title) in zip(axes, PANELS):
        held = data[(kernel, S, 6144)]["holds"]  # the rule's class (the model's own criterion), the same at every size
        for n in (4096, 6144, 8192):
            d = data[(kernel, S, n)]
            label = f"H200, N = {n}" + (" (fit)" if n == 4096 and not held else "") + (" (predicted)" if n == 6144 else "")
            ax.plot(range(len(d["x"])), d["x"], "o-", color=colours[n], ms=3, lw=1.2, label=label)
        longest = max(len(data[(kernel, S, n)]["x"]) for n in (4096, 6144, 8192))
        bps = data[(kernel, S, 8192)]["bps"]
        rule = [0.0 if held else min(tcs.DRIFT_PER_WAVE * bps * k, tcs.EVEN_SPREAD) for k in range(longest)]
        ax.plot(range(longest), rule, "--", color="black", lw=1.5,
                label="rule: held in step" if held else f"rule: {tcs.DRIFT_PER_WAVE} x {bps} blocks/SM a wave")
        ax.axhline(tcs.EVEN_SPREAD, color="grey", ls=":", lw=1)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("wave (launch order)")
        ax.set_ylim(-0.03, 1.12)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center right" if held else "lower right")
    axes[0].text(0.2, tcs.EVEN_SPREAD + 0.02, "starts spread evenly over a block", fontsize=7, color="grey")
    axes[0].set_ylabel("spread of the wave's block starts\n(5-95 %, block times)")
    fig.suptitle("H200, cp.async + mma.sync GEMM: how far each wave's blocks start apart, measured and as the model's "
                 "schedule rule has it", fontsize=10)
    save_figure(fig, HERE, "drift31.png", 130)


if __name__ == "__main__":
    main()
