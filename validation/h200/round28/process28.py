"""Round 28 (issue 12): the WMMA variant of the S sweep, out of the archives run_round28.sh brings back.

    python validation/h200/round28/process28.py profile   # raw/round28_profile.tar.gz -> inputs28.csv, sass28.csv
    python validation/h200/round28/process28.py time      # raw/round28_time.tar.gz   -> wmma_pipeline28.csv,
                                                          #   launches28.csv, stalls28.csv

inputs28.csv holds what the model needs of each compiled WMMA kernel, all of it properties of the binary, none a
timing: registers and shared memory (ptxas), the executed instructions per warp and k-step of the compute phase (the
copy-less twin's, ncu inst_executed / (blocks x warps x k-steps) at 4096^3, as round 4) and of the copies (the
kernel's minus the twin's), the fragment trace (which HMMA waits for which LDSM: the k-loop's SASS) and the copy trace
(the copy code's executed path: the SASS with ncu's per-instruction counts, round 6's method).
"""
from __future__ import annotations

import csv
import gzip
import io
import re
import statistics
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # validation/h200: sass_loops, tables
sys.path.insert(0, str(HERE.parent / "round3"))
sys.path.insert(0, str(HERE.parent / "round6"))
from tables import write_csv  # noqa: E402

RAW = HERE / "raw"
KNAME = re.compile(r"mma_gemm<\(?i?n?t?\)?(\d+), \(?i?n?t?\)?(\d+), \(?i?n?t?\)?32, \(?i?n?t?\)?(\d+), \(?i?n?t?\)?(\d+), "
                   r"\(?i?n?t?\)?(\d+), \(?b?o?o?l?\)?(\w+)>")


def member(archive: Path, name: str) -> bytes | None:
    """The bytes of the archive's file whose path ends in ``name`` (None if absent); gunzipped if it ends in .gz."""
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            if m.name.endswith("/" + name) or m.name == name:
                data = tar.extractfile(m).read()
                return gzip.decompress(data) if name.endswith(".gz") else data
    return None


def kernel_key(name: str) -> tuple | None:
    """(kernel label, copy, S) from a demangled mma_gemm name, either ncu spelling."""
    m = KNAME.search(name)
    if not m:
        return None
    BM, BN, wm, wn, S = (int(x) for x in m.groups()[:5])
    copy = 1 if m.group(6) in ("true", "1") else 0
    return f"mma_{BM}x{BN}_w{wm}x{wn}", copy, S


def ptxas_regs(text: str) -> dict:
    """{(kernel, copy, S): registers} from nvcc -Xptxas -v output."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"_Z8mma_gemmILi(\d+)ELi(\d+)ELi32ELi(\d+)ELi(\d+)ELi(\d+)ELb([01])E", line)
        if "Compiling entry function" in line:
            cur = None
            if m:
                BM, BN, wm, wn, S, cp = (int(x) for x in m.groups())
                cur = (f"mma_{BM}x{BN}_w{wm}x{wn}", cp, S)
        r = re.search(r"Used (\d+) registers", line)
        if r and cur:
            out[cur] = int(r.group(1))
            cur = None
    return out


def raw_inst(text: str) -> dict:
    """{(kernel, copy, S): inst_executed} from ncu --page raw --csv."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if '"Kernel Name"' in ln)
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[i:]))))
    out = {}
    for r in rows:
        k = kernel_key(r["Kernel Name"])
        if k and r.get("inst_executed", "").replace(",", "").replace(".", "").isdigit():
            out[k] = float(r["inst_executed"].replace(",", ""))
    return out


def profile_rows() -> list[dict]:
    """inputs28.csv's rows, from the profile archive."""
    import model_vs_measured_tc as mv
    from copy_trace import copy_region, kernels, trace

    arc = RAW / "round28_profile.tar.gz"
    sass = member(arc, "sass_wmma.txt.gz").decode()
    regs = ptxas_regs(member(arc, "ptxas_wmma.txt").decode())
    inst = raw_inst(member(arc, "ncu_wmma_raw.csv").decode())
    frag = mv.fragment_traces(sass)
    per = {}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "ncu_wmma_source.csv.gz"
        src.write_bytes(gzip.compress(member(arc, "ncu_wmma_source.csv.gz")))
        for (BM, BN, BK, wm, wn, S, cp), ins in kernels(src).items():
            per[(f"mma_{BM}x{BN}_w{wm}x{wn}", cp, S)] = ins
    rows = []
    M = N = K = 4096
    for (name, cp, S), ins in sorted(per.items()):
        if not cp:
            continue
        BM, BN = (int(x) for x in re.match(r"mma_(\d+)x(\d+)", name).groups())
        wm, wn = (int(x) for x in re.search(r"_w(\d+)x(\d+)", name).groups())
        warps = wm * wn
        norm = (M // BM) * (N // BN) * warps * (K // 32)
        twin = inst[(name, 0, S)] / norm
        kern = inst[(name, 1, S)] / norm
        region, nstep = copy_region(ins)
        src_total = sum(x["executed"] for x in ins) / norm
        rows.append(dict(kernel=name, S=S, regs=regs[(name, 1, S)], twin_regs=regs[(name, 0, S)],
                         smem_bytes=S * (BM + BN) * 40 * 2,
                         inst_per_warp_step=round(kern, 2), inst_per_warp_step_source=round(src_total, 2),
                         compute_instructions=round(twin, 2), copy_instructions=round(kern - twin, 2),
                         fragment_trace=frag[(name, 1, S)], copy_trace=trace(region, nstep)))
    return rows


def profile() -> None:
    import model_vs_measured_tc as mv
    from sass_loops import functions

    rows = profile_rows()
    write_csv(HERE / "inputs28.csv", rows)
    print(f"inputs28.csv: {len(rows)} kernels")
    for r in rows:
        print(f"  {r['kernel']:18s} S={r['S']} regs {r['regs']:3d} (twin {r['twin_regs']:3d}) executed/warp/step "
              f"{r['inst_per_warp_step']:6.1f} (source page {r['inst_per_warp_step_source']:6.1f}): compute "
              f"{r['compute_instructions']:5.1f} + copy {r['copy_instructions']:5.1f}; fragment trace "
              f"{len(r['fragment_trace'].split())} tokens, copy trace {len(r['copy_trace'].split())}")
    # the mma.sync build here against round 4's binary: the same SASS, function by function?
    arc = RAW / "round28_profile.tar.gz"
    with tarfile.open(mv.SASS4) as tar:
        s4 = tar.extractfile("raw/sass_mma_pipe4.txt").read().decode()
    here = member(arc, "sass_mma.txt.gz").decode()
    pat = r"mma_gemmILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELb([01])"
    strip = lambda ins: [re.sub(r"/\*[0-9a-f]{4}\*/", "", t).strip() for _, t in ins]
    f4 = {m.group(0): strip(ins) for m, ins in functions(s4, pat)}
    same = sum(f4.get(m.group(0)) == strip(ins) for m, ins in functions(here, pat))
    print(f"mma.sync build: {same} of {len(f4)} kernels' SASS identical to round 4's")


def time_part() -> None:
    arc = RAW / "round28_time.tar.gz"
    summary, launches = [], []
    for b in ("wmma", "mma"):
        for n in (4096, 8192):
            text = (member(arc, f"{b}_{n}.csv") or b"").decode()
            for r in csv.DictReader(io.StringIO(text)):
                summary.append({"api": b, **r})
            text = (member(arc, f"launches_{b}_{n}.csv") or b"").decode()
            for line in text.splitlines():
                f = line.split(",")
                if len(f) == 9 and f[0].startswith("mma_"):
                    launches.append([b, *f])
    write_csv(HERE / "wmma_pipeline28.csv", summary)
    cols = ["api", "kernel", "copy", "stages", "M", "N", "K", "rep", "time_ms", "sm_mhz"]
    write_csv(HERE / "launches28.csv", [dict(zip(cols, x)) for x in launches])
    stalls = []
    for b in ("wmma", "mma"):
        text = (member(arc, f"ncu_stalls_{b}.csv") or b"").decode()
        if '"Kernel Name"' not in text:
            continue
        lines = text.splitlines()
        i = next(k for k, ln in enumerate(lines) if '"Kernel Name"' in ln)
        for r in csv.DictReader(io.StringIO("\n".join(lines[i:]))):
            k = kernel_key(r["Kernel Name"])
            if not k:
                continue
            vals = {c.replace("smsp__average_warps_issue_stalled_", "stall_").replace("_per_issue_active.ratio", ""): r[c]
                    for c in r if c.startswith("smsp__average_warps_issue_stalled_")}
            stalls.append(dict(api=b, kernel=k[0], copy=k[1], stages=k[2], inst_executed=r.get("inst_executed"),
                               warp_latency_per_inst=r.get("smsp__average_warp_latency_per_inst_issued.ratio"),
                               issue_active_pct=r.get("smsp__issue_active.avg.pct_of_peak_sustained_active"),
                               warps_active_pct=r.get("sm__warps_active.avg.pct_of_peak_sustained_active"), **vals))
    if stalls:
        write_csv(HERE / "stalls28.csv", stalls)
    print(f"wmma_pipeline28.csv: {len(summary)} rows; launches28.csv: {len(launches)}; stalls28.csv: {len(stalls)}")
    bad = [r for r in summary if r["copy"] == "1" and (float(r["rel_err"]) > 1e-4 or int(r["nan_count"]))]
    print("every copy kernel verified (rel_err <= 1e-4, no NaN)" if not bad else f"FAILED checks: {bad}")


if __name__ == "__main__":
    {"profile": profile, "time": time_part}[sys.argv[1] if len(sys.argv) > 1 else "profile"]()
