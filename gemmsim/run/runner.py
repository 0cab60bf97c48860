"""The whole flow of ``gemmsim run``, wired once.

    load     -> experiment.load_experiment + experiment.plan: check the file, load machines, expand the cases
    connect  -> executor.make_executor: local processes (default: every core) or a Dask cluster, before anything
                is written, so an unreachable scheduler leaves no trace
    cache    -> ResultCache.get: cases already simulated (same case, same machine content, same gemmsim code)
                are read from the cache folder instead of recomputed
    simulate -> sim.run_case per remaining case on the executor: trace -> models -> metrics -> timing;
                each result is written to the cache as it arrives, so an interrupted run resumes
    collect  -> one row per case: every parameter and counter; workload rows get op totals (time x count)
    host     -> host.run_host: the CPU kernels run for real on this computer, after the simulations (so nothing
                else competes for the cores), beside the model of the detected 'host' machine
    report   -> report.tables.write_results: resolved experiment, results.csv/json, figures; report.html.write_html_report:
                report.html from those files; report.tables.table for the terminal

A run writes into ``OUT.partial`` and renames it to ``OUT`` only when everything succeeded, so a folder named like
a result is always complete.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gemmsim.errors import ExperimentError, GemmsimError, KernelError, OutputError, output_error
from gemmsim.run.executor import Executor, LocalExecutor, make_executor
from gemmsim.run.experiment import Plan, load_experiment, plan
from gemmsim.sim.dispatch import Case, check_case, run_case


@dataclass
class RunResult:
    """What a run produced: rows (one per case), the folder written, notes for the reader."""

    rows: list[dict]
    out_dir: Path | None
    notes: list[str] = field(default_factory=list)
    workload_totals: list[dict] = field(default_factory=list)
    headline: object = None  # the experiment's gemmsim.report.headline.Headline (what the table shows first), or None


class Progress:
    """Cases done, elapsed, and an estimate of the time left, on stderr (silent when ``quiet``).

    Cases read from the cache are counted at once (one line) and left out of the time estimate, which
    extrapolates from the cases actually simulated.
    """

    def __init__(self, total: int, quiet: bool = False, stream=None):
        self.total, self.done, self.from_cache, self.quiet = total, 0, 0, quiet
        self.stream = stream or sys.stderr
        self.start = time.monotonic()

    def cached(self, n: int) -> None:
        """Count ``n`` cases found in the cache and say so."""
        if n <= 0:
            return
        self.done += n
        self.from_cache += n
        self.start = time.monotonic()
        if not self.quiet:
            print(f"[{self.done}/{self.total}] {n} case{'s' if n != 1 else ''} from the cache", file=self.stream, flush=True)

    def step(self, label: str) -> None:
        """Count one finished case and print a line."""
        self.done += 1
        if self.quiet:
            return
        el = time.monotonic() - self.start
        computed = self.done - self.from_cache
        left = el / computed * (self.total - self.done) if computed else 0.0
        cache = f", {self.from_cache} from the cache" if self.from_cache else ""
        print(f"[{self.done}/{self.total}] {label}  ({el:.1f} s elapsed, ~{left:.0f} s left{cache})", file=self.stream, flush=True)


#: A parameter value longer than this is shown by its length in a progress line (instruction traces run to kilobytes)
LABEL_VALUE_CHARS = 40


def _label(case: Case) -> str:
    shape = f" M={case.M} N={case.N} K={case.K}" if case.M is not None else ""
    shown = ((k, str(v)) for k, v in case.params.items() if v is not None)
    params = " ".join(f"{k}={v}" if len(v) <= LABEL_VALUE_CHARS else f"{k}=<{len(v)} chars>" for k, v in shown)
    return f"{case.machine} {case.name}{shape} {case.dtype} {params}".strip()


def _plain(v):
    """A JSON-able plain-Python value (numpy scalars and arrays become Python numbers and lists)."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if hasattr(v, "item"):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _simulate_item(item: tuple) -> tuple[dict, float]:
    """Executor task: simulate one (machine, case); returns the result columns (plain Python) and the wall time."""
    machine, case = item
    t0 = time.perf_counter()
    try:
        res = run_case(machine, case)
    except GemmsimError as err:  # say which case, in the same family of error
        raise type(err)(f"case {_label(case)}: {err.message}", source=err.source, problems=err.problems) from None
    return _plain(res), time.perf_counter() - t0


def _row(case: Case, kind: str, res: dict, wall_s: float, from_cache: bool) -> dict:
    return {
        **case.columns(), "machine_kind": kind, **case.tags, **res, "case_key": case.key(), "sim_wall_s": wall_s, "from_cache": from_cache
    }


#: sources that only present results (or orchestrate runs) and cannot change what run_case returns, relative to the
#: package: the report/ and cli/ packages, the runner and executor of run/, and __main__
_PRESENTATION = ("__main__.py", "cli/*", "report/*", "run/runner.py", "run/executor.py")


def _is_presentation(rel: str) -> bool:
    return any(rel == pat or (pat.endswith("/*") and rel.startswith(pat[:-1])) for pat in _PRESENTATION)


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of gemmsim's version and its source files (all but the presentation modules): a changed model invalidates
    the cache. Computed once per process, like the modules it describes, which are imported once."""
    from gemmsim import __version__

    h = hashlib.sha256(__version__.encode())
    root = Path(__file__).resolve().parents[1]
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if _is_presentation(rel):
            continue
        h.update(rel.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def default_cache_dir(out_dir: str | os.PathLike) -> Path:
    """The cache beside the results folders: results/.cache for the default results/NAME-DATE-TIME."""
    return Path(out_dir).parent / ".cache"


class ResultCache:
    """Results of simulated cases, one JSON file per case under ``folder``, keyed by a hash of what defines them.

    The key covers the case (kernel, parameters, shape, dtype, layout; not its experiment name, label or
    tags, which do not change the simulation, so experiments share results), the machine's whole content
    (a changed machine file misses) and ``code_fingerprint()`` (a changed gemmsim misses). Files are written
    atomically as each case finishes, so an interrupted run keeps what it computed.
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.hits = self.writes = 0

    @staticmethod
    def key(machine, case: Case) -> str:
        """Hex digest identifying the simulation of ``case`` on ``machine`` with this gemmsim."""
        c = {k: v for k, v in case.to_dict().items() if k not in ("experiment", "label", "tags")}
        blob = json.dumps({"case": c, "machine": machine.model_dump(mode="json"), "code": code_fingerprint()}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, machine, case: Case) -> tuple[dict, float] | None:
        """(result columns, simulation wall time) if this case was simulated before; None otherwise (or if unreadable)."""
        p = self._path(self.key(machine, case))
        try:
            data = json.loads(p.read_text())
            out = data["result"], float(data["sim_wall_s"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self.hits += 1
        return out

    def put(self, machine, case: Case, result: dict, wall_s: float) -> None:
        """Store one case's result (atomically: a reader never sees half a file)."""
        key = self.key(machine, case)
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f"{p.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "case": case.to_dict(), "result": result, "sim_wall_s": wall_s}, default=str))
        os.replace(tmp, p)
        self.writes += 1


def _from_file(source: str, results):
    """Pass results through; a case's GemmsimError without a file gets the experiment file as its source."""
    try:
        yield from results
    except GemmsimError as err:
        if err.source and Path(err.source.rsplit(":", 2)[0]).exists():
            raise  # already names a file
        msg = f"{err.source}: {err.message}" if err.source else err.message
        raise type(err)(msg, source=source, problems=err.problems) from None


def simulate_cases(
    p: Plan,
    jobs: int | None = None,
    quiet: bool = False,
    executor: Executor | None = None,
    cache: ResultCache | None = None,
) -> list[dict]:
    """Run every case of a plan and return rows in plan order.

    Cases found in ``cache`` are not recomputed; the others run on ``executor`` (default: local processes,
    ``jobs`` of them, all cores when None) and are written to the cache as they finish. Cases that differ only
    in what does not change the simulation (experiment, label, tags) are simulated once.
    """
    cases = p.cases
    prog = Progress(len(cases), quiet)
    rows: list[dict | None] = [None] * len(cases)
    # cases that simulate the same thing (a decode attention op does not depend on the batch) run once
    same: dict[str, list[int]] = {}
    for i, c in enumerate(cases):
        same.setdefault(ResultCache.key(p.machines[c.machine], c), []).append(i)
    todo: list[list[int]] = []
    for idx in same.values():
        c = cases[idx[0]]
        hit = cache.get(p.machines[c.machine], c) if cache is not None else None
        if hit is None:
            todo.append(idx)
        else:
            for i in idx:
                rows[i] = _row(cases[i], p.machines[c.machine].kind, hit[0], hit[1], True)
    prog.cached(len(cases) - sum(len(idx) for idx in todo))
    ex = executor or LocalExecutor(jobs)
    try:
        for j, (res, wall) in _from_file(p.source, ex.map(_simulate_item, [(p.machines[cases[idx[0]].machine], cases[idx[0]]) for idx in todo])):
            first = cases[todo[j][0]]
            if cache is not None:
                cache.put(p.machines[first.machine], first, res, wall)
            for i in todo[j]:
                rows[i] = _row(cases[i], p.machines[first.machine].kind, res, wall, False)
                prog.step(_label(cases[i]))
    finally:
        if executor is None:
            ex.close()
    return rows  # type: ignore[return-value]


def workload_totals(rows: list[dict]) -> list[dict]:
    """Per workload point (workload, phase, batch, dtype) and machine and kernel: the ops added up.

    Adds ``op_time_s`` = time_s x count and ``op_flops`` = flops x count to each workload row (in place) and returns
    one summary per group: ops, FLOPs, modelled time, achieved GFLOP/s, the op that takes the most time, and how
    many ops ran more than once (``serialised_ops``).
    Attention ops (count = batch x heads) are timed as ``count`` GEMMs one after another, an upper bound for a
    batched kernel that runs them side by side.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("workload") is None:
            continue
        r["op_time_s"] = r["time_s"] * r["count"]
        r["op_flops"] = r["flops"] * r["count"]
        params = json.dumps({k: v for k, v in r.items() if k.startswith("p_")}, sort_keys=True, default=str)
        key = (r["workload"], r["phase"], r["batch"], r["seq_len"], r["dtype"], r["machine"], r["label"], params)
        groups.setdefault(key, []).append(r)
    out = []
    for (wl, phase, batch, seq_len, dtype, machine, label, _), rs in groups.items():
        t = sum(r["op_time_s"] for r in rs)
        fl = sum(r["op_flops"] for r in rs)
        for r in rs:
            r["op_time_share"] = r["op_time_s"] / t if t else float("nan")
        top = max(rs, key=lambda r: r["op_time_s"])
        out.append(
            {
                "workload": wl,
                "phase": phase,
                "batch": batch,
                "seq_len": seq_len,
                "dtype": dtype,
                "machine": machine,
                "kernel": label,
                "ops": len(rs),
                "flops": fl,
                "time_s": t,
                "gflops": fl / t / 1e9 if t else float("nan"),
                "dram_bytes": sum(r["dram_bytes"] * r["count"] for r in rs),
                "slowest_op": top["op"],
                "slowest_op_share": top["op_time_s"] / t if t else float("nan"),
                "slowest_op_bound": top.get("bound"),
                "serialised_ops": sum(r["count"] > 1 for r in rs),
            }
        )
    return out


def workload_notes(totals: list[dict]) -> list[str]:
    """One plain sentence per workload total."""
    notes = []
    for s in totals:
        notes.append(
            f"workload {s['workload']} {s['phase']} B={s['batch']} L={s['seq_len']} {s['dtype']} on {s['machine']} ({s['kernel']}): "
            f"{s['ops']} ops, {s['flops'] / 1e9:.3g} GFLOP in {s['time_s'] * 1e3:.3g} ms modelled = {s['gflops']:.3g} GFLOP/s; "
            f"{s['slowest_op']} takes {100 * s['slowest_op_share']:.0f} % ({s['slowest_op_bound']}-bound)"
        )
    if any(s["serialised_ops"] for s in totals):
        notes.append("workload times add each op's time x count: the B x heads attention GEMMs are timed one after another (an upper bound for a batched kernel)")
    return notes


def write_workload_totals(folder: Path, totals: list[dict]) -> None:
    """workloads.csv: one line per workload total (empty runs write nothing)."""
    if not totals:
        return
    with open(folder / "workloads.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(totals[0]))
        w.writeheader()
        w.writerows(totals)


def host_cross_check(p: Plan, rows: list[dict], quiet: bool = False) -> list[str]:
    """Run the CPU kernels of the 'host' machine for real; add measured columns; say whether rankings agree."""
    from gemmsim.run.host import blas_time, host_clock_ghz, host_columns, magnitude_notes, run_host
    from gemmsim.sim.cpu import CPU_KERNELS

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
        try:
            r = run_host(c.kernel, c.M, c.N, c.K, c.dtype, c.params, warmup=spec.warmup, repeats=spec.repeats)
        except KernelError as err:  # a dtype the host kernels cannot compute (or int8 that would overflow int32)
            rows[i]["host_note"] = f"skipped: {err.message}"
            notes.append(f"host run of {c.name} {c.M}x{c.N}x{c.K} {c.dtype} skipped: {err.message}")
            continue
        blas = blas_time(c.M, c.N, c.K, c.dtype, warmup=spec.warmup, repeats=spec.repeats)
        rows[i].update(host_columns(r, c.M, c.N, c.K, rows[i].get("time_s"), blas, host_clock_ghz(), c.kernel))
        if not quiet:
            print(f"[host] {_label(c)}: {r.median_s * 1e3:.2f} ms, {'ok' if r.ok else 'WRONG RESULT'}", file=sys.stderr, flush=True)
        if not r.ok:
            notes.append(f"host run of {c.name} {c.M}x{c.N}x{c.K} {c.dtype} is outside tolerance (max rel err {r.max_rel_err:.3g})")
    notes += ranking_notes([rows[i] for i in targets if "host_time_s" in rows[i]])
    notes += magnitude_notes([rows[i] for i in targets if "host_time_s" in rows[i]])
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


#: Model times within this relative distance are a tie (the model's numbers are exact; 1 % is below anything it resolves).
MODEL_TIE_RTOL = 0.01
#: Host times without a measured min..max range tie within this relative distance.
HOST_TIE_RTOL = 0.05


def _host_range(r: dict) -> tuple[float, float]:
    """The host's min..max over its repeats; without them (an older host module), the median +- HOST_TIE_RTOL / 2."""
    lo, hi = r.get("host_time_min_s"), r.get("host_time_max_s")
    if finite(lo) and finite(hi):
        return float(lo), float(hi)
    t = float(r["host_time_s"])
    return t * (1 - HOST_TIE_RTOL / 2), t * (1 + HOST_TIE_RTOL / 2)


def _model_tie(a: float, b: float) -> bool:
    return abs(a - b) <= MODEL_TIE_RTOL * max(abs(a), abs(b))


def _host_tie(a: dict, b: dict) -> bool:
    (la, ha), (lb, hb) = _host_range(a), _host_range(b)
    return ha >= lb and hb >= la


def _order(rs: list[dict], key, tie) -> str:
    """Labels fastest first, '=' between neighbours that tie, '<' where the next is slower."""
    rs = sorted(rs, key=key)
    out = str(rs[0]["label"])
    for a, b in zip(rs, rs[1:]):
        out += (" = " if tie(a, b) else " < ") + str(b["label"])
    return out


def ranking_notes(rows: list[dict]) -> list[str]:
    """For each shape and dtype: do model and host order the kernels the same way, up to ties?

    A pair of kernels is decided only when the model separates them by more than MODEL_TIE_RTOL and the host's
    min..max ranges over its repeats do not overlap; the model and the host agree on it when both put the same
    kernel first. The note gives both orders with '=' for ties, the host's largest spread, and agree / disagree
    counted over the decided pairs alone (Kendall's tau of the medians stays in ``rank_tau`` for reference).
    """
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["M"], r["N"], r["K"], r["dtype"]), []).append(r)
    notes = []
    for (M, N, K, dt), rs in groups.items():
        if len(rs) < 2:
            continue
        tau = kendall_tau([r["time_s"] for r in rs], [r["host_time_s"] for r in rs])
        for r in rs:
            r["rank_tau"] = tau
        decided, disagree, ties = 0, [], 0
        for i in range(len(rs)):
            for j in range(i + 1, len(rs)):
                a, b = rs[i], rs[j]
                if _model_tie(a["time_s"], b["time_s"]) or _host_tie(a, b):
                    ties += 1
                    continue
                decided += 1
                if (a["time_s"] < b["time_s"]) != (a["host_time_s"] < b["host_time_s"]):
                    disagree.append(f"{a['label']} vs {b['label']}")
        spread = max((r["host_time_max_s"] - r["host_time_min_s"]) / r["host_time_s"] for r in rs
                     if finite(r.get("host_time_max_s")) and finite(r.get("host_time_min_s")) and r["host_time_s"]) if any(
            finite(r.get("host_time_max_s")) for r in rs) else None
        model_order = _order(rs, lambda r: r["time_s"], lambda a, b: _model_tie(a["time_s"], b["time_s"]))
        host_order = _order(rs, lambda r: r["host_time_s"], _host_tie)
        head = f"host {M}x{N}x{K} {dt}: "
        if all(_model_tie(rs[0]["time_s"], r["time_s"]) for r in rs):
            verdict = f"the model gives all {len(rs)} kernels the same time (within {MODEL_TIE_RTOL:.0%}), so there is no ranking to compare"
        elif not decided:
            verdict = "every pair is a tie in the model or within the host's spread, so the rankings cannot disagree"
        elif not disagree:
            verdict = f"model and host rank the kernels the same way on all {decided} pairs both separate"
        else:
            verdict = (f"model and host rank the kernels differently on {len(disagree)} of the {decided} pairs both separate "
                       f"({', '.join(disagree[:4])}{' ...' if len(disagree) > 4 else ''})")
        tail = f"; {ties} pair(s) tie" if ties and decided else ""
        sp = f", repeats spread up to {spread:.0%}" if spread is not None else f", ties within {HOST_TIE_RTOL:.0%}"
        notes.append(f"{head}{verdict}{tail}. Model fastest first: {model_order}; host (median{sp}): {host_order}")
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
    executor: str | Executor = "local",
    address: str | None = None,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
) -> RunResult:
    """Run an experiment file end to end and write its results folder (see the module docstring).

    ``executor`` is 'local' (processes: ``jobs``, default every core), 'dask' (the scheduler at ``address``) or an
    Executor instance (not closed here). ``cache`` reuses and stores results in ``cache_dir`` (default: ``.cache``
    beside the results folder, i.e. results/.cache).
    """
    from gemmsim.report import tables as report
    from gemmsim.report.html import write_html_report

    exp = load_experiment(path)
    empty = [f"sweep.{k}: an empty list of values (it would leave no cases)" for k, v in exp.sweep.items() if not v]
    if empty:
        raise ExperimentError("experiment cannot run", source=str(path), problems=empty)
    p = plan(exp, source=str(path), quick=quick)
    if not p.cases:
        raise ExperimentError("the experiment expands to no cases", source=str(path), problems=p.skipped)
    out = Path(out_dir) if out_dir else default_out_dir(p.experiment.name)
    check_out_dir(out, force)
    too_large = guard_problems(p)
    if too_large:
        raise ExperimentError("cases too large to simulate or refused by the hardware", source=str(path), problems=too_large)
    if cache:
        check_cache_dir(Path(cache_dir or default_cache_dir(out)))
    ex = executor if isinstance(executor, Executor) else make_executor(executor, jobs=jobs, address=address)
    try:
        partial = out.with_name(out.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        notes = [f"not run: {s}" for s in p.skipped]
        rc = ResultCache(cache_dir or default_cache_dir(out)) if cache else None
        if not quiet:
            where = f"{ex.name} executor" + (f" at {ex.address}" if getattr(ex, "address", None) else "")
            print(f"{p.experiment.name}: {len(p.cases)} cases on {len(p.machines)} machines ({where})", file=sys.stderr, flush=True)
        rows = simulate_cases(p, jobs=jobs, quiet=quiet, executor=ex, cache=rc)
    finally:
        if not isinstance(executor, Executor):
            ex.close()
    hits = sum(bool(r["from_cache"]) for r in rows)
    if rc is not None and hits:
        notes.append(f"{hits} of {len(rows)} cases came from the cache {rc.folder} (run with --no-cache to recompute)")
    totals = workload_totals(rows)
    notes += workload_notes(totals)
    if host and any(c.machine == "host" for c in p.cases):
        notes += host_cross_check(p, rows, quiet=quiet)
    try:
        partial.mkdir(parents=True)
        report.write_results(partial, p, rows, notes, figures=figures)
        write_html_report(partial)
        write_workload_totals(partial, totals)
        if out.exists():
            shutil.rmtree(out)
        partial.rename(out)
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, OSError):
            raise output_error(exc, partial, "cannot write the results folder") from None
        raise
    return RunResult(rows, out, notes, totals, headline=p.experiment.headline)


def check_out_dir(out: Path, force: bool) -> None:
    """Refuse, before anything runs, a results folder that cannot be written: a file, under a file, read-only."""
    if out.exists() and not out.is_dir():
        raise OutputError("--out names a file, not a folder; choose a folder for the results", source=str(out))
    if out.exists() and any(out.iterdir()) and not force:
        raise ExperimentError(f"results folder {out} exists and is not empty; choose another --out or pass --force")
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"cannot create the results folder {out}: {parent} is a file, not a folder", source=str(out))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot create the results folder {out}: {parent} is not writable", source=str(out))


def check_cache_dir(folder: Path) -> None:
    """Refuse a result-cache folder that is a file, or that cannot be created (under a file or a read-only folder)."""
    if folder.exists() and not folder.is_dir():
        raise OutputError("--cache-dir names a file, not a folder (or pass --no-cache)", source=str(folder))
    parent = folder.absolute()
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        why = "is a file, not a folder" if not parent.is_dir() else "is not writable"
        raise OutputError(f"cannot create the result cache: {parent} {why} (or pass --no-cache)", source=str(folder))


def guard_problems(p: Plan) -> list[str]:
    """The cases of a plan the size guards refuse (gemmsim.guards), one line each, before anything is simulated."""
    from gemmsim import guards

    out: list[str] = []
    seen: set[tuple] = set()
    for c in p.cases:
        key = (c.machine, c.kernel, json.dumps(c.params, sort_keys=True, default=str), c.M, c.N, c.K, c.dtype)
        if key in seen:
            continue
        seen.add(key)
        try:
            check_case(p.machines[c.machine], c)
        except guards.SizeLimitError as err:
            out.append(err.message)
        except GemmsimError as err:  # a launch the hardware refuses: name the kernel entry it comes from
            entries = p.experiment.kernel_entries()
            i = next((i for i, e in enumerate(entries) if e.name == c.kernel
                      and all(c.params.get(k) == v for k, v in e.params.items())), None)
            field = f"kernels[{i}].params" if i is not None else f"kernel {c.kernel}"
            out.append(f"{field} ({c.kernel} on {c.machine}, M={c.M} N={c.N} K={c.K} {c.dtype}): {err.message}")
    return out


def finite(x) -> bool:
    """True for a finite number."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
