"""Round 8 (issue 12): the L2 throughput of 16-byte cp.async traffic from all SMs, from l2req.csv and the ncu pages.

    python validation/h200/round8/process8.py        # writes l2_throughput8.csv, ncu_l2_8.csv; prints the tables

l2_throughput8.csv: one row per configuration of l2req.cu (median of its 5 timed launches): the useful bytes the
copies moved per second (GB/s) and per SM clock, the loaded round trip of a group (lane 0 of every warp, clock64
from commit to the wait's return), the in-kernel clocks, the p5-p95 spread of the launches, verification errors.
ncu_l2_8.csv: per profiled kernel (l2req's ncu list, round 3's mma_pipe at 4096 and 8192): L2 read requests and
sectors per 64-byte row the kernel asks for, the sectors crossing into L1 per requested sector, the L2 tag-lookup
utilisation (% of peak), the L2 and SM clocks, DRAM bytes. The machine file's async_copy_l2_gbps_padded_rows is the
plateau of mma_pipe's copy shape (64-byte rows into 80-byte shared rows) in the bytes-in-flight sweep (`inflight_pad`,
8-10 blocks per SM), printed near the end.
"""

from __future__ import annotations

import csv
import gzip
import io
import statistics as st
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEY = ("set", "tile", "stages", "size", "row_bytes", "smem_pad", "kw_steps", "bps_occ")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def grouped(path, key) -> dict:
    """The launches of a run's CSV, grouped by the configuration columns ``key`` (in file order)."""
    groups = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            groups[tuple(r[k] for k in key)].append(r)
    return groups


def launch_stats(rs: list[dict], gb: list[float], mhz: list) -> dict:
    """What every throughput row reports of its launches ``rs``: the median round trip, the clock range, the p5-p95
    spread of their throughputs ``gb`` over the median, and the worst copy check."""
    return {"lat_clk_mean": round(st.median(float(r["lat_clk_mean"]) for r in rs), 1),
            "sm_mhz_min": min(mhz), "sm_mhz_max": max(mhz),
            "spread_p5_p95_pct": round(100 * (pct(gb, 0.95) - pct(gb, 0.05)) / st.median(gb), 1),
            "bad": max(int(r["bad"]) for r in rs)}


def throughput_rows(path=HERE / "l2req.csv"):
    out = []
    for k, rs in grouped(path, KEY).items():
        gb = [float(r["GBps"]) for r in rs]
        out.append({**dict(zip(KEY, k)), "launches": len(rs), "GBps": round(st.median(gb), 1),
                    "bytes_per_clk_per_sm": round(st.median(float(r["bytes_per_clk_per_sm"]) for r in rs), 2),
                    **launch_stats(rs, gb, [int(r["sm_mhz"]) for r in rs])})
    return out


NCU = {"dur_ns": "gpu__time_duration.sum", "sm_hz": "sm__cycles_elapsed.avg.per_second",
       "l2_hz": "lts__cycles_elapsed.avg.per_second", "req": "lts__t_requests_srcunit_tex_op_read.sum",
       "sec": "lts__t_sectors_srcunit_tex_op_read.sum", "tag_pct": "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed",
       "x2l_sec": "l1tex__m_xbar2l1tex_read_sectors.sum", "dram_bytes": "dram__bytes_read.sum",
       "fabric_sec": "lts__t_sectors_srcunit_ltcfabric.sum"}


def ncu_table(path=None, metrics=NCU, text=None):
    """One dict per profiled launch of an ncu raw CSV page (a .csv.gz file, or its ``text``): ``metrics`` (our name ->
    ncu's) as floats, and the kernel name."""
    if text is None:
        with gzip.open(path, "rt") as f:
            text = f.read()
    rows = list(csv.reader(io.StringIO(text)))
    h = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    hdr = rows[h]
    return [{k: float(d[hdr.index(m)].replace(",", "")) for k, m in metrics.items()} | {"kernel": d[hdr.index("Kernel Name")]}
            for d in rows[h + 1:] if d and d[0]]


def ncu_rows():
    out = []
    launches = [line.strip().split(",")[1:] for line in open(HERE / "raw/ncu_l2req_launches.txt") if line.startswith("ncu_launch")]
    for lab, m in zip(launches, ncu_table(HERE / "raw/ncu_l2req.csv.gz")):
        kv = dict(x.split("=") for x in lab[2:])
        bm = 64 if lab[1].startswith("64x64") else 128
        size = int(kv["size"])
        out.append(("l2req " + lab[0], lab[1], int(kv["S"]), size, int(kv["rb"]), int(kv["spad"]), int(kv["kw"]), bm, m))
    for size in (4096, 8192):
        names = ["128x128_w8"] * 4 + ["64x64_w4"] * 4 + ["128x128_w4"] * 4  # mma_pipe's variant order
        for i, m in enumerate(ncu_table(HERE / f"raw/ncu_mma_{size}.csv.gz")):
            out.append(("mma_pipe", names[i], i % 4 + 1, size, 64, 16, 0, 64 if "64x64" in names[i] else 128, m))
    rows = []
    for src, tile, S, size, rb, spad, kw, bm, m in out:
        blocks = (size // bm) ** 2
        useful = blocks * (size // 32) * 2 * bm * 64  # bytes of the A and B tiles the kernel asks for
        rows_asked = useful / (rb or 128)  # 64-byte (rb-byte) rows; tiled: 128-byte lines
        rows.append({"source": src, "tile": tile, "stages": S, "size": size, "row_bytes": rb, "smem_pad": spad, "kw_steps": kw,
                     "time_us": round(m["dur_ns"] / 1e3, 1), "useful_GBps": round(useful / m["dur_ns"], 1),
                     "l2_requests_per_row": round(m["req"] / rows_asked, 3),
                     "l2_sectors_per_row": round(m["sec"] / rows_asked, 3),
                     "x2l_sectors_per_useful_sector": round(m["x2l_sec"] / (useful / 32), 3),
                     "l2_requests_G_per_s": round(m["req"] / m["dur_ns"], 1),
                     "tag_pct_of_peak": round(m["tag_pct"], 1), "l2_mhz": round(m["l2_hz"] / 1e6), "sm_mhz": round(m["sm_hz"] / 1e6),
                     "dram_GB": round(m["dram_bytes"] / 1e9, 3), "fabric_sectors_M": round(m["fabric_sec"] / 1e6, 2)})
    return rows


def write(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main():
    thr = throughput_rows()
    write(thr, HERE / "l2_throughput8.csv")
    assert all(r["bad"] == 0 for r in thr), "a copy landed wrong data"
    print("Throughput (useful bytes, median of 5 launches): set tile S size row_bytes smem_pad kw blocks/SM -> GB/s, B/clk/SM, "
          "loaded round trip (cycles), SM MHz")
    for r in thr:
        if r["set"] != "inflight":
            print(f"  {r['set']:12s} {r['tile']:11s} S={r['stages']} {r['size']} rb={r['row_bytes']:>3s} pad={r['smem_pad']:>2s} "
                  f"kw={r['kw_steps']} B={r['bps_occ']:>2s}: {r['GBps']:7.0f} {r['bytes_per_clk_per_sm']:6.1f} "
                  f"{r['lat_clk_mean']:6.0f}  {r['sm_mhz_min']}-{r['sm_mhz_max']}")
    nrows = ncu_rows()
    write(nrows, HERE / "ncu_l2_8.csv")
    print("\nncu (one launch each): source tile S size rb pad kw -> useful GB/s, L2 requests / row, sectors / row, "
          "L1-bound sectors per useful sector, G requests/s, tag %, L2 MHz, DRAM GB")
    for r in nrows:
        print(f"  {r['source']:20s} {r['tile']:11s} S={r['stages']} {r['size']} rb={r['row_bytes']:>3d} pad={r['smem_pad']:>2d} "
              f"kw={r['kw_steps']}: {r['useful_GBps']:7.0f} {r['l2_requests_per_row']:5.2f} {r['l2_sectors_per_row']:5.2f} "
              f"{r['x2l_sectors_per_useful_sector']:5.2f} {r['l2_requests_G_per_s']:6.1f} {r['tag_pct_of_peak']:5.1f} "
              f"{r['l2_mhz']} {r['dram_GB']}")
    plateau = [r for r in thr if r["set"] == "inflight_pad" and int(r["bps_occ"]) >= 8]
    print(f"\nmma_pipe's copy shape, the plateau of its bytes-in-flight sweep (64x64, 8-10 blocks per SM, both footprints): "
          f"{min(r['GBps'] for r in plateau):.0f}-{max(r['GBps'] for r in plateau):.0f} GB/s, median "
          f"{st.median(r['GBps'] for r in plateau):.0f} (-> machines/h200.yaml async_copy_l2_gbps_padded_rows)")
    sel = [r for r in thr if r["set"] == "pattern_pad" and r["row_bytes"] == "64" and r["kw_steps"] == "8"]
    full = [r for r in thr if r["set"] == "stages_pad"]
    print(f"\nmma_pipe's copy shape (64-byte rows into 80-byte shared rows), all SMs, L2-resident (kw = 8): "
          f"{min(r['GBps'] for r in sel):.0f}-{max(r['GBps'] for r in sel):.0f} GB/s, median {st.median(r['GBps'] for r in sel):.0f} "
          f"at the GEMMs' occupancy; with their own footprint and occupancy (stages_pad): "
          + ", ".join(f"{s}: {min(r['GBps'] for r in full if r['size'] == s):.0f}-{max(r['GBps'] for r in full if r['size'] == s):.0f}"
                      for s in ("4096", "8192")))
    unp = [r for r in thr if r["set"] == "pattern" and r["row_bytes"] == "64" and r["kw_steps"] == "8"]
    print(f"the same rows into unpadded (contiguous) shared memory: {min(r['GBps'] for r in unp):.0f}-{max(r['GBps'] for r in unp):.0f}; "
          f"whole lines (tiled / 128-byte rows): "
          f"{min(r['GBps'] for r in thr if r['set'] == 'pattern' and r['row_bytes'] in ('0', '128') and r['kw_steps'] == '8'):.0f}-"
          f"{max(r['GBps'] for r in thr if r['set'] == 'pattern' and r['row_bytes'] in ('0', '128') and r['kw_steps'] == '8'):.0f}")


if __name__ == "__main__":
    main()
