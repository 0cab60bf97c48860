"""CPU cases: kernel trace -> cache hierarchy and TLBs -> counters -> metrics -> modelled time.

``KERNELS`` merges every CPU kernel module (``gemmsim.kernels.cpu``: loop orders and blocked;
``gemmsim.kernels.cpu_packed``: packed Goto/BLIS kernels). ``run_case`` is what the runner calls.
"""

from __future__ import annotations

import importlib

import numpy as np
from pydantic import ValidationError

from gemmsim import guards
from gemmsim.analytic.bounds import cpu_bound_columns
from gemmsim.analytic.layouts import column_walk_columns
from gemmsim.errors import KernelError, wrong_kind
from gemmsim.machine.schema import validation_problems
from gemmsim.sim import pyramid
from gemmsim.sim.pyramid import KERNELS as PYRAMID_KERNELS
from gemmsim.kernels.contract import cpu_contract, epilogue_chunks
from gemmsim.kernels.base import CPUKernel
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.sim.fused import run_trace
from gemmsim.timing.cpu import cpu_time
from gemmsim.trace import Layout, LayoutSpec
from gemmsim.units import dtype_bytes

_KERNEL_MODULES = ("gemmsim.kernels.cpu", "gemmsim.kernels.cpu_packed", "gemmsim.kernels.cpu_strassen")


def cpu_kernels() -> dict[str, CPUKernel]:
    """Every CPU kernel by name."""
    out: dict[str, CPUKernel] = {}
    for mod in _KERNEL_MODULES:
        try:
            out.update(importlib.import_module(mod).KERNELS)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
    return out


CPU_KERNELS = cpu_kernels()
KERNELS = {name: k.params for name, k in CPU_KERNELS.items()}
KERNELS.update(PYRAMID_KERNELS)  # the pointer chase of the latency pyramid (gemmsim.sim.pyramid)


def level_columns(counters: dict) -> dict:
    """Flatten Hierarchy counters into result columns: <LEVEL>_hits, _misses, _hit_rate, _bytes_in ... ."""
    row: dict = {}
    levels = counters["levels"]
    for i, lv in enumerate(levels):
        n = lv["name"]
        accesses = lv["loads"] + lv["stores"]
        hits = lv["load_hits"] + lv["store_hits"]
        for key in ("loads", "stores", "load_hits", "load_misses", "store_hits", "store_misses", "writebacks", "evictions", "dirty_at_end"):
            row[f"{n}_{key}"] = lv[key]
        row[f"{n}_accesses"] = accesses
        row[f"{n}_hits"] = hits
        row[f"{n}_misses"] = accesses - hits
        row[f"{n}_hit_rate"] = hits / accesses if accesses else float("nan")
        if "invalidations" in lv:
            row[f"{n}_invalidations"] = lv["invalidations"]
    row["memory_line_reads"] = counters["memory"]["line_reads"]
    row["memory_line_writes"] = counters["memory"]["line_writes"]
    for tl in counters.get("tlbs", []):
        n = tl["name"]
        row[f"{n}_accesses"] = tl["accesses"]
        row[f"{n}_misses"] = tl["misses"]
        row[f"{n}_miss_rate"] = tl["misses"] / tl["accesses"] if tl["accesses"] else float("nan")
    return row


def kernel_params(kernel: str, params: dict):
    """A CPU kernel's validated parameters; an unknown kernel or a bad parameter is a KernelError naming each field
    (the same message from the command line, an experiment and Python)."""
    if kernel not in CPU_KERNELS:
        raise KernelError(f"unknown CPU kernel {kernel!r}; known: {', '.join(sorted(CPU_KERNELS))}")
    try:
        return CPU_KERNELS[kernel].params(**params)
    except ValidationError as err:
        raise KernelError(f"invalid parameters for kernel {kernel!r}", problems=validation_problems(err)) from None


def simulate_cpu(machine, kernel: str, M: int, N: int, K: int, dtype: str = "fp32", layout: LayoutSpec | dict | None = None,
                 *, miss_classes: bool = False, **params) -> dict:
    """Simulate one CPU kernel on a machine and return the result row (counters, bytes, modelled time).

    ``miss_classes=True`` adds, per cache level, the misses by operand and by cause (``gemmsim.models.missclass``:
    ``L1_compulsory``, ``L1_A_misses`` ...), from a second pass over the trace.

    Example: ``simulate_cpu(load_machine("haswell"), "ikj", 256, 256, 256)["L1_hit_rate"]``.
    """
    if isinstance(machine, str):
        from gemmsim.machine import load_machine

        machine = load_machine(machine)
    if getattr(machine, "kind", None) != "cpu":
        raise wrong_kind(machine, "cpu", "simulate_cpu")
    k = CPU_KERNELS.get(kernel)
    p = kernel_params(kernel, params)
    try:
        spec = layout if isinstance(layout, LayoutSpec) else LayoutSpec(**(layout or {}))
    except (TypeError, ValidationError) as err:
        problems = validation_problems(err) if isinstance(err, ValidationError) else [str(err)]
        raise KernelError("invalid layout", problems=problems) from None
    threads = k.threads(p)
    guards.check_cpu(machine, k, M, N, K, dtype, f"{kernel} M={M} N={N} K={K} {dtype} on {machine.name}", threads)
    lay = Layout.build(M, N, K, dtype, spec)
    h = Hierarchy.from_machine(machine, cores=threads)
    run_trace(h, cpu_contract(k.trace(lay, p, machine), lay, spec.beta))  # generate and simulate in one compiled pass where possible
    for chunk in epilogue_chunks(lay, spec.epilogue):  # bias + ReLU after the product (gemmsim.kernels.contract)
        h.feed(chunk)
    counters = h.counters()
    flops = 2.0 * M * N * K
    row = level_columns(counters)
    # the final flush: lines still dirty anywhere at the end are written to DRAM once (C of every GEMM); the exact
    # hierarchy counters stay as they are, the DRAM bytes, the last level's traffic and the timing include the flush
    flush, exact = flush_lines(h, counters)
    row["memory_flush_line_writes"] = flush
    row["dram_flush_exact"] = exact
    counters = {**counters, "memory": {**counters["memory"], "line_writes": counters["memory"]["line_writes"] + flush}}
    levels = counters["levels"]
    for i, spec in enumerate(machine.caches):
        below = levels[i + 1] if i + 1 < len(levels) else None
        lines = below["loads"] + below["stores"] if below else counters["memory"]["line_reads"] + counters["memory"]["line_writes"]
        row[f"{spec.name}_traffic_bytes"] = lines * spec.line_bytes  # moved between this level and the one below
    line = machine.caches[-1].line_bytes
    dram_bytes = (counters["memory"]["line_reads"] + counters["memory"]["line_writes"]) * line
    row["dram_flush_bytes"] = flush * line
    extra = k.extra(lay, p, machine) if k.extra is not None else {}
    slowdown = float(extra.get("compute_slowdown", 1.0))
    # a kernel that does other arithmetic than 2MNK (Strassen) says how much in ``compute_flops``; rates stay per 2MNK
    t = cpu_time(machine, counters, float(extra.get("compute_flops", flops)), dtype, simd=k.simd, threads=threads, compute_slowdown=slowdown)
    row.update(t.columns())
    peak = machine.peak_gflops(dtype, cores=min(threads, machine.cores)) * 1e9
    row.update(
        flops=flops,
        threads=threads,
        dram_bytes=dram_bytes,
        intensity_flop_per_byte=flops / dram_bytes if dram_bytes else float("inf"),
        gflops=flops / t.time_s / 1e9 if t.time_s else float("nan"),
        peak_fraction=flops / t.time_s / peak if t.time_s else float("nan"),
        simd=k.simd,
    )
    row.update(working_set_columns(machine, dtype, p))
    row.update(extra)
    row.update(column_walk_columns(machine, lay))  # sets one column of B maps to (leading_dimension.yaml)
    traffic = {c.name: row[f"{c.name}_traffic_bytes"] for c in machine.caches}
    row.update(cpu_bound_columns(machine, M, N, K, dtype, {**traffic, "dram": dram_bytes}, threads))  # Hong-Kung floor
    if miss_classes:
        row.update(_miss_class_columns(machine, k, lay, p, threads))
    return row


def _miss_class_columns(machine, k: CPUKernel, lay: Layout, p, threads: int) -> dict:
    """Misses by operand and cause at every level (a second pass over the trace), or a note saying why not."""
    from gemmsim.models.cache import Cache
    from gemmsim.models.missclass import classify_hierarchy, miss_class_columns, ranges_of_layout

    if threads != 1:
        return {"miss_classes_note": "miss classes are computed for single-threaded kernels only"}
    levels = [Cache.from_level(c) for c in machine.caches]
    if any(c.policy != "lru" or not c.write_allocate for c in levels):
        return {"miss_classes_note": "miss classes need LRU write-allocate levels"}
    got = classify_hierarchy(levels, k.trace(lay, p, machine), ranges_of_layout(lay))
    return miss_class_columns(got)


def flush_lines(h: Hierarchy, counters: dict) -> tuple[int, bool]:
    """(lines a final flush writes to DRAM, exact?): the distinct lines still dirty in any level at the end, counted
    at the last level's line size (a line dirty in L1 and in L2 is written once).

    Read from each level's tag and dirty arrays when the cache exposes them; otherwise the sum of the levels'
    ``dirty_at_end`` (an upper bound: a line dirty in two levels counts twice) and ``exact`` is False.
    """
    last = h.levels[-1]
    shift = last.line_bytes.bit_length() - 1
    found = []
    for c in h.levels:
        tags, dirty = getattr(c, "_tags", None), getattr(c, "_dirty", None)
        if not (isinstance(tags, np.ndarray) and isinstance(dirty, np.ndarray) and tags.shape == dirty.shape):
            return sum(int(lv["dirty_at_end"]) for lv in counters["levels"]), False
        sel = (dirty != 0) & (tags >= 0)
        found.append((tags[sel].astype(np.int64) << (c.line_bytes.bit_length() - 1)) >> shift)
    return int(np.unique(np.concatenate(found)).size) if found else 0, True


def working_set_columns(machine, dtype: str, params) -> dict:
    """Seed 000 section 4: a blocked kernel's working set s(BM*BK + BK*BN + BM*BN) and its share of each cache level."""
    bm, bn, bk = (getattr(params, k, None) for k in ("BM", "BN", "BK"))
    if not all(isinstance(v, int) for v in (bm, bn, bk)):
        return {}
    ws = dtype_bytes(dtype) * (bm * bk + bk * bn + bm * bn)
    row = {"working_set_bytes": ws}
    for c in machine.caches:
        row[f"working_set_fraction_{c.name}"] = ws / c.size
    return row


def run_case(machine, case) -> dict:
    """The runner's entry point: simulate ``case`` on ``machine``."""
    if case.kernel in PYRAMID_KERNELS:
        return pyramid.run_case(machine, case)
    return simulate_cpu(machine, case.kernel, case.M, case.N, case.K, case.dtype, case.layout,
                        miss_classes="miss_classes" in getattr(case, "analyses", ()), **case.params)
