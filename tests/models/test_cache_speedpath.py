"""Fast paths of the one-copy cache kernel (``gemmsim.models.cache._small_body``, issue 17) against the naive
reference (tests/reference/ref_cache.py):

- a set's tags are compared at once (``_match8``/``_match16``: one vector compare of 8 or 16 lanes, those past
  the set's ways masked off -- they read the next set or the tags' padding), in every copy a cache may run:
  LRU/FIFO, sets a power of two or not, write-back/through, write-/no-write-allocate, a TLB beside or none,
  trusted input or not, and the general copy (random policy);
- a hit on the least recent way (what a level below L1 sees on a loop nest) rotates the order;
- the hit paths count nothing (load hits and evictions follow at the end of a call);
- below L1 (trusted input) the common configurations run without the run collapse.

Traces hammer few sets (addresses a multiple of sets x line apart) so that hits land on every rank and victims
matter; a wrong way index, a wrong rank or a stale fingerprint changes what is sent on or the counters.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from gemmsim.models.cache import Cache, _match8, _match16
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.trace import ACCESS
from reference.chunks import chunk_of, records
from reference.ref_cache import RefCache, run_chain, run_level
from test_cache_variants import check_front_pass


@njit
def _call8(arr, start, val):
    return _match8(arr, start, val)


@njit
def _call16(arr, start, val):
    return _match16(arr, start, val)


@pytest.mark.parametrize("lanes", [8, 16])
def test_match_finds_every_equal_lane(lanes):
    """The vector compare against numpy: bit k set exactly where arr[start + k] == val, at any start."""
    match = _call8 if lanes == 8 else _call16
    rng = np.random.default_rng(lanes)
    for _ in range(300):
        arr = rng.integers(-1, 4, 40).astype(np.int64)
        start = int(rng.integers(0, 40 - lanes + 1))
        val = np.int64(rng.integers(-1, 4))
        want = sum(1 << k for k in range(lanes) if arr[start + k] == val)
        assert match(arr, np.uint64(start), val) == want
    big = np.full(lanes, 1 << 60, dtype=np.int64)
    big[lanes - 1] = -1
    assert match(big, np.uint64(0), np.int64(1 << 60)) == (1 << (lanes - 1)) - 1


@st.composite
def set_traces(draw, sets, line, max_len=500):
    """Accesses to a few lines more than a set holds in each of 1-3 sets, mixed with scattered ones and runs."""
    n = draw(st.integers(0, max_len))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    crowd = draw(st.integers(1, 24))
    hot = rng.integers(0, 3, n) * line + sets * line * rng.integers(0, crowd, n)  # `crowd` lines in each of 3 sets
    scattered = rng.integers(0, 64 * sets * line, n)
    addr = np.where(rng.random(n) < 0.8, hot, scattered)
    addr = np.where(rng.random(n) < 0.8, addr + rng.integers(0, line // 4, n) * 4, addr)  # other words of the line
    size = rng.choice([1, 4, 8, 64, 100], n, p=[0.1, 0.6, 0.2, 0.05, 0.05])
    kind = (rng.random(n) < draw(st.sampled_from([0.0, 0.3, 0.7]))).astype(int)
    if n and draw(st.booleans()):
        addr = np.repeat(addr[: n // 3 + 1], 3)[:n]  # runs to one line
    return [(int(a), int(s), int(k), 0) for a, s, k in zip(addr, size, kind)]


@settings(max_examples=200, deadline=None)
@given(
    sets=st.sampled_from([1, 2, 3, 4, 8, 16]),
    ways=st.sampled_from([1, 3, 5, 8, 12, 16]),
    line=st.sampled_from([16, 64]),
    policy=st.sampled_from(["lru", "fifo"]),
    write_back=st.sampled_from([True, True, False]),
    write_allocate=st.sampled_from([True, True, False]),
    data=st.data(),
)
def test_whole_set_compare_matches_reference(sets, ways, line, policy, write_back, write_allocate, data):
    """Fed chunk by chunk (``feed``: untrusted, cut at spanning accesses)."""
    trace = data.draw(set_traces(sets, line))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(trace)), max_size=3)))
    c = Cache("L1", sets, ways, line, policy, write_back, write_allocate)
    ref = RefCache(sets, ways, line, policy, write_back, write_allocate)
    got = []
    for lo, hi in zip([0, *cuts], [*cuts, len(trace)]):
        got += records(c.feed(chunk_of(trace[lo:hi]) if hi > lo else np.empty(0, dtype=ACCESS)))
    assert got == run_level(ref, trace)
    assert c.counters() == ref.counters()
    assert c.lines().tolist() == ref.lines()


@settings(max_examples=200, deadline=None)
@given(
    sets=st.sampled_from([1, 4, 5, 16]),
    ways=st.sampled_from([1, 3, 5, 8, 12, 16]),
    policy=st.sampled_from(["lru", "fifo"]),
    write_back=st.sampled_from([True, True, False]),
    tlb=st.sampled_from([None, (2, 4, 128), (4, 4, 4096)]),
    trusted=st.booleans(),
    data=st.data(),
)
def test_whole_set_compare_in_the_front_pass(sets, ways, policy, write_back, tlb, trusted, data):
    """Through the fused front (``_front_batch``: the TLB in L1's loop, trusted input as the direct driver gives
    it, spanning accesses cut a piece at a time through another copy of the kernel): the copies keep one state."""
    line = 64
    check_front_pass(sets, ways, line, policy, write_back, True, tlb, data.draw(set_traces(sets, line)), trusted)


def _general(cache: Cache) -> Cache:
    """``cache`` switched to the general kernel (``_run_any``: timestamps, per-way scan), emptied."""
    n = cache.copies * cache.sets * cache.ways
    cache._packed = cache._small = False
    cache._stamps = np.empty(n, dtype=np.int64)
    cache._mru = np.empty(cache.copies * cache.sets, dtype=np.int64)
    cache.reset()
    return cache


@settings(max_examples=80, deadline=None)
@given(
    sets=st.sampled_from([1, 3, 4, 16]),
    ways=st.sampled_from([1, 3, 5, 8, 12, 16]),
    policy=st.sampled_from(["random", "lru", "fifo"]),
    write_back=st.booleans(),
    write_allocate=st.booleans(),
    data=st.data(),
)
def test_whole_set_compare_equals_general_kernel(sets, ways, policy, write_back, write_allocate, data):
    """Random replacement has no reference: the general copy with whole-set compares must draw the same victims
    as the general kernel (same seeded generator), and LRU/FIFO must agree with it too."""
    trace = data.draw(set_traces(sets, 64))
    fast = Cache("L", sets, ways, 64, policy, write_back, write_allocate, seed=11)
    general = _general(Cache("L", sets, ways, 64, policy, write_back, write_allocate, seed=11))
    assert fast._small
    chunk = chunk_of(trace) if trace else np.empty(0, dtype=ACCESS)
    assert records(fast.feed(chunk)) == records(general.feed(chunk))
    assert fast.counters() == general.counters()
    assert fast.lines().tolist() == general.lines().tolist()


@pytest.mark.parametrize("l2_ways", [2, 4, 8, 12, 16])
@pytest.mark.parametrize("l2_policy", ["lru", "fifo"])
def test_levels_below_l1_hit_their_least_recent_way(l2_ways, l2_policy):
    """A loop over more lines than L1 holds (one set of 8 ways: L1 misses every time) and exactly as many as L2
    holds: after the first round every L2 access hits the least recent way of its set (LRU: the rotation; for
    way counts other than 8 and 16 the probe of the least recent way before the fingerprints). Some stores, so
    dirty lines come down as write-backs too. Counters of every level and memory equal the per-access chain
    reference's."""
    sets1, sets2, line = 1, 8, 64
    lines = sets2 * l2_ways
    trace = [(k * line + 4 * r, 4, int((k + r) % 5 == 0), 0) for r in range(4) for k in range(lines)]
    specs = [(sets1, 8, line, "lru", True, True), (sets2, l2_ways, line, l2_policy, True, True)]
    h = Hierarchy([Cache(f"L{i + 1}", *sp) for i, sp in enumerate(specs)])
    h.feed(chunk_of(trace))
    ref = [RefCache(*sp) for sp in specs]
    memory = run_chain(ref, trace)
    got = h.counters()
    assert got["memory"] == memory
    assert [{k: v for k, v in lv.items() if k != "name"} for lv in got["levels"]] == [r.counters() for r in ref]
    l2 = got["levels"][1]
    assert l2["load_hits"] > l2["load_misses"] > 0  # L2 hits (the second pass) and misses (the first)


@pytest.mark.parametrize("ways", [4, 8, 16])
@pytest.mark.parametrize("write_back,write_allocate", [(True, True), (False, True), (True, False)])
def test_invalidate_records_are_skipped_and_not_counted(ways, write_back, write_allocate):
    """A one-copy level takes no part in coherence: invalidate records (is_write 2) pass it by, uncounted. The
    kernel counts no hits as they happen (load hits follow from the records looked up), so a skipped record
    counted as looked up would show as a hit. Counters and output equal the reference's on the trace without
    them, with some accesses spanning lines (the kernel stops there and goes on)."""
    rng = np.random.default_rng(ways)
    trace = [(int(a), int(s), int(k), 0) for a, s, k in zip(rng.integers(0, 4096, 3000), rng.choice([4, 8, 100], 3000),
                                                             rng.random(3000) < 0.3)]  # fmt: skip
    mixed = []
    for i, acc in enumerate(trace):
        mixed.append(acc)
        if i % 3 == 0:
            mixed.append((acc[0] & ~63, 64, 2, 0))
    c = Cache("L", 4, ways, 64, "lru", write_back, write_allocate)
    ref = RefCache(4, ways, 64, "lru", write_back, write_allocate)
    got = records(c.feed(chunk_of(mixed)))
    assert got == run_level(ref, trace)
    assert c.counters() == ref.counters()


@settings(max_examples=120, deadline=None)
@given(
    ways=st.lists(st.sampled_from([4, 8, 16]), min_size=3, max_size=3),
    policies=st.lists(st.sampled_from(["lru", "fifo"]), min_size=3, max_size=3),
    lines=st.sampled_from([(32, 64, 64), (64, 64, 64), (64, 64, 128), (64, 32, 64)]),
    write_back=st.lists(st.sampled_from([True, True, False]), min_size=3, max_size=3),
    write_allocate=st.lists(st.sampled_from([True, True, False]), min_size=3, max_size=3),
    data=st.data(),
)
def test_levels_below_l1_without_run_collapse_match_chain_reference(ways, policies, lines, write_back, write_allocate,
                                                                    data):  # fmt: skip
    """Below L1, trusted input of 8- or 16-way levels (write-back, write-allocate, LRU or FIFO) runs copies without
    the run collapse (``_run_below``); the rest ``_run_small``. Through a three-level chain with few sets (traces
    crowding them), every counter and the memory traffic equal the per-access chain reference's, fed whole or in
    two chunks."""
    trace = data.draw(set_traces(2, 64))
    cut = data.draw(st.integers(0, len(trace)))
    specs = [(2 * (i + 1), ways[i], lines[i], policies[i], write_back[i], write_allocate[i]) for i in range(3)]
    h = Hierarchy([Cache(f"L{i + 1}", *sp) for i, sp in enumerate(specs)])
    for part in (trace[:cut], trace[cut:]):
        h.feed(chunk_of(part) if part else np.empty(0, dtype=ACCESS))
    ref = [RefCache(*sp) for sp in specs]
    memory = run_chain(ref, trace)
    got = h.counters()
    assert got["memory"] == memory
    assert [{k: v for k, v in lv.items() if k != "name"} for lv in got["levels"]] == [r.counters() for r in ref]
