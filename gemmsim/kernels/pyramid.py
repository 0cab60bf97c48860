"""The pointer chase: the classic latency microbenchmark (lmbench's lat_mem_rd; Drepper 2007, "What every programmer
should know about memory", section 3.3) as an address trace.

A working set of ``working_set`` bytes is cut into lines; each line holds a pointer to the next line of one random
cycle through all of them (a seeded permutation), so every load depends on the one before and no prefetcher could
guess the next address. Walking the cycle ``passes`` times gives the load-to-use latency of whichever level holds
the working set: a staircase with one step per cache level -- the memory pyramid of seed 000 section 3.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from gemmsim.errors import KernelError
from gemmsim.trace import ACCESS, CHUNK


def chase_order(lines: int, seed: int = 0) -> np.ndarray:
    """The visiting order of one pass: a random cyclic permutation of ``lines`` line indices starting at line 0."""
    if lines < 1:
        raise KernelError(f"a pointer chase needs at least one line (got {lines})")
    rng = np.random.default_rng(seed)
    rest = rng.permutation(np.arange(1, lines, dtype=np.int64))
    return np.concatenate([[0], rest])


def chase_trace(working_set: int, line_bytes: int, passes: int, base: int = 0, seed: int = 0, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """Chunks of 8-byte loads, one per line visited, ``passes`` times around the same cycle."""
    lines = max(1, working_set // line_bytes)
    order = base + chase_order(lines, seed) * line_bytes
    for _ in range(passes):
        for s in range(0, lines, chunk):
            part = order[s : s + chunk]
            out = np.empty(len(part), ACCESS)
            out["addr"], out["size"], out["is_write"], out["core"] = part, 8, 0, 0
            yield out
