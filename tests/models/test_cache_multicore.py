"""The multi-core kernels (``_run_copies``: per-core copies of at most 16 ways; ``_run_any``: more ways) through
hierarchies of several cores with write-invalidate coherence, against the naive per-access chain
(tests/reference): every counter of every level and core, and the memory traffic. Larger traces and more cores
than test_hierarchy.py's property tests, ways on both sides of 16 and of a fingerprint word (8), write-back and
write-through, write- and no-write-allocate, lines shrinking and growing between levels."""

from __future__ import annotations

import numpy as np
import pytest

from gemmsim.models.cache import Cache
from reference.chunks import chunk_of
from reference.ref_cache import RefCache
from test_hierarchy import compare


def _trace(seed, cores, n, span):
    rng = np.random.default_rng(seed)
    # Half the accesses in runs of one core on one line (the per-core run shortcut), half scattered; some
    # accesses span two lines.
    out = []
    while len(out) < n:
        core = int(rng.integers(0, cores))
        if rng.random() < 0.5:
            first = int(rng.integers(0, span // 64)) * 64
            for _ in range(1 + int(rng.integers(0, 6))):
                out.append((first + int(rng.integers(0, 16)) * 4, 4, int(rng.random() < 0.3), core))
        else:
            a = int(rng.integers(0, span // 4)) * 4
            out.append((a, int(rng.choice([4, 8, 40, 100])), int(rng.random() < 0.4), core))
    return out[:n]


def _check(specs, cores, n_private, trace, cut):
    """test_hierarchy's comparison with the per-access reference, fed in chunks of ``cut`` accesses."""
    private = [True] * n_private + [False] * (len(specs) - n_private)
    return compare(specs, cores, private, trace, cuts=range(cut, len(trace), cut))


CASES = [
    # (specs: sets, ways, line, policy, write-back, write-allocate), private levels
    ([(8, 4, 64, "lru", True, True), (16, 8, 64, "lru", True, True), (32, 20, 64, "lru", True, True)], 2),
    ([(4, 12, 64, "lru", True, True), (8, 16, 64, "fifo", True, True), (16, 4, 64, "lru", True, True)], 2),
    ([(4, 20, 64, "lru", True, True), (8, 24, 64, "fifo", True, True), (16, 8, 64, "lru", True, True)], 2),
    ([(3, 8, 32, "fifo", True, True), (5, 17, 64, "lru", True, True), (7, 33, 128, "lru", True, True)], 2),
    ([(8, 4, 64, "lru", False, True), (8, 20, 32, "lru", True, False), (16, 4, 64, "fifo", True, True)], 2),
    ([(8, 2, 64, "lru", True, False), (4, 9, 64, "lru", False, False)], 1),
    ([(2, 18, 64, "fifo", False, True), (4, 6, 64, "lru", True, True)], 1),
    ([(4, 16, 64, "lru", True, True), (8, 40, 64, "lru", True, True)], 2),
]


@pytest.mark.parametrize("cores", [2, 3, 8])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_multicore_kernels_match_reference(case, cores):
    specs, n_private = CASES[case]
    trace = _trace(1000 * case + cores, cores, 3000, 4096 if case % 2 else 16384)
    got = _check(specs, cores, n_private, trace, 700)
    # The traces exercise coherence: lines are lost to other cores' writes.
    assert got["levels"][0]["invalidations"] > 0


@pytest.mark.parametrize("copies", [1, 2])
@pytest.mark.parametrize("ways", [2, 8, 9, 16])
def test_hits_on_the_least_recent_way(ways, copies):
    """Lines of one set visited round and round: after the first round every access hits the set's least recent
    way (the rotation shortcut of _small_body and _run_copies); then a new line must evict the line used longest
    ago (lines[0]), and after hits on the others, lines[0] misses and evicts the new line (closed form, and the
    reference's counters)."""
    sets, line, rounds = 4, 64, 5
    lines = [k * sets * line for k in range(ways)]
    trace = [(a, 4, int(r == 2 and k == 1), 0) for r in range(rounds) for k, a in enumerate(lines)]
    new = ways * sets * line
    trace.append((new, 4, 0, 0))  # evicts lines[0], the least recent
    trace += [(a, 4, 0, 0) for a in lines[1:]] + [(lines[0], 4, 0, 0)]  # hits, then a miss that evicts new
    c = Cache("L1", sets, ways, line, copies=copies, coherence="source" if copies > 1 else "none")
    c.feed(chunk_of(trace))
    ref = RefCache(sets, ways, line, copies=copies, coherence="source" if copies > 1 else "none")
    for a, s, k, core in trace:
        ref.access(a, s, k, core)
    got = c.counters()
    assert {k: got[k] for k in ref.counters()} == ref.counters()
    assert got["load_misses"] + got["store_misses"] == ways + 2
    assert got["evictions"] == 2
    assert c.lines().tolist() == lines


@pytest.mark.parametrize("copies", [1, 2])
@pytest.mark.parametrize("ways", [4, 20])
def test_many_line_spanning_accesses(ways, copies):
    """Chunks where most accesses span two lines (48-byte rows at any 16-byte offset) and one spans 5000 lines:
    _drive cuts them into pieces a scratch buffer at a time (4096 pieces), the huge one a line at a time; the
    counters and memory traffic are the reference's, fed whole or in uneven chunks."""
    rng = np.random.default_rng(ways + copies)
    n = 12000
    trace = [(int(rng.integers(0, 1024)) * 16, 48, int(rng.random() < 0.3), int(rng.integers(0, copies))) for _ in range(n)]
    trace.insert(7000, (64 * 3, 64 * 5000, 0, 0))
    specs = [(8, ways, 64, "lru", True, True), (32, 4, 64, "lru", True, True)]
    for cut in (len(trace), 2999):
        got = _check(specs, copies, 1, trace, cut)
        assert got["levels"][0]["loads"] > n
