"""Round 6 (issue 12): the copy code's instruction latencies out of lat6.cu's sandwiches, checked, and the copy phases of
the mma_pipe kernels modelled from their SASS against the copy phases timed inside them.

Usage (repository root): python validation/h200/round6/process6.py     -> latency6.csv, copy_check6.csv (+ prints)

Each latency is solved, not read off: the test's timed SASS section (raw/sass_lat6c.txt.gz, between the two clock
reads) is issued by gemmsim.models.sm_pipeline.copy_phase -- one warp in order, an instruction one cycle after the
previous one once its sources are ready -- and the one unknown latency is set (bisection) so that the simulated
section lasts what the GPU measured (median of reps 1-8, less the empty clock pair). The unknowns are solved in
order, each test using those before it; the tests not used to solve anything check the result.
"""
from __future__ import annotations

import csv
import gzip
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from copy_trace import copy_region, kernels, token, trace  # noqa: E402

from gemmsim.models.sm_pipeline import copy_phase  # noqa: E402

RAW = HERE / "raw"
TEST_T = {"clk": 0, "iadd3": 1, "lop3": 2, "shf": 3, "imad": 4, "imadwide": 5, "iadd64": 6, "lea64": 7, "ldc": 8,
          "s2ur_smid": 9, "s2r_warp": 10, "bra": 11, "ldc_uniform": 12, "bra_taken": 13, "bra_early": 14, "pred": 15}
# (test, latency it solves) in order; None: a check
SOLVE = [("iadd3", "alu"), ("imadwide", "wide"), ("ldc_uniform", "ldc"), ("s2r_warp", "s2r"), ("s2ur_smid", "s2ur"),
         ("pred", "pred"), ("bra", "bra"), ("bra_early", "sync"), ("bra_taken", "brat")]
CHECK = ["lop3", "shf", "imad", "iadd64", "lea64"]


def measured(run: str) -> dict:
    """{(test, warps, copies): median cycles of reps 1..8} of raw/lat6<run>.csv."""
    by = {}
    for r in csv.DictReader(open(RAW / f"lat6{run}.csv")):
        by.setdefault((r["test"], int(r["warps"]), int(r["n_per_sandwich"])), []).append((int(r["rep"]), int(r["cycles"])))
    return {k: statistics.median(c for rep, c in v if rep >= 1) for k, v in by.items()}


def sections(path: Path) -> dict:
    """{test: tokens of its first timed section} from a cuobjdump -sass dump of lat6."""
    s = gzip.open(path, "rt").read()
    out = {}
    for part in re.split(r"\n\s*Function : ", s)[1:]:
        m = re.match(r"_Z3latILi(\d+)EE", part)
        if not m:
            continue
        ins = [(int(a, 16), t.strip()) for a, t in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", part)]
        index = {a: k for k, (a, _) in enumerate(ins)}
        ck = [k for k, (_, t) in enumerate(ins) if "SR_CLOCKLO" in t]
        name = next(n for n, t in TEST_T.items() if t == int(m.group(1)))
        toks, k = [], ck[0] + 1
        while k < ck[1]:  # the executed path: bra_taken's branches jump, the others' fall through
            t = ins[k][1]
            b = re.search(r"BRA (0x[0-9a-f]+)", t)
            taken = bool(b) and name == "bra_taken"
            toks.append(token(t, taken=taken))
            k = index[int(b.group(1), 16)] if taken else k + 1
        out[name] = " ".join(toks)
    return out


def solve(toks: str, target: float, lat: dict, key: str) -> float:
    lo, hi = 0.0, 600.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if copy_phase(toks, {**lat, key: mid})[1] < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def latencies(run: str = "c") -> tuple[dict, list]:
    meas = measured(run)
    sec = sections(RAW / f"sass_lat6{run}.txt.gz")
    clk = meas[("clk", 1, 0)]
    get = lambda t: next(v for (n, w, c), v in meas.items() if n == t and w == 1)  # noqa: E731
    lat, rows = {"sync": 0.0, "brat": 0.0}, []
    for _ in range(4):  # the branch tests hold a few of each other's kinds (a BSYNC at the loop's end): solve to a fixed point
        for test, key in SOLVE:
            lat[key] = solve(sec[test], get(test) - clk, lat, key)
    for test, key in SOLVE:
        rows.append(dict(test=test, solves=key, measured_clk=get(test), section_clk=get(test) - clk,
                         model_clk=copy_phase(sec[test], lat)[1], value=round(lat[key], 2)))
    # cp.async issue: one warp, bursts of 4 and 8 copies with mma_pipe's pattern (3 predicated-off LDS before them)
    burst = " ".join(["slot"] * 3 + ["ldgsts"] * 4)
    lat["ldgsts"] = solve(burst, meas[("ldgsts_gemm", 1, 4)] - clk, lat, "ldgsts")
    rows.append(dict(test="ldgsts_gemm x4, 1 warp", solves="ldgsts", measured_clk=meas[("ldgsts_gemm", 1, 4)],
                     section_clk=meas[("ldgsts_gemm", 1, 4)] - clk, model_clk=copy_phase(burst, lat)[1], value=round(lat["ldgsts"], 2)))
    for test in CHECK:
        rows.append(dict(test=test, solves="(check)", measured_clk=get(test), section_clk=get(test) - clk,
                         model_clk=copy_phase(sec[test], lat)[1], value=""))
    b8 = " ".join(["slot"] * 3 + ["ldgsts"] * 8)
    rows.append(dict(test="ldgsts_gemm x8, 1 warp", solves="(check)", measured_clk=meas[("ldgsts_gemm", 1, 8)],
                     section_clk=meas[("ldgsts_gemm", 1, 8)] - clk, model_clk=copy_phase(b8, lat)[1], value=""))
    return lat, rows


def copy_checks(lat: dict) -> list:
    """Each copy kernel's copy phase: the model (its SASS path, one warp alone, copy_phase) against the in-kernel clock
    of the -DCOPY_CLOCK builds, one block alone on its SM (raw/copyclock_*_128.csv) and on the full 4096^3 grid."""
    rows = []
    for build in ("clk", "nomma"):
        K = kernels(RAW / f"ncu_{build}_source.csv.gz")
        meas = {}
        for size in (128, 4096):
            by = {}
            for r in csv.DictReader(open(RAW / f"copyclock_{build}_{size}.csv")):
                by.setdefault((r["kernel"], int(r["stages"])), []).append(r)
            for k, v in by.items():
                v = v[1:]  # the first timed launch of each kernel is dropped (cold instruction cache)
                meas[(*k, size)] = (statistics.median(float(r["copy_clk_per_warp_phase"]) for r in v), int(v[0]["blocks_per_sm"]),
                                   int(v[0]["grid"]))
        for key, ins in K.items():
            BM, BN, BK, WM, WN, S, cp = key
            if not cp:
                continue
            region, n = copy_region(ins, clocked=True)
            toks = trace(region, n)
            slots, clk = copy_phase(toks, lat)
            name = f"mma_{BM}x{BN}_w{WM}x{WN}"
            alone, bps, _ = meas[(name, S, 128)]
            full, bps_full, _ = meas[(name, S, 4096)]
            rows.append(dict(build=build, kernel=name, stages=S, warps=WM * WN, slots=slots, model_alone_clk=round(clk, 1),
                             measured_one_block_clk=alone, ratio_one_block=round(clk / alone, 3),
                             measured_full_grid_clk=full, blocks_per_sm_full=bps_full))
    return rows


def stall_summary() -> list:
    """Where the copy kernels' warps were sampled (ncu source page, the plain kernels at 4096^3): the copy phase's share
    of the k-loop's samples, its executed instructions per warp and step, and its leading stall reasons."""
    rows = []
    for key, ins in kernels(RAW / "ncu_plain_source.csv.gz").items():
        BM, BN, BK, WM, WN, S, cp = key
        if not cp:
            continue
        from copy_trace import kloop
        loop = kloop(ins)
        region, n = copy_region(ins)
        tot = sum(sum(x["stalls"].values()) for x in loop)
        st = {}
        for x in region:
            for k, v in x["stalls"].items():
                st[k] = st.get(k, 0.0) + v
        top = sorted(st.items(), key=lambda kv: -kv[1])[:5]
        rows.append(dict(kernel=f"mma_{BM}x{BN}_w{WM}x{WN}", stages=S, copy_instr_per_warp_step=round(sum(x["executed"] for x in region) / n, 1),
                         copy_share_of_loop_samples=round(sum(st.values()) / tot, 3),
                         **{f"top{i + 1}": f"{k} {v / tot:.1%}" for i, (k, v) in enumerate(top)}))
    return rows


def write(path: Path, rows: list) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()} for r in rows)


def main() -> int:
    lat, rows = latencies("c")
    print("latencies (cycles), solved from raw/lat6c.csv with copy_phase on each test's SASS:")
    for r in rows:
        print(f"  {r['test']:24s} {r['solves']:8s} measured {r['measured_clk']:7.1f} - clock pair = {r['section_clk']:7.1f}, "
              f"model {r['model_clk']:7.1f}  {r['value']}")
    for run in ("a", "b"):
        m = measured(run)
        same = [t for t in TEST_T if (t, 1, 32) in m and (t, 1, 32) in measured("c") and m[(t, 1, 32)] == measured("c")[(t, 1, 32)]]
        print(f"run {run}: {len(same)} tests with the same median as run c: {' '.join(same)}")
    write(HERE / "latency6.csv", rows)
    checks = copy_checks(lat)
    write(HERE / "copy_check6.csv", checks)
    print("copy phase per warp and k-step: model (one warp alone) vs in-kernel clock (one block alone / full grid)")
    for r in checks:
        print(f"  {r['build']:5s} {r['kernel']:18s} S={r['stages']} {r['warps']} warps: {r['slots']:5.0f} instr, model {r['model_alone_clk']:6.1f}"
              f"  one block {r['measured_one_block_clk']:7.1f} (x{r['ratio_one_block']:.2f})  full grid {r['measured_full_grid_clk']:7.1f}"
              f" ({r['blocks_per_sm_full']} blocks/SM)")
    traces = []
    for (BM, BN, BK, WM, WN, S, cp), ins in kernels(RAW / "ncu_plain_source.csv.gz").items():
        if cp:
            region, n = copy_region(ins)
            t = trace(region, n)
            slots, clk = copy_phase(t, lat)
            traces.append(dict(kernel=f"mma_{BM}x{BN}_w{WM}x{WN}", stages=S, slots=slots, chain_clk=clk, copy_trace=t))
    write(HERE / "copy_traces6.csv", traces)  # round 4's kernels' copy traces (the model's kernel parameter copy_trace)
    print("ncu samples in the copy phase (share of the k-loop's samples; leading reasons, share of the k-loop's samples):")
    for r in stall_summary():
        print(f"  {r['kernel']:18s} S={r['stages']}: {r['copy_instr_per_warp_step']:5.1f} instr/warp-step, "
              f"{r['copy_share_of_loop_samples']:.0%} of samples: {r['top1']}, {r['top2']}, {r['top3']}, {r['top4']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
