"""The loop-nest driver that writes the batch straight as words (``gemmsim.sim.fused._nest_direct``) against the
record-filling driver (``_nest_driver``, which calls the kernels' own ``_fill``), the chunked path and the naive
reference: every counter of every level and TLB, and memory.

Batches of a few records force the partial-iteration path (an innermost iteration cut by the batch end) and
many flushes; nests of every kind (hoisted and not, blocked with clipped tiles, column-major) are run.
"""

from __future__ import annotations

import pytest

import gemmsim.sim.fused as fused
from gemmsim.models.cache import Cache
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.models.tlb import TLB
from gemmsim.sim.cpu import CPU_KERNELS
from gemmsim.trace import Layout, LayoutSpec, concat
from reference.chunks import records
from reference.ref_cache import RefCache, run_chain
from reference.ref_tlb import RefTLB

LEVELS = [
    [(4, 2, 32, "lru", True, True), (8, 4, 64, "fifo", True, True)],
    [(2, 8, 16, "lru", True, True), (4, 12, 64, "lru", True, True)],
    [(4, 12, 32, "lru", True, True)],
    [(2, 4, 16, "fifo", True, True), (4, 3, 32, "lru", False, True)],
    [(3, 3, 64, "lru", False, False), (16, 2, 64, "lru", True, True)],
]
TLBS = [[], [(1, 2, 256), (2, 4, 1024)], [(2, 12, 64)]]
NESTS = [
    ("ijk", {}, (9, 11, 7), {}),
    ("jik", {}, (8, 8, 8), {"order": "col"}),
    ("ikj", {}, (10, 12, 5), {}),
    ("kji", {"promotion": "none"}, (7, 6, 9), {}),
    ("blocked", {"BM": 4, "BN": 3, "BK": 5, "tile_order": "jki", "inner_order": "kij"}, (9, 10, 11), {"pad": 3}),
    ("blocked", {"BM": 8, "BN": 8, "BK": 4, "tile_order": "ikj", "inner_order": "ijk"}, (12, 9, 10), {}),
]


def make(kernel, params, shape, spec, dtype="fp32"):
    k = CPU_KERNELS[kernel]
    lay = Layout.build(*shape, dtype, LayoutSpec(**spec))
    return lambda: k.trace(lay, k.params(**params), None)


def build(levels, tlbs):
    return Hierarchy([Cache(f"L{i + 1}", *lv) for i, lv in enumerate(levels)], [TLB(f"T{i}", *t, 10.0) for i, t in enumerate(tlbs)])


def run(levels, tlbs, trace, direct, batch):
    h = build(levels, tlbs)
    saved, saved_batch = dict(fused.DIRECT), fused.DIRECT_BATCH
    try:
        if not direct:
            fused.DIRECT.clear()
        fused.DIRECT_BATCH = batch
        fused.run_trace(h, trace)
    finally:
        fused.DIRECT.clear()
        fused.DIRECT.update(saved)
        fused.DIRECT_BATCH = saved_batch
    return h.counters()


@pytest.mark.parametrize("nest", NESTS, ids=lambda c: f"{c[0]}-{c[2]}")
@pytest.mark.parametrize("levels", range(len(LEVELS)))
@pytest.mark.parametrize("batch", [5, 64, 8192])
def test_direct_equals_reference_and_record_driver(nest, levels, batch):
    tlbs = TLBS[levels % len(TLBS)]
    mk = make(*nest)
    h = build(LEVELS[levels], tlbs)
    assert fused.direct_ok(h, mk().fill_spec[1])
    got = run(LEVELS[levels], tlbs, mk(), True, batch)
    assert got == run(LEVELS[levels], tlbs, mk(), False, batch)
    accesses = records(concat(mk()))
    ref = [RefCache(*lv) for lv in LEVELS[levels]]
    memory = run_chain(ref, accesses)
    assert got["memory"] == memory
    assert [{k: v for k, v in lv.items() if k != "name"} for lv in got["levels"]] == [r.counters() for r in ref]
    x = accesses
    for t, spec in zip(got["tlbs"], tlbs):
        rt = RefTLB(*spec)
        x = [r for a in x for r in rt.access(*a)]
        assert (t["hits"], t["misses"]) == (rt.hits[0], rt.misses[0])
    assert got["levels"][0]["loads"] + got["levels"][0]["stores"] == len(accesses)


def test_direct_is_taken_only_for_aligned_nests():
    """An element at 2 mod 4 may span a line: the record driver runs (and direct_ok says no); a TLB with pages
    smaller than L1's lines also keeps the record driver."""
    h = build(LEVELS[0], [])
    assert fused.direct_ok(h, make("ijk", {}, (9, 11, 7), {})().fill_spec[1])
    assert not fused.direct_ok(h, make("ikj", {}, (10, 12, 5), {"base": 2})().fill_spec[1])
    assert not fused.direct_ok(build([(4, 2, 128, "lru", True, True)], [(1, 2, 64)]), make("ijk", {}, (9, 11, 7), {})().fill_spec[1])


def test_direct_on_a_large_nest_equals_record_driver():
    """ijk at 96^3 through a small L1 and two TLB levels: many batches and several drains of L1's output buffer."""
    levels = [(16, 4, 64, "lru", True, True), (512, 8, 64, "lru", True, True), (64, 20, 64, "lru", True, True)]
    tlbs = [(16, 4, 4096), (128, 8, 4096)]
    mk = make("ijk", {}, (96, 96, 96), {})
    a = run(levels, tlbs, mk(), True, 8192)
    b = run(levels, tlbs, mk(), False, 4096)
    assert a == b
    assert a["levels"][0]["load_misses"] > 3 * (1 << 17)
