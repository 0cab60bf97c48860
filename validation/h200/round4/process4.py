"""Round 4 (issue 12): the small CSVs out of the device archives.

    python validation/h200/round4/process4.py

Reads run2_raw.tar.gz (the complete run) and run1_partial.tar.gz (the first run: its 8 files that came back), writes
  loaded.csv          cp.async round trip against bytes in flight (mma_pipe4 loaded), run 2
  mma_pipeline4.csv   the S sweep, copy and copy-less twins, medians of 20 spaced launches (run 2)
  mma_launches4.csv   every timed launch of runs 1 and 2: run, kernel, copy, stages, M, rep, time_ms, sm_mhz,
                      tflops_at_1980 (= 2 M^3 / time x 1980 / sm_mhz: work per SM cycle)
  mma_ncu4.csv        ncu at 4096^3 (run 2): executed instructions per warp and k-step, cycles, stall reasons
  sass_counts4.csv    per mma_gemm instantiation: instructions, HMMA, LDGSTS in its SASS, and in its k-loop (the
                      longest backward branch holding HMMA) instructions, HMMA, LDGSTS, LDSM, BAR, DEPBAR
"""

import csv
import io
import re
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # validation/h200: sass_loops
from sass_loops import functions, longest_loop  # noqa: E402


def members(path: Path) -> dict:
    with tarfile.open(path) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}


def write(name, header, rows):
    with (HERE / name).open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def main():
    r2 = members(HERE / "run2_raw.tar.gz")
    r1 = members(HERE / "run1_partial.tar.gz")
    (HERE / "loaded.csv").write_text(r2["loaded.csv"])
    summ = [r2[f"mma_{n}.csv"].strip().splitlines() for n in (4096, 8192)]
    (HERE / "mma_pipeline4.csv").write_text("\n".join(summ[0] + summ[1][1:]) + "\n")
    rows = []
    for run, files in (("run1", r1), ("run2", r2)):
        for n in (4096, 8192):
            text = files.get(f"launches_{n}.csv")
            if not text:
                continue
            for r in csv.DictReader(io.StringIO(text)):
                M = int(r["M"])
                t, mhz = float(r["time_ms"]), float(r["sm_mhz"])
                rows.append([run, r["kernel"], r["copy"], r["stages"], M, r["rep"], t, mhz,
                             round(2.0 * M ** 3 / (t * 1e-3) / 1e12 * 1980 / mhz, 2)])
    write("mma_launches4.csv", ["run", "kernel", "copy", "stages", "M", "rep", "time_ms", "sm_mhz", "tflops_at_1980"], rows)
    # ncu
    lines = r2["ncu_mma4.csv"].splitlines()
    i = next(k for k, ln in enumerate(lines) if '"Kernel Name"' in ln)
    data = list(csv.reader(lines[i:]))
    h, body = data[0], data[2:]
    f = lambda s: float(s.replace(",", ""))
    out = []
    for d in body:
        r = dict(zip(h, d))
        m = re.search(r"<(\d+), (\d+), 32, (\d+), (\d+), (\d+), (\w+)>", r["Kernel Name"])
        BM, BN, wm, wn, S = map(int, m.groups()[:5])
        copy = int(m.group(6) in ("true", "1"))
        warps, blocks = wm * wn, f(r["Grid Size"].strip("()").split(",")[0])
        out.append([f"mma_{BM}x{BN}_w{wm}x{wn}", copy, S, round(f(r["inst_executed"]) / (blocks * warps * 4096 / 32), 1),
                    int(f(r["gpc__cycles_elapsed.max"])), round(f(r["gpc__cycles_elapsed.avg.per_second"]) / 1e6),
                    r["smsp__average_warp_latency_per_inst_issued.ratio"], r["smsp__issue_active.avg.pct_of_peak_sustained_active"],
                    r["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"],
                    r["smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"],
                    r["smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"]])
    write("mma_ncu4.csv", ["kernel", "copy", "stages", "inst_per_warp_step", "cycles", "sm_mhz", "warp_latency_per_inst",
                           "issue_active_pct", "stall_long_scoreboard", "stall_barrier", "stall_short_scoreboard"], out)
    # SASS
    sass = r2["sass_mma_pipe4.txt"]
    rows = []
    for m, ins in functions(sass, r"mma_gemmILi(\d+)ELi(\d+)ELi\d+ELi(\d+)ELi(\d+)ELi(\d+)ELb([01])"):
        BM, BN, wm, wn, S, cp = m.groups()
        cnt = lambda body, op: sum(1 for t in body if re.search(rf"(^|\s){op}(\.|\s|$)", t))
        i0, i1 = longest_loop(ins, "HMMA")  # the k-loop: the longest backward branch whose body holds HMMA
        body, whole = [t for _, t in ins[i0:i1 + 1]], [t for _, t in ins]
        rows.append([f"mma_{BM}x{BN}_w{wm}x{wn}", cp, S, len(whole), cnt(whole, "HMMA"), cnt(whole, "LDGSTS"), len(body),
                     cnt(body, "HMMA"), cnt(body, "LDGSTS"), cnt(body, "LDSM"), cnt(body, "BAR"), cnt(body, "DEPBAR")])
    write("sass_counts4.csv", ["kernel", "copy", "stages", "instructions", "HMMA", "LDGSTS", "kloop_instructions",
                               "kloop_HMMA", "kloop_LDGSTS", "kloop_LDSM", "kloop_BAR", "kloop_DEPBAR"], rows)


if __name__ == "__main__":
    main()
