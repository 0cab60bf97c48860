"""Modelled time of a CPU case, from its counters and the machine alone.

The model is a roofline with one roof per resource, plus a latency roof (assumptions, in order):

1. compute: FLOPs / peak. A ``simd`` kernel runs at FMA units x lanes x 2 FLOP/cycle; a scalar one (the plain
   loop orders, whose trace has one access per element) at FMA units x 1 x 2 -- an honest scalar loop.
2. issue: the core issues at most ``loads_per_cycle`` loads and ``stores_per_cycle`` stores per cycle (L1 ports).
3. one transfer roof per boundary: bytes moved between level i and level i+1 (line fills for misses plus
   write-backs, in whole lines) over level i+1's bandwidth (bytes/cycle per core; a shared level's bandwidth
   scales with the threads using it); the last boundary is DRAM, at the socket's GB/s.
4. latency: misses that cannot overlap. Every miss at level i waits for level i+1's latency (DRAM's for the last
   level); the core overlaps at most ``miss_parallelism`` of them (its line fill buffers). TLB misses add their
   penalty in full (page walks are few and mostly serialised). This roof is what makes a strided walk (ijk's
   column of B) slow even when the bytes are few; hardware prefetchers, which hide latency of sequential streams,
   are not modelled, so streaming kernels are a little pessimistic here.

``time_s`` is the highest roof and ``bound`` names it; ``time_ecm_s`` is the ECM-style sum (max(compute, issue) plus
every transfer term, nothing overlapped), an upper estimate shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CPUTime:
    """The roofs (seconds) and the verdict."""

    roofs: dict[str, float] = field(default_factory=dict)
    time_s: float = 0.0
    bound: str = "compute"
    time_ecm_s: float = 0.0

    def columns(self) -> dict:
        """Result-row columns: t_<roof>_s for every roof, time_s, bound, time_ecm_s."""
        row = {f"t_{k}_s": v for k, v in self.roofs.items()}
        row.update(time_s=self.time_s, bound=self.bound, time_ecm_s=self.time_ecm_s)
        return row


def cpu_time(machine, counters: dict, flops: float, dtype: str, simd: bool = False, threads: int = 1) -> CPUTime:
    """Modelled time of a CPU kernel from Hierarchy counters (see the module docstring for the model).

    ``counters`` is ``Hierarchy.counters()``: ``levels`` (loads, stores, load_misses, store_misses, writebacks per
    level, L1 first; per-core private levels already summed), ``memory`` (line_reads, line_writes), ``tlbs``.
    """
    hz = machine.clock_ghz * 1e9
    threads = max(1, min(threads, machine.cores))
    lanes = machine.lanes(dtype) if simd else 1
    roofs: dict[str, float] = {}
    roofs["compute"] = flops / (machine.fma_units * lanes * 2 * hz * threads)
    levels = counters["levels"]
    l1 = levels[0]
    roofs["issue"] = max(l1["loads"] / machine.loads_per_cycle, l1["stores"] / machine.stores_per_cycle) / (hz * threads)

    latency_cycles = 0.0
    transfer_sum = 0.0
    specs = machine.caches
    for i, (lv, spec) in enumerate(zip(levels, specs)):
        misses = lv["load_misses"] + lv["store_misses"]
        if i + 1 < len(specs):
            below = specs[i + 1]
            moved = (levels[i + 1]["loads"] + levels[i + 1]["stores"]) * spec.line_bytes
            t = moved / (below.bandwidth_bytes_per_cycle * hz * threads)
            roofs[below.name] = t
            latency_cycles += misses * below.latency_cycles
        else:
            mem = counters["memory"]
            moved = (mem["line_reads"] + mem["line_writes"]) * spec.line_bytes
            roofs["dram"] = moved / (machine.dram.bandwidth_gbps * 1e9)
            latency_cycles += misses * machine.dram.latency_ns * machine.clock_ghz
        transfer_sum += roofs[below.name] if i + 1 < len(specs) else roofs["dram"]
    tlb_cycles = 0.0
    for tl, spec in zip(counters.get("tlbs", []), machine.tlbs):
        tlb_cycles += tl["misses"] * spec.miss_penalty_cycles
    roofs["latency"] = (latency_cycles / machine.miss_parallelism + tlb_cycles) / (hz * threads)
    bound = max(roofs, key=roofs.get)
    ecm = max(roofs["compute"], roofs["issue"]) + transfer_sum
    return CPUTime(roofs=roofs, time_s=roofs[bound], bound=bound, time_ecm_s=ecm)
