"""Round 14: the naive kernel's block-column drift against the SM's load -> drift14.csv.

    python validation/h200/round14/process14.py [--pack traces14_*.tar.gz]   # --pack: store the device's traces as raw/traces14.npz

Per launch (column order, 8 blocks per SM, ex extra FMAs per k step): the clock, the result check, the span, the
median block time, and the partners' start offset in each tenth of the launch (round 12's ``partners``: block tm of
block column c against block tm of c + 1, in block times); for 4224 and 5632 ncu's issue activity (the share of
cycles a sub-partition issued) and DRAM bytes of the program's second (traced) launch.
"""

from __future__ import annotations

import re
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "round12")]
import process12 as p12  # noqa: E402
from h200_io import number, raw_rows, write_rows  # noqa: E402

RUNS = [(4224, 0, ""), (4224, 4, ""), (4224, 8, ""), (4224, 16, ""), (4224, 0, "_2"), (4224, 0, "_3"),
        (5632, 0, ""), (5632, 4, ""), (5632, 8, ""), (5632, 16, ""), (8448, 0, ""), (8448, 8, "")]
NPZ = HERE / "raw" / "traces14.npz"


def launches() -> dict:
    """run_round14.sh's launch lines, in run order -> {(N, ex, tag): fields}."""
    lines = [ln for ln in (HERE / "raw" / "launches14.txt").read_text().splitlines() if ln.startswith("launch,")]
    assert len(lines) == len(RUNS), len(lines)
    out = {}
    for run, ln in zip(RUNS, lines):
        kv = dict(x.split("=", 1) for x in ln.split(",") if "=" in x)
        assert int(ln.split(",")[1]) == run[0] and int(kv.get("ex", 0)) == run[1], (run, ln)
        out[run] = kv
    return out


def ncu() -> dict:
    """{(N, ex): {metric: value}} of the traced (second) launch in each ncu page."""
    out = {}
    with tarfile.open(HERE / "raw" / "ncu14.tar.gz") as t:
        for m in t.getmembers():
            g = re.match(r"ncu14_(\d+)_ex(\d+)\.csv", m.name)
            if not g:
                continue
            last = raw_rows(t.extractfile(m).read().decode())[-1]
            out[(int(g[1]), int(g[2]))] = {k: number(v) for k, v in last.items()
                                           if k.startswith(("sm__", "smsp__", "dram__", "gpu__"))}
    return out


def rows() -> list[dict]:
    tr = p12.load12((NPZ,))
    la, nc = launches(), ncu()
    out = []
    for N, ex, tag in RUNS:
        smid, start, end = tr[f"{N}_column_ex{ex}{tag}"]
        kv = la[(N, ex, tag)]
        r = dict(N=N, ex=ex, launch=tag.strip("_") or "1", sm_mhz=int(kv["sm_mhz"]), max_rel_err=kv["max_rel_err"],
                 span_ms=float(kv["span_ms"]), median_block_us=round(float(np.median(end - start)) / 1e3, 2))
        r.update({k: round(v, 3) for k, v in p12.partners(start, end, N, tenths=range(10)).items()})
        m = nc.get((N, ex), {}) if tag == "" else {}
        r["issue_active_pct"] = round(m.get("smsp__issue_active.avg.pct_of_peak_sustained_active", float("nan")), 1)
        r["dram_gb"] = round(m.get("dram__bytes_read.sum", float("nan")) / 1e9, 2)
        out.append(r)
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--pack":
        p12.pack(argv[1:], NPZ)
    rs = rows()
    write_rows(HERE / "drift14.csv", rs)
    print("N     ex launch  MHz  block_us  issue%  DRAM GB   partners' offset by tenth of the launch")
    for r in rs:
        tenths = " ".join(f"{r[f'partner_offset_tenth{k}']:.3f}" for k in range(1, 11))
        print(f"{r['N']} {r['ex']:3d} {r['launch']:>5s} {r['sm_mhz']:5d} {r['median_block_us']:8.1f} {r['issue_active_pct']:6.1f} "
              f"{r['dram_gb']:7.2f}   {tenths}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
