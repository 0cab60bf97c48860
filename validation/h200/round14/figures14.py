"""Round 14's figure -> figures/drift14.png.

    python validation/h200/round14/figures14.py

Left: how far apart neighbouring block columns start, wave by wave, at 4224 and 5632 with 0-16 extra FMAs per k step
(round 14's traces), beside the drift law (dashed; fitted on these launches). Right: DRAM bytes over the lockstep's,
ncu (dots: every launch) against the memory model with the law's drift (crosses), 8448 held out.
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
sys.path[:0] = [str(HERE.parent), str(HERE)]
import drift_law14 as dl  # noqa: E402
from h200_io import save_figure  # noqa: E402
import process12 as p12  # noqa: E402  (drift_law14 puts round 12 on the path)
import process14 as p14  # noqa: E402

COLORS = {0: "tab:blue", 4: "tab:green", 8: "tab:orange", 16: "tab:red"}


def main() -> None:
    tr = p12.load12((p14.NPZ,))
    law = {(int(r["N"]), int(r["ex"])): float(r["law_rate"]) for r in csv.DictReader((HERE / "drift_rates14.csv").open())}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), gridspec_kw={"width_ratios": [1, 1, 1.1]})
    for ax, N in zip(axes[:2], (4224, 5632)):
        for n, ex, tag in p14.RUNS:
            if n != N:
                continue
            smid, start, end = tr[f"{N}_column_ex{ex}{tag}"]
            off = dl.per_wave(start, end, N)
            ax.plot(np.arange(len(off)) + 0.5, off, color=COLORS[ex], lw=1.2, alpha=1 if not tag else 0.5,
                    label=f"ex = {ex}" if not tag else None)
            if ex < 16 and not tag:
                ax.plot(np.arange(len(off)) + 0.5, dl.law_offsets(N, law[(N, ex)]), "--", color=COLORS[ex], lw=0.9)
        C = 1056 // (N // 16)
        ax.axhline(1 / C, color="k", lw=0.7, ls=":")
        ax.text(1, 1 / C + 0.008, f"evenly spaced (1/{C})", fontsize=8)
        ax.set_ylim(0, 0.42)
        ax.set_xlabel("wave")
        ax.set_title(f"N = {N}: block columns drifting apart ({C} a wave)")
    axes[0].set_ylabel("partners' start offset (block times)")
    axes[0].legend(fontsize=8, title="extra FMAs per k step", title_fontsize=8, loc="upper left")
    axes[1].text(60, 0.02, "solid: traces; dashed: the law", fontsize=8)

    ax = axes[2]
    rows = list(csv.DictReader((HERE / "drift_law14.csv").open()))
    ncu7 = [r for r in dl.p7.ncu_launches() if r["order"] == "column" and r["N"] in dl.SIZES]
    nc14 = p14.ncu()
    x = 0
    ticks = []
    for r in rows:
        N, ex = int(r["N"]), int(r["ex"])
        lock = float(r["model_lockstep_gb"])
        meas = [m["dram_bytes_read"] / 1e9 for m in ncu7 if m["N"] == N and ex == 0]
        if (N, ex) in nc14:
            meas.append(nc14[(N, ex)]["dram__bytes_read.sum"] / 1e9)
        ax.scatter([x] * len(meas), np.array(meas) / lock, color=COLORS[ex], s=18, zorder=3)
        ax.scatter([x], [float(r["model_law_gb"]) / lock], marker="x", color="k", s=40, zorder=4)
        ticks.append((x, f"{N}\nex {ex}"))
        x += 1
    ax.axhline(1, color="k", lw=0.7, ls=":")
    ax.set_xticks([t for t, _ in ticks])
    ax.set_xticklabels([s for _, s in ticks], fontsize=7)
    ax.set_ylabel("DRAM bytes / the lockstep model's")
    ax.set_title("ncu (dots) and the model with the law's drift (x)")
    ax.text(8.6, 1.15, "8448:\nheld out", fontsize=8, ha="center")
    save_figure(fig, HERE, "drift14.png", dpi=105)


if __name__ == "__main__":
    main()
