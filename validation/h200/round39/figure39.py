"""Round 39 (issue 12): figures/order39.png -- how unevenly an SM shares itself among its blocks, against the copy
groups in flight on it: the copy-only benchmark (copy39.csv) and the 64x64 GEMMs' traces (order39.csv).

    python validation/h200/round39/figure39.py     # ~2 s

x: groups outstanding on an SM after each block's commit -- S x k in the benchmark (it waits until S - 1 remain),
(S - 1) x k in the GEMM (it waits until S - 2 remain before issuing the next), k blocks; one group a block at S = 1
(it waits for each). y: the first wave's rank span, the mean time of an SM's last-dispatched block less its first's.
"""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent


def read(name: str) -> list[dict]:
    with (HERE / name).open() as f:
        return list(csv.DictReader(f))


def main() -> Path:
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    copy = [r for r in read("copy39.csv") if r["run"] == "39b"]
    for bar, style, label in (("0", "o-", "copy only, no barrier"), ("1", "s--", "copy only, a barrier per k-step")):
        pts = sorted((int(r["k"]) * (int(r["S"]) if r["S"] != "1" else 1), float(r["by_rank"].split()[-1]) -
                      float(r["by_rank"].split()[0])) for r in copy if r["barrier"] == bar)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color="0.45" if bar == "0" else "0.2", ms=4,
                lw=1, label=label)
    colours = {"mma": "tab:blue", "wmma": "tab:orange"}
    seen = set()
    for r in read("order39.csv"):
        S, k = int(r["stages"]), int(r["blocks_per_sm"])
        x = max(S - 1, 1) * k
        lab = f"GEMM {'mma.sync' if r['api'] == 'mma' else 'WMMA'} (every traced launch)"
        ax.scatter(x + (0.15 if r["api"] == "wmma" else -0.15), float(r["rank_span"]), s=14, color=colours[r["api"]],
                   alpha=0.5, label=lab if lab not in seen else None, zorder=3)
        seen.add(lab)
    notes = (("WMMA S = 3, 7 per SM", 14, 0.316, 9.5, 0.36), ("WMMA S = 4 / mma.sync S = 4, 5 per SM", 15, 0.17, 15.6, 0.09),
             ("mma.sync S = 3, 6 per SM", 12, 0.066, 12.6, 0.02), ("S = 1 (6-7 per SM), WMMA S = 2 (7)", 6.6, 0.052, 2.2, 0.13))
    for text, x, y, tx, ty in notes:
        ax.annotate(text, (x, y), xytext=(tx, ty), fontsize=8, arrowprops=dict(arrowstyle="-", color="0.5", lw=0.7))
    ax.set_xlabel("copy groups in flight on an SM (blocks x groups each)")
    ax.set_ylabel("last-dispatched block's time less the first's\n(first wave, over the median block)")
    ax.set_title("H200: an SM serves its blocks' copies oldest first once ~12 groups are in flight")
    ax.axhline(0, color="0.8", lw=0.8)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.88))
    fig.tight_layout()
    out = HERE / "figures" / "order39.png"
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=130)
    return out


if __name__ == "__main__":
    print(main())
