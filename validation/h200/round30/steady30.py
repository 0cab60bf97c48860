"""Round 30's traced launches read for their steady state and their end: how fast the middle of a launch moves its
operands, and what its start and drain cost against that pace.

    python validation/h200/round30/steady30.py          # -> steady30.csv (~2 s, from raw/round30.tar.gz)
    python validation/h200/round30/steady30.py figure   # -> figures/steady30.png (the 64x64 launches at 4096)

Per traced copy kernel (mma.sync and WMMA, three tiles, S = 1..4, N = 4096 and 8192; with round 32's archive also
N = 6144, its 2048 launches being one wave), from every block's start and end
(globaltimer, ns):

* steady_gbps: the bytes the blocks ask the L2 for (A and B tiles: K x (BM + BN) x 2 B a block) per second over the
  middle 60 % of the launch, each block counted for the part of its run inside that window;
* whole_gbps: the same over the whole launch (first start to last end);
* span_over_steady: the launch's length over what the steady pace needs for all its blocks (whole / steady
  throughput): what the first wave and the drain cost;
* last_wave_spread: the 5-95 % range of the last full wave's starts over the median block (0: in step);
* tail_blocks, tail_sms, tail_full_sms: the blocks after the last whole wave (by start), the SMs that ran them, and
  how many of those SMs ran a full SM's worth (blocks per SM or more);
* lookup_gbps: steady_gbps x the GEMM's L2 tag lookups per request (ncu, round 8's pages of these binaries as read in
  ../round9/README.md: 1.085 at 4096^3, 1.23 at 8192^3 for the 64x64 tile), the throughput at the copy-only
  benchmark's lookups per request (1.036): comparable with ``async_copy_l2_gbps_padded_rows`` (64x64 rows only, the
  L2-bound tile).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from process30 import SMS, launches  # noqa: E402
from tables import write_csv  # noqa: E402

#: L2 tag lookups per request of the 64x64 mma_pipe GEMMs (ncu, round 8; ../round9/README.md) and of the copy-only
#: benchmark that ``async_copy_l2_gbps_padded_rows`` was measured with (round 9, 4096^3)
GEMM_LOOKUPS = {4096: 1.085, 8192: 1.23}
BENCH_LOOKUPS = 1.036
WINDOW = (0.2, 0.8)


def steady(r: dict) -> dict:
    M, bps = int(r["M"]), int(r["blocks_per_sm"])
    BM, BN = (int(x) for x in r["kernel"].split("_")[1].split("x"))
    per_block = M * (BM + BN) * 2.0  # bytes of A and B one block copies (K = M)
    start, end = r["start"].astype(float), r["end"].astype(float)
    t0, span = start.min(), end.max() - start.min()
    lo, hi = t0 + WINDOW[0] * span, t0 + WINDOW[1] * span
    dur = end - start
    inside = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0.0, None) / dur
    steady_gbps = inside.sum() * per_block / (hi - lo)
    whole_gbps = len(start) * per_block / span
    wave = SMS * bps
    full = len(start) // wave
    last = start[(full - 1) * wave:full * wave] if full >= 1 else start
    spread = (np.percentile(last, 95) - np.percentile(last, 5)) / np.median(dur)
    order = np.argsort(start, kind="stable")
    tail = np.bincount(r["sm"][order][full * wave:], minlength=SMS)  # the part-wave after the last whole one, per SM
    row = dict(api=r["api"], kernel=r["kernel"], stages=int(r["stages"]), M=M, blocks=len(start), blocks_per_sm=bps,
               waves=round(len(start) / wave, 2), sm_mhz=r["sm_mhz"], steady_gbps=round(steady_gbps, 1),
               whole_gbps=round(whole_gbps, 1), span_over_steady=round(steady_gbps / whole_gbps, 4),
               last_wave_spread=round(float(spread), 3), tail_blocks=int(tail.sum()), tail_sms=int(np.sum(tail > 0)),
               tail_full_sms=int(np.sum(tail >= bps)), lookup_gbps="")
    if BM == 64 and M in GEMM_LOOKUPS:
        row["lookup_gbps"] = round(steady_gbps * GEMM_LOOKUPS[M] / BENCH_LOOKUPS, 1)
    return row


def figure() -> Path:
    """Blocks running against time for the mma.sync 64x64 launches at 4096, S = 1..4: the steady middle and the ends."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.2))
    ax = fig.subplots()
    for r, c in zip((x for x in launches(sizes=(4096,)) if x["copy"] == "1" and x["api"] == "mma" and "64x64" in x["kernel"]),
                    ("tab:red", "tab:orange", "tab:green", "tab:blue")):
        row = steady(r)
        start, end = r["start"].astype(float), r["end"].astype(float)
        t0, bps = start.min(), int(r["blocks_per_sm"])
        # time in units of the whole launch at its steady pace: 1.0 is where it would end without first wave and drain
        pace = (end.max() - t0) / row["span_over_steady"]
        t = np.linspace(0, end.max() - t0, 600)
        active = [(np.sum((start - t0 <= x) & (end - t0 > x))) / (SMS * bps) for x in t]
        ax.plot(t / pace, active, color=c, lw=1.4,
                label=f"S = {r['stages']} ({bps} blocks per SM): ends at {row['span_over_steady']:.3f}")
    ax.axvline(1.0, color="0.4", ls=":", lw=1)
    ax.text(1.005, 0.05, "the steady pace's end", color="0.3", fontsize=8)
    ax.set_xlabel("time / (all blocks at the launch's steady pace)")
    ax.set_ylabel("blocks running / blocks the SMs hold")
    ax.set_ylim(0, 1.08)
    ax.set_xlim(0, 1.15)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.suptitle("H200, mma.sync 64x64 GEMM at 4096 (round 30 traces): every S keeps the SMs full at one pace. At S = 1 the\n"
                 "last 0.43 of a wave runs on after the rest have ended (12 % past that pace); at S >= 2 it overlaps the wave before",
                 fontsize=10)
    fig.tight_layout()
    out = HERE / "figures" / "steady30.png"
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


ROUND32 = HERE.parent / "round32" / "raw" / "round32.tar.gz"  # the same binaries traced at 2048 and 6144


def main() -> None:
    if sys.argv[1:] == ["figure"]:
        print(figure())
        return
    traced = launches() + (launches(ROUND32, sizes=(6144,), tag="32") if ROUND32.exists() else [])
    rows = [steady(r) for r in traced if r["copy"] == "1"]
    write_csv(HERE / "steady30.csv", rows)
    for r in rows:
        if "64x64" in r["kernel"]:
            print(f"{r['api']:4} 64x64 S={r['stages']} N={r['M']}: steady {r['steady_gbps']:.0f} GB/s "
                  f"(at the benchmark's lookups {r['lookup_gbps'] or '-'}), whole {r['whole_gbps']:.0f}, "
                  f"span / steady {r['span_over_steady']:.3f}, last wave spread {r['last_wave_spread']:.2f}")


if __name__ == "__main__":
    main()
