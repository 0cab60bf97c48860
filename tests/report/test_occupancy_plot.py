"""`occupancy --plot`: the calculator's three curves, each point checked against the H200's own occupancy API
(validation/h200/occupancy.csv, cudaOccupancyMaxActiveBlocksPerMultiprocessor over 28,288 configurations)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg

from gemmsim import load_machine
from gemmsim.report.occupancy_plot import occupancy_curves

MEASURED = Path(__file__).resolve().parents[2] / "validation" / "h200" / "occupancy.csv"


def _measured() -> dict:
    out = {}
    with open(MEASURED) as f:
        for r in csv.DictReader(f):
            if r["carveout"] == "-1":
                out[(int(r["threads"]), int(r["regs"]), int(r["smem_bytes"]))] = int(r["blocks_per_sm"])
    return out


def test_curve_points_equal_the_h200_occupancy_api():
    h200 = load_machine("h200")
    meas = _measured()
    base_t, base_r, base_s = 256, 72, 16384
    c = occupancy_curves(h200, base_t, base_r, base_s)
    checked = 0
    for key, (xs, ys) in (("threads", c["threads"]), ("registers", c["registers"]), ("shared_memory", c["shared_memory"])):
        for x, y in zip(xs, ys):
            t, r, s = (x if key == "threads" else base_t), (x if key == "registers" else base_r), (x if key == "shared_memory" else base_s)
            if (t, r, s) in meas:
                warps = -(-t // 32)
                assert y == 100.0 * meas[(t, r, s)] * warps / 64, (key, x)
                checked += 1
    assert checked >= 8
    # the launch itself, and a register count a 1024-thread block cannot have: 0 %, as the API says
    assert c["point"]["occupancy_pct"] == 100.0 * meas[(base_t, base_r, base_s)] * 8 / 64
    wide = occupancy_curves(h200, 1024, 72, 0)
    assert wide["point"]["occupancy_pct"] == 0.0


def test_cli_plot_writes_a_figure(tmp_path):
    out = tmp_path / "occ.png"
    r = subprocess.run([sys.executable, "-m", "gemmsim", "occupancy", "--machine", "a100", "--threads", "256", "--regs", "72",
                        "--smem", "73728", "--plot", str(out)], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    img = mpimg.imread(out)
    assert img.shape[0] > 200 and img.shape[1] > 600
    bad = subprocess.run([sys.executable, "-m", "gemmsim", "occupancy", "--machine", "a100", "--threads", "256", "--regs", "72",
                          "--plot", str(tmp_path / "no" / "such" / "x.png")], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "--plot" in bad.stderr
