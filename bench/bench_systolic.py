"""Benchmark: gemmsim's systolic model against SCALE-Sim's wall time on the same runs.

    python bench/bench_systolic.py               # SCALE-Sim times read from validation/scalesim/timings.json
    python bench/bench_systolic.py --live        # re-time SCALE-Sim now, in its venv ($SCALESIM_PYTHON or
                                                 # /tmp/scalesim-venv/bin/python), for the 256 x 256 runs

For every SCALE-Sim run stored by validation/scalesim/run_scalesim.py in the groups 'big' (256 x 256 array,
M = N = K = 1024 and M = 1, N = K = 1024, three dataflows) and 'medium' (32 x 32 and 128 x 128 arrays on three
GEMMs), gemmsim simulates the same layers with convention="scalesim" (the same numbers as SCALE-Sim, see
tests/test_scalesim_crosscheck.py) and with convention="machine"; the table gives the best of --repeats wall
times and the ratio SCALE-Sim / gemmsim. The last lines time the trace-driven path (every SRAM access of a
256 x 256, 1024^3 GEMM through the SRAM counter) in accesses per second.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "validation" / "scalesim"


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _scalesim_python() -> str | None:
    cand = os.environ.get("SCALESIM_PYTHON") or "/tmp/scalesim-venv/bin/python"
    return cand if Path(cand).exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="gemmsim runs per case (best is kept)")
    ap.add_argument("--live", action="store_true", help="re-time SCALE-Sim's 256 x 256 runs now (minutes)")
    args = ap.parse_args(argv)

    from gemmsim import load_machine, simulate_systolic

    stored = json.loads((VALID / "timings.json").read_text())
    runs = {k: v for k, v in stored["runs"].items() if v["group"] in ("big", "medium")}
    source = f"stored in validation/scalesim/timings.json (SCALE-Sim {stored['meta']['scalesim_version']}, {stored['meta']['cpu_count']} CPUs)"
    py = _scalesim_python()
    if args.live:
        if py is None:
            print("SCALE-Sim is not installed here (no $SCALESIM_PYTHON, no /tmp/scalesim-venv): using its stored times", file=sys.stderr)
        else:
            subprocess.run([py, str(VALID / "run_scalesim.py"), "--group", "big"], check=True)
            stored = json.loads((VALID / "timings.json").read_text())
            runs.update({k: v for k, v in stored["runs"].items() if v["group"] == "big"})
            source = f"timed now with {py}"
    elif py is None:
        source += "; SCALE-Sim is not installed here"
    print(f"SCALE-Sim wall times: {source}")

    machine = load_machine("tpu_v1")  # array size overridden per run; scalesim SRAM sizes as SCALE-Sim ran
    rows = []
    for rid, run in sorted(runs.items(), key=lambda kv: (kv[1]["rows"], kv[0])):
        over = dict(rows=run["rows"], cols=run["cols"], ifmap_sram=run["ifmap_kib"] * 1024, filter_sram=run["filter_kib"] * 1024,
                    ofmap_sram=run["ofmap_kib"] * 1024)

        def ours(conv):
            for M, N, K in run["layers"]:
                simulate_systolic(machine, M=M, N=N, K=K, dataflow=run["dataflow"], convention=conv, **over)

        ours("scalesim")  # compile and warm
        t_s = _best(lambda: ours("scalesim"), args.repeats)
        t_m = _best(lambda: ours("machine"), args.repeats)
        layers = ", ".join("x".join(map(str, g)) for g in run["layers"])
        sram = f"{run['ifmap_kib']}/{run['filter_kib']}/{run['ofmap_kib']}"
        rows.append((f"{run['rows']}x{run['cols']}", run["dataflow"], sram, layers, run["wall_s"], t_s, t_m))
    print(f"{'array':>8} {'df':>3} {'SRAM KiB A/B/C':>15}  {'GEMMs (MxNxK)':<38} {'SCALE-Sim s':>11} {'gemmsim s':>10} {'ratio':>8} {'machine s':>10}")
    for arr, df, sram, layers, ts, ours_s, ours_m in rows:
        print(f"{arr:>8} {df:>3} {sram:>15}  {layers:<38} {ts:>11.2f} {ours_s:>10.4f} {ts / ours_s:>7.0f}x {ours_m:>10.4f}")

    r = simulate_systolic(machine, M=1024, N=1024, K=1024, dataflow="ws", convention="scalesim", rows=256, cols=256)
    n = sum(r.sram_reads.values()) + sum(r.sram_writes.values())
    t = _best(r.trace_counters, args.repeats)
    print(f"trace-driven path, 256x256 ws 1024^3: {n / 1e6:.1f} M SRAM accesses in {t:.3f} s = {n / t / 1e6:.0f} M accesses/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
