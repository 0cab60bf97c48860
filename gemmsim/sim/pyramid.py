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

from gemmsim.kernels.pyramid import chase_trace
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.schema import Bytes, Strict


class ChaseParams(Strict):
    """Pointer chase over a working set."""

    working_set: Bytes = Field(32768, description="Bytes the chase cycles through ('32KiB', '64MiB').")
    passes: int = Field(2, ge=1, le=64, description="Measured passes around the cycle (after one warm-up pass).")
    seed: int = Field(0, ge=0, description="Seed of the random cycle.")


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
        "working_set_bytes": p.working_set, "loads": loads, "served_by": served,
        "avg_latency_cycles": total / loads, "avg_latency_ns": total / loads / machine.clock_ghz,
        "avg_cache_latency_cycles": cycles / loads, "avg_tlb_cycles": tlb_cycles / loads,
        "dram_latency_cycles": dram_cycles,
    }
    for n, x in zip(names, hits + [mem]):
        row[f"served_{n}_fraction"] = x / loads
    for c in machine.caches:
        row[f"{c.name}_latency_cycles"] = c.latency_cycles
    return row


def run_case(machine, case) -> dict:
    """Runner entry point for the chase kernel."""
    return simulate_chase(machine, ChaseParams(**case.params))
