"""Round 35 (issue 12): the H200's SM groups, the L2 copy with some SMs active, and which SMs draw more of the L2.

    python validation/h200/round35/process35.py     # raw/ -> copy35.csv, groups35.csv, fast35.csv (~2 s)

Inputs: raw/gpc35.csv (round 35: the map and the copy subsets) and raw/round35b.tar.gz (round 35b, one call on one
device: the map again and round 34's traced 4096^3 GEMMs, mma.sync and WMMA, every block's SM, start and end).

* groups35.csv: the SM groups that thread-block clusters were placed in (``gpc,<g>,<size>,<sms>`` rows of gpc35.csv).
* copy35.csv: per subset of active SMs, k blocks per SM and S stages, the L2 GB/s of the 64x64 tile's copy and GB/s
  per active SM.
* fast35.csv: per launch (the copy benchmark's all-SM launches, and the traced 64x64 GEMMs), the SMs whose blocks
  take under 0.93x the launch's mean (mid-launch blocks for the GEMMs: starts after 20 % and ends before 80 % of the
  launch), how many, and their mean block time over the other SMs'. The copy benchmark's blocks all start together
  and each copies the same bytes, so its ratio is the share of the L2 those SMs draw under load.
"""
from __future__ import annotations

import collections
import csv
import gzip
import io
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tables import write_csv  # noqa: E402

RAW = HERE / "raw"
FAST_BELOW = 0.93
SMS = 132


def groups(lines: list[str]) -> list[dict]:
    out = []
    for line in lines:
        p = line.strip().split(",")
        if p[0] == "gpc":
            out.append(dict(group=int(p[1]), sms=int(p[2]), sm_ids=" ".join(p[3].split())))
    return out


def copies(lines: list[str]) -> list[dict]:
    out = []
    for line in lines:
        p = line.strip().split(",")
        if p[0] == "copy" and p[1] != "subset":
            n = int(p[2])
            out.append(dict(subset=p[1], active_sms=n, k=int(p[3]), stages=int(p[4]), tiles=int(p[5]),
                            gbps=float(p[8]), gbps_per_sm=round(float(p[8]) / n, 2), sm_mhz=int(p[9]), bad=int(p[10])))
    return out


def fast_sms(sm: np.ndarray, dur: np.ndarray, keep: np.ndarray) -> tuple[list[int], float]:
    """SMs whose mean block time (blocks in ``keep``) is under FAST_BELOW of the mean; their mean over the others'."""
    mean = dur[keep].mean()
    per = {s: dur[keep & (sm == s)].mean() for s in np.unique(sm[keep])}
    fast = sorted(int(s) for s, v in per.items() if v < FAST_BELOW * mean)
    f = np.isin(sm, fast)
    ratio = dur[keep & f].mean() / dur[keep & ~f].mean() if fast else 1.0
    return fast, float(ratio)


def copy_blocks(lines: list[str], source: str) -> list[dict]:
    rows = collections.defaultdict(list)
    for line in lines:
        p = line.strip().split(",")
        if p[0] == "block":
            S, k, s, g0, g1 = map(int, p[1:])
            rows[(S, k)].append((s, g1 - g0))
    out = []
    for (S, k), v in sorted(rows.items()):
        a = np.array(v, dtype=float)
        fast, ratio = fast_sms(a[:, 0].astype(int), a[:, 1], np.ones(len(a), bool))
        out.append(dict(source=source, launch=f"copy all SMs k={k} S={S}", fast_sms=len(fast), fast_over_other=round(ratio, 3),
                        fast_ids=" ".join(map(str, fast))))
    return out


def gemm_blocks(tar: tarfile.TarFile) -> list[dict]:
    out = []
    for api in ("mma", "wmma"):
        rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"raw35b/{api}_4096.csv"))))
        d = np.loadtxt(io.TextIOWrapper(gzip.open(tar.extractfile(f"raw35b/sched_{api}_4096.csv.gz"))), delimiter=",",
                       dtype=np.int64)
        for cfg, r in enumerate(rows):
            if r["copy"] != "1" or "64x64" not in r["kernel"]:
                continue
            x = d[d[:, 0] == cfg]
            start, end, sm = x[:, 3].astype(float), x[:, 4].astype(float), x[:, 2]
            span = end.max()
            mid = (start > 0.2 * span) & (end < 0.8 * span)
            fast, ratio = fast_sms(sm, end - start, mid)
            out.append(dict(source="35b", launch=f"{api} {r['kernel']} S={r['stages']} 4096", fast_sms=len(fast),
                            fast_over_other=round(ratio, 3), fast_ids=" ".join(map(str, fast))))
    return out


def main() -> None:
    r35 = (RAW / "gpc35.csv").read_text().splitlines()
    with tarfile.open(RAW / "round35b.tar.gz") as tar:
        r35b = io.TextIOWrapper(tar.extractfile("raw35b/gpc35.csv")).read().splitlines()
        fast = copy_blocks(r35, "35") + copy_blocks(r35b, "35b") + gemm_blocks(tar)
    g35, g35b = groups(r35), groups(r35b)
    if g35 != g35b:
        print("warning: the two calls' maps differ")
    write_csv(HERE / "groups35.csv", g35)
    write_csv(HERE / "copy35.csv", copies(r35))
    write_csv(HERE / "fast35.csv", fast)
    for r in fast:
        print(f"{r['source']:4s} {r['launch']:38s} fast SMs {r['fast_sms']:3d}  their block time / the others' {r['fast_over_other']:.3f}")


if __name__ == "__main__":
    main()
