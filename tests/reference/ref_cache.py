"""A naive set-associative cache, one access at a time, and a per-access chain of levels.

Each set is a Python list of line numbers ordered oldest first: for LRU, least recently used first (a hit
moves the line to the end); for FIFO, first inserted first (a hit changes nothing). The victim is the first
element. Dirty lines are a set. An access is split into the lines it touches.

``refresh_on_store_hit=False`` reproduces pycachesim 0.3.1's LRU, which does not move a line on a store hit;
it exists only so that the peer tests can show that this one rule is the whole difference.
"""

from __future__ import annotations

KEYS = ("load_hits", "load_misses", "store_hits", "store_misses", "writebacks", "evictions", "invalidations")
LOAD, STORE, INVALIDATE = 0, 1, 2


class RefCache:
    """One cache level, optionally with one private copy per core and write-invalidate coherence.

    ``coherence``: "none"; "source" (a store by core c first drops the line from every other copy, writing a
    dirty copy back, and, if ``forward``, passes an invalidate record down); "receiver" (drops other copies
    when an invalidate record arrives, then passes it down if ``forward``).
    """

    def __init__(self, sets, ways, line, policy="lru", write_back=True, write_allocate=True, copies=1,
                 coherence="none", forward=False, refresh_on_store_hit=True):  # fmt: skip
        assert policy in ("lru", "fifo")
        self.nsets, self.ways, self.line = sets, ways, line
        self.policy, self.write_back, self.write_allocate = policy, write_back, write_allocate
        self.copies, self.coherence, self.forward = copies, coherence, forward
        self.refresh_on_store_hit = refresh_on_store_hit
        self.sets = [[[] for _ in range(sets)] for _ in range(copies)]
        self.dirty = [set() for _ in range(copies)]
        self.count = [dict.fromkeys(KEYS, 0) for _ in range(copies)]

    def _lines(self, addr, size):
        first = addr // self.line
        last = (addr + max(size, 1) - 1) // self.line
        return range(first, last + 1)

    def _drop(self, copy, ln, out):
        """Invalidate line ln in one copy (writing it back first if dirty)."""
        s = self.sets[copy][ln % self.nsets]
        if ln in s:
            s.remove(ln)
            self.count[copy]["invalidations"] += 1
            if ln in self.dirty[copy]:
                self.dirty[copy].discard(ln)
                self.count[copy]["writebacks"] += 1
                out.append((ln * self.line, self.line, STORE, copy))

    def access(self, addr, size, kind, core=0):
        """Simulate one access; return the records sent to the next level, in order."""
        out = []
        copy = core if self.copies > 1 else 0
        if kind == INVALIDATE:
            if self.coherence == "receiver":
                for ln in self._lines(addr, size):
                    for d in range(self.copies):
                        if d != core:
                            self._drop(d, ln, out)
                if self.forward:
                    out.append((addr, max(size, 1), INVALIDATE, core))
            return out
        store = kind != LOAD
        for ln in self._lines(addr, size):
            if store and self.coherence == "source":
                for d in range(self.copies):
                    if d != copy:
                        self._drop(d, ln, out)
                if self.forward:
                    out.append((ln * self.line, self.line, INVALIDATE, core))
            s = self.sets[copy][ln % self.nsets]
            dirty = self.dirty[copy]
            cnt = self.count[copy]
            lo = max(ln * self.line, addr)
            hi = min((ln + 1) * self.line, addr + max(size, 1))
            if ln in s:
                cnt["store_hits" if store else "load_hits"] += 1
                if self.policy == "lru" and (not store or self.refresh_on_store_hit):
                    s.remove(ln)
                    s.append(ln)
                if store:
                    if self.write_back:
                        dirty.add(ln)
                    else:
                        out.append((lo, hi - lo, STORE, core))
                continue
            cnt["store_misses" if store else "load_misses"] += 1
            if store and not self.write_allocate:
                out.append((lo, hi - lo, STORE, core))
                continue
            out.append((ln * self.line, self.line, LOAD, core))
            if len(s) == self.ways:
                victim = s.pop(0)
                cnt["evictions"] += 1
                if victim in dirty:
                    dirty.discard(victim)
                    cnt["writebacks"] += 1
                    out.append((victim * self.line, self.line, STORE, core))
            s.append(ln)
            if store:
                if self.write_back:
                    dirty.add(ln)
                else:
                    out.append((lo, hi - lo, STORE, core))
        return out

    def counters(self, copy=None):
        """The fast model's counter dict (for one copy, or summed over copies)."""
        copies = range(self.copies) if copy is None else [copy]
        c = {k: sum(self.count[d][k] for d in copies) for k in KEYS}
        out = {
            "loads": c["load_hits"] + c["load_misses"],
            "stores": c["store_hits"] + c["store_misses"],
            "load_hits": c["load_hits"],
            "load_misses": c["load_misses"],
            "store_hits": c["store_hits"],
            "store_misses": c["store_misses"],
            "writebacks": c["writebacks"],
            "evictions": c["evictions"],
            "dirty_at_end": sum(len(self.dirty[d]) for d in copies),
        }
        if self.coherence != "none":
            out["invalidations"] = c["invalidations"]
        return out

    def lines(self, copy=0):
        """Sorted byte addresses of the lines held."""
        return sorted(ln * self.line for s in self.sets[copy] for ln in s)


def run_level(cache, accesses):
    """Feed a list of (addr, size, kind, core) to one level; return everything it sends on, in order."""
    out = []
    for a in accesses:
        out.extend(cache.access(*a))
    return out


def run_chain(levels, accesses):
    """Pass every access all the way down before the next one starts (the per-access interleaving).

    Returns the memory traffic as {"line_reads": loads reaching memory, "line_writes": stores reaching memory}.
    """
    memory = {"line_reads": 0, "line_writes": 0}

    def send(depth, rec):
        if depth == len(levels):
            if rec[2] == LOAD:
                memory["line_reads"] += 1
            elif rec[2] == STORE:
                memory["line_writes"] += 1
            return
        for r in levels[depth].access(*rec):
            send(depth + 1, r)

    for a in accesses:
        send(0, a)
    return memory
