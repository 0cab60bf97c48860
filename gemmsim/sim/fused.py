"""Generate and simulate in one compiled pass, where a kernel's stream is known.

A CPU kernel's trace (``gemmsim.kernels.cpu.FillTrace``) says which compiled fill function makes it and with
what state. Instead of filling 4 MiB chunks and handing each to the hierarchy from Python, a driver here calls
the same fill function on a small batch (a few thousand records, which stay in the processor's cache) and runs
the first TLB and L1 on it at once (``gemmsim.models.hierarchy._front_batch``), batch after batch, inside one
compiled call; only what L1 and the first TLB send on leaves it. The fill function is the very one the chunked
path calls, with the same argument types, so the stream is the same access for access; the counters are
exactly those of feeding the chunks (tests/sim/test_fused.py checks both against the naive reference).

``run_trace(hierarchy, trace)`` is what ``gemmsim.sim.cpu`` calls: fused when the trace and the hierarchy
allow it (one core, an L1 of at most 16 ways), chunk by chunk otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numba import njit

from gemmsim.kernels import cpu as _nest
from gemmsim.kernels import cpu_packed as _packed
from gemmsim.models.hierarchy import Hierarchy, _front_batch


@njit(cache=True, nogil=True)
def _nest_driver(fa, addr, size, isw, core, words, l1, tl, out, tout, room, troom, scratch):
    """Batches of the loop-nest kernels (``gemmsim.kernels.cpu._fill``) through the front."""
    st, dims, tiles, tperm, iperm, pro, body, epi, tab, elem = fa
    cap = out.shape[0] // 2
    tcap = tout.shape[0] // 2
    w = 0
    wt = 0
    while st[8] == 0 and w + room <= cap and wt + troom <= tcap:
        n = _nest._fill(addr, size, isw, core, st, dims, tiles, tperm, iperm, pro, body, epi, tab, elem)
        w, wt = _front_batch(words, n, l1, tl, out, w, tout, wt, scratch)
    return st[8] != 0, w, wt


@njit(cache=True, nogil=True)
def _packed_done(st):
    for t in range(st.shape[0]):
        if st[t, 3] != 3:  # phase 3: the thread is done (gemmsim.kernels.cpu_packed._PH)
            return False
    return True


@njit(cache=True, nogil=True)
def _packed_driver(fa, addr, size, isw, core, words, l1, tl, out, tout, room, troom, scratch):
    """Batches of the packed kernels (``gemmsim.kernels.cpu_packed._fill``) through the front."""
    cfg, tcfg, st, rr = fa
    cap = out.shape[0] // 2
    tcap = tout.shape[0] // 2
    w = 0
    wt = 0
    while not _packed_done(st) and w + room <= cap and wt + troom <= tcap:
        n = _packed._fill(addr, size, isw, core, cfg, tcfg, st, rr)
        w, wt = _front_batch(words, n, l1, tl, out, w, tout, wt, scratch)
    return _packed_done(st), w, wt


assert _packed._PH == 3, "the packed kernels' phase column moved: update _packed_done"

DRIVERS = {"nest": _nest_driver, "packed": _packed_driver}


def run_trace(h: Hierarchy, trace: Iterable[np.ndarray], fused: bool = True) -> None:
    """Feed ``trace`` through ``h``: in one compiled pass when possible (``fused``), else chunk by chunk."""
    spec = getattr(trace, "fill_spec", None)
    if fused and spec is not None and spec[0] in DRIVERS:
        family, args, max_bytes = spec
        batch = max(4096, getattr(trace, "min_batch", 1))
        if h.run_fused(DRIVERS[family], args, max_bytes, batch):
            return
    for chunk in trace:
        h.feed(chunk)
