"""The fast cache model against the naive reference (tests/reference/ref_cache.py), closed forms and edge cases.

Every counter and the whole stream sent to the next level must be identical. Random traces use addresses in
a small range so that sets conflict, mixed sizes (some spanning two lines) and mixed loads and stores.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.models.cache import COUNTER_KEYS, Cache, CacheConfigError
from gemmsim.trace import ACCESS, make_chunk
from reference.chunks import chunk_of, records
from reference.ref_cache import RefCache, run_level

SIZES = (1, 2, 4, 8, 16, 24, 64, 100)


@st.composite
def traces(draw, max_len=300):
    """Random accesses over a small address range (a few times the cache), mixed sizes and kinds."""
    span = draw(st.sampled_from([256, 1024, 4096, 16384]))
    n = draw(st.integers(0, max_len))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, span, n)
    size = rng.choice(SIZES, n, p=[0.1, 0.1, 0.4, 0.2, 0.05, 0.05, 0.05, 0.05])
    kind = (rng.random(n) < draw(st.sampled_from([0.0, 0.3, 0.7]))).astype(int)
    return [(int(a), int(s), int(k), 0) for a, s, k in zip(addr, size, kind)]


configs = st.fixed_dictionaries(
    {
        "sets": st.sampled_from([1, 2, 3, 4, 5, 8, 16]),
        "ways": st.integers(1, 8),
        "line": st.sampled_from([16, 32, 64, 128]),
        "policy": st.sampled_from(["lru", "fifo"]),
        "write_back": st.booleans(),
        "write_allocate": st.booleans(),
    }
)


def build(cfg, **kw):
    fast = Cache("L", cfg["sets"], cfg["ways"], cfg["line"], cfg["policy"], cfg["write_back"], cfg["write_allocate"], **kw)
    ref = RefCache(cfg["sets"], cfg["ways"], cfg["line"], cfg["policy"], cfg["write_back"], cfg["write_allocate"])
    return fast, ref


def check_equal(fast, ref, trace, cuts=()):
    """Feed the trace (split at ``cuts``) to both models; compare outputs, counters and contents."""
    out = []
    bounds = [0, *sorted(cuts), len(trace)]
    for lo, hi in zip(bounds, bounds[1:]):
        out += records(fast.feed(chunk_of(trace[lo:hi])))
    assert out == run_level(ref, trace)
    assert fast.counters() == ref.counters()
    assert fast.lines().tolist() == ref.lines()


@settings(max_examples=150, deadline=None)
@given(cfg=configs, trace=traces(), data=st.data())
def test_matches_reference(cfg, trace, data):
    fast, ref = build(cfg)
    cuts = data.draw(st.lists(st.integers(0, len(trace)), max_size=3))
    check_equal(fast, ref, trace, cuts)


@settings(max_examples=40, deadline=None)
@given(cfg=configs, ways=st.integers(17, 24), trace=traces())
def test_matches_reference_many_ways(cfg, ways, trace):
    """More than 16 ways takes the general kernel (stamps instead of packed recency order)."""
    cfg = {**cfg, "ways": ways}
    fast, ref = build(cfg)
    check_equal(fast, ref, trace)


def test_counter_keys_are_the_simulate_json_schema():
    assert tuple(Cache("L1", 4, 2, 64).counters()) == COUNTER_KEYS


@pytest.mark.parametrize("ways", [2, 20])
def test_empty_chunk(ways):
    c = Cache("L1", 4, ways, 64)
    out = c.feed(np.empty(0, dtype=ACCESS))
    assert out.shape == (0,) and out.dtype == ACCESS
    assert all(v == 0 for v in c.counters().values())


@pytest.mark.parametrize("ways", [4, 20])
def test_line_spanning_access_counts_once_per_line(ways):
    # 8 bytes at 60 touch lines 0 and 1 (64 B lines); 200 bytes at 100 touch lines 1, 2, 3, 4.
    c = Cache("L1", 8, ways, 64)
    out = c.feed(make_chunk([60, 100], [8, 200], [0, 1]))
    cnt = c.counters()
    assert (cnt["loads"], cnt["load_misses"]) == (2, 2)
    assert (cnt["stores"], cnt["store_hits"], cnt["store_misses"]) == (4, 1, 3)
    assert records(out) == [(0, 64, 0, 0), (64, 64, 0, 0), (128, 64, 0, 0), (192, 64, 0, 0), (256, 64, 0, 0)]
    assert cnt["dirty_at_end"] == 4


def test_very_long_access_grows_the_output_buffer():
    # One 64 KiB store through a write-through cache sends on 1024 line loads and 1024 stores.
    c = Cache("L1", 16, 4, 64, write_back=False)
    out = c.feed(make_chunk([0, 8], [65536, 4], [1, 0]))
    assert len(out) == 2048 + 1
    assert c.counters()["store_misses"] == 1024


@pytest.mark.parametrize("policy", ["lru", "fifo", "random"])
@pytest.mark.parametrize("sets,ways", [(1, 8), (64, 8), (48, 4), (4, 20)])
def test_sequential_sweep_misses_once_per_line(policy, sets, ways):
    """Closed form: reading S bytes in order, 4 bytes at a time, misses exactly S / line times."""
    line, S = 64, 64 * 1024
    c = Cache("L1", sets, ways, line, policy)
    c.feed(make_chunk(np.arange(0, S, 4), 4, 0))
    cnt = c.counters()
    assert cnt["load_misses"] == S // line
    assert cnt["load_hits"] == S // 4 - S // line
    assert cnt["evictions"] == S // line - sets * ways


@pytest.mark.parametrize("sets,ways", [(64, 8), (12, 4), (1, 16), (3, 20)])
def test_conflicting_addresses_all_miss_under_lru(sets, ways):
    """Closed form: addresses sets*line apart map to one set; cycling over ways+1 of them, LRU always misses."""
    line = 64
    addrs = np.arange(ways + 1) * sets * line
    c = Cache("L1", sets, ways, line)
    c.feed(make_chunk(np.tile(addrs, 10), 4, 0))
    cnt = c.counters()
    assert cnt["load_misses"] == 10 * (ways + 1)
    assert len(c.lines()) == ways  # only one set was ever used
    # ... while `ways` of them fit: after the first round every access hits.
    c.reset()
    c.feed(make_chunk(np.tile(addrs[:ways], 10), 4, 0))
    assert c.counters()["load_misses"] == ways


def test_fully_associative_one_set():
    c = Cache("L1", 1, 4, 16)
    c.feed(make_chunk([0, 16, 32, 48, 0, 64, 16], 4, 0))
    # LRU: 0 hits again; 64 evicts 16 (least recently used), so 16 misses again.
    assert c.counters()["load_misses"] == 6
    assert c.lines().tolist() == [0, 16, 48, 64]


def test_lru_refreshed_on_store_hits():
    # 2-way set: 0 and 64 cached; a store hit on 0 makes 64 the LRU line, so loading 128 evicts 64.
    c = Cache("L1", 1, 2, 64)
    c.feed(make_chunk([0, 64, 0, 128], 4, [0, 0, 1, 0]))
    assert c.lines().tolist() == [0, 128]


def test_write_back_order_load_before_victim():
    c = Cache("L1", 1, 1, 64)
    out = c.feed(make_chunk([0, 64], 4, [1, 0]))
    assert records(out) == [(0, 64, 0, 0), (64, 64, 0, 0), (0, 64, 1, 0)]
    assert c.counters()["writebacks"] == 1 and c.counters()["evictions"] == 1


def test_write_through_and_no_write_allocate():
    c = Cache("L1", 1, 2, 64, write_back=False, write_allocate=False)
    out = c.feed(make_chunk([4, 4, 8], 4, [1, 0, 1]))
    # store miss passes around; load miss allocates; store hit is written through.
    assert records(out) == [(4, 4, 1, 0), (0, 64, 0, 0), (8, 4, 1, 0)]
    cnt = c.counters()
    assert (cnt["store_misses"], cnt["store_hits"], cnt["dirty_at_end"]) == (1, 1, 0)


def test_random_policy_is_reproducible_and_sane():
    rng = np.random.default_rng(1)
    chunk = make_chunk(rng.integers(0, 1 << 12, 20000) * 4, 4, rng.random(20000) < 0.3)  # aligned: one line each
    runs = []
    for seed in (7, 7, 8):
        c = Cache("L1", 8, 4, 64, "random", seed=seed)
        out = c.feed(chunk)
        runs.append((records(out), c.counters()))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]  # another seed picks other victims
    for out, cnt in runs:
        assert cnt["loads"] + cnt["stores"] == 20000
        misses = cnt["load_misses"] + cnt["store_misses"]
        assert sum(1 for r in out if r[2] == 0) == misses  # write-allocate: one line load per miss
        assert sum(1 for r in out if r[2] == 1) == cnt["writebacks"]
        assert cnt["evictions"] == misses - 8 * 4  # every way filled once, then each miss evicts
        assert cnt["writebacks"] <= cnt["evictions"]
    c = Cache("L1", 8, 4, 64, "random", seed=7)
    c.feed(chunk)
    c.reset()
    c.feed(chunk)
    assert c.counters() == runs[0][1]  # reset restarts the generator


def test_random_never_evicts_while_a_way_is_free():
    # 4 lines per set, 4 ways: random replacement has nothing to evict, like LRU.
    addrs = np.tile(np.arange(16) * 64, 50)
    c = Cache("L1", 4, 4, 64, "random")
    c.feed(make_chunk(addrs, 4, 0))
    assert c.counters()["load_misses"] == 16 and c.counters()["evictions"] == 0


def test_from_level_uses_the_machine_geometry():
    from gemmsim.machine import load_machine

    m = load_machine("haswell")
    c = Cache.from_level(m.caches[0])
    assert (c.sets, c.ways, c.line_bytes, c.size_bytes) == (64, 8, 64, 32768)


@pytest.mark.parametrize(
    "kw",
    [dict(sets=0), dict(ways=-1), dict(line_bytes=48), dict(policy="lfu"), dict(sets=2.5)],
)
def test_bad_configuration(kw):
    args = dict(name="L1", sets=4, ways=2, line_bytes=64) | kw
    with pytest.raises(CacheConfigError):
        Cache(**args)
    with pytest.raises(ValueError):
        Cache(**args)


def test_wrong_chunk_type():
    with pytest.raises(TypeError):
        Cache("L1", 4, 2, 64).feed(np.zeros(4, dtype=np.uint64))


@pytest.mark.parametrize("ways", [4, 20])
def test_random_policy_per_core_copies(ways):
    """Per-core copies (the multi-core kernels) under random replacement: reproducible, and each core's copy
    sees only its own accesses (a copy alone gives the same counts as that core's accesses through one cache)."""
    rng = np.random.default_rng(2)
    addr = rng.integers(0, 1 << 12, 6000) * 4
    core = rng.integers(0, 2, 6000)
    chunk = make_chunk(addr, 4, 0, core)
    a = Cache("L1", 4, ways, 64, "random", seed=3, copies=2)
    b = Cache("L1", 4, ways, 64, "random", seed=3, copies=2)
    assert records(a.feed(chunk)) == records(b.feed(chunk))
    per_core = a.core_counters()
    assert [c["loads"] for c in per_core] == [int((core == 0).sum()), int((core == 1).sum())]
    lru = Cache("L1", 4, ways, 64, copies=2)
    lru.feed(chunk)
    for k in (0, 1):
        alone = Cache("L1", 4, ways, 64)
        alone.feed(make_chunk(addr[core == k], 4, 0))
        assert lru.core_counters()[k] == alone.counters()


@st.composite
def run_traces(draw, max_len=300):
    """Traces made of runs: each access followed by up to 5 more to the same line (other bytes, other kinds),
    the case the kernels collapse (a run after its first access is a hit with no change of order)."""
    line = 64
    n = draw(st.integers(0, max_len // 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    span = draw(st.sampled_from([512, 2048, 8192]))
    store_share = draw(st.sampled_from([0.0, 0.3, 0.7]))
    out = []
    for a in rng.integers(0, span // 4, n) * 4:
        first = int(a) - int(a) % line
        for _ in range(1 + int(rng.integers(0, 6))):
            off = int(rng.integers(0, line // 4)) * 4
            out.append((first + off, 4, int(rng.random() < store_share), 0))
    return out


@settings(max_examples=120, deadline=None)
@given(cfg=configs, trace=run_traces(), data=st.data())
def test_runs_to_one_line_match_reference(cfg, trace, data):
    fast, ref = build(cfg)
    cuts = data.draw(st.lists(st.integers(0, len(trace)), max_size=3))
    check_equal(fast, ref, trace, cuts)


def test_run_store_after_no_write_allocate_miss_is_a_miss_again():
    """A store miss that does not allocate leaves nothing cached: the next access to that line is no run."""
    fast = Cache("L", 1, 2, 64, write_allocate=False)
    out = fast.feed(make_chunk([0, 8, 16], 4, [1, 1, 0]))
    c = fast.counters()
    assert (c["store_misses"], c["store_hits"], c["load_misses"]) == (2, 0, 1)
    assert out["is_write"].tolist() == [1, 1, 0]


@settings(max_examples=40, deadline=None)
@given(cfg=configs, ways=st.integers(17, 32), trace=st.one_of(traces(), run_traces()))
def test_wide_kernel_matches_reference(cfg, ways, trace):
    """17 to 32 ways, one copy: the wide kernel (fingerprints and stamps)."""
    cfg = {**cfg, "ways": ways}
    fast, ref = build(cfg)
    assert fast._wide
    check_equal(fast, ref, trace)


@settings(max_examples=25, deadline=None)
@given(cfg=configs, ways=st.integers(33, 40), trace=traces())
def test_general_kernel_beyond_wide_matches_reference(cfg, ways, trace):
    """More than 32 ways still takes the general kernel."""
    cfg = {**cfg, "ways": ways}
    fast, ref = build(cfg)
    assert not fast._wide and not fast._small
    check_equal(fast, ref, trace)


@settings(max_examples=30, deadline=None)
@given(cfg=configs, ways=st.integers(17, 32), policy=st.sampled_from(["lru", "fifo", "random"]), trace=traces())
def test_wide_kernel_equals_general_kernel(cfg, ways, policy, trace):
    """Random replacement has no reference: the wide kernel must draw the same victims as the general one."""
    wide = Cache("L", cfg["sets"], ways, cfg["line"], policy, cfg["write_back"], cfg["write_allocate"], seed=7)
    general = Cache("L", cfg["sets"], ways, cfg["line"], policy, cfg["write_back"], cfg["write_allocate"], seed=7)
    general._wide = False  # the general kernel runs on the stamps and mru arrays it keeps too
    chunk = chunk_of(trace)
    assert records(wide.feed(chunk)) == records(general.feed(chunk))
    assert wide.counters() == general.counters()
    assert wide.lines().tolist() == general.lines().tolist()
