"""A data TLB level: ``sets`` x ``ways`` translations of pages of ``page_bytes``, LRU.

One lookup per page an access touches (an access crossing a page boundary needs two translations). A miss
costs ``miss_penalty_cycles``: for a first level, the trip to the next TLB level; for the last level, a page
walk. ``feed`` returns the lookups that missed, so a second level can be chained behind the first: each
returned record is the part of the access inside the missed page, with its ``is_write`` and ``core``.
The hierarchy's invalidate records (``is_write == 2``) are not translations and are skipped.

With ``copies > 1`` each core has its own TLB, picked by the chunk's ``core`` field (TLBs are per core).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gemmsim.models.cache import _FPMUL, _ONES8, CacheConfigError, _fp_search, as_words, fingerprint_row
from gemmsim.trace import ACCESS


@njit(cache=True, nogil=True)
def _tlb_run(inp, start, n, tags, stamps, mru, fpw, cnt, st, sets, ways, shift, copies, out):
    """Look up accesses start..n-1, each within one page; write the missed lookups into out; return (next access,
    records written). Stops before the first access that crosses a page (the caller splits those).

    ``inp``/``out`` are ACCESS records as flat uint64 words (``gemmsim.models.cache.as_words``); out has room for
    one record per access. tags[(copy*sets + set)*ways + way] = page number or -1; stamps = time of last use (0
    when empty, so empty ways are filled first); mru[copy*sets + set] = the way hit last, checked first (pages are
    reused in long runs); fpw[(copy*sets + set)*nw + j] packs an 8-bit fingerprint of each way's page, 8 ways a
    word (as ``gemmsim.models.cache._small_body`` looks ways up: a 48-way TLB is searched in 6 comparisons);
    cnt[copy] = [hits, misses]; st = [clock]. Indices are unsigned (a signed index costs numba a wrap-around test).
    """
    U = np.uint64
    nw = U((ways + 7) >> 3)
    pow2 = (sets & (sets - 1)) == 0
    mask = U(sets - 1)
    usets = U(sets)
    uways = U(ways)
    sh = U(shift)
    clock = st[0]
    hits = 0
    misses = 0
    w = U(0)
    for i in range(start, n):
        ui = U(i)
        a = inp[U(2) * ui]
        meta = inp[U(2) * ui + U(1)]
        if (meta >> U(32)) & U(0xFF) == U(2):
            continue  # an invalidate record of the caches, not a translation
        pg = a >> sh
        if ((a + (meta & U(0xFFFFFFFF)) - U(1)) >> sh) != pg:
            st[0] = clock
            cnt[0, 0] += hits
            cnt[0, 1] += misses
            return i, np.int64(w)
        spg = np.int64(pg)
        cp = (meta >> U(40)) & U(0xFF) if copies > 1 else U(0)
        clock += 1
        s = (pg & mask) if pow2 else (pg % usets)
        row = cp * usets + s
        base = row * uways
        if tags[base + U(mru[row])] == spg:
            # The set's most recent page again: already the newest, nothing to update.
            if copies == 1:
                hits += 1
            else:
                cnt[cp, 0] += 1
            continue
        q = (U(2) + ((pg * _FPMUL) >> U(57))) * _ONES8
        found, hit = _fp_search(fpw, row * nw, nw, q, tags, base, spg)
        if found:
            stamps[base + hit] = clock
            mru[row] = np.int64(hit)
            if copies == 1:
                hits += 1
            else:
                cnt[cp, 0] += 1
            continue
        if copies == 1:
            misses += 1
        else:
            cnt[cp, 1] += 1
        v = U(0)
        best = stamps[base]
        for kk in range(1, ways):
            k = U(kk)
            if stamps[base + k] < best:
                best = stamps[base + k]
                v = k
        tags[base + v] = spg
        stamps[base + v] = clock
        mru[row] = np.int64(v)
        fi = row * nw + (v >> U(3))
        sb = U(8) * (v & U(7))
        fpw[fi] = (fpw[fi] & ~(U(0xFF) << sb)) | ((U(2) + ((pg * _FPMUL) >> U(57))) << sb)
        out[U(2) * w] = a
        out[U(2) * w + U(1)] = meta | U(1) if (meta & U(0xFFFFFFFF)) == U(0) else meta
        w += U(1)
    st[0] = clock
    cnt[0, 0] += hits
    cnt[0, 1] += misses
    return n, np.int64(w)


@njit(cache=True, nogil=True)
def _tlb_drive(inp, start, n, tags, stamps, mru, fpw, cnt, st, sets, ways, shift, copies, out, scratch):
    """``_tlb_run`` over records start..n-1; an access crossing pages is looked up one page at a time (the part
    inside each page, through ``scratch``, as ``split_lines`` cuts it). Returns (next record, records written),
    stopping early, before a record, when ``out`` (one record per lookup) might not hold what is left."""
    cap = out.shape[0] // 2
    pos = start
    w = 0
    while pos < n:
        if w + (n - pos) > cap:
            return pos, w
        pos, k = _tlb_run(inp, pos, n, tags, stamps, mru, fpw, cnt, st, sets, ways, shift, copies, out[2 * w :])
        w += k
        if pos >= n:
            break
        a = np.int64(inp[2 * pos])
        meta = inp[2 * pos + 1]
        end = a + max(np.int64(meta & np.uint64(0xFFFFFFFF)), 1)
        if w + ((end - 1) >> shift) - (a >> shift) + 1 + n - pos - 1 > cap:
            return pos, w
        while a < end:
            size = min(((a >> shift) + 1) << shift, end) - a
            scratch[0] = np.uint64(a)
            scratch[1] = (meta & ~np.uint64(0xFFFFFFFF)) | np.uint64(size)
            _, k = _tlb_run(scratch, np.int64(0), np.int64(1), tags, stamps, mru, fpw, cnt, st, sets, ways, shift, copies, out[2 * w :])
            w += k
            a += size
        pos += 1
    return pos, w


class TLB:
    """One TLB level (LRU): ``sets`` x ``ways`` entries for pages of ``page_bytes`` (a power of two).

    ``miss_penalty_cycles``: cycles one miss costs (to the next TLB level, or a page walk for the last).
    ``last_level``: True when a miss here is a page walk (the hierarchy sets it; a lone TLB is the last).
    ``copies``: one private TLB per core, chosen by the ``core`` field.
    """

    def __init__(
        self,
        name: str,
        sets: int,
        ways: int,
        page_bytes: int,
        miss_penalty_cycles: float,
        *,
        copies: int = 1,
        last_level: bool = True,
    ):
        problems = []
        for label, v in (("sets", sets), ("ways", ways), ("page_bytes", page_bytes), ("copies", copies)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                problems.append(f"{label} must be a positive integer (got {v!r})")
        if not problems and page_bytes & (page_bytes - 1):
            problems.append(f"page_bytes {page_bytes} is not a power of two")
        if not isinstance(miss_penalty_cycles, (int, float)) or miss_penalty_cycles < 0:
            problems.append(f"miss_penalty_cycles must be a number >= 0 (got {miss_penalty_cycles!r})")
        if problems:
            raise CacheConfigError(f"TLB {name!r}: invalid configuration", problems=problems)
        self.name = str(name)
        self.sets = int(sets)
        self.ways = int(ways)
        self.page_bytes = int(page_bytes)
        self.miss_penalty_cycles = float(miss_penalty_cycles)
        self.copies = int(copies)
        self.last_level = bool(last_level)
        self._shift = self.page_bytes.bit_length() - 1
        n = self.copies * self.sets * self.ways
        self._tags = np.empty(n, dtype=np.int64)
        self._stamps = np.empty(n, dtype=np.int64)
        self._mru = np.empty(self.copies * self.sets, dtype=np.int64)
        self._fp0 = fingerprint_row(self.ways)
        self._fpw = np.empty(self.copies * self.sets * self._fp0.shape[0], dtype=np.uint64)
        self._cnt = np.empty((self.copies, 2), dtype=np.int64)
        self._st = np.empty(1, dtype=np.int64)
        self._out = np.empty(0, dtype=ACCESS)
        self._scratch = np.empty(2, dtype=np.uint64)
        self.reset()

    @classmethod
    def from_level(cls, level, *, copies: int = 1, last_level: bool = True) -> "TLB":
        """A TLB built from a machine file's ``gemmsim.machine.TLBLevel``."""
        return cls(level.name, level.sets, level.ways, level.page, level.miss_penalty_cycles, copies=copies, last_level=last_level)

    def replicated(self, copies: int) -> "TLB":
        """A fresh TLB with this one's geometry, kept as ``copies`` per-core copies."""
        return TLB(self.name, self.sets, self.ways, self.page_bytes, self.miss_penalty_cycles, copies=copies, last_level=self.last_level)

    @property
    def entries(self) -> int:
        """Translations held by one copy: sets x ways."""
        return self.sets * self.ways

    def reset(self) -> None:
        """Empty the TLB and zero the counters."""
        self._tags.fill(-1)
        self._stamps.fill(0)
        self._mru.fill(0)
        self._fpw.reshape(self.copies * self.sets, -1)[:] = self._fp0
        self._cnt.fill(0)
        self._st[0] = 0

    def _feed(self, chunk: np.ndarray) -> np.ndarray:
        """Like ``feed`` but returns a view of an internal buffer, valid until the next call."""
        if not isinstance(chunk, np.ndarray) or chunk.dtype != ACCESS or chunk.ndim != 1:
            raise TypeError(f"TLB {self.name!r}: feed() needs a numpy array of gemmsim.trace.ACCESS records")
        n = chunk.shape[0]
        if self.copies > 1 and n and int(chunk["core"].max()) >= self.copies:
            raise CacheConfigError(f"TLB {self.name!r}: an access comes from a core beyond its {self.copies} copies")
        if self._out.shape[0] < n + 64:
            self._out = np.empty(n + 64, dtype=ACCESS)
        args = (self._tags, self._stamps, self._mru, self._fpw, self._cnt, self._st, self.sets, self.ways, self._shift, self.copies)
        words = as_words(chunk)
        pos, w = 0, 0
        while True:
            # An access crossing pages is cut where the kernel stops (_tlb_drive); it returns early only when the
            # buffer may be too small.
            pos, k = _tlb_drive(words, pos, n, *args, self._out.view(np.uint64)[2 * w :], self._scratch)
            w += k
            if pos >= n:
                return self._out[:w]
            bigger = np.empty(2 * self._out.shape[0] + (n - pos) + 64, dtype=ACCESS)
            bigger[:w] = self._out[:w]
            self._out = bigger

    def feed(self, chunk: np.ndarray) -> np.ndarray:
        """Translate a chunk; return the lookups that missed (a new array), for the next TLB level."""
        return self._feed(chunk).copy()

    def counters(self) -> dict:
        """accesses (lookups), hits, misses, penalty_cycles (misses x miss_penalty_cycles), and ``walks`` (page
        walks, = misses) when this is the last level. Summed over per-core copies."""
        c = self._cnt.sum(axis=0)
        return self._as_dict(c)

    def core_counters(self) -> list[dict]:
        """``counters()`` of each per-core copy."""
        return [self._as_dict(self._cnt[k]) for k in range(self.copies)]

    def _as_dict(self, c) -> dict:
        hits, misses = int(c[0]), int(c[1])
        out = {
            "accesses": hits + misses,
            "hits": hits,
            "misses": misses,
            "penalty_cycles": misses * self.miss_penalty_cycles,
        }
        if self.last_level:
            out["walks"] = misses
        return out

    def __repr__(self) -> str:
        return f"TLB({self.name}: {self.sets} sets x {self.ways} ways, {self.page_bytes} B pages)"

