"""Round 10c: raw10c/smsp_mio.csv + raw10c/sass_smsp_mio.txt.gz -> smsp_mio.csv (one row per configuration).

    python validation/h200/round10/process10c.py

Per configuration (mk: 0 no MMA warps, 1 mma.sync only, 3 mma.sync + ldmatrix; ok: 1 integer adds, 4 copy code with
cp.async.ca from L1, 5 st.shared code; other_iters): each instantiation's LDSM / HMMA / LDGSTS / STS count in its SASS,
the medians of the five launches' OTHER and MMA loop times (cycles), the MMA warps' cycles per HMMA and SMSP, and for
OTHER beside MMA warps its time alone and its slowdown. ``raw10c_hoisted/`` is the first run, whose ldmatrix ptxas had
hoisted out of the loop (3 LDSM per 176 HMMA); it is kept, not used.
"""

from __future__ import annotations

import csv
import gzip
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # validation/h200: tables
from tables import write_csv  # noqa: E402
RAW = HERE / "raw10c"


def sass_counts() -> dict:
    text = gzip.open(RAW / "sass_smsp_mio.txt.gz", "rt").read()
    out = {}
    for part in re.split(r"\n\s*Function : ", text)[1:]:
        m = re.search(r"mioILi(\d+)ELi(\d+)E", part.split("\n", 1)[0])
        if m:
            out[tuple(int(g) for g in m.groups())] = {op: len(re.findall(rf"\b{op}\b", part))
                                                      for op in ("LDSM", "HMMA", "LDGSTS", "STS")}
    return out


def rows() -> list[dict]:
    runs = {}
    for r in csv.DictReader((RAW / "smsp_mio.csv").open()):
        runs.setdefault((int(r["mk"]), int(r["ok"]), int(r["other_iters"])), []).append(r)
    med = {k: {c: statistics.median(float(r[c]) for r in v) for c in ("other_cyc", "mma_cyc", "mma_cyc_per_hmma")}
           for k, v in runs.items()}
    sass = sass_counts()
    out = []
    for (mk, ok, n), v in sorted(runs.items()):
        m = med[(mk, ok, n)]
        row = dict(mk=mk, ok=ok, other_iters=n, launches=len(v), **{f"sass_{k.lower()}": c for k, c in sass[(mk, ok)].items()},
                   other_cyc=m["other_cyc"] if ok else "", mma_cyc=m["mma_cyc"] if mk else "",
                   mma_cyc_per_hmma_smsp=m["mma_cyc_per_hmma"] if mk else "",
                   mhz_min=min(float(r["sm_mhz"]) for r in v), mhz_max=max(float(r["sm_mhz"]) for r in v))
        if mk and ok:
            alone = med[(0, ok, n)]["other_cyc"]
            row.update(other_alone_cyc=alone, other_slowdown=m["other_cyc"] / alone)
        out.append(row)
    return out


def main() -> None:
    rs = rows()
    write_csv(HERE / "smsp_mio.csv", rs)
    print("OTHER beside MMA warps, slowdown against alone (64 iterations): mma.sync only | mma.sync + ldmatrix")
    by = {(r["mk"], r["ok"], r["other_iters"]): r for r in rs}
    for ok, name in ((1, "integer adds"), (4, "copy code, cp.async.ca from L1"), (5, "st.shared code")):
        print(f"  {name:32s} {by[(1, ok, 64)]['other_slowdown']:.3f} | {by[(3, ok, 64)]['other_slowdown']:.3f}")


if __name__ == "__main__":
    main()
