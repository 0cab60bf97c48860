"""A naive LRU TLB: each set a list of page numbers, least recently used first; one lookup per page touched."""

from __future__ import annotations


class RefTLB:
    """``sets`` x ``ways`` translations of ``page``-byte pages, one copy per core if ``copies`` > 1."""

    def __init__(self, sets, ways, page, copies=1):
        self.nsets, self.ways, self.page, self.copies = sets, ways, page, copies
        self.sets = [[[] for _ in range(sets)] for _ in range(copies)]
        self.hits = [0] * copies
        self.misses = [0] * copies

    def access(self, addr, size, kind, core=0):
        """Look up one access; return the lookups that missed as (addr, size, kind, core) parts of the access."""
        if kind == 2:
            return []
        copy = core if self.copies > 1 else 0
        out = []
        end = addr + max(size, 1)
        for pg in range(addr // self.page, (end - 1) // self.page + 1):
            s = self.sets[copy][pg % self.nsets]
            if pg in s:
                s.remove(pg)
                s.append(pg)
                self.hits[copy] += 1
                continue
            self.misses[copy] += 1
            if len(s) == self.ways:
                s.pop(0)
            s.append(pg)
            lo = max(pg * self.page, addr)
            hi = min((pg + 1) * self.page, end)
            out.append((lo, hi - lo, kind, core))
        return out
