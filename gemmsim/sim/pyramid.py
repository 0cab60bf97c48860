"""Latency-pyramid cases on CPU machines: a pointer chase (``gemmsim.kernels.pyramid``) through the machine's caches
and TLBs, one warm-up pass then ``passes`` measured passes.

Every load depends on the previous one, so nothing overlaps (no ``miss_parallelism``): the time per load is the
latency of the level that serves it -- ``latency_cycles`` of each cache level, ``dram.latency_ns`` for memory --
plus the TLB miss penalties. ``avg_latency_cycles`` / ``avg_latency_ns`` are that average over the measured passes,
straight from the machine file's latencies weighted by the simulated hits, so the staircase's steps sit where the
simulated caches stop holding the working set.
"""

from __future__ import annotations

from pydantic import Field

import math
import re
from pathlib import Path

from gemmsim.errors import MachineFileError
from gemmsim.kernels.pyramid import chase_trace
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.schema import Bytes, Strict


class ChaseParams(Strict):
    """Pointer chase over a working set."""

    working_set: Bytes = Field(32768, description="Bytes the chase cycles through ('32KiB', '64MiB').")
    passes: int = Field(2, ge=1, le=64, description="Measured passes around the cycle (after one warm-up pass).")
    seed: int = Field(0, ge=0, description="Seed of the random cycle.")
    measured: str | None = Field(
        None, description="A machine file written by `machines detect --measure` whose latency staircase (its comments) "
        "is put beside the model: measured_latency_ns at the same working set (log-interpolated).",
    )


KERNELS = {"chase": ChaseParams}


def _served(counters: dict) -> tuple[list[int], int, list[int], int]:
    lv = counters["levels"]
    return ([x["load_hits"] for x in lv], counters["memory"]["line_reads"], [t["misses"] for t in counters.get("tlbs", [])],
            lv[0]["loads"])


def simulate_chase(machine, p: ChaseParams) -> dict:
    """One pointer-chase case: counters of the measured passes, average latency, the level that serves most loads."""
    line = machine.caches[0].line_bytes
    h = Hierarchy.from_machine(machine)
    for c in chase_trace(p.working_set, line, 1, seed=p.seed):
        h.feed(c)
    hits0, mem0, tlb0, loads0 = _served(h.counters())
    for c in chase_trace(p.working_set, line, p.passes, seed=p.seed):
        h.feed(c)
    hits1, mem1, tlb1, loads1 = _served(h.counters())
    hits = [b - a for a, b in zip(hits0, hits1)]
    mem = mem1 - mem0
    loads = loads1 - loads0
    tlb_miss = [b - a for a, b in zip(tlb0, tlb1)]
    dram_cycles = machine.dram.latency_ns * machine.clock_ghz
    cycles = sum(h_ * c.latency_cycles for h_, c in zip(hits, machine.caches)) + mem * dram_cycles
    tlb_cycles = sum(m * t.miss_penalty_cycles for m, t in zip(tlb_miss, machine.tlbs))
    total = cycles + tlb_cycles
    names = [c.name for c in machine.caches] + ["DRAM"]
    served = names[max(range(len(names)), key=lambda i: (hits + [mem])[i])]
    time_s = total / (machine.clock_ghz * 1e9)
    row = {
        "flops": 0.0, "dram_bytes": float(mem * line), "intensity_flop_per_byte": 0.0, "time_s": time_s, "gflops": 0.0,
        "peak_fraction": 0.0, "bound": "latency",
        "chase_bytes": p.working_set, "loads": loads, "served_by": served,
        "avg_latency_cycles": total / loads, "avg_latency_ns": total / loads / machine.clock_ghz,
        "avg_cache_latency_cycles": cycles / loads, "avg_tlb_cycles": tlb_cycles / loads,
        "dram_latency_cycles": dram_cycles,
    }
    for n, x in zip(names, hits + [mem]):
        row[f"served_{n}_fraction"] = x / loads
    for c in machine.caches:
        row[f"{c.name}_latency_cycles"] = c.latency_cycles
    return row


def measured_columns(path: str, working_set: int, model_ns: float) -> dict:
    """The measured staircase of a ``machines detect --measure`` file at ``working_set`` (log-log interpolation
    between its points), whether that size is one the file's latencies were set from (``fit_point``: those sizes
    are inputs of the model, not checks of it), and model / measured."""
    from gemmsim.machine.detect import read_measured_comments

    f = Path(path)
    try:
        text = f.read_text()
    except OSError as err:
        raise MachineFileError(f"cannot read the measured staircase: {err}", source=str(f)) from None
    stair = sorted(read_measured_comments(text)["staircase"])
    if not stair:
        raise MachineFileError("no '# staircase:' lines (write the file with `gemmsim machines detect --measure`)", source=str(f))
    fit = {int(x) for x in re.findall(r"pointer chase over (\d+) B", text)}
    sizes = [s for s, _ in stair]
    if working_set <= sizes[0] or working_set >= sizes[-1]:
        ns = stair[0][1] if working_set <= sizes[0] else stair[-1][1]
    else:
        i = next(k for k, s in enumerate(sizes) if s >= working_set)
        (s0, y0), (s1, y1) = stair[i - 1], stair[i]
        t = (math.log(working_set) - math.log(s0)) / (math.log(s1) - math.log(s0))
        ns = math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))
    near_fit = any(abs(math.log2(working_set / s)) < 0.5 for s in fit)
    return {"measured_latency_ns": ns, "model_over_measured": model_ns / ns, "fit_point": near_fit}


def run_case(machine, case) -> dict:
    """Runner entry point for the chase kernel."""
    p = ChaseParams(**case.params)
    row = simulate_chase(machine, p)
    if p.measured:
        row.update(measured_columns(p.measured, p.working_set, row["avg_latency_ns"]))
    return row
