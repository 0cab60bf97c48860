"""The TLB model against the naive reference (tests/reference/ref_tlb.py) and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.models.cache import CacheConfigError
from gemmsim.models.tlb import TLB
from gemmsim.trace import make_chunk
from reference.chunks import chunk_of, records
from reference.ref_tlb import RefTLB


@st.composite
def page_traces(draw):
    n = draw(st.integers(0, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    span = draw(st.sampled_from([1 << 10, 1 << 13, 1 << 16]))
    addr = rng.integers(0, span, n)
    size = rng.choice([1, 4, 8, 64, 300], n)
    kind = rng.integers(0, 2, n)
    return [(int(a), int(s), int(k), 0) for a, s, k in zip(addr, size, kind)]


geometry = st.tuples(st.sampled_from([1, 2, 3, 4, 16]), st.integers(1, 8), st.sampled_from([64, 256, 4096]))


@settings(max_examples=100, deadline=None)
@given(g1=geometry, g2=geometry, trace=page_traces())
def test_two_levels_match_reference(g1, g2, trace):
    """A first level's misses feed the second; both match the reference, lookup for lookup."""
    t1, t2 = TLB("DTLB", *g1, 8), TLB("STLB", *g2, 30)
    r1, r2 = RefTLB(*g1), RefTLB(*g2)
    miss1 = t1.feed(chunk_of(trace))
    ref_miss1 = [m for a in trace for m in r1.access(*a)]
    assert records(miss1) == ref_miss1
    miss2 = t2.feed(miss1)
    assert records(miss2) == [m for a in ref_miss1 for m in r2.access(*a)]
    for t, r in ((t1, r1), (t2, r2)):
        c = t.counters()
        assert (c["hits"], c["misses"], c["accesses"]) == (r.hits[0], r.misses[0], r.hits[0] + r.misses[0])


def test_counters():
    t = TLB("DTLB", 16, 4, 4096, 8.5)
    t.feed(make_chunk(np.arange(0, 1 << 20, 64), 4, 0))  # 1 MiB read sequentially: 256 pages
    c = t.counters()
    assert c == {"accesses": 16384, "hits": 16384 - 256, "misses": 256, "penalty_cycles": 256 * 8.5, "walks": 256}
    t.last_level = False
    assert "walks" not in t.counters()
    t.reset()
    assert t.counters()["accesses"] == 0


def test_page_crossing_access_needs_two_lookups():
    t = TLB("DTLB", 1, 4, 4096, 8)
    out = t.feed(make_chunk([4094], [4], [1]))
    assert records(out) == [(4094, 2, 1, 0), (4096, 2, 1, 0)]
    assert t.counters()["misses"] == 2


def test_strided_walk_thrashes_a_small_tlb():
    """Seed 000 section 2: ijk walks B with a 16 KiB stride (N=4096 fp32): 4 pages per access, no reuse."""
    t = TLB("DTLB", 16, 4, 4096, 8)  # 64 entries
    stride = 4096 * 4
    t.feed(make_chunk(np.tile(np.arange(128) * stride, 4), 4, 0))  # 128 pages > 64 entries, cycled
    assert t.counters()["hits"] == 0


def test_from_level_and_errors():
    from gemmsim.machine import load_machine

    m = load_machine("haswell")
    t = TLB.from_level(m.tlbs[0])
    assert (t.sets, t.ways, t.page_bytes, t.entries) == (16, 4, 4096, 64)
    with pytest.raises(CacheConfigError):
        TLB("X", 4, 4, 3000, 8)
    with pytest.raises(ValueError):
        TLB("X", 0, 4, 4096, 8)


@settings(max_examples=60, deadline=None)
@given(sets=st.sampled_from([1, 2, 5]), ways=st.integers(9, 64), page=st.sampled_from([64, 256]), trace=page_traces(),
       cores=st.sampled_from([1, 3]), seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_many_ways_match_reference(sets, ways, page, trace, cores, seed):
    """More than 8 ways: the fingerprint lookup spans several words (a 48-way DTLB, as on Neoverse N1); per-core
    copies keep separate fingerprints."""
    rng = np.random.default_rng(seed)
    trace = [(a, s, k, int(rng.integers(0, cores))) for a, s, k, _ in trace]
    t = TLB("DTLB", sets, ways, page, 8, copies=cores)
    refs = RefTLB(sets, ways, page, copies=cores)
    assert records(t.feed(chunk_of(trace))) == [m for a in trace for m in refs.access(*a)]
    assert [(c["hits"], c["misses"]) for c in t.core_counters()] == list(zip(refs.hits, refs.misses))
