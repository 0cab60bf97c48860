"""Generate-and-simulate in one compiled pass (gemmsim.sim.fused) against the naive per-access reference and
against the chunked path, on the kernels' own streams: every counter of every level and TLB, and memory.

Small caches (a few sets and ways, short lines) so that the kernels' streams conflict, miss and write back;
unaligned layouts so that accesses span lines and pages; small problem sizes so that the reference stays fast.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmsim.machine import load_machine
from gemmsim.models.cache import Cache
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.models.tlb import TLB
from gemmsim.sim.cpu import CPU_KERNELS
from gemmsim.sim.fused import run_trace
from gemmsim.trace import Layout, LayoutSpec, concat
from reference.chunks import records
from reference.ref_cache import RefCache, run_chain
from reference.ref_tlb import RefTLB

# (sets, ways, line, policy, write_back, write_allocate) per level, L1 first
HIERARCHIES = [
    [(4, 2, 32, "lru", True, True), (8, 4, 64, "lru", True, True)],
    [(2, 4, 16, "fifo", True, True), (4, 3, 32, "lru", False, True), (8, 5, 64, "fifo", True, True)],
    [(3, 3, 64, "lru", False, False), (16, 2, 64, "lru", True, True)],
    [(8, 16, 64, "lru", True, False), (4, 20, 64, "lru", True, True)],
]
TLBS = [(1, 2, 256), (2, 4, 1024)]  # (sets, ways, page)
WIDE_TLBS = [(1, 48, 128), (2, 12, 512)]  # fully associative 48 ways, as Neoverse N1's DTLB; pages of 2 lines

NEST_CASES = [
    ("ijk", {}, (9, 11, 7), {}),
    ("kji", {"promotion": "none"}, (7, 6, 9), {}),
    ("ikj", {}, (10, 12, 5), {"base": 2}),  # fp32 at 2 mod 4: accesses span lines and pages
    ("blocked", {"BM": 4, "BN": 3, "BK": 5, "tile_order": "jki", "inner_order": "kij"}, (9, 10, 11), {"pad": 3}),
    ("jik", {}, (8, 8, 8), {"order": "col"}),
]
PACKED_CASES = [
    ("packed", {"MR": 4, "NR": 3, "KC": 8, "MC": 8, "NC": 12}, (13, 14, 17), {}),
    ("packed_micro", {"KC": 8, "MC": 12, "NC": 32}, (19, 21, 9), {"base": 4}),
    ("packed_micro", {"edge": "scalar", "KC": 16, "MC": 12, "NC": 32}, (13, 35, 10), {"order": "col"}),
]


def build(levels, tlbs):
    h = Hierarchy([Cache(f"L{i + 1}", *lv) for i, lv in enumerate(levels)], [TLB(f"T{i + 1}", s, w, p, 10.0) for i, (s, w, p) in enumerate(tlbs)])
    ref = [RefCache(*lv) if lv[3] != "random" else None for lv in levels]
    rtlb = [RefTLB(s, w, p) for s, w, p in tlbs]
    return h, ref, rtlb


def trace_of(kernel, params, shape, spec, dtype="fp32"):
    k = CPU_KERNELS[kernel]
    lay = Layout.build(*shape, dtype, LayoutSpec(**spec))
    machine = load_machine("haswell")
    return lambda: k.trace(lay, k.params(**params), machine)


def reference(levels, tlbs, accesses):
    h, ref, rtlb = build(levels, tlbs)
    memory = run_chain(ref, accesses)
    x = accesses
    for t in rtlb:
        x = [r for a in x for r in t.access(*a)]
    return memory, [r.counters() for r in ref], [(t.hits[0], t.misses[0]) for t in rtlb]


def check(levels, tlbs, make):
    h, _, _ = build(levels, tlbs)
    trace = make()
    assert getattr(trace, "fill_spec", None) is not None
    run_trace(h, trace)
    got = h.counters()
    accesses = records(concat(make()))
    memory, ref_levels, ref_tlbs = reference(levels, tlbs, accesses)
    assert got["memory"] == memory
    assert [{k: v for k, v in lv.items() if k != "name"} for lv in got["levels"]] == ref_levels
    assert [(t["hits"], t["misses"]) for t in got["tlbs"]] == ref_tlbs
    return got


@pytest.mark.parametrize("case", NEST_CASES + PACKED_CASES, ids=lambda c: f"{c[0]}-{c[2]}-{sorted(c[3])}")
@pytest.mark.parametrize("hier", range(len(HIERARCHIES)))
def test_fused_matches_reference_on_kernel_streams(case, hier):
    kernel, params, shape, spec = case
    tlbs = TLBS if hier % 2 == 0 else WIDE_TLBS
    got = check(HIERARCHIES[hier], tlbs, trace_of(kernel, params, shape, spec))
    assert got["levels"][0]["load_misses"] > 0


@pytest.mark.parametrize("case", NEST_CASES[:2] + PACKED_CASES[:1], ids=lambda c: c[0])
def test_fused_equals_chunked_with_random_replacement(case):
    """The reference has no random policy: the fused pass must give the chunked path's counters exactly."""
    levels = [(4, 4, 32, "random", True, True), (8, 4, 64, "random", False, True)]
    make = trace_of(*case)
    a, _, _ = build(levels, TLBS[:1])
    b, _, _ = build(levels, TLBS[:1])
    run_trace(a, make())
    run_trace(b, make(), fused=False)
    assert a.counters() == b.counters()


@pytest.mark.parametrize("kernel, n", [("gemm", 72), ("ijk", 64)])
def test_fused_on_haswell_equals_chunked(kernel, n):
    """The machine file's hierarchy (20-way L3, two TLB levels); ijk at N=64 sends L1's output buffer to the
    levels below several times."""
    m = load_machine("haswell")
    k = CPU_KERNELS[kernel]
    lay = Layout.build(n, n + 8, n - 8, "fp32", LayoutSpec())
    a, b = Hierarchy.from_machine(m), Hierarchy.from_machine(m)
    run_trace(a, k.trace(lay, k.params(), m))
    run_trace(b, k.trace(lay, k.params(), m), fused=False)
    assert a.counters() == b.counters()
    assert a.counters()["levels"][0]["loads"] > 30_000


def test_multicore_falls_back_to_chunks():
    """Per-core copies with coherence are not fused; run_trace then feeds chunks and gives the same counters."""
    m = load_machine("haswell")
    k = CPU_KERNELS["packed_micro"]
    lay = Layout.build(40, 48, 24, "fp32", LayoutSpec())
    p = k.params(threads=2)
    a = Hierarchy.from_machine(m, cores=2)
    assert a._front_args() is None
    run_trace(a, k.trace(lay, p, m))
    b = Hierarchy.from_machine(m, cores=2)
    for c in k.trace(lay, p, m):
        b.feed(c)
    assert a.counters() == b.counters()


@pytest.mark.parametrize("case", NEST_CASES + PACKED_CASES, ids=lambda c: c[0])
def test_declared_largest_access_bounds_the_stream(case):
    """The fused pass sizes its buffers from fill_spec's largest access: no access may be larger."""
    make = trace_of(*case)
    assert int(concat(make())["size"].max()) <= make().fill_spec[2]


def test_iterating_a_fill_trace_gives_chunks_of_the_asked_size():
    k = CPU_KERNELS["ijk"]
    lay = Layout.build(5, 6, 7, "fp64", LayoutSpec())
    chunks = list(k.trace(lay, k.params(), None, chunk=13))
    assert [len(c) for c in chunks[:-1]] == [13] * (len(chunks) - 1)
    assert sum(len(c) for c in chunks) == 5 * 6 * (2 * 7 + 2)
    assert len({id(c.base) for c in chunks}) == len(chunks)  # fresh arrays, not one reused buffer


def test_many_drains_of_the_output_buffer_equal_chunked():
    """A tiny L1 missing most accesses: L1's output fills the fused pass's buffer (2^17 records) many times."""
    levels = [(4, 2, 32, "lru", True, True), (64, 4, 64, "fifo", True, True)]
    make = trace_of("ijk", {}, (64, 64, 64), {"base": 2})
    a, _, _ = build(levels, TLBS)
    b, _, _ = build(levels, TLBS)
    run_trace(a, make())
    run_trace(b, make(), fused=False)
    assert a.counters() == b.counters()
    assert a.counters()["levels"][1]["loads"] > 4 * (1 << 17) // 2
