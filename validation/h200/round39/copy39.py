"""Round 39b (issue 12): in what order an SM serves its blocks' copies in the copy-only benchmark (copy39.cu), by
stages S and blocks per SM k, with and without a barrier per k-step; and the same device's GEMM traces.

    python validation/h200/round39/copy39.py      # -> copy39.csv, ~20 s

For each configuration's 3 traced launches (one resident wave of 132 k blocks, every SM holding k): order39's
measures -- ``order``: mean over SMs of the rank correlation of dispatch order (block index) with block time;
``span``: an SM's longest block time less its shortest, over the launch's median, mean over SMs; ``by_rank``: the
mean time of an SM's j-th dispatched block -- as the median over the launches. ``in_flight``: copy groups a block
has outstanding after its commit, max(S - 1, 1), times k. ``GBps``: the chip's copy rate (median launch).
``raw/round39.tar.gz`` is the run (every configuration); ``raw/round39_first.tar.gz`` an earlier run on another
device lent the same session, whose shared-memory sizing missed k = 5 and 7 (rows ``first``).
"""
from __future__ import annotations

import gzip
import io
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import write_rows  # noqa: E402

RUNS = (("39b", HERE / "raw" / "round39.tar.gz"), ("first", HERE / "raw" / "round39_first.tar.gz"))
SMS = 132


def lines(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return gzip.open(io.BytesIO(tar.extractfile("raw39/copy39.csv.gz").read()), "rt").read().splitlines()


def order_of(sm: np.ndarray, dur: np.ndarray, k: int) -> tuple[float, float, np.ndarray]:
    """(order, span, by_rank) of one launch; blocks given in dispatch (block index) order."""
    d = dur / np.median(dur)
    cors, spans, prof = [], [], []
    for s in np.unique(sm):
        t = d[sm == s]
        if len(t) != k:
            continue
        prof.append(t)
        spans.append(t.max() - t.min())
        cors.append(np.corrcoef(np.arange(k), np.argsort(np.argsort(t)))[0, 1])
    return float(np.mean(cors)), float(np.mean(spans)), np.mean(prof, axis=0)


def rows() -> list[dict]:
    out = []
    for tag, archive in RUNS:
        blocks, launches = {}, {}
        for ln in lines(archive):
            f = ln.split(",")
            if f[0] == "block" and f[1] != "S":
                blocks.setdefault(tuple(int(x) for x in f[1:5]), []).append([int(x) for x in f[5:]])
            elif f[0] == "launch" and f[1] != "S":
                launches.setdefault(tuple(int(x) for x in f[1:4]), []).append((float(f[7]), float(f[8]), int(f[9])))
        for (S, bar, k), runs in sorted(launches.items()):
            meas = []
            for rep in (1, 2, 3):
                b = np.array(blocks[(S, bar, k, rep)], dtype=np.int64)
                b = b[np.argsort(b[:, 0])]
                if len(b) != SMS * k or len(np.unique(b[:, 1])) != SMS:
                    raise SystemExit(f"{archive.name} S={S} bar={bar} k={k}: {len(b)} blocks on {len(np.unique(b[:, 1]))} SMs")
                meas.append(order_of(b[:, 1], (b[:, 3] - b[:, 2]).astype(float), k))
            i = int(np.argsort([m[1] for m in meas])[1])  # the launch of median span
            out.append(dict(run=tag, S=S, barrier=bar, k=k, in_flight=max(S - 1, 1) * k,
                            order=round(float(np.median([m[0] for m in meas])), 3),
                            span=round(float(np.median([m[1] for m in meas])), 4),
                            by_rank=" ".join(f"{x:.3f}" for x in meas[i][2]),
                            GBps=round(float(np.median([r[0] for r in runs])), 1),
                            sm_mhz=round(float(np.median([r[1] for r in runs]))), bad=sum(r[2] for r in runs)))
    return out


def main() -> None:
    out = rows()
    write_rows(HERE / "copy39.csv", out)
    for r in out:
        print(f"{r['run']:5} S={r['S']} bar={r['barrier']} k={r['k']} in flight {r['in_flight']:2}: order {r['order']:5.2f} "
              f"span {r['span']:.3f}  {r['GBps']:7.1f} GB/s  [{r['by_rank']}]")


if __name__ == "__main__":
    main()
