"""The hierarchy against the naive per-access chain (tests/reference): single core, several cores with
write-invalidate coherence, TLBs beside L1; spec parsing; the counters schema."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.models.cache import COUNTER_KEYS, Cache, CacheConfigError
from gemmsim.models.hierarchy import Hierarchy, parse_cache_spec
from gemmsim.models.tlb import TLB
from gemmsim.trace import make_chunk
from reference.chunks import chunk_of
from reference.ref_cache import RefCache, run_chain
from reference.ref_tlb import RefTLB

level = st.tuples(
    st.sampled_from([1, 2, 3, 4, 8]),  # sets
    st.integers(1, 6),  # ways
    st.sampled_from([16, 32, 64]),  # line
    st.sampled_from(["lru", "fifo"]),
    st.booleans(),  # write-back
    st.booleans(),  # write-allocate
)


@st.composite
def multicore_traces(draw, cores):
    n = draw(st.integers(0, 250))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    span = draw(st.sampled_from([512, 2048, 8192]))
    addr = rng.integers(0, span // 4, n) * 4
    size = rng.choice([4, 4, 4, 8, 40], n)
    kind = (rng.random(n) < 0.4).astype(int)
    core = rng.integers(0, cores, n)
    return [(int(a), int(s), int(k), int(c)) for a, s, k, c in zip(addr, size, kind, core)]


def reference_levels(specs, cores, private):
    levels = []
    for i, (sets, ways, line, pol, wb, wa) in enumerate(specs):
        if cores > 1 and private[i]:
            fwd = i + 1 < len(specs) and private[i + 1]
            levels.append(RefCache(sets, ways, line, pol, wb, wa, copies=cores, coherence="source" if i == 0 else "receiver", forward=fwd))
        else:
            levels.append(RefCache(sets, ways, line, pol, wb, wa))
    return levels


def compare(specs, cores, private, trace, cuts=()):
    h = Hierarchy([Cache(f"L{i + 1}", s, w, ln, p, wb, wa) for i, (s, w, ln, p, wb, wa) in enumerate(specs)], cores=cores, private=private)
    bounds = [0, *sorted(cuts), len(trace)]
    for lo, hi in zip(bounds, bounds[1:]):
        h.feed(chunk_of(trace[lo:hi]))
    ref = reference_levels(specs, cores, private)
    memory = run_chain(ref, trace)
    got = h.counters()
    assert got["memory"] == memory
    for lv, r in zip(got["levels"], ref):
        per_core = lv.pop("per_core", None)
        assert lv == {"name": lv["name"], **r.counters()}
        if per_core is not None:
            assert per_core == [r.counters(copy=k) for k in range(cores)]
    return got


@settings(max_examples=60, deadline=None)
@given(specs=st.lists(level, min_size=1, max_size=3), trace=multicore_traces(1), data=st.data())
def test_single_core_chain_matches_per_access_reference(specs, trace, data):
    """Feeding level by level per chunk equals passing each access all the way down (no inclusion)."""
    cuts = data.draw(st.lists(st.integers(0, len(trace)), max_size=2))
    compare(specs, 1, None, trace, cuts)


@settings(max_examples=60, deadline=None)
@given(specs=st.lists(level, min_size=1, max_size=3), cores=st.integers(2, 4), data=st.data())
def test_multicore_coherence_matches_reference(specs, cores, data):
    if data.draw(st.booleans(), label="more than 16 ways (general kernel)"):
        specs = [(s, w + 16, ln, p, wb, wa) for s, w, ln, p, wb, wa in specs]
    trace = data.draw(multicore_traces(cores))
    n_private = data.draw(st.integers(1, len(specs)))
    private = [True] * n_private + [False] * (len(specs) - n_private)
    compare(specs, cores, private, trace)


def test_false_sharing_closed_form():
    """Two cores take turns writing two words of one line: after the first, every write misses, and
    invalidates (and writes back) the other core's dirty copy. Words on separate lines: 2 misses in all."""
    n = 100
    h = Hierarchy.from_specs(["64:8:64", "512:8:64"], cores=2)  # private L1, shared L2
    h.feed(make_chunk(np.tile([0, 4], n), 4, 1, np.tile([0, 1], n)))
    l1 = h.counters()["levels"][0]
    assert l1["store_misses"] == 2 * n
    assert l1["invalidations"] == 2 * n - 1 and l1["writebacks"] == 2 * n - 1
    assert [c["invalidations"] for c in l1["per_core"]] == [n, n - 1]
    h.reset()
    h.feed(make_chunk(np.tile([0, 64], n), 4, 1, np.tile([0, 1], n)))
    l1 = h.counters()["levels"][0]
    assert (l1["store_misses"], l1["invalidations"]) == (2, 0)


def test_invalidation_reaches_private_l2():
    """Core 1 reads a line, core 0 writes it, core 1 rereads it: core 1's L1 and private L2 copies were dropped,
    so the reread misses in both and is served by the shared L3 (reads do not snoop core 0's dirty copy)."""
    h = Hierarchy.from_specs(["4:2:64", "16:2:64", "64:4:64"], cores=2)  # L1, L2 private; L3 shared
    h.feed(make_chunk([0, 0, 0], 4, [0, 1, 0], [1, 0, 1]))
    lv = h.counters()["levels"]
    assert [c["load_misses"] for c in lv[0]["per_core"]] == [0, 2]
    assert [c["load_misses"] for c in lv[1]["per_core"]] == [1, 2]  # core 0's store miss fills through its L2
    assert [c["invalidations"] for c in lv[1]["per_core"]] == [0, 1]
    assert (lv[2]["load_misses"], lv[2]["load_hits"]) == (1, 2)


def test_tlbs_see_the_l1_stream():
    h = Hierarchy([Cache("L1", 64, 8, 64)], [TLB("DTLB", 16, 4, 4096, 8), TLB("STLB", 128, 8, 4096, 30)])
    rng = np.random.default_rng(3)
    trace = [(int(a), 4, int(k), 0) for a, k in zip(rng.integers(0, 1 << 20, 5000) * 4, rng.integers(0, 2, 5000))]
    h.simulate([chunk_of(trace[:2000]), chunk_of(trace[2000:])])
    r1, r2 = RefTLB(16, 4, 4096), RefTLB(128, 8, 4096)
    for a in trace:
        for m in r1.access(*a):
            r2.access(*m)
    t1, t2 = h.counters()["tlbs"]
    assert (t1["name"], t1["hits"], t1["misses"]) == ("DTLB", r1.hits[0], r1.misses[0])
    assert (t2["hits"], t2["misses"], t2["walks"]) == (r2.hits[0], r2.misses[0], r2.misses[0])
    assert "walks" not in t1 and t1["penalty_cycles"] == 8 * r1.misses[0]


def test_per_core_tlbs():
    h = Hierarchy([Cache("L1", 4, 2, 64)], [TLB("DTLB", 1, 2, 4096, 8)], cores=2, private=[True])
    h.feed(make_chunk([0, 0, 4096, 8192, 0], 4, 0, [0, 1, 0, 0, 1]))
    t = h.counters()["tlbs"][0]
    assert [c["misses"] for c in t["per_core"]] == [3, 1]  # core 0 evicts page 0 from its own TLB only


def test_counters_schema_and_simulate():
    h = Hierarchy.from_specs(["64:8:64", "512:8:64:fifo"])
    c = h.simulate([make_chunk(np.arange(0, 8192, 4), 4, 0)])
    assert set(c) == {"levels", "memory", "tlbs"}
    assert [lv["name"] for lv in c["levels"]] == ["L1", "L2"]
    assert all(tuple(lv) == ("name", *COUNTER_KEYS) for lv in c["levels"])
    assert c["memory"] == {"line_reads": 128, "line_writes": 0}
    assert c["levels"][1]["loads"] == 128


def test_from_machine_haswell():
    from gemmsim.machine import load_machine

    m = load_machine("haswell")
    h = Hierarchy.from_machine(m)
    assert [(c.name, c.sets, c.ways, c.copies) for c in h.levels] == [("L1", 64, 8, 1), ("L2", 512, 8, 1), ("L3", 32768, 20, 1)]
    assert [t.name for t in h.tlbs] == ["DTLB", "STLB"] and h.tlbs[-1].last_level and not h.tlbs[0].last_level
    h4 = Hierarchy.from_machine(m, cores=4)
    assert [c.copies for c in h4.levels] == [4, 4, 1]
    assert [c.coherence for c in h4.levels] == ["source", "receiver", "none"]


@pytest.mark.parametrize(
    "spec,expect",
    [
        ("64:8:64", ("lru", True, True)),
        ("512:8:64:fifo", ("fifo", True, True)),
        ("64:8:64:lru:wt:nwa", ("lru", False, False)),
        ("3:2:16:RANDOM:nwa", ("random", True, False)),
    ],
)
def test_parse_spec(spec, expect):
    c = parse_cache_spec(spec, "L1")
    assert (c.policy, c.write_back, c.write_allocate) == expect


@pytest.mark.parametrize("spec", ["64:8", "64:8:48", "x:8:64", "64:0:64", "64:8:64:lfu", "64:8:64:lru:fifo", "", "64:-8:64"])
def test_bad_specs(spec):
    with pytest.raises(ValueError, match="cache spec"):
        Hierarchy.from_specs([spec])


def test_bad_hierarchies():
    c = Cache("L1", 4, 2, 64)
    with pytest.raises(CacheConfigError):
        Hierarchy([])
    with pytest.raises(CacheConfigError, match="private levels must come first"):
        Hierarchy([c, Cache("L2", 8, 2, 64)], cores=2, private=[False, True])
    with pytest.raises(CacheConfigError):
        Hierarchy([c], cores=0)
    h = Hierarchy([c], cores=2, private=[True])
    with pytest.raises(CacheConfigError, match="core 5"):
        h.feed(make_chunk([0], 4, 0, 5))


def test_pipeline_gives_the_sequential_counters():
    rng = np.random.default_rng(5)

    def chunks():
        buf = np.empty(3000, dtype=make_chunk([0], 4, 0).dtype)
        for _ in range(12):
            # the same buffer refilled every time: simulate(pipeline=True) must copy what it takes
            buf["addr"] = rng.integers(0, 1 << 16, 3000) * 4
            buf["size"] = 4
            buf["is_write"] = rng.random(3000) < 0.3
            buf["core"] = rng.integers(0, 2, 3000)
            yield buf

    def build():
        return Hierarchy([Cache("L1", 8, 4, 64), Cache("L2", 32, 4, 64), Cache("L3", 64, 20, 64)], [TLB("DTLB", 4, 4, 4096, 8)], cores=2)

    state = rng.bit_generator.state
    seq = build().simulate(chunks())
    for workers in (True, 1, 2, 3, 4):  # TLBs with L1 or on their own thread; levels grouped or not
        rng.bit_generator.state = state
        assert build().simulate(chunks(), pipeline=workers) == seq


def test_pipeline_reports_errors():
    h = Hierarchy.from_specs(["4:2:64"], cores=2)
    with pytest.raises(CacheConfigError, match="core 7"):
        h.simulate([make_chunk([0], 4, 0), make_chunk([0], 4, 0, 7), make_chunk([0], 4, 0)], pipeline=True)
    with pytest.raises(TypeError):
        h.simulate([np.zeros(3)], pipeline=True)


@st.composite
def multicore_run_traces(draw, cores):
    """Bursts of one core's accesses to one line (loads and stores), cores taking turns: the runs the per-core
    kernel collapses, with another core's writes to the same lines in between."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    span = draw(st.sampled_from([256, 1024, 4096]))
    out = []
    for _ in range(draw(st.integers(0, 60))):
        core = int(rng.integers(0, cores))
        first = int(rng.integers(0, span // 16)) * 16
        for _ in range(1 + int(rng.integers(0, 6))):
            out.append((first + int(rng.integers(0, 4)) * 4, 4, int(rng.random() < 0.3), core))
    return out


@settings(max_examples=60, deadline=None)
@given(specs=st.lists(level, min_size=1, max_size=3), cores=st.integers(2, 4), data=st.data())
def test_multicore_runs_match_reference(specs, cores, data):
    trace = data.draw(multicore_run_traces(cores))
    n_private = data.draw(st.integers(1, len(specs)))
    private = [True] * n_private + [False] * (len(specs) - n_private)
    compare(specs, cores, private, trace)
