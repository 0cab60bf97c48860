"""Round 4b: raw/mma_issue.csv + raw/sass_mma_issue.txt.gz -> mma_issue.csv (one row per configuration).

    python validation/h200/round4b/process4b.py

Columns: nh, nf, ni (per iteration, as written in mma_issue.cu), warps (per SM; warps/4 per sub-partition), the SASS
instructions per iteration of the loop (hmma, ffma, iadd3: ptxas merges two adds into one IADD3), launches, the
median cycles per iteration and the spread of the five launches, the launches' SM clocks, cycles per HMMA per
sub-partition, and -- for a mix -- the cycles the other instructions add to the HMMAs alone per SASS instruction and
sub-partition (``extra_per_other``), with the two hypotheses: overlap (max of the HMMA-only and the other-only
times) and no overlap (their sum).
"""

import csv
import re
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sass_per_iteration() -> dict:
    """{(nh, nf, ni): {op: count per source iteration}} from the longest backward loop of each instantiation."""
    import gzip

    text = gzip.open(HERE / "raw" / "sass_mma_issue.txt.gz", "rt").read()
    out = {}
    for part in re.split(r"\n\s*Function : ", text)[1:]:
        m = re.search(r"issue_mixILi(\d+)ELi(\d+)ELi(\d+)E", part.split("\n", 1)[0])
        if not m:
            continue
        ins = [(int(a, 16), x) for a, x in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", part)]
        idx = {a: k for k, (a, _) in enumerate(ins)}
        loops = [(idx[int(b.group(1), 16)], k) for k, (a, x) in enumerate(ins)
                 if (b := re.search(r"BRA .*?(0x[0-9a-f]+)", x)) and int(b.group(1), 16) < a and int(b.group(1), 16) in idx]
        i, j = max(loops, key=lambda t: t[1] - t[0])
        ops = {}
        for _, x in ins[i:j + 1]:
            op = re.sub(r"^@!?U?P\w+\s+", "", x).split()[0].split(".")[0]
            ops[op] = ops.get(op, 0) + 1
        nh, nf, ni = (int(g) for g in m.groups())
        # source iterations in the unrolled body: from whichever of the three is present
        unroll = ops.get("HMMA", 0) // nh if nh else (ops.get("FFMA", 0) // nf if nf else ops.get("IADD3", 0) * 2 // ni)
        out[(nh, nf, ni)] = {op: c / unroll for op, c in ops.items()}
    return out


def main() -> None:
    sass = sass_per_iteration()
    runs = {}
    for r in csv.DictReader((HERE / "raw" / "mma_issue.csv").open()):
        key = (int(r["nh"]), int(r["nf"]), int(r["ni"]), int(r["warps"]))
        runs.setdefault(key, []).append((float(r["cycles_per_iter"]), float(r["sm_mhz"])))
    med = {k: statistics.median(c for c, _ in v) for k, v in runs.items()}
    rows = []
    for (nh, nf, ni, w), v in sorted(runs.items(), key=lambda kv: (kv[0][3], kv[0][0], kv[0][1], kv[0][2])):
        c = [x for x, _ in v]
        s = sass[(nh, nf, ni)]
        per = w / 4  # warps per sub-partition
        other = s.get("FFMA", 0) + s.get("IADD3", 0)
        row = dict(nh=nh, nf=nf, ni=ni, warps=w, sass_hmma=s.get("HMMA", 0), sass_ffma=s.get("FFMA", 0),
                   sass_iadd3=s.get("IADD3", 0), launches=len(c), cycles_per_iter=med[(nh, nf, ni, w)],
                   spread=max(c) / min(c) - 1, mhz_min=min(m for _, m in v), mhz_max=max(m for _, m in v),
                   cycles_per_hmma_smsp=med[(nh, nf, ni, w)] / (per * nh) if nh and not other else "")
        if nh and other:
            alone, rest = med.get((nh, 0, 0, w)), med.get((0, nf, ni, w))
            row.update(hmma_alone=alone, other_alone=rest, overlap_max=max(alone, rest), no_overlap_sum=alone + rest,
                       extra_per_other=(med[(nh, nf, ni, w)] - alone) / (per * other))
        rows.append(row)
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    with (HERE / "mma_issue.csv").open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=cols)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    for r in rows:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})


if __name__ == "__main__":
    main()
