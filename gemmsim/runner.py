"""The whole flow of ``gemmsim run``, wired once.

    load     -> experiment.load_experiment + experiment.plan: check the file, load machines, expand the cases
    simulate -> simulate.run_case per case, in parallel processes: trace -> models -> metrics -> timing
    collect  -> one row per case: every parameter and counter
    host     -> host.run_host: the CPU kernels run for real on this computer, after the simulations (so nothing
                else competes for the cores), beside the model of the detected 'host' machine
    report   -> report.write_results: resolved experiment, results.csv/json, figures; report.table for the terminal

A run writes into ``OUT.partial`` and renames it to ``OUT`` only when everything succeeded, so a folder named like
a result is always complete.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from gemmsim.errors import ExperimentError
from gemmsim.experiment import Plan, load_experiment, plan
from gemmsim.simulate import Case, run_case


@dataclass
class RunResult:
    """What a run produced: rows (one per case), the folder written, notes for the reader."""

    rows: list[dict]
    out_dir: Path | None
    notes: list[str] = field(default_factory=list)


class Progress:
    """Cases done, elapsed, and an estimate of the time left, on stderr (silent when ``quiet``)."""

    def __init__(self, total: int, quiet: bool = False, stream=None):
        self.total, self.done, self.quiet = total, 0, quiet
        self.stream = stream or sys.stderr
        self.start = time.monotonic()

    def step(self, label: str) -> None:
        """Count one finished case and print a line."""
        self.done += 1
        if self.quiet:
            return
        el = time.monotonic() - self.start
        left = el / self.done * (self.total - self.done)
        print(f"[{self.done}/{self.total}] {label}  ({el:.1f} s elapsed, ~{left:.0f} s left)", file=self.stream, flush=True)


def _label(case: Case) -> str:
    shape = f" M={case.M} N={case.N} K={case.K}" if case.M is not None else ""
    params = " ".join(f"{k}={v}" for k, v in case.params.items() if v is not None)
    return f"{case.machine} {case.name}{shape} {case.dtype} {params}".strip()


def _run_one(machine, case: Case) -> dict:
    t0 = time.perf_counter()
    res = run_case(machine, case)
    row = {**case.columns(), **res, "case_key": case.key(), "sim_wall_s": time.perf_counter() - t0}
    return row


def simulate_cases(p: Plan, jobs: int | None = None, quiet: bool = False) -> list[dict]:
    """Run every case of a plan (in parallel processes when there are several) and return rows in plan order."""
    cases = p.cases
    prog = Progress(len(cases), quiet)
    jobs = jobs or os.cpu_count() or 1
    rows: list[dict | None] = [None] * len(cases)
    if jobs <= 1 or len(cases) <= 1:
        for i, c in enumerate(cases):
            rows[i] = _run_one(p.machines[c.machine], c)
            prog.step(_label(c))
        return rows  # type: ignore[return-value]
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=min(jobs, len(cases)), mp_context=ctx) as pool:
        futs = {pool.submit(_run_one, p.machines[c.machine], c): i for i, c in enumerate(cases)}
        for fut in as_completed(futs):
            i = futs[fut]
            rows[i] = fut.result()
            prog.step(_label(cases[i]))
    return rows  # type: ignore[return-value]


def host_cross_check(p: Plan, rows: list[dict], quiet: bool = False) -> list[str]:
    """Run the CPU kernels of the 'host' machine for real; add measured columns; say whether rankings agree."""
    from gemmsim.host import run_host
    from gemmsim.sim_cpu import CPU_KERNELS

    notes: list[str] = []
    spec = p.experiment.host
    if not spec.enabled:
        return notes
    targets = [i for i, c in enumerate(p.cases) if c.machine == "host" and c.kernel in CPU_KERNELS and CPU_KERNELS[c.kernel].host]
    for i in targets:
        c = p.cases[i]
        flops = 2.0 * c.M * c.N * c.K
        if flops > spec.max_flops:
            rows[i]["host_note"] = f"skipped: {flops:.3g} FLOPs > host.max_flops"
            continue
        r = run_host(c.kernel, c.M, c.N, c.K, c.dtype, c.params, warmup=spec.warmup, repeats=spec.repeats)
        rows[i].update(
            host_time_s=r.median_s,
            host_gflops=flops / r.median_s / 1e9 if r.median_s else float("nan"),
            host_ok=r.ok,
            host_max_rel_err=r.max_rel_err,
            host_tolerance=r.tolerance,
        )
        if not quiet:
            print(f"[host] {_label(c)}: {r.median_s * 1e3:.2f} ms, {'ok' if r.ok else 'WRONG RESULT'}", file=sys.stderr, flush=True)
        if not r.ok:
            notes.append(f"host run of {c.name} {c.M}x{c.N}x{c.K} {c.dtype} is outside tolerance (max rel err {r.max_rel_err:.3g})")
    notes += ranking_notes([rows[i] for i in targets if "host_time_s" in rows[i]])
    return notes


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def kendall_tau(a: list[float], b: list[float]) -> float:
    """Kendall's tau-a between two rankings: +1 same order, -1 reversed."""
    n = len(a)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if not pairs:
        return float("nan")
    return sum(_sign(a[i] - a[j]) * _sign(b[i] - b[j]) for i, j in pairs) / len(pairs)


def ranking_notes(rows: list[dict]) -> list[str]:
    """For each shape and dtype, do model and host rank the kernels the same way? (Kendall's tau)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["M"], r["N"], r["K"], r["dtype"]), []).append(r)
    notes = []
    for (M, N, K, dt), rs in groups.items():
        if len(rs) < 2:
            continue
        model = [r["time_s"] for r in rs]
        host = [r["host_time_s"] for r in rs]
        tau = kendall_tau(model, host)
        order_m = [r["label"] for r in sorted(rs, key=lambda r: r["time_s"])]
        order_h = [r["label"] for r in sorted(rs, key=lambda r: r["host_time_s"])]
        same = order_m == order_h
        for r in rs:
            r["rank_tau"] = tau
        notes.append(
            f"host {M}x{N}x{K} {dt}: model and host rank the kernels "
            + ("the same way" if same else f"differently (Kendall tau {tau:+.2f})")
            + f"; model fastest->slowest: {' < '.join(order_m)}; host: {' < '.join(order_h)}"
        )
    return notes


def default_out_dir(name: str) -> Path:
    """results/<name>-<date>-<time> under the current folder."""
    return Path("results") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_experiment(
    path: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    quick: bool = False,
    jobs: int | None = None,
    quiet: bool = False,
    host: bool = True,
    figures: bool = True,
    force: bool = False,
) -> RunResult:
    """Run an experiment file end to end and write its results folder (see the module docstring)."""
    from gemmsim import report

    exp = load_experiment(path)
    p = plan(exp, source=str(path), quick=quick)
    if not p.cases:
        raise ExperimentError("the experiment expands to no cases", source=str(path), problems=p.skipped)
    out = Path(out_dir) if out_dir else default_out_dir(p.experiment.name)
    if out.exists() and any(out.iterdir()) and not force:
        raise ExperimentError(f"results folder {out} exists and is not empty; choose another --out or pass --force")
    partial = out.with_name(out.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    notes = [f"not run: {s}" for s in p.skipped]
    if not quiet:
        print(f"{p.experiment.name}: {len(p.cases)} cases on {len(p.machines)} machines", file=sys.stderr, flush=True)
    rows = simulate_cases(p, jobs=jobs, quiet=quiet)
    if host and any(c.machine == "host" for c in p.cases):
        notes += host_cross_check(p, rows, quiet=quiet)
    try:
        partial.mkdir(parents=True)
        report.write_results(partial, p, rows, notes, figures=figures)
        if out.exists():
            shutil.rmtree(out)
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return RunResult(rows, out, notes)


def finite(x) -> bool:
    """True for a finite number."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
