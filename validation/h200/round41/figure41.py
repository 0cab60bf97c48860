"""Round 41 (issue 12): figures/favour41.png -- top left, how much the L2 favours its favoured SMs against the copy
groups outstanding on an SM (the copy-only benchmark, ramp41.csv, with the machine file's ramp); top right, round 41b's
64x64 GEMM at fewer blocks per SM, the H200's favour against the model's (favour41b.csv); below, WMMA and mma.sync
S = 1's launch ends against N at M = K = 4096 (ends41.csv: the H200, the model before this round and now).

    python validation/h200/round41/figure41.py     # ~2 s
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import save_figure  # noqa: E402


def read(name: str) -> list[dict]:
    with (HERE / name).open() as f:
        return list(csv.DictReader(f))


def main() -> Path:
    ramp, ends, gemm = read("ramp41.csv"), read("ends41.csv"), read("favour41b.csv")
    fig, grid = plt.subplots(2, 2, figsize=(12.5, 9))
    axes = [grid[0, 0], grid[1, 0], grid[1, 1]]
    ax = axes[0]
    def s1bar(r: dict) -> bool:
        return r["S"] == "1" and r["barrier"] == "1"

    groups = [
        ("device 39b (24 favoured SMs): S = 1, barrier -- the ramp", lambda r: r["run"] == "39b" and s1bar(r),
         dict(color="tab:green", marker="o", s=40)),
        ("device first (12): S = 1, barrier -- a repeat", lambda r: r["run"] == "first" and s1bar(r),
         dict(facecolor="none", edgecolor="tab:purple", marker="o", s=60)),
        ("both devices: S = 2..4 or no barrier -- held out", lambda r: not s1bar(r),
         dict(color="0.55", marker="x", s=22)),
    ]
    for label, keep, style in groups:
        sel = [r for r in ramp if keep(r) and int(r["groups"]) <= 14]
        ax.scatter([int(r["groups"]) for r in sel], [float(r["ratio"]) for r in sel], label=label, **style)
    pts = sorted({(int(r["groups"]), float(r["ramp_ratio"])) for r in ramp if int(r["groups"]) <= 14})
    ax.plot([p[0] for p in pts], [p[1] for p in pts], color="0.3", lw=1.2, label="machine file's ramp")
    for name, g in (("WMMA S = 1", 3.70), ("mma.sync S = 1", 4.50)):
        ax.axvline(g, color="tab:orange" if "WMMA" in name else "tab:blue", lw=0.8, ls="--")
        ax.text(g - 0.35, 0.64, name, fontsize=8, rotation=90, va="bottom")
    ax.set_xlabel("copy groups outstanding on an SM")
    ax.set_ylabel("favoured SMs' block time over the others'")
    ax.set_title("copy-only benchmark: the L2 favours SMs\nonly once copies queue for it", fontsize=10)
    ax.set_ylim(0.62, 1.16)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    ax = grid[0, 1]
    for v, face, label in (("model_before", "none", "whole share at any load (round 38)"),
                           ("model_now", None, "share by the ramp (now)")):
        for S, colour in ((1, "tab:red"), (2, "tab:blue"), (3, "tab:green"), (4, "tab:purple")):
            sel = [r for r in gemm if int(r["stages"]) == S]
            ax.scatter([float(r[v]) for r in sel], [float(r["ratio"]) for r in sel], s=30, marker="o",
                       facecolor=face or colour, edgecolor=colour,
                       label=f"S = {S}" if v == "model_now" else (label if S == 1 else None))
    ax.plot([0.7, 1.02], [0.7, 1.02], color="0.5", lw=0.8)
    ax.set_xlabel("model: favoured SM's step over the others'")
    ax.set_ylabel("H200: favoured SMs' block time over the others'")
    ax.set_title("41b: the 64x64 GEMM at 4096 with 2..7 blocks per SM\nfilled: the ramp (now); hollow: the whole share",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    for ax, api, name in ((axes[1], "wmma", "WMMA"), (axes[2], "mma", "mma.sync")):
        sel = sorted((r for r in ends if r["api"] == api and r["stages"] == "1"), key=lambda r: int(r["N"]))
        n = [int(r["N"]) for r in sel]
        ax.plot(n, [float(r["measured"]) for r in sel], "k-o", ms=4, label="H200")
        ax.plot(n, [float(r["before"]) for r in sel], "--", color="0.6", marker="s", ms=3, label="model, round 40")
        ax.plot(n, [float(r["now"]) for r in sel], "-", color="tab:red", marker="^", ms=4, label="model now")
        ax.set_xlabel("N (M = K = 4096, 64x64 tiles)")
        ax.set_title(f"{name} S = 1: launch end over its steady pace", fontsize=10)
        ax.set_ylim(1.02, 1.15)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes[1:]:
        ax.set_ylabel("launch time / (blocks x steady block time)")
    return save_figure(fig, HERE, "favour41.png", 110)


if __name__ == "__main__":
    main()
