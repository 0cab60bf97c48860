"""Round 40 (issue 12): figures/ends40.png -- round 34's 40 launch ends (cycles over the steady pace), measured
against the dispatch model before this round and now (oracle40.csv: ``shipped`` and ``split``, means of 4
realisations of the spread).

    python validation/h200/round40/figure40.py     # ~2 s
"""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
MARKERS = {1: "o", 2: "s", 3: "^", 4: "D"}


def main() -> Path:
    with (HERE / "oracle40.csv").open() as f:
        rows = list(csv.DictReader(f))
    y = np.array([float(r["measured"]) for r in rows])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharex=True, sharey=True)
    for ax, v, title in ((axes[0], "shipped", "before: every block its own work"),
                         (axes[1], "split", "now: an SM's co-started blocks together\nat <= 12 copy groups in flight")):
        x = np.array([float(r[v]) for r in rows])
        for r, xi, yi in zip(rows, x, y):
            even = r["even"] == "1"
            ax.scatter(xi, yi, marker=MARKERS[int(r["stages"])], s=34,
                       facecolor=("tab:blue" if r["api"] == "mma" else "tab:orange") if even else "none",
                       edgecolor="tab:blue" if r["api"] == "mma" else "tab:orange")
        ax.plot([1.0, 1.15], [1.0, 1.15], color="0.5", lw=0.8)
        r = np.corrcoef(x, y)[0, 1]
        ax.set_title(f"{title}\ncorrelation {r:.2f}, mean error {np.mean(abs(x - y)):.3f}", fontsize=10)
        ax.set_xlabel("model: launch over its steady pace")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("H200: launch over its steady pace")
    for S, m in MARKERS.items():
        axes[1].scatter([], [], marker=m, color="0.3", label=f"S = {S}")
    axes[1].scatter([], [], color="tab:blue", label="mma.sync")
    axes[1].scatter([], [], color="tab:orange", label="WMMA")
    axes[1].scatter([], [], facecolor="none", edgecolor="0.3", label="hollow: ordered SM (> 12 groups)")
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("H200, 64x64 tile, M = K = 4096, N = 3712..4608 (round 34): how late each launch ends", fontsize=11)
    fig.tight_layout()
    out = HERE / "figures" / "ends40.png"
    fig.savefig(out, dpi=130)
    return out


if __name__ == "__main__":
    print(main())
