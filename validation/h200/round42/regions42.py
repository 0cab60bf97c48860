"""Round 42: where the WMMA kernel's warps spend less time than mma.sync's, from ncu's warp-stall sampling of the
plain builds (no clock reads) -> regions42.csv, printed.

    python validation/h200/round42/regions42.py

Sources (both stored already): round 28's SourceCounters pass over the WMMA kernels (`../round28/raw/
round28_profile.tar.gz`: ncu_wmma_source.csv.gz) and round 6's over the mma.sync kernels (`../round6/raw/
ncu_plain_source.csv.gz`; round 4's kernel, the same SASS as round 28's mma.sync build), both at 4096^3. Per kernel
the k-loop (the longest backward branch holding an HMMA) is cut in three at its barrier and its last cp.async
(LDGSTS / LDGDEPBAR): wait + barrier, copy code, compute (LDSM + HMMA). A region's share of all samples of the launch
is its share of the warps' time; times that by the launch's SM cycles (round 42's plain timing, `times42.csv`, in one
call for both APIs) and a region's warp-time can be compared between the APIs. Stall reasons per region as shares of
all samples. Sampling is statistical; a share is good to about +-0.005 here (~10^5 samples a launch).
"""
from __future__ import annotations

import csv
import gzip
import io
import re
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tables import write_csv  # noqa: E402

WMMA = HERE.parent / "round28" / "raw" / "round28_profile.tar.gz"
MMA = HERE.parent / "round6" / "raw" / "ncu_plain_source.csv.gz"
KERNELS = {(128, 128, 2, 4): "mma_128x128_w2x4", (128, 128, 2, 2): "mma_128x128_w2x2", (64, 64, 2, 2): "mma_64x64_w2x2"}
REASONS = ("barrier", "long_sb", "short_sb", "mio", "math", "wait", "not_selected", "selected", "dispatch",
           "branch_resolving")


def kernels(text: str) -> dict:
    """{(BM, BN, WM, WN, S): rows of the source page} for the copy kernels, the first listing of each"""
    out = {}
    for part in text.split('"Kernel Name",')[1:]:
        name, rest = part.split("\n", 1)
        m = re.search(r"mma_gemm<\(int\)(\d+), \(int\)(\d+), \(int\)32, \(int\)(\d), \(int\)(\d), \(int\)(\d), \(bool\)1>", name)
        if m:
            out.setdefault(tuple(int(x) for x in m.groups()), list(csv.DictReader(io.StringIO(rest))))
    return out


def num(x: str) -> float:
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def regions(rows: list) -> dict:
    """{region: {"share": its samples over the launch's, reason: share}} over the k-loop's three regions"""
    addr = [int(r["Address"], 16) for r in rows]
    src = [r["Source"] for r in rows]
    at = {a: i for i, a in enumerate(addr)}
    loops = []
    for i, s in enumerate(src):
        b = re.search(r"BRA .*?(0x[0-9a-f]+)", s)
        if b and int(b.group(1), 16) in at and int(b.group(1), 16) < addr[i]:
            j = at[int(b.group(1), 16)]
            if any("HMMA" in x for x in src[j:i + 1]):
                loops.append((j, i))
    i0, i1 = max(loops, key=lambda x: x[1] - x[0])
    bar = next(i for i in range(i0, i1 + 1) if "BAR.SYNC" in src[i])
    last_copy = max(i for i in range(i0, i1 + 1) if "LDGSTS" in src[i] or "LDGDEPBAR" in src[i])
    total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows)
    out = {}
    for i in range(i0, i1 + 1):
        name = "wait_barrier" if i <= bar else "copy" if i <= last_copy else "compute"
        d = out.setdefault(name, dict.fromkeys(("share", *REASONS), 0.0))
        d["share"] += num(rows[i]["Warp Stall Sampling (All Samples)"]) / total
        for r in REASONS:
            d[r] += num(rows[i].get(f"stall_{r}", "0")) / total
    return out


def rows() -> list[dict]:
    with tarfile.open(WMMA) as tar:
        wmma = kernels(gzip.decompress(tar.extractfile("raw28_profile/ncu_wmma_source.csv.gz").read()).decode())
    mma = kernels(gzip.open(MMA, "rt").read())
    cyc = {(r["api"], r["kernel"], int(r["stages"])): float(r["time_ms"]) * float(r["sm_mhz"]) * 1e3
           for r in csv.DictReader(open(HERE / "times42.csv")) if r["copy"] == "1"}
    out = []
    for key, name in KERNELS.items():
        for S in (1, 2, 3, 4):
            for api, src in (("wmma", wmma), ("mma", mma)):
                for reg, d in regions(src[(*key, S)]).items():
                    out.append(dict(api=api, kernel=name, stages=S, region=reg, share=round(d["share"], 4),
                                    kcycles=round(d["share"] * cyc[(api, name, S)] / 1e3, 1),
                                    **{r: round(d[r], 4) for r in REASONS}))
    return out


def main() -> None:
    rs = rows()
    write_csv(HERE / "regions42.csv", rs)
    by = {(r["api"], r["kernel"], r["stages"], r["region"]): r for r in rs}
    print("warp-time per region, WMMA over mma.sync (share x launch cycles); stall shares WMMA / mma.sync")
    for (api, k, S, reg), r in sorted(by.items()):
        if api != "wmma":
            continue
        m = by[("mma", k, S, reg)]
        top = sorted(REASONS, key=lambda x: -abs(r[x] - m[x]))[:3]
        print(f"  {k:18s} S={S} {reg:12s} {r['kcycles'] / m['kcycles']:.2f}  "
              + "  ".join(f"{x} {r[x]:.3f}/{m[x]:.3f}" for x in top))


if __name__ == "__main__":
    main()
