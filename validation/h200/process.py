"""Turn the raw outputs of run_all.sh (h200_raw.tar.gz) into the CSVs of validation/h200/.

Usage (from the repository root):
    python validation/h200/process.py validation/h200/raw/h200_raw.tar.gz [more archives: later ones win per file]

Writes, next to this script: device_props.csv, occupancy.csv, occupancy_hw.csv, smem_wavefronts.csv,
global_sectors.csv, waves.csv, l2_raster.csv, latency.csv. ncu values are read from its raw CSV page
(``--csv --page raw --print-units base``): thousands separators are removed, units are base units
(bytes, ns, %).
"""

from __future__ import annotations

import csv
import io
import re
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def read_archives(paths: list[str]) -> dict[str, str]:
    """File name (inside raw/) -> text, for every archive; later archives replace earlier files."""
    files: dict[str, str] = {}
    for p in paths:
        with tarfile.open(p) as tar:
            for m in tar.getmembers():
                if m.isfile():
                    files[Path(m.name).name] = tar.extractfile(m).read().decode(errors="replace")
    return files


def ncu_rows(text: str) -> list[dict[str, str]]:
    """Rows of an ncu raw CSV page (header, units row, one row per profiled launch), ncu's own lines dropped."""
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("==")]
    rows = list(csv.reader(lines))
    header, body = rows[0], rows[2:]
    return [dict(zip(header, r)) for r in body]


def num(s: str) -> float:
    return float(s.replace(",", "")) if s not in ("", "n/a") else float("nan")


def write_csv(name: str, header: list[str], rows: list[list]) -> None:
    with (HERE / name).open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    print(f"{name}: {len(rows)} rows", file=sys.stderr)


def patterns() -> dict[str, tuple[str, str, int, list[int]]]:
    out = {}
    for line in (HERE / "patterns.txt").read_text().splitlines():
        f = line.split()
        out[f[0]] = (f[1], f[2], int(f[3]), [int(x) for x in f[4:]])
    return out


def stride_of(name: str) -> str:
    m = re.search(r"stride(\d+)", name)
    return m.group(1) if m else ""


def offset_of(name: str) -> str:
    m = re.search(r"offset(\d+)", name)
    return m.group(1) if m else "0"


def do_patterns(files: dict[str, str]) -> None:
    launches = [r for r in csv.DictReader(ln for ln in files["patterns_launches.csv"].splitlines() if not ln.startswith("=="))]
    prof = ncu_rows(files["ncu_patterns.csv"])
    if len(prof) != len(launches):
        raise SystemExit(f"{len(prof)} profiled launches but {len(launches)} patterns")
    pats = patterns()
    smem, glob = [], []
    for launch, p in zip(launches, prof):
        name = launch["name"]
        space, op, width, offs = pats[name]
        assert (space, op, width) == (launch["space"], launch["op"], int(launch["width"])), name
        kind = f"{space}_{op}"
        assert p["Kernel Name"].startswith(f"void {kind}<{width}>"), (name, p["Kernel Name"])
        addrs = " ".join(map(str, offs))
        if space == "smem":
            inst = num(p[f"smsp__sass_inst_executed_op_shared_{op}.sum"])
            wf = num(p[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"])
            bc = num(p[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"])
            smem.append([name, op, stride_of(name), width, int(inst), int(wf), wf / inst, int(bc), addrs])
        else:
            inst = num(p[f"smsp__sass_inst_executed_op_global_{op}.sum"])
            req = num(p[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"])
            sec = num(p[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"])
            glob.append([name, op, stride_of(name), offset_of(name), width, int(inst), int(req), int(sec), sec / req, addrs])
    write_csv(
        "smem_wavefronts.csv",
        ["pattern", "op", "stride", "width", "instructions", "wavefronts", "wavefronts_per_instruction", "bank_conflicts", "addresses"],
        smem,
    )
    write_csv(
        "global_sectors.csv",
        ["pattern", "op", "stride", "offset", "width", "instructions", "requests", "sectors", "sectors_per_request", "addresses"],
        glob,
    )


def do_sgemm(files: dict[str, str]) -> None:
    timing = {(r["N"], r["order"]): r for r in csv.DictReader(files["sgemm_time.csv"].splitlines())}
    launches = [ln.split(",") for ln in files["sgemm_ncu_launches.csv"].splitlines() if ln.startswith("ncu_launch")]
    prof = ncu_rows(files["ncu_sgemm.csv"])
    if len(prof) != len(launches):
        raise SystemExit(f"{len(prof)} profiled sgemm launches but {len(launches)} launches")
    rows = []
    for (_, n, order, group_m), p in zip(launches, prof):
        t = timing[(n, order)]
        grid = int(n) ** 2 // (32 * 32)
        assert p["Grid Size"] == f"({grid}, 1, 1)", (n, p["Grid Size"])
        rows.append([
            int(n), order, int(group_m) if order == "grouped" else 0, 32,
            int(num(p["dram__bytes_read.sum"])), int(num(p["dram__bytes_write.sum"])),
            num(p["lts__t_sector_hit_rate.pct"]), float(t["time_ms"]), float(t["tflops"]),
            num(p["gpu__time_duration.sum"]) / 1e6,
            int(num(p["lts__t_sectors_srcunit_tex_op_read.sum"])),
            int(num(p["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"])),
            int(num(p["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"])),
            num(p["l1tex__t_sector_hit_rate.pct"]),
            int(num(p["launch__registers_per_thread"])),
            int(num(p["launch__occupancy_limit_warps"])),
            num(p["launch__waves_per_multiprocessor"]),
            num(p["sm__cycles_elapsed.avg.per_second"]) / 1e6,
            float(t["max_rel_err"]),
        ])
    write_csv(
        "l2_raster.csv",
        ["N", "order", "group_m", "tile", "dram_bytes_read", "dram_bytes_write", "l2_hit_rate_pct", "time_ms", "tflops",
         "ncu_time_ms", "l2_sectors_read_from_l1", "l2_sector_read_hits", "l1_global_load_sectors", "l1_hit_rate_pct",
         "registers_per_thread", "blocks_per_sm", "waves_per_sm", "sm_clock_mhz", "max_rel_err"],
        rows,
    )


def copy_csv(files: dict[str, str], src: str, dst: str) -> None:
    text = files[src]
    rows = list(csv.reader(io.StringIO(text)))
    write_csv(dst, rows[0], rows[1:])


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    files = read_archives(argv[1:])
    props = [ln.split(",", 1) for ln in files["device_props.csv"].splitlines() if "," in ln]
    write_csv("device_props.csv", ["property", "value"], props)
    rows = list(csv.reader(io.StringIO(files["occupancy_api.csv"])))
    write_csv("occupancy.csv", ["reg_cap", "regs", "threads", "smem_bytes", "carveout", "blocks_per_sm"], rows[1:])
    copy_csv(files, "occupancy_hw.csv", "occupancy_hw.csv")
    do_patterns(files)
    copy_csv(files, "waves_raw.csv", "waves.csv")
    do_sgemm(files)
    copy_csv(files, "latency_raw.csv", "latency.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
