"""A CPU memory hierarchy: cache levels L1 -> L2 -> ... -> DRAM, with data TLBs beside L1.

``feed(chunk)`` runs a chunk of ``gemmsim.trace.ACCESS`` records through L1; what L1 sends on (line loads
for misses, write-backs of dirty victims, write-through stores) is L2's input, and so on; what the last level
sends on is counted as DRAM traffic (``line_reads``: loads, ``line_writes``: stores). The TLBs see the same
chunk as L1 (one lookup per page touched); a TLB's misses are the next TLB's input.

Levels are not inclusive (no back-invalidation: evicting a line from L2 leaves it in L1), so a level's
behaviour never depends on the levels below it. Feeding a whole chunk level by level therefore gives exactly
the result of passing every access down the hierarchy one at a time (tests/models/test_hierarchy.py checks
this against a per-access reference).

Several cores (``cores > 1``): every *private* level is replicated per core, and the ``core`` field of an
access routes it to its core's copies (records a private level sends on keep the core of the access that
caused them); shared levels see the merged stream in trace order. The private levels must be the first ones
(L1, or L1 and L2). They follow a simple write-invalidate protocol: a store by core c to a line drops every
other core's copy of that line, first in the private L1s and then (through invalidate records passed down)
in deeper private levels; a dirty copy is written back first. Each dropped copy counts one ``invalidations``
for the core that held it; this is what makes false sharing visible (two cores writing different words of
one line invalidate each other's copy on every write). Reads do not downgrade other copies. See
``gemmsim.models.cache`` for the exact rules of one level.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numba import njit

from gemmsim.models.cache import _POLICY_CODE, NO_TLB, POLICIES, Cache, CacheConfigError, _run_small, as_words
from gemmsim.models.tlb import TLB, _tlb_run
from gemmsim.trace import ACCESS

SPEC_FORMAT = "SETS:WAYS:LINE[:POLICY][:wt][:nwa]"


def parse_cache_spec(spec: str, name: str) -> Cache:
    """A cache from a ``SETS:WAYS:LINE[:POLICY][:wt][:nwa]`` string (``"64:8:64"``, ``"512:8:64:fifo:wt"``).

    POLICY is lru (default), fifo or random; ``wt`` makes the level write-through (default write-back),
    ``nwa`` no-write-allocate (default write-allocate). Raises CacheConfigError (a ValueError) on a bad spec.
    """
    if not isinstance(spec, str):
        raise CacheConfigError(f"cache spec {spec!r} is not a string; expected {SPEC_FORMAT}")
    parts = [p.strip() for p in spec.split(":")]
    if len(parts) < 3:
        raise CacheConfigError(f"cache spec {spec!r}: expected {SPEC_FORMAT}, e.g. 64:8:64 or 512:8:64:fifo")
    numbers = []
    for label, text in zip(("SETS", "WAYS", "LINE"), parts[:3]):
        if not text.isdigit() or int(text) < 1:
            raise CacheConfigError(f"cache spec {spec!r}: {label} must be a positive integer, got {text!r}")
        numbers.append(int(text))
    sets, ways, line = numbers
    if line & (line - 1):
        raise CacheConfigError(f"cache spec {spec!r}: LINE {line} is not a power of two")
    policy, write_back, write_allocate = "lru", True, True
    seen_policy = False
    for flag in parts[3:]:
        key = flag.lower()
        if key in POLICIES:
            if seen_policy:
                raise CacheConfigError(f"cache spec {spec!r}: more than one replacement policy")
            policy, seen_policy = key, True
        elif key == "wt":
            write_back = False
        elif key == "nwa":
            write_allocate = False
        else:
            raise CacheConfigError(
                f"cache spec {spec!r}: unknown option {flag!r}; expected a policy ({', '.join(POLICIES)}), wt or nwa"
            )
    return Cache(name, sets, ways, line, policy=policy, write_back=write_back, write_allocate=write_allocate)


_M32 = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _piece_size(a, end, shift):
    """Bytes of ``[a, end)`` inside the line (or page) of ``a``."""
    return min(((a >> shift) + 1) << shift, end) - a


@njit(cache=True, nogil=True)
def _front_batch(words, n, l1, tl, out, w, tout, wt, scratch, trusted):
    """The first TLB level and L1 over ``n`` records (flat uint64 words, see ``gemmsim.models.cache.as_words``).

    ``l1`` = (tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back, write_allocate) of a
    ``_run_small`` cache; ``tl`` = (used, tags, stamps, mru, fpw, cnt, st, sets, ways, shift) of a one-copy TLB.
    L1's records are written into ``out`` from record ``w`` on, the TLB's misses into ``tout`` from ``wt``;
    returns the new (w, wt). With pages no smaller than lines, the TLB lookups run inside L1's pass; otherwise
    in a pass of their own. An access that spans lines (pages) is cut into one access per line (page) here, one
    piece at a time through ``scratch`` (two words), exactly as ``split_lines`` cuts it for the chunked path.
    ``trusted``: no record spans a line and none is an invalidate record (see ``_run_small``).
    """
    used, ttags, tstamps, tmru, tfpw, tcnt, tst, tsets, tways, tshift = tl
    off = (used and not used, ttags, tstamps, tmru, tfpw, tcnt, tst, tsets, tways, tshift)  # a plain bool, not a literal
    tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back, write_allocate = l1
    together = used and tshift >= shift
    if used and not together:
        pos = np.int64(0)
        while pos < n:
            pos, k = _tlb_run(words, pos, n, ttags, tstamps, tmru, tfpw, tcnt, tst, tsets, tways, tshift, np.int64(1), tout[2 * wt :])
            wt += k
            if pos < n:
                wt = _tlb_pieces(words, pos, tl, tout, wt, scratch)
                pos += 1
    pos = np.int64(0)
    while pos < n:
        pos, k, wt = _run_small(words, pos, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                                write_allocate, out[2 * w :], tl if together else off, tout, wt, trusted)  # fmt: skip
        w += k
        if pos < n:
            if together:
                wt = _tlb_pieces(words, pos, tl, tout, wt, scratch)
            a = np.int64(words[2 * pos])
            meta = words[2 * pos + 1]
            end = a + max(np.int64(meta & _M32), 1)
            while a < end:
                size = _piece_size(a, end, shift)
                scratch[0] = np.uint64(a)
                scratch[1] = (meta & ~_M32) | np.uint64(size)
                _, k, _ = _run_small(scratch, np.int64(0), np.int64(1), tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy,
                                     write_back, write_allocate, out[2 * w :], off, tout, wt, trusted and not trusted)  # fmt: skip
                w += k
                a += size
            pos += 1
    return w, wt


@njit(cache=True, nogil=True)
def _count_memory(words, n, memory):
    """Add the records the last level sent on to ``memory``: [1] line writes (stores), [0] line reads (every
    other record but invalidate records)."""
    reads = 0
    writes = 0
    for i in range(n):
        kind = (words[2 * np.uint64(i) + np.uint64(1)] >> np.uint64(32)) & np.uint64(0xFF)
        writes += kind == np.uint64(1)
        reads += (kind != np.uint64(1)) & (kind != np.uint64(2))
    memory[0] += reads
    memory[1] += writes


@njit(cache=True, nogil=True)
def _tlb_pieces(words, pos, tl, tout, wt, scratch):
    """Look up record ``pos`` in the TLB one page at a time (it spans pages); returns the new ``wt``."""
    used, ttags, tstamps, tmru, tfpw, tcnt, tst, tsets, tways, tshift = tl
    a = np.int64(words[2 * pos])
    meta = words[2 * pos + 1]
    if (meta >> np.uint64(32)) & np.uint64(0xFF) == 2:
        return wt
    end = a + max(np.int64(meta & _M32), 1)
    while a < end:
        size = _piece_size(a, end, tshift)
        scratch[0] = np.uint64(a)
        scratch[1] = (meta & ~_M32) | np.uint64(size)
        one = np.int64(1)
        _, k = _tlb_run(scratch, np.int64(0), one, ttags, tstamps, tmru, tfpw, tcnt, tst, tsets, tways, tshift, one, tout[2 * wt :])
        wt += k
        a += size
    return wt


class Hierarchy:
    """Cache levels (L1 first) and TLBs (first level first), for ``cores`` cores.

    ``private[i]`` says whether level i is private per core (only matters when ``cores > 1``; default: every
    level but the last is private, and a lone level is private). With ``cores > 1`` the private levels are
    replaced by per-core copies of the given caches (``self.levels`` holds the caches actually simulated), and
    the TLBs are per core too.

    The hierarchy owns the caches and TLBs it is given (it simulates into them; do not share them between
    hierarchies). ``feed(chunk)``, ``simulate(chunks, pipeline=False)``, ``counters()``, ``reset()``; see the
    module docstring.
    """

    def __init__(self, levels: Sequence[Cache], tlbs: Sequence[TLB] = (), cores: int = 1, private: Sequence[bool] | None = None):
        levels, tlbs = list(levels), list(tlbs)
        if not levels or not all(isinstance(c, Cache) for c in levels):
            raise CacheConfigError("a hierarchy needs at least one level, each a gemmsim.models.cache.Cache")
        if not all(isinstance(t, TLB) for t in tlbs):
            raise CacheConfigError("every TLB level must be a gemmsim.models.tlb.TLB")
        if not isinstance(cores, (int, np.integer)) or isinstance(cores, bool) or not 1 <= cores <= 256:
            raise CacheConfigError(f"cores must be an integer from 1 to 256 (the trace's core field), got {cores!r}")
        if private is None:
            private = [True] * (len(levels) - 1) + [False] if len(levels) > 1 else [True]
        private = [bool(p) for p in private]
        if len(private) != len(levels):
            raise CacheConfigError(f"private has {len(private)} entries for {len(levels)} levels")
        self.cores = int(cores)
        self.private = private
        if self.cores > 1:
            n_private = sum(private)
            if private != [True] * n_private + [False] * (len(levels) - n_private):
                raise CacheConfigError(f"private levels must come first (L1, or L1 and L2 ...); got private={private}")
            built = []
            for i, c in enumerate(levels):
                if private[i]:
                    forward = i + 1 < len(levels) and private[i + 1]
                    built.append(c.replicated(self.cores, "source" if i == 0 else "receiver", forward))
                else:
                    built.append(c)
            levels = built
            tlbs = [t.replicated(self.cores) for t in tlbs]
        for i, t in enumerate(tlbs):
            t.last_level = i == len(tlbs) - 1
        self.levels: list[Cache] = levels
        self.tlbs: list[TLB] = tlbs
        self._memory = np.zeros(2, dtype=np.int64)
        # One copy of every level and no coherence (one core, caches not replicated by hand): no invalidate
        # records, and the memory counts follow from the last level's counters (_memory_counts).
        self._single = self.cores == 1 and all(c.copies == 1 and c.coherence == "none" for c in levels)
        # Whether level i may trust what level i - 1 sends it (``Cache._feed``): single, and lines no shorter than
        # the level above's -- every record a level sends lies within one of its own lines (a line, a victim line,
        # a write-through or no-allocate store inside one line).
        self._trusted = [False] + [
            self._single and levels[i - 1].line_bytes <= levels[i].line_bytes for i in range(1, len(levels))
        ]

    @classmethod
    def from_machine(cls, machine, cores: int = 1) -> "Hierarchy":
        """The hierarchy of a ``gemmsim.machine.CPUMachine``: its cache levels (``shared: false`` levels private per
        core) and its TLB levels, for ``cores`` cores."""
        levels = [Cache.from_level(c) for c in machine.caches]
        tlbs = [TLB.from_level(t) for t in machine.tlbs]
        return cls(levels, tlbs, cores=cores, private=[not c.shared for c in machine.caches])

    @classmethod
    def from_specs(cls, specs: Iterable[str], cores: int = 1) -> "Hierarchy":
        """Levels from ``SETS:WAYS:LINE[:POLICY][:wt][:nwa]`` strings, L1 first, named L1, L2, ... (no TLB).

        Raises CacheConfigError (a ValueError) naming the bad spec.
        """
        specs = [specs] if isinstance(specs, str) else list(specs)
        if not specs:
            raise CacheConfigError(f"give at least one cache level as {SPEC_FORMAT}")
        return cls([parse_cache_spec(s, f"L{i + 1}") for i, s in enumerate(specs)], cores=cores)

    def reset(self) -> None:
        """Empty every level and TLB and zero every counter."""
        for c in self.levels:
            c.reset()
        for t in self.tlbs:
            t.reset()
        self._memory[:] = 0

    def feed(self, chunk: np.ndarray) -> None:
        """Run one chunk of ACCESS records through the TLBs and the cache levels down to DRAM."""
        if not isinstance(chunk, np.ndarray) or chunk.dtype != ACCESS:
            raise TypeError("Hierarchy.feed() needs a numpy array of gemmsim.trace.ACCESS records")
        x = chunk
        for t in self.tlbs:
            x = t._feed(x)
        x = chunk
        for i, c in enumerate(self.levels):
            x = c._feed(x, i > 0 and self._trusted[i])
        if not self._single:
            _count_memory(as_words(x), x.shape[0], self._memory)

    def _front_args(self) -> tuple | None:
        """The state ``_front_batch`` runs on: (L1 tuple, first-TLB tuple), or None when the front cannot run fused
        (per-core copies or coherence, or an L1 the packed kernel does not take)."""
        c = self.levels[0]
        if not c._small or (self.tlbs and self.tlbs[0].copies != 1):
            return None
        l1 = (c._tags, c._dirty, c._fpw, c._order, c._cnt, c._st, c.sets, c.ways, c._shift, _POLICY_CODE[c.policy],
              c.write_back, c.write_allocate)  # fmt: skip
        if self.tlbs:
            t = self.tlbs[0]
            tl = (True, t._tags, t._stamps, t._mru, t._fpw, t._cnt, t._st, t.sets, t.ways, t._shift)
        else:
            tl = NO_TLB
        return l1, tl

    def _below(self, l1_out: np.ndarray, tlb_out: np.ndarray) -> None:
        """Everything after the front: the first TLB's misses through the other TLBs, L1's records through the
        levels below it, then the memory counts (as ``feed`` does)."""
        x = tlb_out
        for t in self.tlbs[1:]:
            x = t._feed(x)
        x = l1_out
        for i, c in enumerate(self.levels[1:], 1):
            x = c._feed(x, self._trusted[i])
        if not self._single:
            _count_memory(as_words(x), x.shape[0], self._memory)

    def run_fused(self, driver, fill_args: tuple, max_access_bytes: int, batch: int = 4096) -> bool:
        """Generate a trace and simulate it in one compiled pass; False (and nothing done) when the front does not allow it.

        ``driver(fill_args, addr, size, is_write, core, words, l1, tlb, out, tout, room, troom, scratch)`` is a
        compiled function (``gemmsim.sim.fused``) that fills a small batch (``addr`` ... are the field views of
        one ACCESS array of ``batch`` records, ``words`` its ``as_words`` view, which stays in the processor's
        cache), runs the first TLB and L1 on it with ``_front_batch``, and repeats until the trace ends or
        ``out`` (``tout``) has less than ``room`` (``troom``) records free; it returns (done, records in out,
        records in tout), which go to the levels below here. The counters are exactly those of ``feed`` on the
        same stream: the first TLB and L1 see the same accesses in the same order, cut at the same lines.
        ``max_access_bytes`` bounds one access (it sizes the room a batch needs).
        """
        front = self._front_args()
        if front is None:
            return False
        l1, tl = front
        mb = np.empty(int(batch), dtype=ACCESS)
        words = as_words(mb)
        span = max(int(max_access_bytes), 1)
        room = 2 * mb.shape[0] * (span // self.levels[0].line_bytes + 2)
        troom = mb.shape[0] * (span // self.tlbs[0].page_bytes + 2) if self.tlbs else 0
        out = np.empty(max(1 << 17, 4 * room), dtype=ACCESS)
        tout = np.empty(max(1 << 15, 4 * troom), dtype=ACCESS)
        scratch = np.empty(2, dtype=np.uint64)
        ow, tw = out.view(np.uint64), tout.view(np.uint64)
        while True:
            done, w, wt = driver(fill_args, mb["addr"], mb["size"], mb["is_write"], mb["core"], words, l1, tl, ow, tw,
                                 room, troom, scratch)  # fmt: skip
            self._below(out[:w], tout[:wt])
            if done:
                return True

    def simulate(self, chunks: Iterable[np.ndarray], pipeline: bool | int = False) -> dict:
        """Feed every chunk of a trace, then return ``counters()`` (no reset first: call ``reset()`` for a cold start).

        ``pipeline`` runs the work on threads connected by short queues: the calling thread produces the chunks
        (the trace generator) while worker threads run the TLBs and the levels, each worker a contiguous group of
        levels (``True``: one worker per stage up to the CPUs available but one; an int: that many workers).
        The compiled kernels release the GIL, so on a machine with free cores the stages overlap and the wall
        time is that of the slowest stage. Levels are not inclusive, so the counters are exactly those of the
        sequential run. Each chunk is copied as it is taken, so a generator may reuse its buffer.
        """
        if pipeline is False or pipeline is None:
            for chunk in chunks:
                self.feed(chunk)
            return self.counters()
        import os

        workers = max(1, (os.cpu_count() or 2) - 1) if pipeline is True else int(pipeline)
        if workers < 1:
            raise CacheConfigError(f"pipeline needs at least one worker thread, not {pipeline!r}")
        self._pipeline(chunks, workers)
        return self.counters()

    def _stages(self, workers: int) -> tuple[bool, list[list[Cache]]]:
        """How to spread the work over ``workers`` threads: (TLBs on a thread of their own?, groups of levels)."""
        n = len(self.levels)
        own_tlb = bool(self.tlbs) and workers >= n + 1
        groups = min(workers, n)
        # L1 (the busiest level) alone when possible; the levels below share the remaining threads.
        if groups == 1:
            return own_tlb, [list(self.levels)]
        rest = self.levels[1:]
        k = groups - 1
        sizes = [len(rest) // k + (1 if i < len(rest) % k else 0) for i in range(k)]
        out, start = [[self.levels[0]]], 0
        for size in sizes:
            out.append(list(rest[start : start + size]))
            start += size
        return own_tlb, out

    def _pipeline(self, chunks: Iterable[np.ndarray], workers: int) -> None:
        """The threaded form of ``simulate``: producer -> groups of levels -> memory counts; TLBs beside L1."""
        import queue
        import threading

        depth = 4  # chunks in flight between two stages: enough to smooth the stages' jitter, little memory
        done = object()
        failures: list[BaseException] = []
        stop = threading.Event()

        def put(q, item):
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        def get(q):
            while not stop.is_set():
                try:
                    return q.get(timeout=0.1)
                except queue.Empty:
                    continue
            return done

        def stage(work, q_in, q_out):
            try:
                while True:
                    x = get(q_in)
                    if x is done:
                        break
                    y = work(x)
                    if q_out is not None:
                        put(q_out, y)
            except BaseException as exc:  # re-raised in the calling thread
                failures.append(exc)
                stop.set()
            finally:
                if q_out is not None:
                    put(q_out, done)

        def run_tlbs(x):
            for t in self.tlbs:
                x = t._feed(x)

        own_tlb, groups = self._stages(workers)

        def group_work(levels, with_tlbs, last):
            def work(x):
                if with_tlbs:
                    run_tlbs(x)
                for c in levels:
                    x = c._feed(x)
                if last:
                    if not self._single:
                        _count_memory(as_words(x), x.shape[0], self._memory)
                    return None
                return x.copy()  # the level's buffer is reused by its next chunk

            return work

        inputs = [queue.Queue(depth) for _ in groups]
        tlb_in = queue.Queue(depth) if own_tlb else None
        threads = []
        if own_tlb:
            threads.append(threading.Thread(target=stage, args=(run_tlbs, tlb_in, None), daemon=True))
        for i, g in enumerate(groups):
            last = i == len(groups) - 1
            work = group_work(g, i == 0 and bool(self.tlbs) and not own_tlb, last)
            threads.append(threading.Thread(target=stage, args=(work, inputs[i], None if last else inputs[i + 1]), daemon=True))
        for t in threads:
            t.start()
        try:
            for chunk in chunks:
                if stop.is_set():
                    break
                if not isinstance(chunk, np.ndarray) or chunk.dtype != ACCESS:
                    raise TypeError("Hierarchy.simulate() needs chunks of gemmsim.trace.ACCESS records")
                chunk = chunk.copy()
                if tlb_in is not None:
                    put(tlb_in, chunk)
                put(inputs[0], chunk)
        except BaseException:
            stop.set()
            raise
        finally:
            if tlb_in is not None:
                put(tlb_in, done)
            put(inputs[0], done)
            for t in threads:
                t.join()
        if failures:
            raise failures[0]

    def _memory_counts(self) -> tuple[int, int]:
        """(line reads, line writes) reaching memory: the records the last level sent on. With several cores (or
        copies of a level made by hand) they are counted as they leave (``_count_memory``); with one copy of each
        level and no coherence, the last level's counters say them exactly, by the rules of
        ``gemmsim.models.cache``: a line load per miss that allocates, a line store per write-back, and a store
        passed on per store under write-through (every one) or write-back without write-allocate (every miss);
        no invalidate records. This saves a pass over what the last level sends."""
        if not self._single:
            return int(self._memory[0]), int(self._memory[1])
        last = self.levels[-1]
        c = last.counters()
        reads = c["load_misses"] + (c["store_misses"] if last.write_allocate else 0)
        if not last.write_back:
            through = c["stores"]
        else:
            through = 0 if last.write_allocate else c["store_misses"]
        return reads, c["writebacks"] + through

    def counters(self) -> dict:
        """``{"levels": [{"name": "L1", <Cache.counters()>}, ...], "memory": {"line_reads", "line_writes"},
        "tlbs": [{"name": "DTLB", <TLB.counters()>}, ...]}``.

        ``levels`` and ``memory`` are the ``simulate --json`` schema of issue 2. Per-core levels are summed over
        cores and also carry ``invalidations`` and ``per_core`` (one counters dict per core).
        """
        levels = []
        for c in self.levels:
            d = {"name": c.name, **c.counters()}
            if c.copies > 1:
                d["per_core"] = c.core_counters()
            levels.append(d)
        tlbs = []
        for t in self.tlbs:
            d = {"name": t.name, **t.counters()}
            if t.copies > 1:
                d["per_core"] = t.core_counters()
            tlbs.append(d)
        reads, writes = self._memory_counts()
        memory = {"line_reads": reads, "line_writes": writes}
        return {"levels": levels, "memory": memory, "tlbs": tlbs}

    def __repr__(self) -> str:
        inner = " -> ".join(repr(c) for c in self.levels)
        return f"Hierarchy({inner} -> DRAM; TLBs: {', '.join(repr(t) for t in self.tlbs) or 'none'}; cores={self.cores})"
