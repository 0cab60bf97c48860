"""What a drifted launch of the naive kernel breaks into, from round 7's block-start traces -> cohorts7.csv and
figures/cohort_steps.png.

    python validation/h200/round7/cohorts7.py

The launch's tiles in launch order come in *cohorts* of T = N / 16 consecutive blocks: one block column (all tm of
one tn) in column order, one block row in row order. A cohort's blocks share the operand the whole launch re-reads
from L2 (B's panel tn in column order, A's panel tm in row order); block (tm, tn) shares its other operand only
with its *partners* in the neighbouring cohorts, (tm, tn +- 1) in column order. Per launch (one row):

* ``within_cohort_spread``: median over cohorts of the 5-95 % range of its blocks' starts, over the median block time;
* ``partners_*``: where the start offsets of partner pairs (same tm, tn and tn + 1, in column order) fall, in block
  times: ``in_step`` (< 0.1: they read their shared panel together), ``apart`` (0.1-0.7: neither in step nor a wave
  apart -- the pairs a lockstep launch does not have), ``wave_apart`` (>= 0.7);
* ``partner_start_offset``, ``partner_end_offset``: the median offset of partners in the same wave (start offset
  < 0.5 block) at their starts and at their ends. Row order: partners start apart (dispatch) and end together -- the
  trailing block catches up. Column order: they end as far apart as they started;
* ``block_time_p5``, ``block_time_p95``: the spread of block durations over the median;
* ``cohorts_per_wave``: 1056 resident blocks / T;
* ``a_l2_resident``, ``b_l2_resident``: round 7d's variants with A's or B's rows wrapped every 64 (that operand in L2
  for the whole launch).

The figure (figures/cohort_steps.png) shows four launches' starts, the partners' offsets at start against end, and\nthe column / row DRAM bytes of every ncu launch against N.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from process7 import HERE, WAVE, launches, write_csv

EDGES = (0.1, 0.7)


def cohort_stats(N: int, d: np.ndarray) -> dict:
    """The cohort statistics of one launch's trace ``d`` (rows pid, smid, start_ns, end_ns in pid order)."""
    T = N // 16
    bt = float(np.median(d[:, 3] - d[:, 2]))
    t = (d[:, 2] / bt).reshape(T, T)  # [cohort, block within the cohort]: row c holds pids c*T .. c*T + T - 1
    within = float(np.median(np.percentile(t, 95, axis=1) - np.percentile(t, 5, axis=1)))
    e = (d[:, 3] / bt).reshape(T, T)
    off = np.abs(t[1:] - t[:-1])  # partner pairs: block i of cohort c and block i of cohort c + 1
    same = off < 0.5
    dur = e - t
    return dict(within_cohort_spread=round(within, 3), partners_in_step=round(float((off < EDGES[0]).mean()), 3),
                partners_apart=round(float(((off >= EDGES[0]) & (off < EDGES[1])).mean()), 3),
                partners_wave_apart=round(float((off >= EDGES[1]).mean()), 3),
                partner_start_offset=round(float(np.median(off[same])), 3),
                partner_end_offset=round(float(np.median(np.abs(e[1:] - e[:-1])[same])), 3),
                block_time_p5=round(float(np.percentile(dur, 5)), 3), block_time_p95=round(float(np.percentile(dur, 95)), 3),
                cohorts_per_wave=round(WAVE / T, 3))


def figure(traces: dict, path: Path) -> None:
    """Three rows: the starts of four launches (staircases), then partner offsets at start against end and the
    column / row DRAM bytes of round 7b/7c's ncu launches against N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(3, 2, figsize=(13, 10.5))
    stairs = [(axs[0, 0], "N = 8448, row order: starts ramp over each wave", (8448, "row", 1), 100),
              (axs[0, 1], "N = 8448, column order: one group per block column", (8448, "column", 1), 100),
              (axs[1, 0], "N = 5632, column order (3 block columns a wave), late in the launch", (5632, "column", 1), 80),
              (axs[1, 1], "N = 4608, column order (3.67 block columns a wave): lockstep waves", (4608, "column", 1), 40)]
    for ax, title, key, w0 in stairs:
        N, d = key[0], traces[key]
        T = N // 16
        bt = float(np.median(d[:, 3] - d[:, 2]))
        s = slice(w0 * WAVE, (w0 + 4) * WAVE)
        pid, t = d[s, 0], d[s, 2] / bt
        ax.scatter(pid, t - t.min(), s=2, c=(pid // T) % 2, cmap="coolwarm", vmin=-0.5, vmax=1.5, rasterized=True)
        for b in range(-(-(w0 * WAVE) // T), ((w0 + 4) * WAVE) // T + 1):
            ax.axvline(b * T, color="0.8", lw=0.6, zorder=0)
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_ylabel("block start (block times)")
        ax.set_xlabel(f"block index in launch order, waves {w0}-{w0 + 3} (grey: every N/16 blocks)", fontsize=8)

    ax = axs[2, 0]
    rng = np.random.default_rng(0)
    for key, colour, label in [((8448, "row", 1), "tab:blue", "row order, N = 8448"),
                               ((6144, "row", 1), "tab:cyan", "row order, N = 6144"),
                               ((8448, "column", 1), "tab:red", "column order, N = 8448"),
                               ((5632, "column", 1), "tab:orange", "column order, N = 5632")]:
        N, d = key[0], traces[key]
        T = N // 16
        bt = float(np.median(d[:, 3] - d[:, 2]))
        t, e = (d[:, 2] / bt).reshape(T, T), (d[:, 3] / bt).reshape(T, T)
        so, eo = np.abs(t[1:] - t[:-1]).ravel(), np.abs(e[1:] - e[:-1]).ravel()
        pick = np.flatnonzero(so < 0.5)
        pick = rng.choice(pick, min(3000, len(pick)), replace=False)
        ax.scatter(so[pick], eo[pick], s=3, color=colour, alpha=0.5, label=label, rasterized=True)
    ax.plot([0, 0.5], [0, 0.5], color="0.5", lw=0.8, ls="--", zorder=0)
    ax.set_xlim(0, 0.45)
    ax.set_ylim(-0.01, 0.45)
    ax.set_xlabel("partners' start offset (block times)")
    ax.set_ylabel("partners' end offset (block times)")
    ax.set_title("Blocks sharing an operand panel, same wave: row order ends together,\n"
                 "column order ends as far apart as it started", fontsize=10, loc="left")
    ax.legend(fontsize=8, markerscale=3, loc="upper left")

    ax = axs[2, 1]
    ncu: dict = {}
    for r in csv.DictReader((HERE / "ncu7.csv").open()):
        ncu.setdefault((int(r["N"]), r["order"]), []).append(float(r["dram_bytes_read"]))
    sizes = sorted(n for n, o in ncu if o == "column" and (n, "row") in ncu)
    for n in sizes:
        row = float(np.median(ncu[(n, "row")]))
        col = np.array(ncu[(n, "column")]) / row
        whole = (WAVE % (n // 16)) == 0
        colour = "tab:red" if whole else "tab:gray"
        ax.plot([n, n], [col.min(), col.max()], color=colour, lw=3)
        ax.scatter([n] * len(col), col, color=colour, s=12, zorder=3)
        ax.annotate(f"{WAVE / (n // 16):.2f}", (n, col.max()), textcoords="offset points", xytext=(0, 5),
                    ha="center", fontsize=8)
    ax.axhline(1, color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("N (label: block columns per wave of 1,056 blocks; red: a whole number)")
    ax.set_ylabel("DRAM bytes, column order / row order")
    ax.set_title("ncu, every launch (rounds 7b, 7c): the model's lockstep gives 1.0 everywhere", fontsize=10,
                 loc="left")
    ax.set_ylim(0.8, 2.9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    rows, traces = [], {}
    for (n, order, ta, tb, rep), d in sorted(launches(), key=lambda x: x[0]):
        if ta == 1 or tb == 1:
            continue  # the column-major variants: other kernels (README, section 7)
        if not (ta or tb):
            traces[(n, order, rep)] = d
        rows.append(dict(N=n, order=order, a_l2_resident=int(ta == 2), b_l2_resident=int(tb == 2), launch=rep,
                         **cohort_stats(n, d)))
    write_csv("cohorts7.csv", rows)
    for r in rows:
        print(r)
    figure(traces, HERE / "figures" / "cohort_steps.png")


if __name__ == "__main__":
    main()
