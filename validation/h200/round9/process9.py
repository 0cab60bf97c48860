"""Round 9 (issue 12): the padded copy shape's L2 ceiling at the 8192^3 footprint and one SM's copy path, from
l2req9.csv and the ncu page in raw/round9.tar.gz.

    python validation/h200/round9/process9.py     # writes l2_throughput9.csv, ncu_l2_9.csv; prints the tables

l2_throughput9.csv: one row per configuration of l2req9 (median of 5 timed launches): useful GB/s (the tile bytes the
copies ask for; where the grid is at most 64 blocks, from the blocks' own globaltimer span, else CUDA events), bytes
per SM clock per *copying* SM, the loaded round trip of a group (lane 0 of every warp, clock64 from commit to the
wait's return), clocks, spread, verification errors.
ncu_l2_9.csv: per profiled launch: L2 read requests, tag lookups per request, requests arriving over the L2 fabric per
request, lookups per second and % of peak, DRAM bytes, useful TB/s over ncu's own duration.
"""

from __future__ import annotations

import gzip
import statistics as st
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round8"))

from process8 import grouped, launch_stats, ncu_table, write  # noqa: E402
KEY = ("set", "tile", "stages", "size", "kw_steps", "bps_occ", "grid")


def throughput_rows(path=HERE / "l2req9.csv"):
    out = []
    for k, rs in grouped(path, KEY).items():
        span = [float(r["span_us"]) for r in rs]
        use_span = all(s > 0 for s in span)
        gb = [float(r["bytes"]) / (s * 1e3) for r, s in zip(rs, span)] if use_span else [float(r["GBps"]) for r in rs]
        mhz = [float(r["sm_mhz"]) for r in rs]
        act = int(rs[0]["active_sms"])
        med = st.median(gb)
        out.append({**dict(zip(KEY, k)), "active_sms": act, "launches": len(rs), "timed_by": "span" if use_span else "events",
                    "GBps": round(med, 1), "bytes_per_clk_per_copying_sm": round(med * 1e3 / st.median(mhz) / act, 2),
                    **launch_stats(rs, gb, mhz)})
    return out


M = {"dur_ns": "gpu__time_duration.sum", "sm_hz": "sm__cycles_elapsed.avg.per_second",
     "l2_hz": "lts__cycles_elapsed.avg.per_second", "req": "lts__t_requests_srcunit_tex_op_read.sum",
     "tag": "lts__t_tag_requests.sum", "tag_pct": "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed",
     "fab_req": "lts__t_requests_srcunit_ltcfabric.sum", "dram": "dram__bytes_read.sum"}


def ncu_rows(tar_path=HERE / "raw" / "round9.tar.gz"):
    with tarfile.open(tar_path) as tar:
        page = gzip.decompress(tar.extractfile("./ncu_l2req9.csv.gz").read()).decode()
        launches = [ln.split(",")[1:] for ln in tar.extractfile("./ncu_l2req9_launches.txt").read().decode().splitlines()
                    if ln.startswith("ncu_launch")]
    out = []
    for lab, v in zip(launches, ncu_table(metrics=M, text=page)):
        kv = dict(x.split("=") for x in lab[2:])
        size = int(kv["size"])
        useful = (size // 64) ** 2 * (size // 32) * 2 * 64 * 64  # 64x64 tiles: A and B 64 rows x 64 bytes per step
        dur = v["dur_ns"] * 1e-9
        out.append({"set": lab[0], "tile": lab[1], "stages": int(kv["S"]), "size": size, "kw_steps": int(kv["kw"]),
                    "bps": int(kv["bps"]), "time_us": round(dur * 1e6, 1), "useful_GBps": round(useful / dur / 1e9, 1),
                    "l2_requests_M": round(v["req"] / 1e6, 1), "lookups_per_request": round(v["tag"] / v["req"], 3),
                    "fabric_requests_per_request": round(v["fab_req"] / v["req"], 3),
                    "lookups_G_per_s": round(v["tag"] / dur / 1e9, 1), "tag_pct_of_peak": round(v["tag_pct"], 1),
                    "dram_GB": round(v["dram"] / 1e9, 2), "l2_mhz": round(v["l2_hz"] / 1e6), "sm_mhz": round(v["sm_hz"] / 1e6),
                    "bad": int(kv["bad"])})
    return out


def main():
    th = throughput_rows()
    write(th, HERE / "l2_throughput9.csv")
    nc = ncu_rows()
    write(nc, HERE / "ncu_l2_9.csv")
    print("Throughput (median of 5 launches): set tile S size kw blocks/SM grid (copying SMs) -> GB/s, B/clk per copying SM, "
          "round trip of a group, SM MHz, p5-p95 %, bad")
    for r in th:
        print(f"  {r['set']:12s} {r['tile']:10s} S={r['stages']} {r['size']:>4s} kw={r['kw_steps']} B={r['bps_occ']:>2s} "
              f"grid={r['grid']:>5s} ({r['active_sms']:3d}): {r['GBps']:7.1f} GB/s ({r['timed_by']:6s}) {r['bytes_per_clk_per_copying_sm']:6.2f} "
              f"B/clk  rt {r['lat_clk_mean']:6.0f}  {r['sm_mhz_min']:.0f}-{r['sm_mhz_max']:.0f} MHz  {r['spread_p5_p95_pct']}%  bad {r['bad']}")
    print("\nncu (one launch each): set S size kw B -> useful GB/s (ncu duration), lookups/request, fabric requests/request, "
          "lookups G/s (% of peak), DRAM GB, L2 / SM MHz")
    for r in nc:
        print(f"  {r['set']:12s} S={r['stages']} {r['size']} kw={r['kw_steps']} B={r['bps']:2d}: {r['useful_GBps']:7.1f}  "
              f"{r['lookups_per_request']:.3f}  {r['fabric_requests_per_request']:.3f}  {r['lookups_G_per_s']:6.1f} "
              f"({r['tag_pct_of_peak']:.1f} %)  {r['dram_GB']:6.2f}  {r['l2_mhz']} / {r['sm_mhz']}")
    # the tag-lookup ceiling: lookups per second the same at both footprints -> throughput in inverse proportion to lookups/request
    ref = next(r for r in nc if r["size"] == 4096 and r["bps"] == 12 and r["kw_steps"] == 0)
    big = next(r for r in nc if r["size"] == 8192 and r["bps"] == 12 and r["kw_steps"] == 0)
    pred = ref["useful_GBps"] * ref["lookups_per_request"] / big["lookups_per_request"]
    print(f"\nlookup-rate ceiling: 4096^3 footprint {ref['useful_GBps']:.0f} GB/s at {ref['lookups_per_request']:.3f} lookups/request "
          f"({ref['lookups_G_per_s']:.1f} G/s); 8192^3 at {big['lookups_per_request']:.3f}: predicted {pred:.0f} GB/s, "
          f"measured {big['useful_GBps']:.0f} ({big['lookups_G_per_s']:.1f} G/s): {big['useful_GBps'] / pred:.3f}")
    print(f"machine file: async_copy_l2_lookups_per_request_padded_rows = {ref['lookups_per_request']:.3f} (the 4096^3 plateau's)")
    path = [r for r in th if r["set"] == "sms_pad" and r["stages"] == "4" and r["active_sms"] <= 33]
    print(f"one SM's path, padded shape, S = 4 (3 x 16 KiB in flight), 1 block of 8 warps, 1-33 SMs copying: "
          f"{min(r['bytes_per_clk_per_copying_sm'] for r in path):.2f}-{max(r['bytes_per_clk_per_copying_sm'] for r in path):.2f} B/clk per SM")
    s1 = [r for r in th if r["set"] == "sms_pad" and r["stages"] == "1"]
    print("S = 1 (one 16 KiB group at a time), round trip commit -> data by copying SMs: "
          + ", ".join(f"{r['active_sms']}{'x2' if r['bps_occ'] == '2' else ''}: {r['lat_clk_mean']:.0f}" for r in s1))


if __name__ == "__main__":
    main()
