"""Time every shipped experiment at full size with a cold results cache, as a student would run it.

    python bench/bench_experiments.py [--only NAME ...] [--quick] [--jobs 2] [--no-host] [--slowest 3]

Each experiment runs in its own process (``python -m gemmsim run experiments/NAME.yaml --no-cache`` into a
temporary folder, so nothing cached is read and nothing is left behind). Printed per experiment: wall seconds,
the CPU seconds of that process and its workers (``resource.getrusage(RUSAGE_CHILDREN)``: on a shared machine the
wall time also counts other people's work, the CPU time does not), the number of cases, and the slowest cases
with their simulation wall time (``sim_wall_s`` of results.json). Targets (issue 17): each experiment under
2 minutes, all of them under 10 minutes, on the 2-core development machine. Not a test: the times depend on
the host and on what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_one(path: Path, args, tmp: Path) -> dict:
    out = tmp / path.stem
    cmd = [sys.executable, "-m", "gemmsim", "run", str(path), "--out", str(out), "--no-cache", "--quiet", "--force"]
    if args.quick:
        cmd.append("--quick")
    if args.no_host:
        cmd.append("--no-host")
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    c0, t0 = cpu_children(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, cpu_children() - c0
    rows = []
    res = out / "results.json"
    if res.exists():
        try:
            data = json.loads(res.read_text())
            rows = data["rows"] if isinstance(data, dict) and "rows" in data else data
        except (ValueError, KeyError, TypeError):
            rows = []
    slow = sorted((r for r in rows if isinstance(r, dict) and "sim_wall_s" in r), key=lambda r: -float(r["sim_wall_s"]))
    return {"name": path.stem, "wall": wall, "cpu": cpu, "rc": proc.returncode, "cases": len(rows), "slow": slow,
            "err": proc.stderr.strip().splitlines()[-1:] if proc.returncode else []}  # fmt: skip


def describe(r: dict) -> str:
    keys = ("machine", "kernel", "label", "M", "N", "K", "dtype")
    return " ".join(f"{r[k]}" for k in keys if k in r and r[k] not in (None, "")) + f" {float(r['sim_wall_s']):.1f}s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", help="experiment names (default: every experiments/*.yaml)")
    ap.add_argument("--quick", action="store_true", help="the experiments' quick cases (a smoke run)")
    ap.add_argument("--jobs", type=int, default=None, help="processes per experiment (default: the runner's, all cores)")
    ap.add_argument("--no-host", action="store_true", help="skip the host cross-check runs")
    ap.add_argument("--slowest", type=int, default=3, help="slowest cases to list per experiment")
    args = ap.parse_args()
    paths = sorted((ROOT / "experiments").glob("*.yaml"))
    if args.only:
        paths = [p for p in paths if p.stem in set(args.only)]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; cold cache, {'quick' if args.quick else 'full'} size")
    print(f"{'experiment':<22}{'wall s':>9}{'cpu s':>9}{'cases':>7}  slowest cases (simulation wall time)")
    total_wall = total_cpu = 0.0
    with tempfile.TemporaryDirectory(prefix="gemmsim-bench-") as tmp:
        for p in paths:
            r = run_one(p, args, Path(tmp))
            total_wall += r["wall"]
            total_cpu += r["cpu"]
            flag = "" if r["rc"] == 0 else f"  FAILED rc={r['rc']}: {' '.join(r['err'])}"
            slow = "; ".join(describe(x) for x in r["slow"][: args.slowest])
            over = " (over 2 min)" if r["wall"] > 120 else ""
            print(f"{r['name']:<22}{r['wall']:>9.1f}{r['cpu']:>9.1f}{r['cases']:>7}  {slow}{over}{flag}", flush=True)
    print(f"{'all':<22}{total_wall:>9.1f}{total_cpu:>9.1f}   load average now {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
