"""Round 11: gemmsim's SM pipeline simulation on sit11.cu's synthetic blocks -> model11.csv (or stdout with --print).

    python validation/h200/round11/model11.py [--out model11.csv]

Each configuration of sit11.cu with both phases (X and Y) becomes a one-stage `StepCost` of 8 warps and 64 steps, every
input from the machine file (machines/h200.yaml), none from sit11's timings:
* Y: `ny` mma.sync per warp as one fragment group with no ldmatrix, at the machine's mma.sync rate
  (`mma_sync_fraction`: 6.07 cycles per HMMA per SMSP);
* X, integer adds: one run of `nx` issue-slot cycles per warp. The SASS has nx / 2 IADD3 (ptxas folds two adds into
  one) on 8 independent chains, and 32-bit integer adds run at half rate (64 a clock per SM on compute capability 9.0,
  CUDA C++ Programming Guide, arithmetic instruction throughput): 2 cycles each;
* X, L2 chase: `nx` waits of the L2 hit latency (`l2.hit_latency_cycles`), one issue slot each;
* X, cp.async: 4 cp.async per warp (`copy_code_latency_cycles.ldgsts` apart), 16 KiB at the per-warp copy rate,
  landing `async_copy_latency_cycles` after the last one;
* the barrier: `l1.hit_latency_cycles`, as in the GEMM's cost.
Two blocks are simulated (`sm_pipeline._simulate`, with the marks the kernel's clock reads mirror), and the script
puts beside sit11.csv's H200 rows what process11.py computes from the kernel's marks: the blocks' steps, how long the
younger block takes against the older, and how the two sit (`block_arrangement`). Run it with another tree on
PYTHONPATH to compare a variant (a different --out).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[2]) not in sys.path:
    sys.path.append(str(HERE.parents[2]))
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models import sm_pipeline as sp  # noqa: E402

STEPS, WARPS, FIRST, LAST = 64, 8, 16, 56
#: the younger block's duration over the older's from which it counts as waiting for the older (1: an even share)
WAITS = 1.25
#: sit11.cu's configurations with both phases: (mode, nx, ny)
CONFIGS = ((1, 512, 96), (1, 1024, 96), (2, 2, 96), (2, 4, 96), (3, 0, 96), (3, 0, 192), (2, 2, 192),
           (1, 512, 48), (2, 2, 48), (3, 0, 48))


def cost(mode: int, nx: int, ny: int, m=None) -> sp.StepCost:
    """The one-stage StepCost of sit11's block (module doc)."""
    m = m or load_machine("h200")
    P = m.limits.sub_partitions
    t_hmma = P / m.mma_sync_fraction  # cycles per HMMA per SMSP: 4096 FLOP over the SMSP's share of the rate
    mma_clk = WARPS * ny * t_hmma / P
    copy_clk = copy_lat = 0.0
    if mode == 1:
        segs = ((float(nx), 0.0),)
    elif mode == 2:
        segs = tuple((1.0, float(m.l2.hit_latency_cycles)) for _ in range(nx))
    else:
        segs = sp.copy_segments("ldgsts ldgsts ldgsts ldgsts", m.copy_code_latency_cycles)
        copy_clk = 16384 / (WARPS * m.async_copy_bytes_per_clk_warp)
        copy_lat = float(m.async_copy_latency_cycles)
    return sp.StepCost(steps=STEPS, stages=1, warps=WARPS, mma_clk=mma_clk, copy_latency_clk=copy_lat, copy_clk=copy_clk,
                       copy_segments=segs, issue_with_mma=True, barrier_clk=float(m.l1.hit_latency_cycles),
                       sub_partitions=P, groups=(((), float(ny), 0.0, ()),))


def blocks(c: sp.StepCost, n: int = 2) -> dict:
    """Simulate ``n`` blocks; the older's (block 0) median step, the younger's while the older runs, the younger's
    duration over the older's, and the arrangement."""
    marks: list = []
    sp._simulate(c, n, STEPS, marks)
    t = {}
    for b, i, j, x in marks:
        t.setdefault(b, {}).setdefault(i, {})[j] = x
    start = {b: [t[b][i][0] for i in sorted(t[b])] for b in t}
    end = {b: t[b][max(t[b])][3] for b in t}
    older = statistics.median(start[0][i + 1] - start[0][i] for i in range(FIRST, LAST))
    out = dict(older_step=older, x_clk=statistics.median(t[0][i][2] - t[0][i][0] for i in range(FIRST, LAST)))
    if n > 1:
        ys = [start[1][i + 1] - start[1][i] for i in range(STEPS - 1) if start[1][i + 1] < end[0]]
        out.update(younger_step=statistics.median(ys) if ys else float("nan"),
                   younger_over_older=(end[1] - start[1][0]) / (end[0] - start[0][0]),
                   **sp.block_arrangement(marks, FIRST, LAST))
    return out


def measured() -> dict:
    """(mode, nx, ny) -> the H200's two-block row of sit11.csv, medians over its launches."""
    by = {}
    with open(HERE / "sit11.csv") as f:
        for r in csv.DictReader(f):
            if r["blocks_per_sm"] == "2" and int(r["ny"]) and (int(r["nx"]) or r["mode"] == "3"):
                by.setdefault((int(r["mode"]), int(r["nx"]), int(r["ny"])), []).append(r)
    return {k: {c: statistics.median(float(r[c]) for r in v)
                for c in ("step_clk", "younger_step_clk", "younger_over_older", "together", "alternating")}
            for k, v in by.items()}


def compare(m=None) -> list[dict]:
    """Per configuration: the model (alone, two blocks) beside the H200, and whether the younger block waits in both."""
    m = m or load_machine("h200")
    meas = measured()
    rows = []
    for mode, nx, ny in CONFIGS:
        c = cost(mode, nx, ny, m)
        alone, two = blocks(c, 1), blocks(c, 2)
        h = meas[(mode, nx, ny)]
        rows.append(dict(mode=mode, nx=nx, ny=ny, model_alone_step=round(alone["older_step"]),
                         model_older_step=round(two["older_step"]), h200_older_step=round(h["step_clk"]),
                         model_younger_step=round(two["younger_step"]), h200_younger_step=round(h["younger_step_clk"]),
                         model_younger_over_older=round(two["younger_over_older"], 3),
                         h200_younger_over_older=round(h["younger_over_older"], 3),
                         model_together=round(two.get("together", -1), 3), h200_together=round(h["together"], 3),
                         model_alternating=round(two.get("alternating", -1), 3), h200_alternating=round(h["alternating"], 3),
                         younger_waits_alike=int((two["younger_over_older"] >= WAITS) == (h["younger_over_older"] >= WAITS))))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "model11.csv"))
    a = ap.parse_args()
    rows = compare()
    for r in rows:
        print(r)
    print(f"the younger block waits (duration >= {WAITS} x the older's) in the model as on the H200: "
          f"{sum(r['younger_waits_alike'] for r in rows)} of {len(rows)}")
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
