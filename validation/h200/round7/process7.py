"""Round 7 (and 7c) raw traces -> drift7.csv (one row per launch) and drift7_waves.csv (the spread of every wave); rounds 7b/7c's
ncu pages -> ncu7.csv (DRAM bytes read and duration of every profiled launch).

    python validation/h200/round7/process7.py

Spread of a wave = the 5-95 % range of the start times of its 1,056 blocks (132 SMs x 8 resident 16x16 blocks, in
pid order) over the launch's median block time, as round 5's order_wave_spread5.csv. Per launch: the median spread,
the fraction of waves spread over more than half a block, and the first such wave (lockstep lost).
"""

from __future__ import annotations

import csv
import io
import re
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WAVE = 132 * 8
NAME = re.compile(r"trace_(\d+)_(row|column)_ta(\d)_tb(\d)(?:_(\d))?\.csv")


def launches():
    seen = set()  # the layout archive holds one trace twice (two of run_round7.sh's patterns match it)
    for arc in sorted((HERE / "raw").glob("traces7*.tar.gz")):
        with tarfile.open(arc) as tar:
            for m in tar.getmembers():
                g = NAME.fullmatch(Path(m.name).name)
                if g and m.name not in seen:
                    seen.add(m.name)
                    data = np.loadtxt(io.TextIOWrapper(tar.extractfile(m)), delimiter=",", skiprows=1, dtype=np.int64)
                    yield (int(g[1]), g[2], int(g[3]), int(g[4]), int(g[5] or 1)), data[np.argsort(data[:, 0])]


def ncu_launches() -> list[dict]:
    """raw/ncu7*.csv: each line is `run,<ncu raw page line>`; runs are listed in raw/ncu7*_runs.txt."""
    out = []
    for page in sorted((HERE / "raw").glob("ncu7*.csv")):
        runs = {}
        for line in page.with_name(page.stem + "_runs.txt").read_text().splitlines():
            if line.startswith("run "):
                i, spec = line[4:].split(": ")
                runs[i] = spec.split()
        hdr = None
        for line in page.read_text().splitlines():
            run, rest = line.split(",", 1)
            if rest.startswith('"ID"'):
                hdr = next(csv.reader([rest]))
            elif hdr and rest.startswith('"') and "naive16t" in rest:
                r = dict(zip(hdr, next(csv.reader([rest]))))
                n, order = runs[run]
                out.append(dict(N=int(n), order=order, run=f"{page.stem}:{run}", launch=r["ID"],
                                dram_bytes_read=int(r["dram__bytes_read.sum"].replace(",", "")),
                                duration_ns=int(r["gpu__time_duration.sum"].replace(",", ""))))
    return out


def write_csv(name: str, rows: list[dict]) -> None:
    """Rows (dicts with the same keys) as HERE / name, a header line first."""
    with (HERE / name).open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main() -> None:
    clocks = {}
    for line in [x for f in sorted((HERE / "raw").glob("launches7*.txt")) for x in f.read_text().splitlines()]:
        p = line.split(",")
        key = (int(p[1]), p[2], int(p[3]), int(p[4]))
        clocks.setdefault(key, []).append((p[5].split("=")[1], p[6].split("=")[1]))
    rows, waves = [], []
    for (n, order, ta, tb, rep), d in sorted(launches(), key=lambda x: x[0]):
        dur = float(np.median(d[:, 3] - d[:, 2]))
        st = d[:, 2].astype(np.float64)
        sp = np.array([(np.percentile(st[w * WAVE:(w + 1) * WAVE], 95) - np.percentile(st[w * WAVE:(w + 1) * WAVE], 5)) / dur
                       for w in range(len(st) // WAVE)])
        first = int(np.argmax(sp > 0.5)) if (sp > 0.5).any() else ""
        mhz, err = clocks[(n, order, ta, tb)][rep - 1]
        rows.append(dict(N=n, order=order, a_col_major=ta, b_col_major=tb, launch=rep, blocks=len(d), waves=len(sp),
                         median_block_us=round(dur / 1e3, 1), median_spread=round(float(np.median(sp)), 3),
                         waves_spread_over_half=round(float((sp > 0.5).mean()), 3), first_wave_spread_over_half=first,
                         sm_mhz=mhz, max_rel_err=err))
        waves += [dict(N=n, order=order, a_col_major=ta, b_col_major=tb, launch=rep, wave=w, spread=round(float(s), 3))
                  for w, s in enumerate(sp)]
    for name, data in (("drift7.csv", rows), ("drift7_waves.csv", waves), ("ncu7.csv", ncu_launches())):
        write_csv(name, data)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
