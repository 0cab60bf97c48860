"""The compiled copies of the one-copy cache kernel (``gemmsim.models.cache._run_small``: LRU or FIFO, at most 8
or 9 to 16 ways, with or without a TLB beside, and the general copy) against the naive references, through the
front pass the fused simulation uses (``gemmsim.models.hierarchy._front_batch``: the first TLB in L1's loop).

Every configuration that picks each copy is drawn: policy, ways on both sides of 8, sets a power of two or not,
write-back/through and write-/no-write-allocate, a TLB or none. Random accesses over a small range, mixed sizes
(some spanning lines and pages), loads and stores. What L1 sends on, what the TLB sends on, and every counter
must equal the references'.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.models.cache import Cache, as_words
from gemmsim.models.hierarchy import Hierarchy, _front_batch
from gemmsim.models.tlb import TLB
from gemmsim.trace import ACCESS
from reference.chunks import chunk_of, records
from reference.ref_cache import RefCache, run_level
from reference.ref_tlb import RefTLB


@st.composite
def traces(draw, max_len=400):
    span = draw(st.sampled_from([512, 2048, 8192, 65536]))
    n = draw(st.integers(0, max_len))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    addr = rng.integers(0, span, n)
    size = rng.choice([1, 4, 8, 16, 64, 100], n, p=[0.1, 0.5, 0.2, 0.1, 0.05, 0.05])
    kind = (rng.random(n) < draw(st.sampled_from([0.0, 0.3, 0.7]))).astype(int)
    # runs: repeat some accesses (the run collapse) and walk some strides (hits on the most recent way)
    if n and draw(st.booleans()):
        addr = np.repeat(addr[: n // 4 + 1], 4)[:n]
    return [(int(a), int(s), int(k), 0) for a, s, k in zip(addr, size, kind)]


@settings(max_examples=300, deadline=None)
@given(
    sets=st.sampled_from([1, 2, 3, 4, 8, 16]),
    ways=st.sampled_from([1, 2, 3, 4, 7, 8, 9, 12, 15, 16]),
    line=st.sampled_from([16, 32, 64]),
    policy=st.sampled_from(["lru", "fifo"]),
    write_back=st.sampled_from([True, True, False]),
    write_allocate=st.sampled_from([True, True, False]),
    tlb=st.sampled_from([None, (1, 2, 64), (2, 4, 128), (4, 4, 4096)]),
    trace=traces(),
    trusted=st.booleans(),
)
def test_front_pass_matches_reference(sets, ways, line, policy, write_back, write_allocate, tlb, trace, trusted):
    """``trusted`` (what the direct nest driver passes): the trace is first cut to accesses within one line."""
    check_front_pass(sets, ways, line, policy, write_back, write_allocate, tlb, trace, trusted)


def check_front_pass(sets, ways, line, policy, write_back, write_allocate, tlb, trace, trusted):
    """``_front_batch`` (the first TLB inside L1's pass) against the reference cache and TLB: records, counters and
    the lines left; with ``trusted`` the trace is first cut to accesses within one line."""
    if trusted:
        trace = [a for a in trace if a[0] // line == (a[0] + a[1] - 1) // line]
    c = Cache("L1", sets, ways, line, policy, write_back, write_allocate)
    tlbs = [TLB("T", *tlb, 10.0)] if tlb else []
    h = Hierarchy([c], tlbs)
    l1, tl = h._front_args()
    chunk = chunk_of(trace) if trace else np.empty(0, dtype=ACCESS)
    n = chunk.shape[0]
    out = np.empty(2 * 8 * n + 64, dtype=ACCESS)
    tout = np.empty(8 * n + 64, dtype=ACCESS)
    scratch = np.empty(2, np.uint64)
    w, wt = _front_batch(as_words(chunk), n, l1, tl, out.view(np.uint64), 0, tout.view(np.uint64), 0, scratch, trusted)
    ref = RefCache(sets, ways, line, policy, write_back, write_allocate)
    assert records(out[:w]) == run_level(ref, trace)
    assert c.counters() == ref.counters()
    assert c.lines().tolist() == ref.lines()
    if tlb:
        rt = RefTLB(*tlb)
        missed = [r for a in trace for r in rt.access(*a)]
        assert records(tout[:wt]) == missed
        got = h.tlbs[0].counters()
        assert (got["hits"], got["misses"]) == (rt.hits[0], rt.misses[0])


@settings(max_examples=60, deadline=None)
@given(
    ways=st.sampled_from([2, 8, 12, 16]),
    policy=st.sampled_from(["lru", "fifo"]),
    trace=traces(),
    cuts=st.lists(st.integers(0, 400), max_size=4),
)
def test_chunks_cut_anywhere_match_reference(ways, policy, trace, cuts):
    """The state a copy leaves (run collapse, counters, random state) carries across chunks exactly."""
    c = Cache("L1", 4, ways, 32, policy)
    ref = RefCache(4, ways, 32, policy)
    bounds = [0, *sorted(min(x, len(trace)) for x in cuts), len(trace)]
    got = []
    for lo, hi in zip(bounds, bounds[1:]):
        got += records(c.feed(chunk_of(trace[lo:hi]) if hi > lo else np.empty(0, dtype=ACCESS)))
    assert got == run_level(ref, trace)
    assert c.counters() == ref.counters()


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.sampled_from([16, 32, 64, 128]), min_size=2, max_size=3),
    ways=st.lists(st.sampled_from([1, 2, 4, 8, 12, 20, 40]), min_size=3, max_size=3),
    policies=st.lists(st.sampled_from(["lru", "fifo"]), min_size=3, max_size=3),
    write_back=st.lists(st.booleans(), min_size=3, max_size=3),
    write_allocate=st.lists(st.booleans(), min_size=3, max_size=3),
    trace=traces(),
)
def test_chain_with_trusted_lower_levels_matches_reference(lines, ways, policies, write_back, write_allocate, trace):
    """Below L1 a level trusts its input when its lines are no shorter than the level above's (and skips the
    span test); lines that shrink going down keep the test. Either way the per-access chain reference holds,
    memory included (counted from the last level's counters with one core: 20 and 40 ways take the wide and
    the general kernels, write-through and no-write-allocate the store rules)."""
    from reference.ref_cache import run_chain

    specs = [(4, ways[i], lines[i], policies[i], write_back[i], write_allocate[i]) for i in range(len(lines))]
    h = Hierarchy([Cache(f"L{i + 1}", *sp) for i, sp in enumerate(specs)])
    assert h._trusted == [False] + [lines[i - 1] <= lines[i] for i in range(1, len(lines))]
    h.feed(chunk_of(trace) if trace else np.empty(0, dtype=ACCESS))
    ref = [RefCache(*sp) for sp in specs]
    memory = run_chain(ref, trace)
    got = h.counters()
    assert got["memory"] == memory
    assert [{k: v for k, v in lv.items() if k != "name"} for lv in got["levels"]] == [r.counters() for r in ref]


@settings(max_examples=40, deadline=None)
@given(trace=traces(), cores=st.sampled_from([2, 3]))
def test_copies_made_by_hand_in_a_one_core_hierarchy_count_memory_as_they_leave(trace, cores):
    """Private copies with coherence built by hand (``Cache.replicated``) inside ``Hierarchy(cores=1)``: invalidate
    records reach a one-copy level, so no level trusts its input (it must skip them) and memory is counted record
    by record; the reference agrees."""
    from reference.ref_cache import run_chain

    rng = np.random.default_rng(len(trace))
    trace = [(a, s, k, int(c)) for (a, s, k, _), c in zip(trace, rng.integers(0, cores, len(trace)))]
    l1 = Cache("L1", 4, 2, 32).replicated(cores, "source", True)  # sends invalidate records to a one-copy L2
    l2 = Cache("L2", 4, 4, 64)
    l3 = Cache("L3", 8, 4, 64)
    h = Hierarchy([l1, l2, l3], cores=1)
    assert not h._single and h._trusted == [False, False, False]
    h.feed(chunk_of(trace) if trace else np.empty(0, dtype=ACCESS))
    ref = [RefCache(4, 2, 32, copies=cores, coherence="source", forward=True), RefCache(4, 4, 64), RefCache(8, 4, 64)]
    memory = run_chain(ref, trace)
    got = h.counters()
    assert got["memory"] == memory
    assert [{k: v for k, v in lv.items() if k not in ("name", "per_core")} for lv in got["levels"]] == [r.counters() for r in ref]
