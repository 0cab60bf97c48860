"""Rounds 10b and 10d: raw10b/, raw10d/ steps_*.csv.gz -> schedule10b.csv (one row per kernel, size and S), printed.

    python validation/h200/round10/process10b.py

Each recorded block (the first 400 of a launch, thread 0) has four clock64 reads per k-step 32-55 (mma_pipe10.patch):
S = 1: before its copy code, after commit_group, after the wait + barrier, after the MMAs + barrier; S > 1: before the
wait, after the barrier, after commit_group, after the MMAs. Per kernel: the median step (from one step's first read
to the next's) and the medians of the four intervals, named by what they hold (copy code, wait + barrier, MMAs, the
rest of the loop; at S = 1 the MMA interval holds the second barrier); and how co-resident blocks (same SM, recorded
windows overlapping by at least five steps) sit against each other: for each step start of one, its position in the
other's step (0 = together, 0.5 = half a step apart), as the share of positions within 0.15 of 0 ("together") and
within 0.15 of 0.5 ("alternating") -- an even spread gives 0.3 and 0.3.
"""

from __future__ import annotations

import csv
import gzip
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # validation/h200: tables
from tables import write_csv  # noqa: E402
RAWS = (HERE / "raw10b", HERE / "raw10d")  # 10b: S = 1, 2 at 4096, S = 1 at 8192; 10d: the other S (same build)
NAMES = {1: ("copy", "wait_barrier", "mma_barrier", "rest"), 2: ("wait_barrier", "copy", "mma", "rest")}


def read(path: Path) -> dict:
    """{(kernel, M, S): {block: (smid, {kt: [t0, t1, t2, t3]})}}"""
    out = defaultdict(dict)
    for r in csv.DictReader(gzip.open(path, "rt")):
        key = (r["kernel"], int(r["M"]), int(r["stages"]))
        b = out[key].setdefault(int(r["block"]), (int(r["smid"]), {}))
        b[1][int(r["kt"])] = [int(r[c]) for c in ("t0", "t1", "t2", "t3")]
    return out


def summarise(blocks: dict, S: int) -> dict:
    steps, parts, pos = [], defaultdict(list), []
    starts = {}
    for b, (_, T) in blocks.items():
        ks = sorted(T)
        if len(ks) < 2 or any(0 in T[k] for k in ks):
            continue
        starts[b] = [T[k][0] for k in ks]
        for a, c in zip(ks, ks[1:]):
            steps.append(T[c][0] - T[a][0])
            for j in range(4):
                parts[j].append((T[a][j + 1] if j < 3 else T[c][0]) - T[a][j])
    by_sm = defaultdict(list)
    for b, (sm, _) in blocks.items():
        if b in starts:
            by_sm[sm].append(b)
    for bl in by_sm.values():
        for a in bl:
            ta = starts[a]
            step = (ta[-1] - ta[0]) / (len(ta) - 1)
            for o in bl:
                to = starts[o]
                lo, hi = max(ta[0], to[0]), min(ta[-1], to[-1])
                if o == a or hi - lo < 5 * step:
                    continue
                for x in to:
                    i = max((i for i, t in enumerate(ta) if t <= x), default=None)
                    if i is not None and i + 1 < len(ta) and lo <= x <= hi:
                        pos.append((x - ta[i]) / (ta[i + 1] - ta[i]))
    names = NAMES[1 if S == 1 else 2]
    row = dict(step_clk=statistics.median(steps), **{f"{n}_clk": statistics.median(parts[j]) for j, n in enumerate(names)},
               pairs_positions=len(pos),
               together=sum(1 for p in pos if p < 0.15 or p > 0.85) / len(pos) if pos else float("nan"),
               alternating=sum(1 for p in pos if abs(p - 0.5) < 0.15) / len(pos) if pos else float("nan"))
    return row


def rows() -> list[dict]:
    out = []
    for path in sorted(p for raw in RAWS for p in raw.glob("steps_*.csv.gz")):
        for (kernel, M, S), blocks in sorted(read(path).items()):
            out.append(dict(kernel=kernel, M=M, stages=S, blocks=len(blocks), **summarise(blocks, S)))
    return out


def main() -> None:
    rs = rows()
    write_csv(HERE / "schedule10b.csv", rs)
    for r in rs:
        print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()})


if __name__ == "__main__":
    main()
