"""Misses by operand and by cause (Hill's 3C): streams worked by hand, a naive reference, and the real Cache."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from gemmsim.errors import GemmsimError
from gemmsim.models.cache import Cache
from gemmsim.models.missclass import COUNTERS, MissClassifier, classify_hierarchy, miss_class_columns, ranges_of_layout
from gemmsim.trace import Layout, concat, make_chunk


def _classify(addrs, sets, ways, line=64, sizes=4, writes=0, ranges=()):
    mc = MissClassifier(sets, ways, line, ranges)
    mc.feed(make_chunk(np.asarray(addrs, dtype=np.uint64), sizes, writes))
    return mc.counters()


def test_power_of_two_column_walk_is_all_conflict():
    # 64 sets x 2 ways x 64 B = 8 KiB. A column of a 1024-float row-major matrix: rows are 4 KiB apart, so every
    # element maps to set 0. Eight rows, walked twice: 8 first touches, then 8 misses that a fully associative
    # cache of 128 lines would have served -- conflict, nothing else.
    col = [i * 4096 for i in range(8)]
    t = _classify(col * 2, sets=64, ways=2)["total"]
    assert (t["accesses"], t["misses"], t["compulsory"], t["capacity"], t["conflict"]) == (16, 16, 8, 0, 8)


def test_padding_the_leading_dimension_removes_the_conflicts():
    # the same walk with one line of padding per row (4096 + 64 bytes): rows fall in 8 different sets, all hit.
    col = [i * (4096 + 64) for i in range(8)]
    t = _classify(col * 2, sets=64, ways=2)["total"]
    assert (t["misses"], t["compulsory"], t["conflict"]) == (8, 8, 0)


def test_a_sweep_larger_than_the_cache_is_all_capacity():
    # 4 sets x 2 ways = 8 lines; 16 consecutive lines twice: LRU keeps none of them for the second pass, in any
    # geometry of 8 lines.
    sweep = [i * 64 for i in range(16)]
    t = _classify(sweep * 2, sets=4, ways=2)["total"]
    assert (t["misses"], t["compulsory"], t["capacity"], t["conflict"]) == (32, 16, 16, 0)


def test_an_access_that_spans_two_lines_is_two_accesses():
    t = _classify([60], sets=4, ways=2, sizes=8)["total"]
    assert (t["accesses"], t["misses"], t["compulsory"]) == (2, 2, 2)


def _reference(addrs, sizes, writes, sets, ways, line, ranges):
    """Naive 3C: lists for the set-associative LRU, an OrderedDict for the fully associative one."""
    ops = [r[0] for r in ranges] + ["other"]
    cnt = {o: dict.fromkeys(COUNTERS, 0) for o in ops}
    sa = [[] for _ in range(sets)]  # each list MRU last
    fa: OrderedDict = OrderedDict()
    seen = set()
    cap = sets * ways
    for a, s, w in zip(addrs, sizes, writes):
        op = next((name for name, lo, hi in ranges if lo <= a < hi), "other")
        for ln in range(a // line, (a + max(s, 1) - 1) // line + 1):
            c = cnt[op]
            c["accesses"] += 1
            c["stores" if w else "loads"] += 1
            st = sa[ln % sets]
            hit = ln in st
            if hit:
                st.remove(ln)
            elif len(st) == ways:
                st.pop(0)
            st.append(ln)
            if not hit:
                c["misses"] += 1
                if ln not in seen:
                    c["compulsory"] += 1
                elif ln not in fa:
                    c["capacity"] += 1
                else:
                    c["conflict"] += 1
            seen.add(ln)
            if ln in fa:
                fa.move_to_end(ln)
            else:
                if len(fa) == cap:
                    fa.popitem(last=False)
                fa[ln] = True
    return cnt


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_naive_reference_on_random_streams(seed):
    rng = np.random.default_rng(seed)
    sets, ways, line = [(1, 1, 16), (4, 2, 32), (8, 4, 64), (3, 2, 64), (16, 1, 32), (2, 8, 16)][seed]
    n = 3000
    span = int(rng.integers(2, 6)) * sets * ways * line
    addrs = rng.integers(0, span, n)
    if seed % 2:  # strided walks make conflicts
        addrs[::3] = (np.arange(len(addrs[::3])) % 7) * sets * line
    sizes = rng.choice([1, 4, 8, 16], n)
    writes = rng.integers(0, 2, n)
    ranges = [("A", 0, span // 3), ("B", span // 3, 2 * span // 3)]
    mc = MissClassifier(sets, ways, line, ranges)
    for part in np.array_split(np.arange(n), 4):  # state carries across chunks
        mc.feed(make_chunk(addrs[part].astype(np.uint64), sizes[part], writes[part]))
    got = mc.counters()
    ref = _reference(addrs.tolist(), sizes.tolist(), writes.tolist(), sets, ways, line, ranges)
    for op, c in ref.items():
        assert {k: got["by_operand"][op][k] for k in COUNTERS} == c, op
    tot = got["total"]
    assert tot["compulsory"] + tot["capacity"] + tot["conflict"] == tot["misses"]


def test_levels_agree_with_the_real_caches_on_a_kernel_stream():
    from gemmsim.sim.cpu import CPU_KERNELS

    lay = Layout.build(24, 24, 24, "fp32")
    k = CPU_KERNELS["jki"]
    trace = concat(k.trace(lay, k.params(), None))
    levels = [Cache(name="L1", sets=8, ways=2, line_bytes=64), Cache(name="L2", sets=32, ways=4, line_bytes=64)]
    got = classify_hierarchy(levels, [trace], ranges_of_layout(lay))
    for lv in got:
        assert lv["total"]["misses"] == lv["cache_misses"]
        assert sum(c["misses"] for c in lv["by_operand"].values()) == lv["total"]["misses"]
    # jki walks A and C down columns of row-major matrices, N^3 times each: most of their accesses miss, and they
    # make almost all the misses; B[k][j] is read once per (k, j) and held in a register for the i loop
    l1 = got[0]["by_operand"]
    assert l1["A"]["misses"] / l1["A"]["accesses"] > 0.5 and l1["C"]["misses"] >= 24**3  # every C load misses; its store hits
    assert l1["B"]["accesses"] == 24 * 24 and l1["A"]["misses"] > 10 * l1["B"]["misses"]
    cols = miss_class_columns(got)
    assert cols["L1_compulsory"] + cols["L1_capacity"] + cols["L1_conflict"] == got[0]["cache_misses"]
    assert cols["L1_A_misses"] == l1["A"]["misses"]


def test_refuses_what_it_cannot_classify_exactly():
    with pytest.raises(GemmsimError, match="LRU"):
        MissClassifier.for_cache(Cache(name="L1", sets=8, ways=2, line_bytes=64, policy="fifo"))
    with pytest.raises(GemmsimError, match="power of two"):
        MissClassifier(8, 2, 48)
