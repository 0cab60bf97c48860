"""Round 13's figure -> figures/clock13.png.

    python validation/h200/round13/figures13.py

Left: the SM clock inside each cuBLAS kernel (ncu, spaced launches) against the kernel's duration, beside what a
probe just before and after the product read (round 3) and the back-to-back clock of the machine file. Right: the
fine N sweep (fp16, M = K = 4096): the kernels' throughput and `hopper_ws` at three clocks -- the one measured
inside the kernel, the probes', and the machine file's sustained one.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import save_figure  # noqa: E402
ROUND3 = HERE.parent / "round3"


def main() -> None:
    rows = list(csv.DictReader((HERE / "model13_cublas.csv").open()))
    r3 = {(r["dtype"], r["sweep"], r["M"], r["N"]): r for r in csv.DictReader((ROUND3 / "model_tc_cublas.csv").open())}
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.8))
    for dt, mk in (("fp16", "o"), ("bf16", "s")):
        g = [r for r in rows if r["dtype"] == dt]
        a.scatter([float(r["kernel_us"]) for r in g], [float(r["sm_mhz"]) for r in g], marker=mk, s=22,
                  label=f"inside the kernel (ncu), {dt}", zorder=3)
        a.scatter([float(r["kernel_us"]) for r in g], [float(r3[(dt, r["sweep"], r["M"], r["N"])]["sm_mhz"]) for r in g],
                  marker=mk, s=22, facecolors="none", edgecolors="grey", label=f"probe before/after the product, {dt}")
    for y, txt in ((1980, "boost clock 1980"), (1430, "machine file: back-to-back products 1430"),
                   (1345, "back-to-back, this round 1345")):
        a.axhline(y, color="k", lw=0.8, ls=":")
        a.text(13, y + 12, txt, fontsize=8)
    a.set_xscale("log")
    a.set_xticks([15, 30, 50, 100, 200, 400, 800])
    a.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    a.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    a.set_xlabel("kernel duration (us)")
    a.set_ylabel("SM clock (MHz)")
    a.set_ylim(1250, 2050)
    a.set_title("cuBLAS kernels, spaced 1 ms apart: the clock drops inside them")
    a.legend(fontsize=7, loc="lower right")

    g = sorted((r for r in rows if r["dtype"] == "fp16" and r["sweep"] == "fine"), key=lambda r: int(r["N"]))
    n = [int(r["N"]) for r in g]
    old = [r3[("fp16", "fine", r["M"], r["N"])] for r in g]
    b.plot(n, [float(r["tflops"]) for r in g], "k-o", ms=4, label="H200 (kernel duration)")
    b.plot(n, [float(r["model_tflops"]) for r in g], "-s", ms=3, label="model at the clock inside the kernel")
    b.plot(n, [float(r["model_tflops_no_launch"]) for r in old], "--", label="model at the probes' clock")
    b.plot(n, [float(r["model_tflops_sustained_clock"]) for r in old], ":", label="model at 1430 MHz")
    b.set_xlabel("N (M = K = 4096, fp16)")
    b.set_ylabel("TFLOP/s")
    b.set_title("fine sweep: the model at the measured clock")
    b.legend(fontsize=8)
    save_figure(fig, HERE, "clock13.png", dpi=110)


if __name__ == "__main__":
    main()
