"""Round 42: raw/r42_{wmma,mma,rest}.tar.gz -> steps42.csv (per API, tile, M, S and repeat: the recorded k-step, its four intervals,
how co-resident blocks sit), checks42.csv (each recorded kernel's check, clock, and what its SASS puts between the
clock reads), times42.csv (round 28's timing of the builds without clock reads, 4096^3), printed.

    python validation/h200/round42/process42.py

Intervals as round 10b (`../round10/process10b.py`, whose `summarise` this uses): S = 1: copy code, wait + barrier,
MMAs + barrier, rest; S > 1: wait + barrier, copy code, MMAs, rest; medians over thread 0 of the first 400 blocks and
k-steps 32-55.
"""
from __future__ import annotations

import csv
import gzip
import io
import re
import statistics
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round10"))
from process10b import summarise  # noqa: E402
from sass_loops import functions, longest_loop  # noqa: E402
from tables import write_csv  # noqa: E402

#: the run's raw42/ folder, in three archives (one archive was over what a device call brings back): the recorded steps
#: of each API, and everything else (logs, checks, SASS, the timing)
RAWS = tuple(HERE / "raw" / f"r42_{part}.tar.gz" for part in ("wmma", "mma", "rest"))
NAME = r"mma_gemmILi(\d+)ELi(\d+)ELi\d+ELi(\d+)ELi(\d+)ELi(\d+)ELb1"
KERNEL = {(128, 128, 2, 4): "mma_128x128_w2x4", (128, 128, 2, 2): "mma_128x128_w2x2", (64, 64, 2, 2): "mma_64x64_w2x2"}


def files() -> dict:
    """{file name: its text} of every file of the three archives (.gz files decompressed)"""
    out = {}
    for raw in RAWS:
        with tarfile.open(raw) as tar:
            for m in tar.getmembers():
                if m.isfile():
                    data = tar.extractfile(m).read()
                    out[Path(m.name).name] = gzip.decompress(data).decode() if m.name.endswith(".gz") else data.decode()
    return out


def blocks(csv_text: str) -> dict:
    """{(kernel, M, S): {block: (smid, {kt: [t0, t1, t2, t3]})}} (round 10b's reader, from text)"""
    out = {}
    for r in csv.DictReader(io.StringIO(csv_text)):
        key = (r["kernel"], int(r["M"]), int(r["stages"]))
        b = out.setdefault(key, {}).setdefault(int(r["block"]), (int(r["smid"]), {}))
        b[1][int(r["kt"])] = [int(r[c]) for c in ("t0", "t1", "t2", "t3")]
    return out


def sass_intervals(sass: str) -> dict:
    """{(kernel, S): [(LDGSTS, LDSM, HMMA, BAR) between consecutive clock reads of the k-loop, in loop order]}"""
    out = {}
    for m, ins in functions(sass, NAME):
        BM, BN, WM, WN, S = (int(x) for x in m.groups())
        loop = longest_loop(ins, "HMMA")
        if not loop or (BM, BN, WM, WN) not in KERNEL:
            continue
        body = [t for _, t in ins[loop[0]:loop[1] + 1]]
        cuts = [i for i, t in enumerate(body) if "SR_CLOCKLO" in t]
        segs = []
        for a, b in zip(cuts, cuts[1:] + [len(body) + cuts[0]]):
            seg = [body[i % len(body)] for i in range(a + 1, b)]
            segs.append(tuple(sum(1 for t in seg if re.search(rf"\b{op}\b", t)) for op in ("LDGSTS", "LDSM", "HMMA", "BAR")))
        out[(KERNEL[(BM, BN, WM, WN)], S)] = segs
    return out


def tables() -> tuple[list, list, list]:
    """(steps42, checks42, times42) rows from the raw archives"""
    steps, checks, times = [], [], []
    raw = files()
    sass = {api: sass_intervals(raw[f"sass_{api}.txt.gz"]) for api in ("wmma", "mma")}
    for f in sorted(raw):
        mm = re.fullmatch(r"steps_(wmma|mma)_(\d+)_([ab])\.csv\.gz", f)
        if not mm:
            continue
        api, M, rep = mm.group(1), int(mm.group(2)), mm.group(3)
        for line in raw[f.replace(".csv.gz", ".err")].splitlines():
            c = re.match(r"(\S+) S=(\d) \S+: rel_err (\S+) nan (\d+), recorded launch (\S+) ms at (\d+) MHz", line)
            if c:
                k, S = c.group(1), int(c.group(2))
                checks.append(dict(api=api, kernel=k, stages=S, M=M, rep=rep, rel_err=float(c.group(3)),
                                   nan=int(c.group(4)), recorded_ms=float(c.group(5)), sm_mhz=int(c.group(6)),
                                   sass_intervals=" ".join("/".join(map(str, s)) for s in sass[api].get((k, S), []))))
        for (k, MM, S), bl in sorted(blocks(raw[f]).items()):
            steps.append(dict(api=api, kernel=k, M=MM, stages=S, rep=rep, blocks=len(bl), **summarise(bl, S)))
    for api in ("wmma", "mma"):
        for r in csv.DictReader(io.StringIO(raw.get(f"time_{api}_4096.csv", ""))):
            times.append(dict(api=api, **r))
    return steps, checks, times


def main() -> None:
    steps, checks, times = tables()
    write_csv(HERE / "steps42.csv", steps)
    write_csv(HERE / "checks42.csv", checks)
    write_csv(HERE / "times42.csv", times)
    print(f"checks: rel_err {min(c['rel_err'] for c in checks):.2e}-{max(c['rel_err'] for c in checks):.2e}, "
          f"nan {sum(c['nan'] for c in checks)}, clocks {min(c['sm_mhz'] for c in checks)}-{max(c['sm_mhz'] for c in checks)} MHz")
    for c in checks:
        if c["rep"] == "a" and c["M"] == 4096:
            print(f"  SASS {c['api']:4s} {c['kernel']:18s} S={c['stages']}: (LDGSTS/LDSM/HMMA/BAR) between reads {c['sass_intervals']}")
    by = {}
    for r in steps:
        by.setdefault((r["kernel"], r["M"], r["stages"], r["api"]), []).append(r)
    print("median over repeats: step | copy code | wait + barrier | MMAs (S = 1: + barrier) | together / alternating")
    for (k, M, S, api), rs in sorted(by.items()):
        med = {c: statistics.median(r[c] for r in rs) for c in rs[0] if c.endswith("_clk") or c in ("together", "alternating")}
        mma = med.get("mma_clk", med.get("mma_barrier_clk"))
        reps = ", ".join(f"{r['step_clk']:.0f}" for r in rs)
        print(f"  {k:18s} {M} S={S} {api:4s}: {med['step_clk']:6.0f} | {med['copy_clk']:5.0f} | {med['wait_barrier_clk']:5.0f}"
              f" | {mma:5.0f} | {med['together']:.2f} / {med['alternating']:.2f}   (repeats {reps})")

    compare(steps)


def compare(steps: list[dict]) -> None:
    """The model's step and intervals (predictions42.csv, committed before the run) against the recorded medians over
    both repeats -> compare42.csv; the 8-warp WMMA S = 1 build is left out (158 registers with the clock reads: one
    block per SM, 1.9x its plain launch)."""
    pred = {(r["api"], r["kernel"], int(r["stages"]), int(r["M"])): r for r in csv.DictReader(open(HERE / "predictions42.csv"))}
    by = {}
    for r in steps:
        by.setdefault((r["api"], r["kernel"], r["stages"], r["M"]), []).append(r)
    out = []
    for key, rs in sorted(by.items()):
        if key[:3] == ("wmma", "mma_128x128_w2x4", 1):
            continue
        p = pred[key]
        row = dict(api=key[0], kernel=key[1], stages=key[2], M=key[3])
        for part in ("step", "copy", "wait_barrier", "mma" if key[2] > 1 else "mma_barrier"):
            meas = statistics.median(float(r[f"{part}_clk"]) for r in rs)
            row[f"{part}_measured"] = round(meas, 1)
            row[f"{part}_model"] = float(p[f"{part}_clk"])
        row["step_ratio"] = round(row["step_model"] / row["step_measured"], 3)
        out.append(row)
    write_csv(HERE / "compare42.csv", out)
    e = sorted(abs(r["step_ratio"] - 1) for r in out)
    print(f"model step / recorded step: {sum(x <= 0.10 for x in e)} of {len(e)} within 10 %, median {statistics.median(e):.1%}")
    for r in out:
        mma = "mma" if r["stages"] > 1 else "mma_barrier"
        print(f"  {r['api']:4s} {r['kernel']:18s} {r['M']} S={r['stages']}: step {r['step_model']:5.0f}/{r['step_measured']:5.0f}"
              f" ({r['step_ratio']:.2f})  copy {r['copy_model']:5.0f}/{r['copy_measured']:5.0f}"
              f"  MMAs {r[f'{mma}_model']:5.0f}/{r[f'{mma}_measured']:5.0f}")


if __name__ == "__main__":
    main()
