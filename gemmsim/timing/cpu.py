"""Modelled time of a CPU case, from its counters and the machine alone.

The model is a roofline with one roof per resource, plus a latency roof (assumptions, in order):

1. compute: FLOPs / peak. A ``simd`` kernel runs at FMA units x lanes x 2 FLOP/cycle; a scalar one (the plain
   loop orders, whose trace has one access per element) at FMA units x 1 x 2 -- an honest scalar loop. A kernel
   may report a ``compute_slowdown`` >= 1 (edge blocks computed the slow way, too few accumulators to hide the
   FMA latency), which multiplies this roof.
2. issue: the core issues at most ``loads_per_cycle`` loads and ``stores_per_cycle`` stores per cycle (L1 ports).
3. one transfer roof per boundary: bytes moved between level i and level i+1 (line fills for misses plus
   write-backs, in whole lines) over level i+1's bandwidth in bytes/cycle per core; the last boundary is DRAM, at
   the socket's GB/s, shared by every thread.
4. latency: misses that cannot overlap. Every miss at level i waits for level i+1's latency (DRAM's for the last
   level); the core overlaps at most ``miss_parallelism`` of them (its line fill buffers). TLB misses add their
   penalty in full (page walks are few and mostly serialised). A copy of a line invalidated by another core's
   store (false or true sharing) costs that core one latency of the first shared level, where the line is fetched
   again. This roof makes a strided walk (ijk's column of B) slow even when the bytes are few; hardware
   prefetchers, which hide the latency of sequential streams, are not modelled, so streaming kernels are a little
   pessimistic here.

With several threads, every per-core roof (compute, issue, transfers, latency) is taken on the busiest core: the
hierarchy reports private levels per core, and a shared level's traffic is attributed to cores in proportion to
what each core's last private level sent it. ``time_s`` is the highest roof and ``bound`` names it;
``time_ecm_s`` is the ECM-style sum (max(compute, issue) plus every transfer term, nothing overlapped), an upper
estimate shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_KEYS = ("loads", "stores", "load_misses", "store_misses", "writebacks", "invalidations")


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


def _per_core(levels: list[dict], threads: int) -> list[list[dict]]:
    """levels[i] as one counters dict per core: private levels as reported, shared ones split by what each core sent."""
    views: list[list[dict]] = []
    share = [1.0 / threads] * threads
    for lv in levels:
        if "per_core" in lv and len(lv["per_core"]) == threads:
            cores = [{k: c.get(k, 0) for k in _KEYS} for c in lv["per_core"]]
            sent = [c["load_misses"] + c["store_misses"] + c["writebacks"] for c in cores]
            total = sum(sent)
            share = [s / total for s in sent] if total else [1.0 / threads] * threads
        else:
            cores = [{k: lv.get(k, 0) * w for k in _KEYS} for w in share]
        views.append(cores)
    return views


def cpu_time(
    machine, counters: dict, flops: float, dtype: str, simd: bool = False, threads: int = 1, compute_slowdown: float = 1.0
) -> CPUTime:
    """Modelled time of a CPU kernel from Hierarchy counters (see the module docstring for the model).

    ``counters`` is ``Hierarchy.counters()``: ``levels`` (loads, stores, load_misses, store_misses, writebacks per
    level, L1 first; with several cores, private levels carry ``per_core``), ``memory`` (line_reads, line_writes),
    ``tlbs``.
    """
    hz = machine.clock_ghz * 1e9
    threads = max(1, threads)
    lanes = machine.lanes(dtype) if simd else 1
    levels = counters["levels"]
    specs = machine.caches
    views = _per_core(levels, threads)
    roofs: dict[str, float] = {}
    roofs["compute"] = flops * max(1.0, compute_slowdown) / (machine.fma_units * lanes * 2 * hz * min(threads, machine.cores))
    roofs["issue"] = max(max(c["loads"] / machine.loads_per_cycle, c["stores"] / machine.stores_per_cycle) for c in views[0]) / hz

    first_shared = next((s for s in specs if s.shared), None)
    inval_latency = first_shared.latency_cycles if first_shared else machine.dram.latency_ns * machine.clock_ghz
    latency = [c.get("invalidations", 0) * inval_latency for c in views[0]]
    for i, spec in enumerate(specs):
        misses = [c["load_misses"] + c["store_misses"] for c in views[i]]
        if i + 1 < len(specs):
            below = specs[i + 1]
            moved = [(c["loads"] + c["stores"]) * spec.line_bytes for c in views[i + 1]]
            roofs[below.name] = max(moved) / (below.bandwidth_bytes_per_cycle * hz)
            lat = below.latency_cycles
        else:
            mem = counters["memory"]
            roofs["dram"] = (mem["line_reads"] + mem["line_writes"]) * spec.line_bytes / (machine.dram.bandwidth_gbps * 1e9)
            lat = machine.dram.latency_ns * machine.clock_ghz
        latency = [t + m * lat for t, m in zip(latency, misses)]
    tlb_cycles = 0.0
    for tl, spec in zip(counters.get("tlbs", []), machine.tlbs):
        per = [c["misses"] for c in tl["per_core"]] if len(tl.get("per_core", [])) == threads else [tl["misses"] / threads]
        tlb_cycles += max(per) * spec.miss_penalty_cycles
    roofs["latency"] = (max(latency) / machine.miss_parallelism + tlb_cycles) / hz
    bound = max(roofs, key=roofs.get)
    transfers = sum(roofs[s.name] for s in specs[1:]) + roofs["dram"]
    ecm = max(roofs["compute"], roofs["issue"]) + transfers
    return CPUTime(roofs=roofs, time_s=roofs[bound], bound=bound, time_ecm_s=ecm)
