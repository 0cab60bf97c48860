"""Round 33's figure: how many stages a block needs depends on how many blocks share its SM.

    python validation/h200/round33/figure33.py     # compare33.csv + ../round28/compare28.csv -> figures/occupancy33.png

One panel per 128x128 tile (mma.sync, N = 4096): TFLOP/s per SM cycle (stated at 1980 MHz) against S, measured
(solid, markers) and modelled (dashed), with two blocks per SM (round 28) and with one (round 33, `SMEM_MIN`). The
model is as it stands: round 28's comparison at each launch's clock, round 33's `model33_now` at 1980 MHz.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import save_figure  # noqa: E402

TILES = (("mma_128x128_w2x4", "128x128, 8 warps"), ("mma_128x128_w2x2", "128x128, 4 warps"))
N = "4096"


def _read(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def series() -> dict:
    """{(tile, blocks per SM): (S, measured, model)} per SM cycle at 1980 MHz, mma.sync at N = 4096."""
    out = {}
    two = [r for r in _read(HERE.parent / "round28" / "compare28.csv") if r["api"] == "mma" and r["M"] == N]
    one = [r for r in _read(HERE / "compare33.csv") if r["api"] == "mma" and r["M"] == N and r["copy"] == "1"]
    for tile, _ in TILES:
        a = sorted((r for r in two if r["kernel"] == tile), key=lambda r: int(r["stages"]))
        out[(tile, 2)] = ([int(r["stages"]) for r in a], [float(r["measured_tflops_at_1980"]) for r in a],
                          [float(r["model_tflops"]) * 1980 / float(r["sm_mhz"]) for r in a])
        b = sorted((r for r in one if r["kernel"] == tile), key=lambda r: int(r["stages"]))
        out[(tile, 1)] = ([int(r["stages"]) for r in b], [float(r["measured_at_1980"]) for r in b],
                          [float(r["now_at_1980"]) for r in b])
    return out


def main() -> Path:
    data = series()
    fig = Figure(figsize=(10, 4.4))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (tile, title) in zip(axes, TILES):
        for bps, color in ((2, "tab:blue"), (1, "tab:orange")):
            S, meas, mod = data[(tile, bps)]
            word = "blocks" if bps > 1 else "block"
            ax.plot(S, meas, "-o", color=color, label=f"{bps} {word} per SM: measured")
            ax.plot(S, mod, "--", color=color, marker="o", mfc="none", label=f"{bps} {word} per SM: model")
        ax.set_title(title)
        ax.set_xlabel("pipeline stages S")
        ax.set_xticks([1, 2, 3, 4])
        ax.set_ylim(0, None)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("TFLOP/s per SM cycle (at 1980 MHz)")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.suptitle("H200, mma.sync GEMM at 4096: a second block on the SM hides the copy that a lone block needs more "
                 "stages for\n(round 28: two blocks per SM; round 33: one, by asking for 120,000 B of shared memory)",
                 fontsize=10)
    return save_figure(fig, HERE, "occupancy33.png", 110)


if __name__ == "__main__":
    main()
