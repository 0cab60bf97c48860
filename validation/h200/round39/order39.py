"""Round 39 (issue 12), offline: in what order the blocks of one SM finish, from the block traces of rounds 30, 34, 35b, 38b, 39.

    python validation/h200/round39/order39.py      # -> order39.csv, ~30 s

Every 64x64 copy launch traced (round 30: M = N = K = 4096 and 8192; round 34: M = K = 4096, N = 3712..4608; round
35b, 38b and the two devices of round 39: 4096, round 35b's script). The first wave starts together (round 31), so its blocks' times show how an SM shares itself out. For each
SM holding a full first wave, its blocks are ranked by block index (the order the GPU dispatched them) and their times
divided by the launch's median block time. Per launch:
* ``by_rank``: the mean time of the k-th dispatched block of an SM, k = 1..blocks per SM;
* ``order_corr``: the mean over SMs of the rank correlation of dispatch order with time (1: the oldest block always
  finishes first);
* ``span``: the mean over SMs of its longest block's time less its shortest's;
* ``rank_span``: ``by_rank``'s last less its first -- the part of the span the dispatch order explains.
Beside them each launch's measured end (round 34's ``span_over_steady``: the launch over its steady pace).
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round30"):
    sys.path.insert(0, str(H200 / d))
import process30  # noqa: E402
from h200_io import write_rows  # noqa: E402

SOURCES = (("30", H200 / "round30" / "raw" / "round30.tar.gz", (4096, 8192)),
           ("34", H200 / "round34" / "raw" / "round34.tar.gz", (3712, 3968, 4096, 4352, 4608)),
           ("35b", H200 / "round35" / "raw" / "round35b.tar.gz", (4096,)),
           ("38b", H200 / "round38" / "raw" / "round38.tar.gz", (4096,)),
           ("39a", HERE / "raw" / "round39_first_gemm.tar.gz", (4096,)),
           ("39b", HERE / "raw" / "round39_gemm.tar.gz", (4096,)))
FOLDER = {"38b": "35b", "39a": "35b", "39b": "35b"}  # round 38b reran round 35b's script unchanged: its archive's folder is raw35b


def ranks(a: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(a)).astype(float)


def order(r: dict) -> dict:
    bps = int(r["blocks_per_sm"])
    first = r["block"] < process30.SMS * bps
    dur = (r["end"] - r["start"]).astype(float)
    d, sm, blk = dur[first] / np.median(dur), r["sm"][first], r["block"][first]
    by_rank, corr, span = [], [], []
    for s in np.unique(sm):
        i = np.where(sm == s)[0]
        if len(i) != bps:
            continue
        t = d[i][np.argsort(blk[i])]
        by_rank.append(t)
        corr.append(float(np.corrcoef(np.arange(bps), ranks(t))[0, 1]))
        span.append(float(t.max() - t.min()))
    m = np.mean(by_rank, axis=0)
    return dict(order_corr=round(float(np.mean(corr)), 3), span=round(float(np.mean(span)), 4),
                rank_span=round(float(m[-1] - m[0]), 4), by_rank=" ".join(f"{x:.3f}" for x in m), sms=len(by_rank))


def measured_ends() -> dict:
    with (H200 / "round34" / "compare34.csv").open() as f:
        return {(r["api"], int(r["stages"]), int(r["N"])): float(r["span_over_steady"]) for r in csv.DictReader(f)}


def rows() -> list[dict]:
    ends = measured_ends()
    out = []
    for tag, archive, sizes in SOURCES:
        if not archive.exists():
            raise SystemExit(f"{archive}: not found (the round's raw archive)")
        for r in process30.launches(archive, sizes, FOLDER.get(tag, tag)):
            if r["copy"] != "1" or "64x64" not in r["kernel"]:
                continue
            N = int(r.get("N", r["M"]))
            row = dict(round=tag, api=r["api"], stages=int(r["stages"]), M=int(r["M"]), N=N,
                       blocks_per_sm=int(r["blocks_per_sm"]), **order(r))
            row["measured_end"] = ends.get((r["api"], row["stages"], N), "") if tag == "34" else ""
            out.append(row)
    return out


def main() -> None:
    out = rows()
    write_rows(HERE / "order39.csv", out)
    for r in out:
        print(f"{r['round']:3} {r['api']:4} S={r['stages']} N={r['N']} bps={r['blocks_per_sm']}: order {r['order_corr']:5.2f} "
              f"span {r['span']:.3f} rank span {r['rank_span']:.3f}  end {r['measured_end']}  [{r['by_rank']}]")


if __name__ == "__main__":
    main()
