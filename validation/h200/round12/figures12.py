"""Round 12's figure -> figures/stagger12.png.

    python validation/h200/round12/figures12.py

Left: the gaps between consecutive block starts on one SM (middle of the launch), in units of a block's time over the
blocks per SM -- 1 is gemmsim's placement (`gpu_memory.slot_phases`). Middle: each SM's first 8 blocks, which start
together, by start order: when each ends (median over SMs). Right: how far apart partners in neighbouring block
columns start, through the launch, with and without extra FMAs per k step (12c).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import process12 as p12  # noqa: E402

GAPS = (("5632_column_ta0_tb2_bps8_c100", "column, B in L2, 8 per SM"),
        ("5632_column_ta0_tb2_bps6_c100", "column, B in L2, 6 per SM"),
        ("5632_row_ta0_tb2_bps4_c100", "row, B in L2, 4 per SM"),
        ("5632_column_ta0_tb0_bps8_c100", "column, original, 8 per SM"))
WAVE = (("5632_column_ta0_tb2_bps8_c100", "B in L2 (nothing ties them)"),
        ("5632_column_ta0_tb0_bps8_ex32", "original + 32 FMAs per k"),
        ("5632_column_ta0_tb0_bps8_ex0", "original (tied by B)"))
DRIFT = (("5632_column_ta0_tb0_bps8_ex0", "column, original"), ("5632_column_ta0_tb0_bps8_ex0_2", None),
         ("5632_column_ta0_tb0_bps8_ex16", "column, + 16 FMAs per k"), ("5632_column_ta0_tb0_bps8_ex32", "column, + 32 FMAs per k"),
         ("5632_row_ta0_tb0_bps8_ex32", "row, + 32 FMAs per k"), ("5632_row_ta0_tb4_bps8_c100", "row, original (B past L1)"))


def gaps(smid, start, end, bps):
    T = float(np.median(end - start))
    lo, hi = np.quantile(start, p12.MIDDLE)
    out = []
    for s in np.unique(smid):
        st = np.sort(start[smid == s])
        g = np.diff(st) / T * bps
        out.append(g[(st[1:] > lo) & (st[1:] < hi)])
    return np.concatenate(out)


def wave_ends(smid, start, end, bps=8):
    T = float(np.median(end - start))
    e = []
    for s in np.unique(smid):
        idx = np.where(smid == s)[0][:bps]
        idx = idx[np.argsort(start[idx], kind="stable")]
        e.append((end[idx] - start[idx].min()) / T)
    return np.median(np.array(e), axis=0)


def main() -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L = p12.load12()
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4))
    bins = np.linspace(0, 2.5, 51)
    for (key, label), c in zip(GAPS, ("C0", "C1", "C2", "0.4")):
        bps = int(key.split("bps")[1][0])
        g = gaps(*L[key], bps)
        ax[0].hist(g, bins=bins, histtype="step", lw=1.8, color=c, weights=np.full(len(g), 1 / len(g)),
                   label=label)
    ax[0].axvline(1, color="k", ls=":", lw=1)
    ax[0].set_ylim(0, 0.42)
    tied = float(np.mean(gaps(*L[GAPS[-1][0]], 8) < 0.4))  # below 0.05 of a block
    ax[0].annotate(f"tied: {tied:.0%} at 0 (off scale)", (0.03, 0.40), (0.25, 0.36), fontsize=8, color="0.3",
                   arrowprops=dict(arrowstyle="->", color="0.3"))
    ax[0].set_xlabel("gap between starts on one SM  [block time / blocks per SM]")
    ax[0].set_ylabel("share of gaps (bins of 0.05)")
    ax[0].set_title("Untied blocks start evenly spaced\n(1 = gemmsim's placement); tied ones together (0)")
    ax[0].legend(fontsize=8, loc="upper right")
    for (key, label), c in zip(WAVE, ("C0", "C3", "0.4")):
        ax[1].plot(range(1, 9), wave_ends(*L[key]), "o-", color=c, label=label)
    ax[1].set_xlabel("start order of the SM's first 8 blocks (1 = oldest)")
    ax[1].set_ylabel("end  [block times after the first start]")
    ax[1].set_title("A full SM serves its oldest blocks first\n(median over the 132 SMs; tied blocks end together)")
    ax[1].legend(fontsize=8)
    for (key, label), c in zip(DRIFT, ("0.4", "0.4", "C1", "C3", "C2", "C0")):
        smid, start, end = L[key]
        r = p12.partners(start, end, 5632, tenths=range(10))
        ax[2].plot(np.arange(1, 11), [r[f"partner_offset_tenth{k}"] for k in range(1, 11)], "o-", color=c, label=label)
    ax[2].axhline(1 / 3, color="k", ls=":", lw=1)
    ax[2].text(10.2, 1 / 3, "even\n(3 block\ncolumns\na wave)", fontsize=7, va="center")
    ax[2].set_xlabel("tenth of the launch")
    ax[2].set_ylabel("partners' start offset  [block times]")
    ax[2].set_ylim(0, 0.6)
    ax[2].set_title("Block columns drift apart slowly while blocks wait on DRAM,\nat once when the SM is full")
    ax[2].legend(fontsize=7.5, loc="upper center", ncol=2)
    fig.suptitle("H200, naive 16x16 SGEMM at N = 5632 (validation/h200/round12)", fontsize=11)
    fig.tight_layout()
    out = HERE / "figures" / "stagger12.png"
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
