"""Why an access missed: misses by operand (A, B, C, buffers) and by cause (compulsory, capacity, conflict).

Hill's three Cs (M. D. Hill and A. J. Smith, "Evaluating Associativity in CPU Caches", IEEE Trans. Computers 38(12),
1989), decided access by access for one cache level:

- *compulsory*: the first access ever to the line (it would miss in a cache of any size);
- *capacity*: not the first access, and it would also miss in a fully associative LRU cache with the same number
  of lines (the working set does not fit);
- *conflict*: the rest -- it would hit in that fully associative cache, but the set it maps to was full
  (too few ways, or addresses that crowd into a few sets, such as a power-of-two leading dimension).

Every miss of the level falls in exactly one class, so compulsory + capacity + conflict = misses. (An access can hit
in the set-associative cache and miss in the fully associative one -- LRU is not a stack algorithm across
geometries -- and is then a hit, counted nowhere here; so "capacity misses" can exceed "FA misses minus
compulsory" by nothing and fall short of it by those accesses.)

``MissClassifier`` follows one level: it keeps the level's set-associative LRU state, a fully associative LRU
of the same capacity (a doubly linked list over line slots, O(1) per access) and the set of lines ever touched
(an open-addressing hash table).
It is exact for LRU, write-allocate levels -- the same decisions as ``gemmsim.models.cache.Cache`` (tested
against it and against a naive reference) -- and refuses other policies rather than guess.

``classify_hierarchy`` runs a trace through real ``Cache`` levels (their outputs are the next level's inputs, misses
and write-backs) with one classifier beside each level, and returns per level and per operand: accesses, loads,
stores, misses, the three Cs and the bytes brought in. Operands are address ranges (``ranges_of_layout``): a
gemmsim trace's A, B and C come from its ``Layout``; anything else (packed buffers, spill slots) is ``other``.
It is a second pass over the trace, so it is opt-in: ``simulate --by-array``, or ``miss_classes=True`` in
``simulate_cpu``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numba import njit

from gemmsim.errors import GemmsimError
from gemmsim.trace import ACCESS

#: Counter columns, per operand: accesses, loads, stores, misses, then the three Cs.
COUNTERS = ("accesses", "loads", "stores", "misses", "compulsory", "capacity", "conflict")
_ACC, _LD, _ST, _MISS, _COMP, _CAP, _CONF = range(7)


@njit(cache=True, nogil=True, inline="always")
def _slot_of(keys, line):
    """Index of ``line`` in the open-addressing table ``keys`` (keys hold line + 1; 0 = empty), or of the empty
    slot where it would go."""
    mask = keys.shape[0] - 1
    h = (np.uint64(line) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)
    i = np.int64(h & np.uint64(mask))
    while keys[i] != 0 and keys[i] != line + 1:
        i = (i + 1) & mask
    return i


@njit(cache=True, nogil=True)
def _rehash(keys, vals, new_size):
    nk = np.zeros(new_size, dtype=np.int64)
    nv = np.zeros(new_size, dtype=np.int64)
    for i in range(keys.shape[0]):
        if keys[i] != 0:
            j = _slot_of(nk, keys[i] - 1)
            nk[j] = keys[i]
            nv[j] = vals[i]
    return nk, nv


@njit(cache=True, nogil=True)
def _classify(addr, size, isw, lo, hi, shift, sets, ways, tags, stamps, clock,
              keys, where, fa_line, fa_prev, fa_next, fa_state, cnt):  # fmt: skip
    """One chunk through one level. ``fa_state`` = [head (MRU), tail (LRU), used slots, distinct lines]; the
    open-addressing table ``keys``/``where`` maps a line to its FA slot if resident, -1 if seen before but not
    resident (absent: never seen). The caller keeps the table at most half full. Returns the updated clock."""
    cap = fa_line.shape[0]
    nops = lo.shape[0]
    for i in range(addr.shape[0]):
        a = np.int64(addr[i])
        op = nops  # 'other'
        for o in range(nops):
            if lo[o] <= a < hi[o]:
                op = o
                break
        sz = np.int64(size[i])
        first = a >> shift
        last = (a + (sz if sz > 0 else 1) - 1) >> shift
        for line in range(first, last + 1):
            clock += 1
            cnt[op, 0] += 1
            if isw[i] == 1:
                cnt[op, 2] += 1
            else:
                cnt[op, 1] += 1
            # the set-associative LRU level
            s = line % sets
            base = s * ways
            hit = False
            victim = base
            oldest = stamps[base]
            for w in range(ways):
                if tags[base + w] == line:
                    hit = True
                    stamps[base + w] = clock
                    break
                if stamps[base + w] < oldest:
                    oldest = stamps[base + w]
                    victim = base + w
            if not hit:
                tags[victim] = line
                stamps[victim] = clock
            # the fully associative LRU of the same capacity, and first touches
            hslot = _slot_of(keys, line)
            slot = np.int64(-2)
            if keys[hslot] != 0:
                slot = where[hslot]
            else:
                keys[hslot] = line + 1
                fa_state[3] += 1
            fa_hit = slot >= 0
            if not hit:
                cnt[op, 3] += 1
                if slot == -2:
                    cnt[op, 4] += 1
                elif not fa_hit:
                    cnt[op, 5] += 1
                else:
                    cnt[op, 6] += 1
            head = fa_state[0]
            if fa_hit:
                if slot != head:  # unlink, then put at the head
                    p, n = fa_prev[slot], fa_next[slot]
                    fa_next[p] = n
                    if n >= 0:
                        fa_prev[n] = p
                    else:
                        fa_state[1] = p
                    fa_prev[slot] = -1
                    fa_next[slot] = head
                    fa_prev[head] = slot
                    fa_state[0] = slot
            else:
                if fa_state[2] < cap:
                    slot = fa_state[2]
                    fa_state[2] += 1
                else:  # evict the LRU line
                    slot = fa_state[1]
                    where[_slot_of(keys, fa_line[slot])] = -1
                    p = fa_prev[slot]
                    fa_state[1] = p
                    if p >= 0:
                        fa_next[p] = -1
                    head = fa_state[0] if fa_state[0] != slot else -1
                fa_line[slot] = line
                where[hslot] = slot
                fa_prev[slot] = -1
                fa_next[slot] = head
                if head >= 0:
                    fa_prev[head] = slot
                else:
                    fa_state[1] = slot
                fa_state[0] = slot
    return clock


class MissClassifier:
    """Misses of one LRU, write-allocate cache level, by operand and by cause (see the module docstring)."""

    def __init__(self, sets: int, ways: int, line_bytes: int, ranges: Sequence[tuple[str, int, int]] = (), name: str = "L1"):
        for what, v in (("sets", sets), ("ways", ways), ("line_bytes", line_bytes)):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise GemmsimError(f"{name}: {what} must be a positive integer, got {v!r}")
        if line_bytes & (line_bytes - 1):
            raise GemmsimError(f"{name}: line_bytes must be a power of two, got {line_bytes}")
        if sets * ways > 1 << 26:
            raise GemmsimError(f"{name}: {sets} x {ways} lines is too large to classify (at most 2^26 lines)")
        self.name = name
        self.sets, self.ways, self.line_bytes = int(sets), int(ways), int(line_bytes)
        self.shift = int(line_bytes).bit_length() - 1
        self.operands = [r[0] for r in ranges] + ["other"]
        self._lo = np.array([r[1] for r in ranges], dtype=np.int64)
        self._hi = np.array([r[2] for r in ranges], dtype=np.int64)
        self.reset()

    @classmethod
    def for_cache(cls, cache, ranges: Sequence[tuple[str, int, int]] = ()) -> "MissClassifier":
        """A classifier with the geometry of a ``gemmsim.models.cache.Cache``; refuses what it cannot classify exactly."""
        policy = getattr(cache, "policy", "lru")
        if policy != "lru" or not getattr(cache, "write_allocate", True) or getattr(cache, "copies", 1) != 1:
            raise GemmsimError(
                f"level {cache.name}: miss classes are computed for single-core LRU write-allocate levels only "
                f"(this one: policy {policy}, write_allocate {getattr(cache, 'write_allocate', True)}, copies {getattr(cache, 'copies', 1)})"
            )
        return cls(cache.sets, cache.ways, cache.line_bytes, ranges, name=cache.name)

    def reset(self) -> None:
        """Empty the level, forget every line seen, zero the counters."""
        n = self.sets * self.ways
        self._tags = np.full(n, -1, dtype=np.int64)
        self._stamps = np.zeros(n, dtype=np.int64)
        self._clock = 0
        self._keys = np.zeros(1 << 12, dtype=np.int64)
        self._where = np.zeros(1 << 12, dtype=np.int64)
        self._fa_line = np.zeros(n, dtype=np.int64)
        self._fa_prev = np.full(n, -1, dtype=np.int64)
        self._fa_next = np.full(n, -1, dtype=np.int64)
        self._fa_state = np.array([-1, -1, 0, 0], dtype=np.int64)
        self._cnt = np.zeros((len(self.operands), len(COUNTERS)), dtype=np.int64)

    def feed(self, chunk: np.ndarray) -> None:
        """Classify a chunk of ``gemmsim.trace.ACCESS`` records (the level's input stream)."""
        if not isinstance(chunk, np.ndarray) or chunk.dtype != ACCESS:
            raise TypeError("MissClassifier.feed() needs a numpy array of gemmsim.trace.ACCESS records")
        n = chunk.shape[0]
        if n == 0:
            return
        # at most this many new lines: every access touches ceil(size / line) + 1 lines at most
        most = n * (int(chunk["size"].max()) // self.line_bytes + 2)
        need = 2 * (int(self._fa_state[3]) + most)
        if need > self._keys.shape[0]:
            self._keys, self._where = _rehash(self._keys, self._where, 1 << (need - 1).bit_length())
        self._clock = _classify(
            chunk["addr"], chunk["size"], chunk["is_write"], self._lo, self._hi, self.shift, self.sets, self.ways,
            self._tags, self._stamps, self._clock, self._keys, self._where, self._fa_line, self._fa_prev,
            self._fa_next, self._fa_state, self._cnt,
        )  # fmt: skip

    def counters(self) -> dict:
        """``{"total": {...}, "by_operand": {name: {...}}}`` with the keys of ``COUNTERS`` and ``fill_bytes``
        (misses x line size: the bytes this level brought in for that operand)."""

        def d(row) -> dict:
            out = {k: int(v) for k, v in zip(COUNTERS, row)}
            out["fill_bytes"] = out["misses"] * self.line_bytes
            return out

        return {"name": self.name, "total": d(self._cnt.sum(axis=0)), "by_operand": {o: d(self._cnt[i]) for i, o in enumerate(self.operands)}}


def ranges_of_layout(layout) -> list[tuple[str, int, int]]:
    """The operands of a ``gemmsim.trace.Layout`` as address ranges: A, B, C (everything past C is 'other')."""
    return [("A", layout.a_base, layout.b_base), ("B", layout.b_base, layout.c_base), ("C", layout.c_base, layout.end)]


def classify_hierarchy(levels: Sequence, chunks: Iterable[np.ndarray], ranges: Sequence[tuple[str, int, int]] = ()) -> list[dict]:
    """Run ``chunks`` through ``levels`` (``Cache`` objects, L1 first, freshly reset; they are simulated into) with a
    classifier beside each; return each level's ``MissClassifier.counters()`` with the level's own miss count
    (``cache_misses``) beside it, so a caller can see the two agree."""
    classifiers = [MissClassifier.for_cache(c, ranges) for c in levels]
    for chunk in chunks:
        x = chunk
        for c, mc in zip(levels, classifiers):
            mc.feed(x)
            x = c.feed(x)
    out = []
    for c, mc in zip(levels, classifiers):
        got = mc.counters()
        k = c.counters()
        got["cache_misses"] = int(k["load_misses"] + k["store_misses"])
        out.append(got)
    return out


def miss_class_columns(levels: list[dict]) -> dict:
    """Result-row columns from ``classify_hierarchy``: ``<L>_compulsory``, ``<L>_capacity``, ``<L>_conflict`` and per
    operand ``<L>_<op>_loads``, ``_misses``, ``_miss_rate``, ``_fill_bytes``."""
    row: dict = {}
    for lv in levels:
        n = lv["name"]
        for k in ("compulsory", "capacity", "conflict"):
            row[f"{n}_{k}"] = lv["total"][k]
        for op, c in lv["by_operand"].items():
            if op == "other" and c["accesses"] == 0:
                continue
            row[f"{n}_{op}_accesses"] = c["accesses"]
            row[f"{n}_{op}_misses"] = c["misses"]
            row[f"{n}_{op}_miss_rate"] = c["misses"] / c["accesses"] if c["accesses"] else float("nan")
            row[f"{n}_{op}_fill_bytes"] = c["fill_bytes"]
            for k in ("compulsory", "capacity", "conflict"):
                row[f"{n}_{op}_{k}"] = c[k]
    return row
