"""Generate and simulate in one compiled pass, where a kernel's stream is known.

A CPU kernel's trace (``gemmsim.kernels.cpu.FillTrace``) says which compiled fill function makes it and with
what state. Instead of filling 4 MiB chunks and handing each to the hierarchy from Python, a driver here calls
the same fill function on a small batch (a few thousand records, which stay in the processor's cache) and runs
the first TLB and L1 on it at once (``gemmsim.models.hierarchy._front_batch``), batch after batch, inside one
compiled call; only what L1 and the first TLB send on leaves it. The fill function is the very one the chunked
path calls, with the same argument types, so the stream is the same access for access; the counters are
exactly those of feeding the chunks (tests/sim/test_fused.py checks both against the naive reference).

For the loop nests whose accesses are aligned elements (``direct_ok``: none spans a line or page), the driver
is ``_nest_direct``: the same walk of the nest as ``_fill``, writing each access straight into the batch as the
two words the front reads (instead of four record fields, a loop per operand), in batches of ``DIRECT_BATCH``
records (256 KiB, in the processor's L2). tests/sim/test_fused_direct.py checks it against ``_nest_driver``
and the reference, with batches that cut innermost iterations.

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
    w = np.int64(0)
    wt = np.int64(0)
    while st[8] == 0 and w + room <= cap and wt + troom <= tcap:
        n = _nest._fill(addr, size, isw, core, st, dims, tiles, tperm, iperm, pro, body, epi, tab, elem)
        w, wt = _front_batch(words, n, l1, tl, out, w, tout, wt, scratch, np.int64(0) != 0)
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
    w = np.int64(0)
    wt = np.int64(0)
    while not _packed_done(st) and w + room <= cap and wt + troom <= tcap:
        n = _packed._fill(addr, size, isw, core, cfg, tcfg, st, rr)
        w, wt = _front_batch(words, n, l1, tl, out, w, tout, wt, scratch, np.int64(0) != 0)
    return _packed_done(st), w, wt


@njit(cache=True, nogil=True)
def _nest_direct(fa, addr, size, isw, core, words, l1, tl, out, tout, room, troom, scratch):
    """The loop-nest kernels' accesses (``gemmsim.kernels.cpu._fill``) through the front, written straight into
    the batch as flat words (``words``: what ``_front_batch`` reads), without the four record fields.

    The nest is walked as ``_fill`` walks it, from and into the same state ``st``, access for access: the
    prologue, the innermost loop's whole iterations (each operand a base plus the iteration times a stride),
    the epilogue, and a partial iteration one operand at a time. Only for traces whose accesses never span a
    line or a first-TLB page (``direct_ok``; the caller checks), so each batch needs room for two records per
    access in ``out`` and one in ``tout``. Returns (done, records in out, records in tout) as the other drivers.
    """
    st, dims, tiles, tperm, iperm, pro, body, epi, tab, elem = fa
    used = tl[0]
    cap = out.shape[0] // 2
    tcap = tout.shape[0] // 2
    bcap = words.shape[0] // 2
    nb = body.shape[0]
    wv = iperm[2]
    m1 = iperm[1]
    m0 = iperm[0]
    hi = np.empty(3, np.int64)
    _nest._tile_ends(st, hi, tiles, dims)
    cur = np.empty(nb, np.uint64)
    step = np.empty(nb, np.uint64)
    meta = np.empty(nb, np.uint64)
    ue = np.uint64(elem)
    store = np.uint64(1) << np.uint64(32)
    w = np.int64(0)
    wt = np.int64(0)
    k = np.uint64(0)  # records in the batch
    ubcap = np.uint64(bcap)
    while st[8] == 0:
        if k == 0 and (w + 2 * bcap > cap or (used and wt + bcap > tcap)):
            break
        stage = st[6]
        if stage == 0:
            if pro >= 0:
                t = tab[pro]
                words[np.uint64(2) * k] = np.uint64(_nest._operand_address(t, st))
                words[np.uint64(2) * k + np.uint64(1)] = ue
                k += np.uint64(1)
            st[6] = 1
            st[7] = 0
        elif stage == 1:
            q = st[7]
            m = min(hi[wv] - st[3 + wv], np.int64(ubcap - k) // nb) if q == 0 else 0
            if m > 0:
                # Whole innermost iterations, as many as the batch holds.
                for b in range(nb):
                    t = tab[body[b]]
                    cur[b] = np.uint64(_nest._operand_address(t, st))
                    step[b] = np.uint64((t[2] if t[1] == wv else 0) + (t[4] if t[3] == wv else 0))
                    meta[b] = ue | (store if body[b] == 3 else np.uint64(0))
                if nb == 2:
                    # the hoisted k- and i-innermost nests (two operands): the loop in registers
                    c0, c1, s0, s1, e0, e1 = cur[0], cur[1], step[0], step[1], meta[0], meta[1]
                    for it in range(m):
                        words[np.uint64(2) * k] = c0
                        words[np.uint64(2) * k + np.uint64(1)] = e0
                        words[np.uint64(2) * k + np.uint64(2)] = c1
                        words[np.uint64(2) * k + np.uint64(3)] = e1
                        c0 += s0
                        c1 += s1
                        k += np.uint64(2)
                else:
                    for it in range(m):
                        for b in range(nb):
                            words[np.uint64(2) * k] = cur[b]
                            words[np.uint64(2) * k + np.uint64(1)] = meta[b]
                            cur[b] += step[b]
                            k += np.uint64(1)
                st[3 + wv] += m
                if st[3 + wv] == hi[wv]:
                    st[6] = 2
            else:
                # One operand of an iteration the batch cannot hold whole (or that was left part done).
                kd = body[q]
                t = tab[kd]
                words[np.uint64(2) * k] = np.uint64(_nest._operand_address(t, st))
                words[np.uint64(2) * k + np.uint64(1)] = ue | (store if kd == 3 else np.uint64(0))
                k += np.uint64(1)
                q = _nest._next_operand(st, hi, q, nb, wv)
                st[7] = q
        else:
            if epi >= 0:
                t = tab[epi]
                words[np.uint64(2) * k] = np.uint64(_nest._operand_address(t, st))
                words[np.uint64(2) * k + np.uint64(1)] = ue | (store if epi == 3 else np.uint64(0))
                k += np.uint64(1)
            st[6] = 0
            _nest._next_iteration(st, hi, tperm, tiles, dims, wv, m0, m1)
        if k == ubcap:
            w, wt = _front_batch(words, bcap, l1, tl, out, w, tout, wt, scratch, np.int64(1) != 0)
            k = np.uint64(0)
    if k:
        w, wt = _front_batch(words, np.int64(k), l1, tl, out, w, tout, wt, scratch, np.int64(1) != 0)
    return st[8] != 0, w, wt


def direct_ok(h: Hierarchy, args: tuple) -> bool:
    """Whether ``_nest_direct`` may run this nest: every access an aligned element (bases and strides multiples
    of the element size), so none spans a line or, with a first TLB, a page no smaller than a line."""
    st, dims, tiles, tperm, iperm, pro, body, epi, tab, elem = args
    line = h.levels[0].line_bytes
    if elem < 1 or line % elem or (h.tlbs and h.tlbs[0].page_bytes < line):
        return False
    return bool(np.all(tab[:, [0, 2, 4]] % elem == 0)) and body.shape[0] >= 1


assert _packed._PH == 3, "the packed kernels' phase column moved: update _packed_done"

DRIVERS = {"nest": _nest_driver, "packed": _packed_driver}
#: Drivers that generate a family's innermost loop inside L1's pass, and the test of whether a trace allows it.
DIRECT = {"nest": (_nest_direct, direct_ok)}
DIRECT_BATCH = 16384


def run_trace(h: Hierarchy, trace: Iterable[np.ndarray], fused: bool = True) -> None:
    """Feed ``trace`` through ``h``: in one compiled pass when possible (``fused``), else chunk by chunk."""
    spec = getattr(trace, "fill_spec", None)
    if fused and spec is not None and spec[0] in DRIVERS:
        family, args, max_bytes = spec
        batch = max(4096, getattr(trace, "min_batch", 1))
        driver = DRIVERS[family]
        if family in DIRECT and h._front_args() is not None and DIRECT[family][1](h, args):
            driver, batch = DIRECT[family][0], DIRECT_BATCH
        if h.run_fused(driver, args, max_bytes, batch):
            return
    for chunk in trace:
        h.feed(chunk)
