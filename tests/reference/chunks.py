"""Conversions between ACCESS chunks and the reference models' (addr, size, kind, core) tuples."""

from __future__ import annotations

import numpy as np

from gemmsim.trace import ACCESS, make_chunk


def chunk_of(accesses):
    """An ACCESS chunk from (addr, size, kind, core) tuples."""
    if not accesses:
        return np.empty(0, dtype=ACCESS)
    a = np.array(accesses, dtype=np.int64)
    return make_chunk(a[:, 0], a[:, 1], a[:, 2], a[:, 3])


def records(chunk):
    """A chunk as a list of (addr, size, kind, core) tuples."""
    return [tuple(int(x) for x in r) for r in zip(chunk["addr"], chunk["size"], chunk["is_write"], chunk["core"])]
