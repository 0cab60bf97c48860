"""Round 3 raw archives -> the CSVs beside this file.

    python validation/h200/round3/process3.py

Reads raw/run2_raw.tar.gz, raw/run2_bulk.tar.gz, raw/run3_raw.tar.gz (see README.md) and writes
order_l2.csv, order_time.csv, order_dispatch.csv, order_wave_spread.csv, order_trace_2048.csv, waves3.csv, fma_rate.csv,
mma_pipeline.csv, mma_stalls.csv, cublas_sweep.csv, cublas_launches.csv, clocks_sustained.csv, cpasync.csv,
latency3.csv. Only the standard library and numpy.
"""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RAW = HERE / "raw"


def members(path: Path) -> dict[str, str]:
    with tarfile.open(path) as t:
        return {m.name.split("/", 1)[1]: t.extractfile(m).read().decode() for m in t.getmembers() if m.isfile()}


def read_ncu(text: str) -> list[dict]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    hdr = rows[0]
    return [dict(zip(hdr, r)) for r in rows[2:] if len(r) == len(hdr)]  # rows[1]: units


def num(r: dict, key: str) -> float:
    v = r.get(key, "")
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return float("nan")


def write(name: str, header: list[str], rows: list[list]) -> None:
    with open(HERE / name, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    print(f"{name}: {len(rows)} rows")


def copy_csv(text: str, name: str, drop_prefix: str | None = None) -> None:
    lines = [line for line in text.splitlines() if line.strip()]
    if drop_prefix:
        lines = [line[len(drop_prefix):] if line.startswith(drop_prefix) else line for line in lines]
    (HERE / name).write_text("\n".join(lines) + "\n")
    print(f"{name}: {len(lines) - 1} rows")


def main() -> None:
    r2 = members(RAW / "run2_raw.tar.gz")
    b2 = members(RAW / "run2_bulk.tar.gz")
    r3 = members(RAW / "run3_raw.tar.gz")

    # --- launch order: ncu counters, run 2 (N <= 6144) and run 3 (N <= 8192, with L2-fabric sectors) ---
    rows = []
    for run, txt, launches in (("run2", r2["ncu_order.csv"], r2["order_ncu_launches.csv"]),
                               ("run3", r3["ncu_order2.csv"], r3["order_ncu2_launches.csv"])):
        data = read_ncu(txt)
        ls = [line.split(",") for line in launches.splitlines() if line.startswith("ncu_launch")]
        assert len(ls) == len(data), (run, len(ls), len(data))
        for (_, kernel, n, order), d in zip(ls, data):
            assert d["Kernel Name"].startswith(kernel)
            sec = 32
            rows.append([kernel, int(n), order, 8 if order == "grouped" else 0, run,
                         int(num(d, "dram__bytes_read.sum")), int(num(d, "dram__bytes_write.sum")),
                         round(num(d, "lts__t_sector_hit_rate.pct"), 2),
                         int(num(d, "lts__t_sectors_srcunit_tex_op_read.sum")) * sec,
                         int(num(d, "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum")) * sec,
                         int(num(d, "lts__t_sectors_srcunit_ltcfabric.sum") * sec) if run == "run3" else "",
                         int(num(d, "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum") * sec) if run == "run3" else "",
                         round(num(d, "l1tex__t_sector_hit_rate.pct"), 2),
                         int(num(d, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")),
                         round(num(d, "gpu__time_duration.sum") / 1e6, 4)])
    write("order_l2.csv", ["kernel", "N", "order", "group_m", "run", "dram_bytes_read", "dram_bytes_write",
                           "l2_hit_rate_pct", "l2_read_bytes_from_l1", "l2_read_miss_bytes_from_l1",
                           "l2_fabric_bytes", "l2_fabric_miss_bytes", "l1_hit_rate_pct", "l1_global_load_sectors",
                           "ncu_time_ms"], rows)
    copy_csv(r2["order_time.csv"], "order_time.csv")

    # --- dispatch order: block start traces ---
    summ = []
    for n, txt in ((2048, b2["order_trace_2048.csv"]), (4096, b2.get("order_trace_4096.csv", ""))):
        if not txt:
            continue
        recs = list(csv.DictReader(io.StringIO(txt)))
        groups: dict[tuple, list] = {}
        for r in recs:
            groups.setdefault((r["kernel"], r["order"]), []).append(r)
        for (kernel, order), g in groups.items():
            pid = np.array([int(r["pid"]) for r in g])
            st = np.array([int(r["start_ns"]) for r in g])
            en = np.array([int(r["end_ns"]) for r in g])
            sm = np.array([int(r["smid"]) for r in g])
            o = np.argsort(pid)
            pid, st, en, sm = pid[o], st[o], en[o], sm[o]
            rank = np.argsort(np.argsort(st, kind="stable"), kind="stable")
            disp = np.abs(rank - np.arange(len(rank)))
            first = st < st.min() + 3000
            summ.append([kernel, n, order, len(pid), int(first.sum()), len(np.unique(sm[first])),
                         round(float(np.mean(np.diff(st) < 0)), 4), int(np.percentile(disp, 50)),
                         int(np.percentile(disp, 99)), int(disp.max()), round(float(np.median(en - st)) / 1e3, 1),
                         round(float(en.max()) / 1e6, 3), " ".join(map(str, sm[:16]))])
    spread = []
    for n, txt in ((2048, b2["order_trace_2048.csv"]), (4096, b2.get("order_trace_4096.csv", ""))):
        recs = list(csv.DictReader(io.StringIO(txt))) if txt else []
        groups = {}
        for r in recs:
            groups.setdefault((r["kernel"], r["order"]), []).append(r)
        for (kernel, order), g in groups.items():
            pid = np.array([int(r["pid"]) for r in g])
            o = np.argsort(pid)
            st = np.array([int(r["start_ns"]) for r in g])[o]
            en = np.array([int(r["end_ns"]) for r in g])[o]
            wave = 1056 if kernel == "naive16" else 264
            block = float(np.median(en - st))
            for w in range(len(st) // wave):
                s = st[w * wave:(w + 1) * wave]
                spread.append([kernel, n, order, w + 1, wave, round(block / 1e3, 1),
                               round(float(np.percentile(s, 95) - np.percentile(s, 5)) / block, 3)])
    write("order_wave_spread.csv", ["kernel", "N", "order", "wave", "blocks_per_wave", "median_block_us",
                                    "start_spread_p5_p95_over_block"], spread)
    write("order_dispatch.csv", ["kernel", "N", "order", "blocks", "blocks_started_first_3us", "sms_first_3us",
                                 "frac_start_before_previous_pid", "rank_displacement_p50",
                                 "rank_displacement_p99", "rank_displacement_max", "median_block_us", "span_ms",
                                 "smid_of_pid_0_15"], summ)

    # --- waves and FMA rate ---
    copy_csv(r2["waves3.csv"], "waves3.csv")
    copy_csv(r2["waves_rate.csv"], "fma_rate.csv", drop_prefix="rate,")

    # --- tensor-core pipeline ---
    t4 = r2["mma_4096.csv"].strip().splitlines()
    t8 = r2["mma_8192.csv"].strip().splitlines()
    (HERE / "mma_pipeline.csv").write_text("\n".join(t4 + t8[1:]) + "\n")
    print(f"mma_pipeline.csv: {len(t4) + len(t8) - 2} rows")
    data = read_ncu(r2["ncu_mma.csv"])
    reasons = ["long_scoreboard", "barrier", "mio_throttle", "short_scoreboard", "math_pipe_throttle", "wait",
               "not_selected", "selected", "lg_throttle", "dispatch_stall", "no_instruction", "sleeping", "branch_resolving",
               "drain", "imc_miss", "membar", "misc", "tex_throttle"]
    rows = []
    for d in data:
        name = d["Kernel Name"]
        args = name[name.index("<") + 1:name.index(">")].split(",")
        bm, bn, bk, wm, wn, s = (int(a) for a in args)
        row = [f"mma_{bm}x{bn}_w{wm}x{wn}", bm, bn, wm * wn, s, round(num(d, "gpu__time_duration.sum") / 1e6, 4),
               round(num(d, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 1),
               round(num(d, "sm__warps_active.avg.pct_of_peak_sustained_active"), 1),
               round(num(d, "smsp__issue_active.avg.pct_of_peak_sustained_active"), 1)]
        row += [num(d, f"smsp__average_warps_issue_stalled_{k}_per_issue_active.ratio") for k in reasons]
        rows.append(row)
    write("mma_stalls.csv", ["kernel", "BM", "BN", "warps", "stages", "ncu_time_ms", "sm_throughput_pct",
                             "achieved_occupancy_pct", "issue_active_pct"] + [f"stall_{k}" for k in reasons], rows)

    # --- cuBLAS and clocks ---
    copy_csv(r2["cublas_sweep.csv"], "cublas_sweep.csv")
    copy_csv(r2["cublas_launches.csv"], "cublas_launches.csv")
    rows = []
    for line in r2["cublas_sustain.csv"].strip().splitlines()[1:]:
        i, t, ms, tf, mhz = line.split(",")
        rows.append(["cublas_bf16_8192", i, t, ms, tf, mhz])
    for line in r2["mma_sustain.csv"].strip().splitlines()[1:]:
        i, t, ms, tf, mhz = line.split(",")
        rows.append(["mma_128x128_w2x4_S3_8192", i, t, ms, tf, mhz])
    write("clocks_sustained.csv", ["source", "launch", "t_s", "time_ms", "tflops", "sm_mhz"], rows)
    copy_csv(r2["cpasync.csv"], "cpasync.csv")
    copy_csv(r2["latency_raw.csv"], "latency3.csv")


if __name__ == "__main__":
    main()
