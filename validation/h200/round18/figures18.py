"""Rounds 15-18's figure -> figures/near_whole18.png.

    python validation/h200/round18/figures18.py

The naive kernel in column order at 24 sizes (rounds 7, 15-18): ncu's DRAM bytes over the memory model's lockstep
bytes, against how many block columns a wave holds, beside gemmsim (the hold criterion of
``gpu_memory.column_drift_offsets``). Filled: the traced block columns drifted (mean partner offset > 0.08).
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
H200 = HERE.parent


def rows() -> list[dict]:
    out = []
    for rnd in (15, 16, 17, 18):
        drift: dict = {}
        for r in csv.DictReader((H200 / f"round{rnd}" / f"drift{rnd}.csv").open()):
            drift[int(r["N"])] = max(drift.get(int(r["N"]), 0.0), float(r["offset_mean"]))
        for r in csv.DictReader((H200 / f"round{rnd}" / f"model{rnd}.csv").open()):
            lock = float(r["model_lockstep_gb"])
            out.append(dict(N=int(r["N"]), C=float(r["columns_per_wave"]), ncu=[float(r["ncu_gb"]) / lock],
                            model=float(r["model_gb"]) / lock, drifted=drift[int(r["N"])] > 0.08))
    r7 = H200 / "round7"
    ncu: dict = {}
    for r in csv.DictReader((r7 / "ncu7.csv").open()):
        if r["order"] == "column":
            ncu.setdefault(int(r["N"]), []).append(float(r["dram_bytes_read"]))
    row = {int(r["N"]): float(r["model_dram_bytes_read"]) for r in csv.DictReader((r7 / "model7.csv").open()) if r["order"] == "row"}
    col = {int(r["N"]): float(r["model_dram_bytes_read"]) for r in csv.DictReader((r7 / "model7.csv").open()) if r["order"] == "column"}
    done = {r["N"] for r in out}
    for n, v in ncu.items():
        if n in done:
            continue
        out.append(dict(N=n, C=1056 / (n // 16), ncu=[x / row[n] for x in v], model=col[n] / row[n], drifted=None))
    return out


def main() -> None:
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for r in rows():
        c = {True: "C3", False: "C0", None: "0.4"}[r["drifted"]]
        ax.scatter([r["C"]] * len(r["ncu"]), r["ncu"], color=c, s=22, zorder=3)
        ax.scatter([r["C"]], [r["model"]], marker="x", color="k", s=36, zorder=4)
    for k in (2, 3, 4):
        ax.axvline(k, color="0.7", lw=0.8, ls=":")
    ax.scatter([], [], color="C3", s=22, label="ncu, block columns drifted (traced offset > 0.08)")
    ax.scatter([], [], color="C0", s=22, label="ncu, block columns in step")
    ax.scatter([], [], color="0.4", s=22, label="ncu, round 7 (trace not summarised here)")
    ax.scatter([], [], marker="x", color="k", s=36, label="gemmsim (hold criterion)")
    ax.set_xlabel("block columns a wave (1056 resident blocks / (N / 16)); dotted: whole numbers")
    ax.set_ylabel("DRAM bytes / the model's lockstep bytes")
    ax.set_title("Naive kernel, column order, H200: columns drift when a wave is a little short of whole columns")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_ylim(0.8, 3.2)
    save_figure(fig, HERE, "near_whole18.png", dpi=100)


if __name__ == "__main__":
    main()
