"""Round 10: raw/smsp_share.csv + raw/sass_smsp_share.txt.gz -> smsp_share.csv (one row per configuration).

    python validation/h200/round10/process10.py

Per configuration (mk: 0 no MMA warps, 1 MMA warps on 8 independent accumulators, 2 on one dependent chain; ok: 0 no
OTHER warps, 1 integer adds, 2 FFMA, 3 cp.async copy code; a MMA and b OTHER warps per sub-partition; other_iters):
the SASS instructions per iteration of each loop, the medians of the five launches' OTHER and MMA loop times (cycles,
each the median over the 132 blocks), the clocks, and for a pair the times alone (the same a, b with the other kind
absent) with what they give: OTHER's slowdown beside the MMA warps, the cycles the MMA warps lose per OTHER
instruction, and the cycles OTHER loses per HMMA the MMA warps issue in its window (the MMA warps' own rate alone).
"""

from __future__ import annotations

import csv
import gzip
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # validation/h200: sass_loops
from sass_loops import functions, longest_loop  # noqa: E402
from tables import write_csv  # noqa: E402

HOLDS = {1: "IADD3", 2: "FFMA", 3: "LDGSTS"}  # an instruction only the OTHER loop of that kind has
PER_BODY = {1: 64, 2: 64, 3: 16}  # the source iteration's count of that instruction


def sass_per_iteration() -> dict:
    """{(mk, ok): {"mma": {op: n per source iteration}, "other": {...}}} from each instantiation's loops."""
    text = gzip.open(HERE / "raw" / "sass_smsp_share.txt.gz", "rt").read()
    out = {}
    for m, ins in functions(text, r"shareILi(\d+)ELi(\d+)E"):
        mk, ok = (int(g) for g in m.groups())
        loops = {}
        for role, hold, per in (("mma", "HMMA", 8), ("other", HOLDS.get(ok), PER_BODY.get(ok))):
            if hold is None or (role == "mma" and mk == 0):
                continue
            i, j = longest_loop(ins, hold)
            ops = {}
            for _, x in ins[i:j + 1]:
                op = re.sub(r"^@!?U?P\w+\s+", "", x).split()[0].split(".")[0]
                ops[op] = ops.get(op, 0) + 1
            unroll = ops[hold] / per
            loops[role] = {op: c / unroll for op, c in ops.items()}
        out[(mk, ok)] = loops
    return out


def configurations() -> dict:
    runs = {}
    for r in csv.DictReader((HERE / "raw" / "smsp_share.csv").open()):
        key = tuple(int(r[k]) for k in ("mk", "ok", "a", "b", "other_iters"))
        runs.setdefault(key, []).append(r)
    return runs


def main() -> None:
    sass = sass_per_iteration()
    runs = configurations()
    med = {k: {c: statistics.median(float(r[c]) for r in v) for c in ("other_cyc", "mma_cyc", "mma_cyc_per_hmma")}
           for k, v in runs.items()}
    rows = []
    for (mk, ok, a, b, n), v in sorted(runs.items()):
        m = med[(mk, ok, a, b, n)]
        loops = sass[(mk, ok)]
        row = dict(mk=mk, ok=ok, a=a, b=b, other_iters=n, launches=len(v),
                   sass_other_per_iter=sum(loops["other"].values()) if "other" in loops else "",
                   sass_hmma_per_iter=loops["mma"].get("HMMA", 0) if "mma" in loops else "",
                   other_cyc=m["other_cyc"] if ok else "", mma_cyc=m["mma_cyc"] if mk else "",
                   mma_cyc_per_hmma_smsp=m["mma_cyc_per_hmma"] if mk else "",
                   mhz_min=min(float(r["sm_mhz"]) for r in v), mhz_max=max(float(r["sm_mhz"]) for r in v),
                   spread_other=(max(float(r["other_cyc"]) for r in v) / min(float(r["other_cyc"]) for r in v) - 1) if ok else "")
        if mk and ok:
            other_alone = med[(0, ok, a, b, n)]["other_cyc"]
            mma_alone = med[(mk, 0, a, b, 0)]
            instr = b * n * row["sass_other_per_iter"]  # OTHER instructions on one sub-partition
            hmma_in_window = a * m["other_cyc"] / mma_alone["mma_cyc_per_hmma"] / a  # the SMSP's HMMAs at their rate alone
            row.update(other_alone_cyc=other_alone, other_slowdown=m["other_cyc"] / other_alone,
                       mma_alone_cyc=mma_alone["mma_cyc"], mma_lost_cyc=m["mma_cyc"] - mma_alone["mma_cyc"],
                       mma_lost_per_other_instr=(m["mma_cyc"] - mma_alone["mma_cyc"]) / instr,
                       other_lost_per_hmma=(m["other_cyc"] - other_alone) / hmma_in_window)
        rows.append(row)
    write_csv(HERE / "smsp_share.csv", rows)
    print("mk ok a b iters | OTHER alone -> beside MMA (x) | MMA lost per OTHER instr | OTHER lost per HMMA")
    for r in rows:
        if "other_slowdown" in r:
            print(f"{r['mk']} {r['ok']} {r['a']} {r['b']} {r['other_iters']:3d} | {r['other_alone_cyc']:8.0f} -> "
                  f"{r['other_cyc']:8.0f} ({r['other_slowdown']:.3f}) | {r['mma_lost_per_other_instr']:6.3f} | "
                  f"{r['other_lost_per_hmma']:6.2f}")


if __name__ == "__main__":
    main()
