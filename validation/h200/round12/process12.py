"""Round 12: per launch, how the blocks of one SM start -> stagger12.csv (or stdout with --print).

    python validation/h200/round12/process12.py [--out stagger12.csv] [--pack out12/traces12_*.tar.gz]
    python validation/h200/round12/process12.py --settle   # per block time: batched share / median gap x bps

Reads raw/traces12.npz (per launch and block: SM, start as the difference from the previous block's start, duration;
nanoseconds, lossless from the device's CSV) and raw/launches12.txt (clock, blocks per SM, check), and round 7d's
four launches with B L2-resident and its original 5632 column launch (../round7/raw/traces7d.tar.gz, carve-out left
to the driver). Per launch, over the starts in the middle of the launch (30-70 % of its start times), the gaps between
consecutive block starts on one SM, in median block times:
* ``gap_median``, ``gap_p10``, ``gap_p90``; ``gap_times_bps`` = median gap x blocks per SM (1: a block's time over
  the blocks per SM apart, gemmsim's placement with ``stagger=1``: slot s on SM s % sms starts s / slots of a block
  late, so consecutive slots of one SM sms / slots = 1 / bps apart);
* ``batched``: the share of gaps below 0.05 of a block (blocks starting together);
* ``batched_same_column``: of those, the share whose two blocks are in the same block column (tn; column order);
* ``first_wave_*``: each SM's first blocks, which start together: how their ends follow their start order
  (``first_wave``);
* ``ex``: 12c's extra FMAs per k step; ``partner_offset_tenth*``: partners' start offsets in the first, second and
  last tenth of the launch (``partners``);
* ``prediction``: README's prediction, written before measuring, for this launch: ``holds`` / ``fails`` / ``-``.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MIDDLE = (0.3, 0.7)
BATCHED = 0.05
COLUMNS = ("source", "N", "order", "ta", "tb", "bps", "api_bps", "smem_bytes", "carve", "sm_mhz", "max_rel_err",
           "span_ms", "blocks", "median_block_us", "gap_median", "gap_p10", "gap_p90", "gap_times_bps", "batched",
           "batched_same_column", "first_wave_rank_corr", "first_wave_end_spread", "first_wave_oldest",
           "first_wave_youngest", "ex", "partner_offset_tenth1", "partner_offset_tenth2", "partner_offset_tenth10",
           "prediction")


def load12(paths=(HERE / "raw" / "traces12.npz", HERE / "raw" / "traces12b.npz", HERE / "raw" / "traces12c.npz")) -> dict:
    """{launch key: (smid, start_ns, end_ns)} from the stored round 12 (and 12b, where stored) traces."""
    out = {}
    for path in paths:
        if not path.exists():
            continue
        z = np.load(path)
        for key in sorted({k.split("__")[0] for k in z.files}):
            start = np.cumsum(z[key + "__start_delta_ns"].astype(np.int64))
            out[key] = (z[key + "__smid"].astype(np.int64), start, start + z[key + "__duration_ns"])
    return out


def pack(archives: list[str], path: Path = HERE / "raw" / "traces12.npz") -> None:  # 12b: --pack-to raw/traces12b.npz
    """The device's trace archives (run_round12.sh: traces12_bps.tar.gz, traces12_other.tar.gz; one CSV per launch,
    pid,smid,start_ns,end_ns in pid order) -> ``path``, losslessly: per launch the SM (uint8), each start's difference
    from the previous block's and each duration (int32 ns)."""
    out = {}
    for a in archives:
        with tarfile.open(a) as t:
            for m in t.getmembers():
                d = np.loadtxt(io.TextIOWrapper(t.extractfile(m)), delimiter=",", skiprows=1, dtype=np.int64)
                if not (d[:, 0] == np.arange(len(d))).all() or d[:, 1].max() > 255 or d[:, 3].max() >= 2**31:
                    raise SystemExit(f"{a}:{m.name}: not pid order, or a value out of range")
                key = m.name[len("trace_"):-len(".csv")]
                out[key + "__smid"] = d[:, 1].astype(np.uint8)
                out[key + "__start_delta_ns"] = np.diff(d[:, 2], prepend=0).astype(np.int32)
                out[key + "__duration_ns"] = (d[:, 3] - d[:, 2]).astype(np.int32)
    np.savez_compressed(path, **out)


def load7d(path: Path = HERE.parent / "round7" / "raw" / "traces7d.tar.gz") -> dict:
    """Round 7d's 5632 / 8448 launches with B L2-resident, and the original 5632 column launch."""
    out = {}
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if "ta0_tb2" not in m.name and m.name != "trace_5632_column_ta0_tb0_2.csv":
                continue
            d = np.loadtxt(io.TextIOWrapper(t.extractfile(m)), delimiter=",", skiprows=1, dtype=np.int64)
            out[m.name[len("trace_"):-4]] = (d[:, 1], d[:, 2], d[:, 3])
    return out


def launches(paths=(HERE / "raw" / "launches12.txt", HERE / "raw" / "launches12b.txt",
                   HERE / "raw" / "launches12c.txt")) -> dict:
    """{launch key as in traces12.npz: fields} from the program's stderr lines (run in the script's order)."""
    out, seen = {}, {}
    lines = [ln for p in paths if p.exists() for ln in p.read_text().splitlines()]
    for line in lines:
        if not line.startswith("launch,"):
            continue
        f = line.split(",")
        kv = dict(x.split("=") for x in f[5:])
        key = f"{f[1]}_{f[2]}_ta{f[3]}_tb{f[4]}_bps{kv['bps']}_c{kv['carve']}"
        if kv["carve"] == "-1":  # 12c: the driver's carve-out, named by its extra FMAs
            key = f"{f[1]}_{f[2]}_ta{f[3]}_tb{f[4]}_bps{kv['bps']}_ex{kv.get('ex', '0')}"
        seen[key] = seen.get(key, 0) + 1
        out[key + ("" if seen[key] == 1 else f"_{seen[key]}")] = dict(N=int(f[1]), order=f[2], ta=int(f[3]),
                                                                       tb=int(f[4]), **kv)
    return out


def stagger(smid, start, end, order: str, N: int) -> dict:
    """The gaps between consecutive starts on one SM in the middle of the launch (module doc)."""
    T = float(np.median(end - start))
    lo, hi = np.quantile(start, MIDDLE)
    pid = np.arange(len(start))
    gaps, same, batched = [], 0, 0
    for s in np.unique(smid):
        m = smid == s
        o = np.argsort(start[m], kind="stable")
        st, p = start[m][o], pid[m][o]
        g = np.diff(st) / T
        keep = (st[1:] > lo) & (st[1:] < hi)
        gaps.append(g[keep])
        tie = keep & (g < BATCHED)
        batched += int(tie.sum())
        same += int((p[1:][tie] // (N // 16) == p[:-1][tie] // (N // 16)).sum())
    g = np.concatenate(gaps)
    p10, med, p90 = np.quantile(g, (0.1, 0.5, 0.9))
    return dict(median_block_us=T / 1e3, gap_median=med, gap_p10=p10, gap_p90=p90, batched=float(np.mean(g < BATCHED)),
                batched_same_column=(same / batched) if batched and order == "column" else float("nan"))


def partners(start, end, N: int, tenths=(0, 1, 9)) -> dict:
    """Partner offsets through the launch: block tm of block column (row order: block row) c against block tm of c + 1
    (pids c T + tm and (c + 1) T + tm, T = N / 16), where they start less than half a block apart; the median start
    offset, in median block times, among the pairs whose later block is in the given tenths of the launch (in launch
    order). Round 7's ``partner_start_offset`` over the whole launch, by tenth."""
    T = N // 16
    bt = float(np.median(end - start))
    t = (start / bt).reshape(T, T)
    off = np.abs(t[1:] - t[:-1])
    later = np.arange(1, T)[:, None] * T + np.arange(T)[None, :]
    near = off < 0.5
    out = {}
    for k in tenths:
        m = near & (later >= k * T * T / 10) & (later < (k + 1) * T * T / 10)
        out[f"partner_offset_tenth{k + 1}"] = float(np.median(off[m])) if m.any() else float("nan")
    return out


def first_wave(smid, start, end, bps: int) -> dict:
    """Each SM's first ``bps`` blocks (they start within microseconds of each other), in the order they started:
    per SM the rank correlation of that order with the order they end in, how far apart they end, and the oldest's
    and youngest's durations, all in median block times (medians over the SMs). Oldest-first service of an SM shows
    as ends in start order, spread over a good part of a block."""
    T = float(np.median(end - start))
    rho, spread, old, young = [], [], [], []
    for s in np.unique(smid):
        idx = np.where(smid == s)[0][:bps]
        idx = idx[np.argsort(start[idx], kind="stable")]
        ends = end[idx]
        if bps > 1:
            r = np.argsort(np.argsort(ends, kind="stable"))
            rho.append(float(np.corrcoef(np.arange(bps), r)[0, 1]))
        spread.append((ends.max() - ends.min()) / T)
        old.append((end[idx[0]] - start[idx[0]]) / T)
        young.append((end[idx[-1]] - start[idx[-1]]) / T)
    return dict(first_wave_rank_corr=float(np.median(rho)) if rho else float("nan"),
                first_wave_end_spread=float(np.median(spread)), first_wave_oldest=float(np.median(old)),
                first_wave_youngest=float(np.median(young)))


def prediction(r: dict) -> str:
    """README's prediction for a round 12 launch: with B L2-resident and 2-8 blocks per SM, the median gap within
    15 % of 1 / bps and under 10 % batched; the original kernel at least half batched."""
    if r["source"] != "round12":
        return "-"
    if r["carve"] == -1:  # 12c: with the SM full (ex = 32) column order's partners apart in the first tenth
        if r["order"] == "column" and r["ex"] in (0, 32):
            ok = r["partner_offset_tenth1"] >= 0.2 if r["ex"] == 32 else r["partner_offset_tenth1"] < 0.1
            return "holds" if ok else "fails"
        return "-"
    if r["tb"] in (2, 3) and r["bps"] >= 2:
        ok = abs(r["gap_times_bps"] - 1) <= 0.15 and r["batched"] < 0.10
    elif r["tb"] in (0, 4):  # 12b: tb = 4 in column order, the batches within one block column
        ok = r["batched"] >= 0.5 and not (r["tb"] == 4 and r["order"] == "column" and r["batched_same_column"] < 0.9)
    else:
        return "-"
    return "holds" if ok else "fails"


def rows() -> list[dict]:
    out = []
    meta = launches()
    for key, (smid, start, end) in load12().items():
        m = meta[key]
        bps = int(m["bps"])
        r = dict(source="round12", N=m["N"], order=m["order"], ta=m["ta"], tb=m["tb"], bps=bps,
                 api_bps=int(m["api_bps"]), smem_bytes=int(m["smem"]), carve=int(m["carve"]), sm_mhz=float(m["sm_mhz"]),
                 max_rel_err=float(m["max_rel_err"]), span_ms=float(m["span_ms"]), blocks=len(start),
                 **stagger(smid, start, end, m["order"], m["N"]), **first_wave(smid, start, end, bps),
                 ex=int(m.get("ex", 0)), **partners(start, end, m["N"]))
        r["gap_times_bps"] = r["gap_median"] * bps
        r["prediction"] = prediction(r)
        out.append(r)
    for key, (smid, start, end) in load7d().items():
        N, order = int(key.split("_")[0]), key.split("_")[1]
        ta, tb = (int(x) for x in re.search(r"ta(\d)_tb(\d)", key).groups())
        r = dict(source="round7d", N=N, order=order, ta=ta, tb=tb, bps=8, api_bps=8, smem_bytes=0, carve=-1,
                 sm_mhz=float("nan"), max_rel_err=float("nan"), span_ms=(end.max() - start.min()) / 1e6,
                 blocks=len(start), **stagger(smid, start, end, order, N), **first_wave(smid, start, end, 8), ex=0,
                 **partners(start, end, N))
        r["gap_times_bps"] = r["gap_median"] * 8
        r["prediction"] = "-"
        out.append(r)
    return out


def settle(smid, start, end, bps: int, windows=(0, 1, 2, 3, 4, 6, 10, 20, 40)) -> list[tuple]:
    """How the stagger develops: per window of half a block from ``w`` block times after the first start, the share
    of an SM's start gaps below 0.05 of a block and the median gap x blocks per SM."""
    T = float(np.median(end - start))
    pts = []
    for s in np.unique(smid):
        st = np.sort(start[smid == s])
        pts.append(np.c_[st[1:] / T, np.diff(st) / T])
    a = np.concatenate(pts)
    out = []
    for w in windows:
        g = a[(a[:, 0] >= w) & (a[:, 0] < w + 0.5), 1]
        if len(g):
            out.append((w, float(np.mean(g < BATCHED)), float(np.median(g)) * bps))
    return out


def fmt(v) -> str:
    if isinstance(v, float):
        return "" if v != v else f"{v:.4g}"
    return str(v)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "stagger12.csv"))
    ap.add_argument("--print", action="store_true", help="write to stdout instead")
    ap.add_argument("--settle", action="store_true", help="print how the stagger develops in each round 12 launch")
    ap.add_argument("--pack", nargs="+", metavar="TAR", help="first store the device's trace archives as --pack-to")
    ap.add_argument("--pack-to", default=str(HERE / "raw" / "traces12.npz"), help="default raw/traces12.npz (12b: raw/traces12b.npz)")
    a = ap.parse_args(argv)
    if a.pack:
        pack(a.pack, Path(a.pack_to))
    if a.settle:
        meta = launches()
        for key, (smid, start, end) in load12().items():
            w = settle(smid, start, end, int(meta[key]["bps"]))
            print(f"{key:32s} " + "  ".join(f"{t:>2}: {b:.2f} / {g:.2f}" for t, b, g in w))
        return 0
    rs = rows()
    f = sys.stdout if a.print else open(a.out, "w", newline="")
    w = csv.writer(f)
    w.writerow(COLUMNS)
    for r in rs:
        w.writerow([fmt(r[c]) for c in COLUMNS])
    if not a.print:
        f.close()
        print(f"wrote {a.out} ({len(rs)} launches)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
