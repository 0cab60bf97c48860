"""A set-associative cache level: LRU, FIFO or random replacement; write-back or write-through; write- or
no-write-allocate. Levels chain: what one level's ``feed`` returns is the next level's input.

The rules (those of Dinero IV and cachegrind, and of issue 2):

- An access ``[addr, addr + size)`` is split into the lines it touches; each line touched counts as one
  access (one load or one store) and is handled in address order, as pycachesim does.
- Line ``L = addr // line_bytes`` lives in set ``L % sets`` (sets need not be a power of two).
- LRU recency is refreshed on *every* hit, load or store. (pycachesim 0.3.1 does not refresh it on a store
  hit; feed it each store as a load then a store to compare.) FIFO keeps insertion order; random picks a
  victim with a seeded xorshift generator (reproducible: same seed, same trace, same result). An empty
  (invalid) way is always filled before anything is evicted.
- A miss that allocates sends the next level a load of the whole line (``addr`` = line address, ``size`` =
  ``line_bytes``) and only *then* the victim's write-back: a store of its whole line, if the victim is dirty
  (write-back caches). ``evictions`` counts valid lines replaced, ``writebacks`` dirty ones written back.
- Write-through: every store is also passed to the next level as a store (of the part of the access inside
  that line); no line is ever dirty. No-write-allocate: a store miss is passed on as a store and nothing is
  allocated.
- No flush at the end: dirty lines still cached are reported as ``dirty_at_end``.

Several cores. ``copies > 1`` keeps one private copy of the level per core; the chunk's ``core`` field picks
the copy. A copy taking part in coherence follows a simple write-invalidate protocol (what makes false sharing
visible): at the ``"source"`` level (the first private level), a store by core c to line L first invalidates
L in every other core's copy (a dirty copy is written back first, as a store of its line tagged with that
core, and counted in ``writebacks``; each invalidated copy counts one ``invalidations`` for its core), then,
if ``forward_invalidations``, passes on an *invalidate record* (``is_write == 2``, ``addr`` = line address,
``core`` = c) so that deeper private levels (``"receiver"``) drop their copies as well. Levels not taking part
in coherence skip invalidate records without counting them. Only writes invalidate (no read downgrades).
A receiver passes an invalidate record on as it received it.

How it runs. The public class checks its inputs and owns the state arrays; a compiled kernel (numba, GIL
released) walks a whole chunk: ``_run_small`` for one copy of at most 16 ways (every real L1 and L2; one
source, ``_small_body``, compiled into a copy per common configuration, unsigned indices throughout),
``_run_copies`` for per-core copies and coherence, ``_run_wide`` for one copy of 17 to 32 ways (Haswell's L3),
``_run_any`` for the rest (more ways with per-core copies, or more than 32). The first two keep, per
set, the ways' recency (LRU) or age (FIFO) as 4-bit ranks packed in one word (the victim is the last rank;
promoting a way is a few shifts); ``_run_small`` finds a line by comparing all the set's tags at once (one
vector compare, ``_match8``/``_match16``; ``_run_wide`` likewise with ``_match32``, after its most recent way),
``_run_copies`` by an 8-bit fingerprint of each way's line packed in another word (a lookup compares 8 ways at
once and reads a full tag only for a candidate); ``_run_any`` keeps timestamps. The kernels handle
accesses within one line; at the first access that spans lines they stop and the rest of the chunk is cut into
one access per line (``split_lines``, vectorised), which is exactly the per-line rule above. Every kernel is
checked against the naive reference in tests/reference/ref_cache.py.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types
from numba.core.extending import intrinsic
from numba.cpython.unsafe.numbers import trailing_zeros

from gemmsim.errors import GemmsimError
from gemmsim.trace import ACCESS

#: ``is_write`` value of the invalidate records private levels exchange (see the module docstring).
INVALIDATE = 2

POLICIES = ("lru", "fifo", "random")
_POLICY_CODE = {"lru": 0, "fifo": 1, "random": 2}
_COHERENCE_CODE = {"none": 0, "source": 1, "receiver": 2}

# Columns of the per-copy counter array.
_LOAD_HITS, _LOAD_MISSES, _STORE_HITS, _STORE_MISSES, _WRITEBACKS, _EVICTIONS, _INVALIDATIONS = range(7)
_NCOUNTERS = 7

#: Keys of ``Cache.counters()`` (the ``simulate --json`` schema of issue 2), in order.
COUNTER_KEYS = (
    "loads",
    "stores",
    "load_hits",
    "load_misses",
    "store_hits",
    "store_misses",
    "writebacks",
    "evictions",
    "dirty_at_end",
)


class CacheConfigError(GemmsimError, ValueError):
    """A cache, TLB or hierarchy described with impossible parameters (also a ValueError)."""


def _seed_state(seed: int) -> int:
    """A non-zero 64-bit xorshift state from any integer seed (splitmix64 finaliser)."""
    z = (int(seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return z or 1


# Records travel through the kernels as pairs of uint64 words (an ACCESS record is 16 bytes, little-endian):
# word 0 = addr; word 1 = size | is_write << 32 | core << 40.
_WORDS_OK = np.little_endian and ACCESS.itemsize == 16 and ACCESS.fields["addr"][1] == 0 and ACCESS.fields["size"][1] == 8
_U = np.uint64
_M32 = np.uint64(0xFFFFFFFF)
_ONES8 = np.uint64(0x0101010101010101)
_HIGH8 = np.uint64(0x8080808080808080)


def _make_match(lanes: int):
    """A compiled ``match(arr, start, val)``: a word with bit k set where ``arr[start + k] == val``, k < ``lanes``
    (int64 arrays and values). One vector load and one vector compare (LLVM IR written here: numba does not
    vectorise the scalar loop; on x86 with AVX-512 it is a vpcmpeqq into a mask register), no bounds check: the
    caller keeps ``start + lanes`` within the array (a set of exactly ``lanes`` ways)."""

    @intrinsic
    def match(typingctx, arr, start, val):
        if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and isinstance(start, types.Integer)
                and val == types.int64):  # fmt: skip
            return None
        sig = types.uint64(arr, start, val)

        def codegen(context, builder, sig, args):
            a, st, v = args
            data = context.make_array(sig.args[0])(context, builder, a).data
            i64 = ir.IntType(64)
            vty = ir.VectorType(i64, lanes)
            vec = builder.load(builder.bitcast(builder.gep(data, [st]), vty.as_pointer()), align=8)
            undef = ir.Constant(vty, ir.Undefined)
            one = builder.insert_element(undef, v, ir.Constant(ir.IntType(32), 0))
            splat = builder.shuffle_vector(one, undef, ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))
            bits = builder.bitcast(builder.icmp_unsigned("==", vec, splat), ir.IntType(lanes))
            return builder.zext(bits, i64)

        return sig, codegen

    return match


#: Tag compares of a whole set of up to 8, 16 or 32 ways (see ``_make_match``).
_match8 = _make_match(8)
_match16 = _make_match(16)
_match32 = _make_match(32)


@njit(cache=True, inline="always")
def _fp_search(fpw, woff, nw, q, tags, base, tag):
    """(found, way) of ``tag`` in a set whose byte fingerprints are the ``nw`` words at ``fpw[woff:]`` (8 ways a
    word, ``q`` the wanted fingerprint in every byte): a word's matching bytes are found at once (the SWAR zero-byte
    test), and only those ways' tags are compared."""
    j = _U(0)
    while j < nw:
        x = fpw[woff + j] ^ q
        m = (x - _ONES8) & ~x & _HIGH8
        while m:
            k = j * _U(8) + (_U(trailing_zeros(m)) >> _U(3))
            if tags[base + k] == tag:
                return True, k
            m &= m - _U(1)
        j += _U(1)
    return False, _U(0)
_ONES4 = np.uint64(0x1111111111111111)
_HIGH4 = np.uint64(0x8888888888888888)
_FPMUL = np.uint64(0x9E3779B97F4A7C15)
#: Ways up to which the packed kernels (nibble recency order) are used.
SMALL_WAYS = 16
#: Ways up to which one copy without coherence takes ``_run_wide`` (whole-set compare, stamps) rather than ``_run_any``.
WIDE_WAYS = 32


def _no_tlb() -> tuple:
    none = np.zeros(1, dtype=np.int64)
    return (False, none, none, none, np.zeros(1, dtype=np.uint64), np.zeros((1, 2), dtype=np.int64), none, 1, 1, 12)


def fingerprint_row(ways: int) -> np.ndarray:
    """The empty fingerprint words of one set: 0 for each way (invalid), 1 for the byte slots past the last way."""
    nw = (ways + 7) // 8
    fp0 = np.zeros(nw, dtype=np.uint64)
    for k in range(ways, 8 * nw):
        fp0[k >> 3] |= np.uint64(1) << np.uint64(8 * (k & 7))
    return fp0


#: The ``tl`` argument of ``_run_small`` for a level without a TLB beside it (the TLB part is skipped).
NO_TLB = _no_tlb()
_NO_TLB_OUT = np.zeros(2, dtype=np.uint64)
_NONE_I64 = np.zeros(1, dtype=np.int64)
_NONE_U64 = np.zeros(1, dtype=np.uint64)


def as_words(chunk: np.ndarray) -> np.ndarray:
    """A chunk of ACCESS records seen as flat uint64 words, two per record (copied only if not contiguous)."""
    return np.ascontiguousarray(chunk).view(np.uint64)


@njit(cache=True, nogil=True, inline="always")
def _rec(out, w, addr, size, kind, core):
    out[2 * w] = np.uint64(addr)
    out[2 * w + 1] = np.uint64(size) | (np.uint64(kind) << np.uint64(32)) | (np.uint64(core) << np.uint64(40))


@njit(cache=True, nogil=True, inline="always")
def _xorshift(x):
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    return x


@njit(cache=True, nogil=True)
def _run_small(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back, write_allocate, out,
               tl, tout, wt, trusted):  # fmt: skip
    """``_small_body`` (below), compiled for the configuration: the common ones -- write-back, write-allocate,
    sets a power of two, LRU with or without a TLB beside, FIFO without; exactly 8 or 16 ways (the way count a
    constant) or any other count up to 16 -- have copies of their own in which numba folds every test of the
    configuration away; the general copy takes the rest. The same code runs in each.

    ``trusted``: the caller knows that no record spans a line and none is an invalidate record (the accesses of
    an aligned loop nest; what a single-core level sends to a level with lines no shorter), so the 8-way copies
    skip those two tests. It changes nothing else: an untrusted record within one line takes the same path.
    """
    if write_back and write_allocate and (sets & (sets - 1)) == 0:
        if policy == 0:
            if tl[0]:
                if ways == 8:
                    if trusted:
                        return _small_lru8_tlb_t(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
                    return _small_lru8_tlb(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
                if ways == 16:
                    return _small_lru16_tlb(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
                return _small_lru_tlb(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
            if ways == 8:
                if trusted:
                    return _small_lru8_t(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
                return _small_lru8(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
            if ways == 16:
                return _small_lru16(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
            return _small_lru(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
        if policy == 1 and ways == 8 and not tl[0]:
            if trusted:
                return _small_fifo8_t(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
            return _small_fifo8(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt)
    return _small_any(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                      write_allocate, out, tl, tout, wt)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru8(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 0, True, True, out, tl, tout,
                       wt, True, False, False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru8_t(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 0, True, True, out, tl, tout,
                       wt, True, False, True, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru8_tlb(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 0, True, True, out, tl, tout,
                       wt, True, True, False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru8_tlb_t(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 0, True, True, out, tl, tout,
                       wt, True, True, True, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru16(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 16, shift, 0, True, True, out, tl, tout,
                       wt, True, False, False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru16_tlb(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 16, shift, 0, True, True, out, tl, tout,
                       wt, True, True, False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, 0, True, True, out, tl, tout,
                       wt, True, False, False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru_tlb(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, 0, True, True, out, tl, tout,
                       wt, True, True, False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_fifo8(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 1, True, True, out, tl, tout,
                       wt, True, False, False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_fifo8_t(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 1, True, True, out, tl, tout,
                       wt, True, False, True, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_any(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back, write_allocate, out,
               tl, tout, wt):  # fmt: skip
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                       write_allocate, out, tl, tout, wt, (sets & (sets - 1)) == 0, tl[0], False, True)  # fmt: skip


@njit(cache=True, nogil=True)
def _run_below(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back, write_allocate,
               out, tl, tout):  # fmt: skip
    """``_run_small`` for a level below L1 whose input is trusted (``Cache._feed(trusted=True)``: what a single-core
    level sends a level with lines no shorter). Its common configurations (8 or 16 ways, LRU, or FIFO with 8) run
    copies without the run collapse: after a write-back L1, consecutive records to one line are rare (a miss's
    load and the victim's write-back are different lines), and the test and its state cost ~12 % of a record
    here. The collapse is a shortcut only, so the counters are the same either way. Other configurations take
    ``_run_small``."""
    if write_back and write_allocate and (sets & (sets - 1)) == 0:
        if policy == 0 and ways == 8:
            return _small_lru8_b(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, np.int64(0))
        if policy == 0 and ways == 16:
            return _small_lru16_b(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, np.int64(0))
        if policy == 1 and ways == 8:
            return _small_fifo8_b(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, np.int64(0))
    return _run_small(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                      write_allocate, out, tl, tout, np.int64(0), True)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru8_b(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 0, True, True, out, tl, tout,
                       wt, True, False, True, False)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_lru16_b(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 16, shift, 0, True, True, out, tl, tout,
                       wt, True, False, True, False)  # fmt: skip


@njit(cache=True, nogil=True)
def _small_fifo8_b(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, out, tl, tout, wt):
    return _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, 8, shift, 1, True, True, out, tl, tout,
                       wt, True, False, True, False)  # fmt: skip


@njit(nogil=True, inline="always")
def _flush(cnt, done, lm, sth, stm, wb, inv, records, write_back, write_allocate):
    """Add one call of ``_small_body`` to a cache's counters: ``done`` records looked up, of which ``lm`` load
    misses (or, write-back and write-allocate, derived from the ``records`` sent on), ``sth``/``stm`` store hits
    and misses, ``wb`` write-backs, ``inv`` fills of an invalid way (a fill of a valid way is an eviction)."""
    if write_back and write_allocate:
        lm = records - wb - stm
    fills = lm + stm if write_allocate else lm
    cnt[0, 0] += done - lm - sth - stm
    cnt[0, 1] += lm
    cnt[0, 2] += sth
    cnt[0, 3] += stm
    cnt[0, 4] += wb
    cnt[0, 5] += fills - inv


@njit(nogil=True, inline="always")
def _small_body(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back, write_allocate,
                out, tl, tout, wt, pow2, used, trusted, runs):  # fmt: skip
    """Fast kernel: one copy, no coherence, ways <= 16, accesses within one line. Returns (next access, records
    written, TLB records written); it stops before the first access that spans lines (the caller splits those,
    see ``split_lines``).

    ``tl`` = (used, tags, stamps, mru, fpw, cnt, st, sets, ways, shift) of a one-copy TLB (``gemmsim.models.tlb``)
    whose pages are no smaller than the lines: when ``used``, every access is also looked up there in the same
    pass (what ``_tlb_run`` does; an access within one line is within one page), its misses written into
    ``tout`` from record ``wt`` on. Levels below L1 pass ``NO_TLB``.

    ``inp`` and ``out`` are records as flat uint64 words (two per record, see ``as_words``); ``out`` has room for
    two records per access. Per set: ``tags[set*ways + way]`` (line number, -1 when invalid; the array has 16
    tags of padding after its end, see ``Cache``) and ``dirty``; ``order[set]`` packs the ways by recency (LRU)
    or age (FIFO), one nibble per rank, rank 0 the most recent, so the victim is the last rank and promoting a
    way is a few shifts. Invalid ways start at the old end, so they are filled first. A lookup compares all the
    set's tags at once (``_match8``/``_match16``: one vector compare of 8 or 16 lanes, those past the set's ways
    masked off); ``fpw`` is not used (the other kernels' fingerprints). A hit on the least recent way (what a
    level below L1 sees on a loop nest) rotates the order; a hit on the most recent way changes nothing.
    ``runs``: collapse runs of accesses to one line (see below; off below L1, ``_run_below``).
    The loop is written out flat, without helpers or an inner loop over lines: numba compiles it twice as fast.
    Every index is unsigned (``_U``): a signed index costs a wrap-around test per array access in numba, and
    the kernel ran at less than half this speed with them.
    """
    mask = _U(sets - 1)
    usets = _U(sets)
    uways = _U(ways)
    vmask = (_U(1) << uways) - _U(1)  # the lanes of the set's ways
    u4 = _U(4)
    sh = _U(shift)
    wmask = _U(0xFFFFFFFFFFFFFFFF) if ways == 16 else ((_U(1) << _U(4 * ways)) - _U(1))
    unused = ~wmask
    old_rank = _U(4 * (ways - 1))
    line_word = _U(1) << sh  # a whole-line load record's size word
    store_bit = _U(1) << _U(32)
    rng = _U(st[1])
    # Counted as they happen: store hits and misses, write-backs, fills of an invalid way, invalidate records
    # skipped; load misses too unless write-back and write-allocate, where every record sent on is a miss's line
    # load or a write-back (so load misses = records - write-backs - store misses). Load hits and evictions follow
    # at the end (_flush): the hit paths count nothing.
    lm = 0
    sth = 0
    stm = 0
    wb = 0
    inv = 0
    skipped = 0
    w = _U(0)
    uwt = _U(wt)
    run_ln = _U(0xFFFFFFFFFFFFFFFF)  # the line the previous access left cached (all ones: none), and its slot in tags
    run_at = _U(0)
    _, ttags, tstamps, tmru, tfpw, tcnt, tst, tsets, tways, tshift = tl
    tnw = _U((tways + 7) >> 3)
    tpow2 = (tsets & (tsets - 1)) == 0
    tmask = _U(tsets - 1)
    utsets = _U(tsets)
    utways = _U(tways)
    tsh = _U(tshift)
    tclock = tst[0]
    thits = 0
    tmisses = 0
    for i in range(start, n):
        ui = _U(i)
        a = inp[_U(2) * ui]
        meta = inp[_U(2) * ui + _U(1)]
        kind = (meta >> _U(32)) & _U(0xFF)
        if not trusted and kind == _U(2):
            skipped += 1
            continue  # an invalidate record: this level takes no part in coherence
        ln = a >> sh
        if not trusted and ((a + (meta & _M32) - _U(1)) >> sh) != ln:
            st[1] = np.int64(rng)
            _flush(cnt, i - start - skipped, lm, sth, stm, wb, inv, np.int64(w), write_back, write_allocate)
            if used:
                tst[0] = tclock
                tcnt[0, 0] += thits
                tcnt[0, 1] += tmisses
            return i, np.int64(w), np.int64(uwt)
        store = kind != _U(0)
        core_word = meta & _U(0xFF0000000000)
        if used:
            # The TLB lookup of gemmsim.models.tlb._tlb_run, for one copy and an access within one page.
            pg = a >> tsh
            spg = np.int64(pg)
            tclock += 1
            ts = (pg & tmask) if tpow2 else (pg % utsets)
            tb = ts * utways
            if ttags[tb + _U(tmru[ts])] == spg:
                thits += 1
            else:
                tq = (_U(2) + ((pg * _FPMUL) >> _U(57))) * _ONES8
                tfound, th = _fp_search(tfpw, ts * tnw, tnw, tq, ttags, tb, spg)
                if tfound:
                    tstamps[tb + th] = tclock
                    tmru[ts] = np.int64(th)
                    thits += 1
                else:
                    tmisses += 1
                    v = _U(0)
                    best = tstamps[tb]
                    for kk in range(1, tways):
                        k = _U(kk)
                        if tstamps[tb + k] < best:
                            best = tstamps[tb + k]
                            v = k
                    ttags[tb + v] = spg
                    tstamps[tb + v] = tclock
                    tmru[ts] = np.int64(v)
                    fi = ts * tnw + (v >> _U(3))
                    sb = _U(8) * (v & _U(7))
                    tfpw[fi] = (tfpw[fi] & ~(_U(0xFF) << sb)) | ((_U(2) + ((pg * _FPMUL) >> _U(57))) << sb)
                    tout[_U(2) * uwt] = a
                    tout[_U(2) * uwt + _U(1)] = meta | _U(1) if (meta & _M32) == _U(0) else meta
                    uwt += _U(1)
        if runs and ln == run_ln:
            # A run of accesses to one line: the previous access hit or filled it, so it is cached and already
            # the most recent (LRU) and a hit changes no order (any policy); only the counts and the dirty bit
            # change (or, write-through, the store goes on).
            if store:
                sth += 1
                if write_back:
                    dirty[run_at] = 1
                else:
                    size = meta & _M32
                    out[_U(2) * w] = a
                    out[_U(2) * w + _U(1)] = (size + _U(size == _U(0))) | core_word | store_bit
                    w += _U(1)
            continue
        run_ln = _U(0xFFFFFFFFFFFFFFFF)
        sln = np.int64(ln)
        s = (ln & mask) if pow2 else (ln % usets)
        base = s * uways
        o = order[s]
        hit = _U(0)
        found = False
        front = False  # the hit is on the most recent way
        back = False  # on the least recent way
        # Every tag of the set compared at once: 8 or 16 lanes (a set of fewer ways reads into the next set or the
        # tags' padding; those lanes are masked off).
        mm = _match8(tags, base, sln) if ways <= 8 else _match16(tags, base, sln)
        if ways != 8 and ways != 16:
            mm &= vmask
        if mm:
            found = True
            hit = _U(trailing_zeros(mm))
            if policy != 2:
                front = hit == (o & _U(15))
                back = hit == ((o >> old_rank) & _U(15))
        through = False
        if found:
            run_ln = ln
            run_at = base + hit
            if policy == 0 and back:
                # LRU, a hit on the least recent way (what a level below L1 mostly sees on a loop nest: L1 kept the
                # recent lines): a rotation of the whole order brings it to rank 0, without looking for its rank.
                order[s] = (((o << u4) | hit) & wmask) | unused
            elif policy == 0 and not front:
                # LRU: move the way to rank 0.
                y = o ^ (hit * _ONES4)
                p = _U(trailing_zeros((y - _ONES4) & ~y & _HIGH4)) & _U(0x3C)
                hp = p + u4
                high = ((o >> hp) << hp) if hp < _U(64) else _U(0)
                order[s] = high | ((o & ((_U(1) << p) - _U(1))) << u4) | hit
            if store:
                sth += 1
                if write_back:
                    dirty[run_at] = 1
                else:
                    through = True
        else:
            if store:
                stm += 1
            elif not (write_back and write_allocate):
                lm += 1
            if store and not write_allocate:
                through = True
            else:
                # Fetch the line from the next level first, then deal with the victim.
                out[_U(2) * w] = ln << sh
                out[_U(2) * w + _U(1)] = line_word | core_word
                w += _U(1)
                if policy == 2:
                    v = uways
                    for kk in range(ways):
                        if tags[base + _U(kk)] < 0:
                            v = _U(kk)
                            break
                    if v == uways:
                        rng ^= rng << _U(13)
                        rng ^= rng >> _U(7)
                        rng ^= rng << _U(17)
                        v = rng % uways
                else:
                    v = (o >> old_rank) & _U(15)
                    order[s] = (((o << u4) | v) & wmask) | unused
                at = base + v
                vt = tags[at]
                if vt < 0:
                    inv += 1
                elif dirty[at]:
                    wb += 1
                    out[_U(2) * w] = _U(vt) << sh
                    out[_U(2) * w + _U(1)] = line_word | core_word | store_bit
                    w += _U(1)
                tags[at] = sln
                dirty[at] = 1 if (store and write_back) else 0
                run_ln = ln
                run_at = at
                through = store and not write_back
        if through:
            # Write-through, or a store miss without write-allocate: the store itself goes on.
            size = meta & _M32
            out[_U(2) * w] = a
            out[_U(2) * w + _U(1)] = (size + _U(size == _U(0))) | core_word | store_bit
            w += _U(1)
    st[1] = np.int64(rng)
    _flush(cnt, n - start - skipped, lm, sth, stm, wb, inv, np.int64(w), write_back, write_allocate)
    if used:
        tst[0] = tclock
        tcnt[0, 0] += thits
        tcnt[0, 1] += tmisses
    return n, np.int64(w), np.int64(uwt)


@njit(cache=True, nogil=True)
def _run_wide(inp, start, n, tags, dirty, fpw, stamps, mru, cnt, st, sets, ways, shift, policy, write_back, write_allocate,
              out):  # fmt: skip
    """``_run_small`` for more than 16 ways (up to ``WIDE_WAYS``; Haswell's 20-way L3): one copy, no coherence,
    accesses within one line. A lookup tries the set's most recent way, then compares all its tags at once
    (``_match32``; ``fpw`` is not used, the argument is kept for the callers); the order is
    kept as stamps (``stamps``: time of the last use for LRU, of the fill for FIFO; 0 when invalid, so invalid
    ways go first) with ``mru[set]`` the way used last, checked first. A hit on the set's most recent way
    changes nothing (its stamp is already the newest of its set); a victim is the way with the oldest stamp.
    st = [clock, rng]. Returns (next access, records written), stopping before an access that spans lines.
    Indices are unsigned, as in ``_small_body``.
    """
    pow2 = (sets & (sets - 1)) == 0
    mask = _U(sets - 1)
    usets = _U(sets)
    uways = _U(ways)
    vmask = (_U(1) << uways) - _U(1)  # the lanes of the set's ways
    sh = _U(shift)
    line_word = _U(1) << sh
    store_bit = _U(1) << _U(32)
    clock = st[0]
    rng = _U(st[1])
    lh = 0
    lm = 0
    sth = 0
    stm = 0
    wb = 0
    ev = 0
    w = _U(0)
    run_ln = _U(0xFFFFFFFFFFFFFFFF)
    run_at = _U(0)
    for i in range(start, n):
        ui = _U(i)
        a = inp[_U(2) * ui]
        meta = inp[_U(2) * ui + _U(1)]
        kind = (meta >> _U(32)) & _U(0xFF)
        if kind == _U(2):
            continue
        ln = a >> sh
        if ((a + (meta & _M32) - _U(1)) >> sh) != ln:
            st[0] = clock
            st[1] = np.int64(rng)
            cnt[0, 0] += lh
            cnt[0, 1] += lm
            cnt[0, 2] += sth
            cnt[0, 3] += stm
            cnt[0, 4] += wb
            cnt[0, 5] += ev
            return i, np.int64(w)
        store = kind != _U(0)
        core_word = meta & _U(0xFF0000000000)
        if ln == run_ln:
            # A run of accesses to one line (see _small_body).
            if store:
                sth += 1
                if write_back:
                    dirty[run_at] = 1
                else:
                    size = meta & _M32
                    out[_U(2) * w] = a
                    out[_U(2) * w + _U(1)] = (size + _U(size == _U(0))) | core_word | store_bit
                    w += _U(1)
            else:
                lh += 1
            continue
        run_ln = _U(0xFFFFFFFFFFFFFFFF)
        sln = np.int64(ln)
        s = (ln & mask) if pow2 else (ln % usets)
        base = s * uways
        hit = _U(0)
        w0 = _U(mru[s])
        front = tags[base + w0] == sln
        found = front
        if front:
            hit = w0
        if not found:
            # All the set's tags at once (32 lanes; those past its ways read the next set, whose lines cannot
            # match, or the tags' padding, and are masked off).
            mm = _match32(tags, base, sln) & vmask
            if mm:
                found = True
                hit = _U(trailing_zeros(mm))
        through = False
        if found:
            run_ln = ln
            run_at = base + hit
            if not front:
                mru[s] = np.int64(hit)
                if policy == 0:
                    clock += 1
                    stamps[base + hit] = clock
            if store:
                sth += 1
                if write_back:
                    dirty[base + hit] = 1
                else:
                    through = True
            else:
                lh += 1
        else:
            if store:
                stm += 1
            else:
                lm += 1
            if store and not write_allocate:
                through = True
            else:
                out[_U(2) * w] = ln << sh
                out[_U(2) * w + _U(1)] = line_word | core_word
                w += _U(1)
                v = _U(0)
                if policy == 2:
                    v = uways
                    for kk in range(ways):
                        if tags[base + _U(kk)] < 0:
                            v = _U(kk)
                            break
                    if v == uways:
                        rng ^= rng << _U(13)
                        rng ^= rng >> _U(7)
                        rng ^= rng << _U(17)
                        v = rng % uways
                else:
                    best = stamps[base]
                    for kk in range(1, ways):
                        k = _U(kk)
                        if stamps[base + k] < best:
                            best = stamps[base + k]
                            v = k
                at = base + v
                vt = tags[at]
                if vt >= 0:
                    ev += 1
                    if dirty[at]:
                        wb += 1
                        out[_U(2) * w] = _U(vt) << sh
                        out[_U(2) * w + _U(1)] = line_word | core_word | store_bit
                        w += _U(1)
                clock += 1
                tags[at] = sln
                stamps[at] = clock
                dirty[at] = 1 if (store and write_back) else 0
                mru[s] = np.int64(v)
                run_ln = ln
                run_at = at
                through = store and not write_back
        if through:
            size = meta & _M32
            out[_U(2) * w] = a
            out[_U(2) * w + _U(1)] = (size + _U(size == _U(0))) | core_word | store_bit
            w += _U(1)
    st[0] = clock
    st[1] = np.int64(rng)
    cnt[0, 0] += lh
    cnt[0, 1] += lm
    cnt[0, 2] += sth
    cnt[0, 3] += stm
    cnt[0, 4] += wb
    cnt[0, 5] += ev
    return n, np.int64(w)


@njit(cache=True, nogil=True)
def _run_copies(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                write_allocate, copies, coherence, forward, out):  # fmt: skip
    """``_run_small`` for per-core copies, with write-invalidate coherence (ways <= 16, accesses within one line).

    The state arrays hold ``copies`` caches one after the other (row = copy * sets + set). A dropped copy's way
    gets fingerprint 0, tag -1 and the oldest rank, so it is the next one filled. ``out`` has room for
    2 + copies records per access. Returns (next access, records written), stopping before an access that spans
    lines. Indices are unsigned, as in ``_small_body`` (a signed index costs a wrap-around test).
    """
    pow2 = (sets & (sets - 1)) == 0
    mask = _U(sets - 1)
    usets = _U(sets)
    uways = _U(ways)
    ucopies = _U(copies)
    nw = _U((ways + 7) >> 3)
    u4 = _U(4)
    sh = _U(shift)
    wmask = _U(0xFFFFFFFFFFFFFFFF) if ways == 16 else ((_U(1) << _U(4 * ways)) - _U(1))
    unused = ~wmask
    old_rank = _U(4 * (ways - 1))
    line_word = _U(1) << sh
    store_bit = _U(1) << _U(32)
    inval_bit = _U(2) << _U(32)
    none = _U(0xFFFFFFFFFFFFFFFF)
    rng = _U(st[1])
    w = _U(0)
    run_ln = none  # the line the previous record left cached in copy run_cp (all ones: none)
    run_cp = _U(0)
    for i in range(start, n):
        ui = _U(i)
        a = inp[_U(2) * ui]
        meta = inp[_U(2) * ui + _U(1)]
        ln = a >> sh
        size = meta & _M32
        last = (a + size - _U(size != _U(0))) >> sh
        kind = (meta >> _U(32)) & _U(0xFF)
        if kind != _U(2) and last != ln:
            st[1] = np.int64(rng)
            return i, np.int64(w)
        core_word = meta & _U(0xFF0000000000)
        cp = (core_word >> _U(40)) if copies > 1 else _U(0)
        if kind == _U(0) and ln == run_ln and cp == run_cp:
            # A load right after this core's own access to the line, which left it cached and most recent in its
            # copy; nothing came in between: a hit that changes nothing.
            cnt[cp, _U(0)] += 1
            continue
        run_ln = none
        sln = np.int64(ln)
        s = (ln & mask) if pow2 else (ln % usets)
        fp = _U(2) + ((ln * _FPMUL) >> _U(57))
        q = fp * _ONES8
        if kind == _U(2) or (kind != _U(0) and coherence == 1):
            # Write-invalidate: an invalidate record from the level above (core c wrote these lines), or a store
            # at the first private level. Every other core's copy goes; a dirty one is written back first.
            if coherence != 0:
                l = ln
                while l <= last:
                    sl_ = np.int64(l)
                    sl = (l & mask) if pow2 else (l % usets)
                    ql = (_U(2) + ((l * _FPMUL) >> _U(57))) * _ONES8
                    d = _U(0)
                    while d < ucopies:
                        if d == cp:
                            d += _U(1)
                            continue
                        row = d * usets + sl
                        base = row * uways
                        got, k = _fp_search(fpw, row * nw, nw, ql, tags, base, sl_)
                        if got:
                            cnt[d, _U(6)] += 1
                            if dirty[base + k]:
                                cnt[d, _U(4)] += 1
                                out[_U(2) * w] = l << sh
                                out[_U(2) * w + _U(1)] = line_word | store_bit | (d << _U(40))
                                w += _U(1)
                                dirty[base + k] = 0
                            tags[base + k] = -1
                            fi = row * nw + (k >> _U(3))
                            fpw[fi] &= ~(_U(0xFF) << (_U(8) * (k & _U(7))))
                            if policy != 2:
                                # The freed way becomes the oldest rank.
                                o = order[row]
                                y = o ^ (k * _ONES4)
                                p = _U(trailing_zeros((y - _ONES4) & ~y & _HIGH4)) & _U(0x3C)
                                hp = p + u4
                                high = (o >> hp) if hp < _U(64) else _U(0)
                                o = (o & ((_U(1) << p) - _U(1))) | (high << p)
                                o = (o & ~(_U(15) << old_rank)) | (k << old_rank)
                                order[row] = (o & wmask) | unused
                        d += _U(1)
                    l += _U(1)
                if forward:
                    # Pass the record on as received; a store at the first private level announces its line.
                    if kind == _U(2):
                        out[_U(2) * w] = a
                        out[_U(2) * w + _U(1)] = meta
                    else:
                        out[_U(2) * w] = ln << sh
                        out[_U(2) * w + _U(1)] = line_word | inval_bit | core_word
                    w += _U(1)
            if kind == _U(2):
                continue
        store = kind != _U(0)
        row = cp * usets + s
        base = row * uways
        o = order[row]
        hit = _U(0)
        found = False
        front = False
        if policy != 2:
            w0 = o & _U(15)
            if tags[base + w0] == sln:
                hit = w0
                found = True
                front = True
        if not found:
            found, hit = _fp_search(fpw, row * nw, nw, q, tags, base, sln)
        through = False
        if found:
            run_ln = ln
            run_cp = cp
            if policy == 0 and not front and ((o >> old_rank) & _U(15)) == hit:
                order[row] = (((o << u4) | hit) & wmask) | unused  # the least recent way: rotate (see _small_body)
            elif policy == 0 and not front:
                y = o ^ (hit * _ONES4)
                p = _U(trailing_zeros((y - _ONES4) & ~y & _HIGH4)) & _U(0x3C)
                hp = p + u4
                high = ((o >> hp) << hp) if hp < _U(64) else _U(0)
                order[row] = high | ((o & ((_U(1) << p) - _U(1))) << u4) | hit
            if store:
                cnt[cp, _U(2)] += 1
                if write_back:
                    dirty[base + hit] = 1
                else:
                    through = True
            else:
                cnt[cp, _U(0)] += 1
        else:
            if store:
                cnt[cp, _U(3)] += 1
            else:
                cnt[cp, _U(1)] += 1
            if store and not write_allocate:
                through = True
            else:
                out[_U(2) * w] = ln << sh
                out[_U(2) * w + _U(1)] = line_word | core_word
                w += _U(1)
                v = _U(0)
                if policy == 2:
                    v = uways
                    for kk in range(ways):
                        if tags[base + _U(kk)] < 0:
                            v = _U(kk)
                            break
                    if v == uways:
                        rng ^= rng << _U(13)
                        rng ^= rng >> _U(7)
                        rng ^= rng << _U(17)
                        v = rng % uways
                else:
                    v = (o >> old_rank) & _U(15)
                    order[row] = (((o << u4) | v) & wmask) | unused
                at = base + v
                vt = tags[at]
                if vt >= 0:
                    cnt[cp, _U(5)] += 1
                    if dirty[at]:
                        cnt[cp, _U(4)] += 1
                        out[_U(2) * w] = _U(vt) << sh
                        out[_U(2) * w + _U(1)] = line_word | core_word | store_bit
                        w += _U(1)
                tags[at] = sln
                run_ln = ln
                run_cp = cp
                dirty[at] = 1 if (store and write_back) else 0
                fi = row * nw + (v >> _U(3))
                sb = _U(8) * (v & _U(7))
                fpw[fi] = (fpw[fi] & ~(_U(0xFF) << sb)) | (fp << sb)
                through = store and not write_back
        if through:
            size = meta & _M32
            out[_U(2) * w] = a
            out[_U(2) * w + _U(1)] = (size + _U(size == _U(0))) | core_word | store_bit
            w += _U(1)
    st[1] = np.int64(rng)
    return n, np.int64(w)


def split_lines(chunk: np.ndarray, line_bytes: int) -> np.ndarray:
    """The same accesses with every one that spans lines cut into one access per line touched (the part inside
    that line, same kind and core); a size of 0 counts as 1 byte. Invalidate records stay whole (a level passes
    them on as it received them). Vectorised; returns ``chunk`` itself when nothing needs cutting."""
    shift = line_bytes.bit_length() - 1
    addr = chunk["addr"].astype(np.int64)
    size = np.maximum(chunk["size"].astype(np.int64), 1)
    first = addr >> shift
    count = np.where(chunk["is_write"] == INVALIDATE, 1, ((addr + size - 1) >> shift) - first + 1)
    if np.all(count == 1) and np.all(chunk["size"] > 0):
        return chunk
    idx = np.repeat(np.arange(chunk.shape[0]), count)
    starts = np.cumsum(count) - count
    line = first[idx] + (np.arange(idx.shape[0]) - starts[idx])
    lo = np.maximum(line << shift, addr[idx])
    hi = np.minimum((line + 1) << shift, addr[idx] + size[idx])
    out = chunk[idx]
    keep = out["is_write"] == INVALIDATE
    out["addr"] = np.where(keep, out["addr"], lo)
    out["size"] = np.where(keep, out["size"], hi - lo)
    return out


@njit(cache=True, nogil=True)
def _run_any(inp, start, n, tags, dirty, stamps, mru, cnt, st, sets, ways, shift, policy, write_back, write_allocate,
             copies, coherence, forward, out):  # fmt: skip
    """General kernel: any ways, per-core copies, coherence; accesses within one line. Returns (next access,
    records written), stopping before the first access that spans lines (the caller splits those).

    ``tags[(copy*sets + set)*ways + way]`` (line number, -1 when invalid), ``dirty``, ``stamps`` (time of the last
    use for LRU, of insertion for FIFO; 0 when invalid, so invalid ways are taken first), ``mru[copy*sets + set]``
    (the way used last, looked at first); st = [clock, rng]. ``out`` has room for 2 + copies records per access.
    Indices are unsigned, as in ``_small_body``.
    """
    pow2 = (sets & (sets - 1)) == 0
    mask = _U(sets - 1)
    usets = _U(sets)
    uways = _U(ways)
    ucopies = _U(copies)
    sh = _U(shift)
    line_word = _U(1) << sh
    store_bit = _U(1) << _U(32)
    inval_bit = _U(2) << _U(32)
    clock = st[0]
    rng = _U(st[1])
    w = _U(0)
    for i in range(start, n):
        ui = _U(i)
        a = inp[_U(2) * ui]
        meta = inp[_U(2) * ui + _U(1)]
        ln = a >> sh
        size = meta & _M32
        last = (a + size - _U(size != _U(0))) >> sh
        kind = (meta >> _U(32)) & _U(0xFF)
        if kind != _U(2) and last != ln:
            st[0] = clock
            st[1] = np.int64(rng)
            return i, np.int64(w)
        core_word = meta & _U(0xFF0000000000)
        cp = (core_word >> _U(40)) if copies > 1 else _U(0)
        s = (ln & mask) if pow2 else (ln % usets)
        if kind == _U(2) or (kind != _U(0) and coherence == 1):
            # Write-invalidate: an invalidate record from the level above (core c wrote these lines), or a store
            # at the first private level. Every other core's copy goes; a dirty one is written back first.
            if coherence != 0:
                l = ln
                while l <= last:
                    sl_ = np.int64(l)
                    sl = (l & mask) if pow2 else (l % usets)
                    d = _U(0)
                    while d < ucopies:
                        if d != cp:
                            base = (d * usets + sl) * uways
                            k = _U(0)
                            while k < uways:
                                if tags[base + k] == sl_:
                                    cnt[d, _U(6)] += 1
                                    if dirty[base + k]:
                                        cnt[d, _U(4)] += 1
                                        out[_U(2) * w] = l << sh
                                        out[_U(2) * w + _U(1)] = line_word | store_bit | (d << _U(40))
                                        w += _U(1)
                                        dirty[base + k] = 0
                                    tags[base + k] = -1
                                    stamps[base + k] = 0
                                    break
                                k += _U(1)
                        d += _U(1)
                    l += _U(1)
                if forward:
                    # Pass the record on as received; a store at the first private level announces its line.
                    if kind == _U(2):
                        out[_U(2) * w] = a
                        out[_U(2) * w + _U(1)] = size | inval_bit | core_word
                    else:
                        out[_U(2) * w] = ln << sh
                        out[_U(2) * w + _U(1)] = line_word | inval_bit | core_word
                    w += _U(1)
            if kind == _U(2):
                continue
        store = kind != _U(0)
        sln = np.int64(ln)
        clock += 1
        row = cp * usets + s
        base = row * uways
        hit = _U(mru[row])
        found = tags[base + hit] == sln
        if not found:
            k = _U(0)
            while k < uways:
                if tags[base + k] == sln:
                    hit = k
                    found = True
                    break
                k += _U(1)
        through = False
        if found:
            mru[row] = np.int64(hit)
            if policy == 0:
                stamps[base + hit] = clock
            if store:
                cnt[cp, _U(2)] += 1
                if write_back:
                    dirty[base + hit] = 1
                else:
                    through = True
            else:
                cnt[cp, _U(0)] += 1
        else:
            if store:
                cnt[cp, _U(3)] += 1
            else:
                cnt[cp, _U(1)] += 1
            if store and not write_allocate:
                through = True
            else:
                # Fetch the line from the next level first, then deal with the victim.
                out[_U(2) * w] = ln << sh
                out[_U(2) * w + _U(1)] = line_word | core_word
                w += _U(1)
                v = _U(0)
                if policy == 2:
                    v = uways
                    k = _U(0)
                    while k < uways:
                        if tags[base + k] < 0:
                            v = k
                            break
                        k += _U(1)
                    if v == uways:
                        rng ^= rng << _U(13)
                        rng ^= rng >> _U(7)
                        rng ^= rng << _U(17)
                        v = rng % uways
                else:
                    best = stamps[base]
                    k = _U(1)
                    while k < uways:
                        if stamps[base + k] < best:
                            best = stamps[base + k]
                            v = k
                        k += _U(1)
                at = base + v
                vt = tags[at]
                if vt >= 0:
                    cnt[cp, _U(5)] += 1
                    if dirty[at]:
                        cnt[cp, _U(4)] += 1
                        out[_U(2) * w] = _U(vt) << sh
                        out[_U(2) * w + _U(1)] = line_word | core_word | store_bit
                        w += _U(1)
                tags[at] = sln
                stamps[at] = clock
                dirty[at] = 1 if (store and write_back) else 0
                mru[row] = np.int64(v)
                through = store and not write_back
        if through:
            size = meta & _M32
            out[_U(2) * w] = a
            out[_U(2) * w + _U(1)] = (size + _U(size == _U(0))) | core_word | store_bit
            w += _U(1)
    st[0] = clock
    st[1] = np.int64(rng)
    return n, np.int64(w)


@njit(cache=True, nogil=True)
def _run_kernel(kid, inp, start, n, tags, dirty, fpw, order, stamps, mru, cnt, st, sets, ways, shift, policy, write_back,
                write_allocate, copies, coherence, forward, out, tl, tout, trusted):  # fmt: skip
    """Kernel ``kid`` (0 ``_run_small``, 1 ``_run_wide``, 2 ``_run_copies``, 3 ``_run_any``; 4 ``_run_below`` when
    ``trusted``, else ``_run_small``) over records start..n-1."""
    if kid == 4 and trusted:
        pos, w, _ = _run_below(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                               write_allocate, out, tl, tout)  # fmt: skip
        return pos, w
    if kid == 0 or kid == 4:
        pos, w, _ = _run_small(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                               write_allocate, out, tl, tout, np.int64(0), trusted)  # fmt: skip
        return pos, w
    if kid == 1:
        return _run_wide(inp, start, n, tags, dirty, fpw, stamps, mru, cnt, st, sets, ways, shift, policy, write_back,
                         write_allocate, out)  # fmt: skip
    if kid == 2:
        return _run_copies(inp, start, n, tags, dirty, fpw, order, cnt, st, sets, ways, shift, policy, write_back,
                           write_allocate, copies, coherence, forward, out)  # fmt: skip
    return _run_any(inp, start, n, tags, dirty, stamps, mru, cnt, st, sets, ways, shift, policy, write_back, write_allocate,
                    copies, coherence, forward, out)  # fmt: skip


@njit(cache=True, nogil=True)
def _drive(kid, inp, start, n, tags, dirty, fpw, order, stamps, mru, cnt, st, sets, ways, shift, policy, write_back,
           write_allocate, copies, coherence, forward, out, tl, tout, per, scratch, trusted):  # fmt: skip
    """Run kernel ``kid`` over records start..n-1; where it stops at an access spanning lines, feed that access one
    line at a time (the part inside each line, through ``scratch``, as ``split_lines`` cuts it) and go on. Returns
    (next record, records written); it stops early, before a record, when ``out`` (room for ``per`` records per
    access or piece) might not hold what is left, so that the caller can grow it. ``trusted``: see ``_run_small``."""
    cap = out.shape[0] // 2
    pos = start
    w = 0
    while pos < n:
        if w + per * (n - pos) > cap:
            return pos, w
        pos, k = _run_kernel(kid, inp, pos, n, tags, dirty, fpw, order, stamps, mru, cnt, st, sets, ways, shift, policy,
                             write_back, write_allocate, copies, coherence, forward, out[2 * w :], tl, tout, trusted)  # fmt: skip
        w += k
        if pos >= n:
            break
        # Cut the records from pos on into one record per line in ``scratch`` (as ``split_lines`` does: an
        # invalidate record stays whole), as many as it holds, and run them in one call: a call costs ~1 us, so a
        # trace with many line-spanning accesses (48-byte rows) must not pay calls per access.
        room = scratch.shape[0] // 2
        m = 0
        j = pos
        while j < n:
            b = np.int64(inp[2 * j])
            bmeta = inp[2 * j + 1]
            if (bmeta >> np.uint64(32)) & np.uint64(0xFF) == 2:
                if m + 1 > room:
                    break
                scratch[2 * m] = np.uint64(b)
                scratch[2 * m + 1] = bmeta
                m += 1
                j += 1
                continue
            bend = b + max(np.int64(bmeta & _M32), 1)
            if m + ((bend - 1) >> shift) - (b >> shift) + 1 > room:
                break
            while b < bend:
                size = min(((b >> shift) + 1) << shift, bend) - b
                scratch[2 * m] = np.uint64(b)
                scratch[2 * m + 1] = (bmeta & ~_M32) | np.uint64(size)
                m += 1
                b += size
            j += 1
        if j > pos:
            if w + per * (m + n - j) > cap:
                return pos, w
            _, k = _run_kernel(kid, scratch, np.int64(0), np.int64(m), tags, dirty, fpw, order, stamps, mru, cnt, st, sets, ways,
                               shift, policy, write_back, write_allocate, copies, coherence, forward, out[2 * w :], tl, tout,
                               trusted and not trusted)  # fmt: skip
            w += k
            pos = j
            continue
        # One access with more lines than scratch holds: a line at a time.
        a = np.int64(inp[2 * pos])
        meta = inp[2 * pos + 1]
        end = a + max(np.int64(meta & _M32), 1)
        if w + per * (((end - 1) >> shift) - (a >> shift) + 1 + n - pos - 1) > cap:
            return pos, w
        while a < end:
            size = min(((a >> shift) + 1) << shift, end) - a
            scratch[0] = np.uint64(a)
            scratch[1] = (meta & ~_M32) | np.uint64(size)
            _, k = _run_kernel(kid, scratch, np.int64(0), np.int64(1), tags, dirty, fpw, order, stamps, mru, cnt, st, sets, ways, shift,
                               policy, write_back, write_allocate, copies, coherence, forward, out[2 * w :], tl, tout,
                               trusted and not trusted)  # fmt: skip
            w += k
            a += size
        pos += 1
    return pos, w


class Cache:
    """One set-associative cache level (or one private copy of it per core).

    ``sets`` x ``ways`` lines of ``line_bytes`` bytes (``line_bytes`` a power of two; ``sets`` any positive
    integer). ``policy`` is ``"lru"``, ``"fifo"`` or ``"random"`` (seeded by ``seed``). Write-back and
    write-allocate by default. ``copies``, ``coherence`` and ``forward_invalidations`` are set by
    ``Hierarchy`` for private levels of a multi-core machine (see the module docstring); a plain cache keeps
    their defaults.

    Protocol: ``feed(chunk)`` takes a chunk of ``gemmsim.trace.ACCESS`` records and returns the records this
    level sends to the next one, in order; ``counters()``; ``reset()``. The hot loop is one compiled
    function per chunk; no Python runs per access.
    """

    def __init__(
        self,
        name: str,
        sets: int,
        ways: int,
        line_bytes: int,
        policy: Literal["lru", "fifo", "random"] = "lru",
        write_back: bool = True,
        write_allocate: bool = True,
        seed: int = 0,
        *,
        copies: int = 1,
        coherence: Literal["none", "source", "receiver"] = "none",
        forward_invalidations: bool = False,
    ):
        problems = []
        for label, v in (("sets", sets), ("ways", ways), ("line_bytes", line_bytes), ("copies", copies)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                problems.append(f"{label} must be a positive integer (got {v!r})")
        if not problems and line_bytes & (line_bytes - 1):
            problems.append(f"line_bytes {line_bytes} is not a power of two")
        if policy not in POLICIES:
            problems.append(f"policy {policy!r} is not one of {', '.join(POLICIES)}")
        if coherence not in _COHERENCE_CODE:
            problems.append(f"coherence {coherence!r} is not one of {', '.join(_COHERENCE_CODE)}")
        if not problems and copies > 256:
            problems.append(f"copies {copies} exceeds the 256 cores the trace's core field can name")
        if problems:
            raise CacheConfigError(f"cache {name!r}: invalid configuration", problems=problems)
        self.name = str(name)
        self.sets = int(sets)
        self.ways = int(ways)
        self.line_bytes = int(line_bytes)
        self.policy = policy
        self.write_back = bool(write_back)
        self.write_allocate = bool(write_allocate)
        self.seed = int(seed)
        self.copies = int(copies)
        self.coherence = coherence
        self.forward_invalidations = bool(forward_invalidations)
        self._shift = self.line_bytes.bit_length() - 1
        # Up to 16 ways (every real L1 and L2) the packed kernels run: _run_small for one copy without coherence,
        # _run_copies for per-core copies; more ways take _run_wide (one copy, up to 32 ways) or the general _run_any.
        self._packed = self.ways <= SMALL_WAYS
        self._small = self._packed and self.copies == 1 and coherence == "none"
        # 17 to 32 ways, one copy without coherence: _run_wide (whole-set compare, stamps for the order).
        self._wide = not self._packed and self.ways <= WIDE_WAYS and self.copies == 1 and coherence == "none"
        n = self.copies * self.sets * self.ways
        from gemmsim.guards import check_caches  # refuse a state that cannot fit before numpy tries (issue 16)

        check_caches([(self.sets, self.ways)], f"cache {self.name!r} of {self.sets} sets x {self.ways} ways", self.copies)
        # 32 tags of padding: the one-copy kernels compare 8, 16 or 32 tags from a set's first, past the last set's
        # end when it has fewer ways (lanes masked off).
        self._tags_buf = np.full(n + 32, -1, dtype=np.int64)
        self._tags = self._tags_buf[:n]
        self._dirty = np.empty(n, dtype=np.uint8)
        if self._packed:
            nw = (self.ways + 7) // 8
            self._fpw = np.empty(self.copies * self.sets * nw, dtype=np.uint64)
            self._order = np.empty(self.copies * self.sets, dtype=np.uint64)
            # Fingerprint bytes of ways that do not exist hold 1 (never a fingerprint); rank nibbles beyond the
            # last way hold 15 (never a way of a cache with fewer than 16 ways).
            fp0 = np.zeros(nw, dtype=np.uint64)
            for k in range(self.ways, 8 * nw):
                fp0[k >> 3] |= np.uint64(1) << np.uint64(8 * (k & 7))
            self._fp0 = fp0
            self._order0 = np.uint64(sum((r if r < self.ways else 15) << (4 * r) for r in range(16)))
        else:
            self._stamps = np.empty(n, dtype=np.int64)
            self._mru = np.empty(self.copies * self.sets, dtype=np.int64)
        if self._wide:
            nw = (self.ways + 7) // 8
            self._fpw = np.empty(self.sets * nw, dtype=np.uint64)
            fp0 = np.zeros(nw, dtype=np.uint64)
            for k in range(self.ways, 8 * nw):
                fp0[k >> 3] |= np.uint64(1) << np.uint64(8 * (k & 7))
            self._fp0 = fp0
        self._cnt = np.empty((self.copies, _NCOUNTERS), dtype=np.int64)
        self._st = np.empty(2, dtype=np.int64)
        self._out = np.empty(0, dtype=ACCESS)
        self._scratch = np.empty(2 * 4096, dtype=np.uint64)  # _drive's line pieces
        self.reset()

    @classmethod
    def from_level(cls, level, *, copies: int = 1, coherence: str = "none", forward_invalidations: bool = False) -> "Cache":
        """A cache built from a machine file's ``gemmsim.machine.CacheLevel`` (its sets, ways, line and policies)."""
        return cls(
            level.name,
            level.sets,
            level.ways,
            level.line_bytes,
            policy=level.replacement,
            write_back=level.write_back,
            write_allocate=level.write_allocate,
            copies=copies,
            coherence=coherence,
            forward_invalidations=forward_invalidations,
        )

    def replicated(self, copies: int, coherence: str = "none", forward_invalidations: bool = False) -> "Cache":
        """A fresh cache with this one's geometry and policies, kept as ``copies`` per-core copies."""
        return Cache(
            self.name,
            self.sets,
            self.ways,
            self.line_bytes,
            self.policy,
            self.write_back,
            self.write_allocate,
            self.seed,
            copies=copies,
            coherence=coherence,
            forward_invalidations=forward_invalidations,
        )

    @property
    def size_bytes(self) -> int:
        """Capacity of one copy in bytes: sets x ways x line_bytes."""
        return self.sets * self.ways * self.line_bytes

    def reset(self) -> None:
        """Empty the cache (every line invalid), zero the counters, restart the random generator."""
        self._tags.fill(-1)
        self._dirty.fill(0)
        if self._packed:
            self._fpw.reshape(self.copies * self.sets, -1)[:] = self._fp0
            self._order.fill(self._order0)
        else:
            self._stamps.fill(0)
            self._mru.fill(0)
        if self._wide:
            self._fpw.reshape(self.sets, -1)[:] = self._fp0
        self._cnt.fill(0)
        self._st[0] = 0
        self._st[1] = np.uint64(_seed_state(self.seed)).view(np.int64)

    def _feed(self, chunk: np.ndarray, trusted: bool = False) -> np.ndarray:
        """Like ``feed`` but returns a view of an internal buffer, valid until the next call (no copy).

        ``trusted``: the caller knows no record spans a line of this level and none is an invalidate record
        (``Hierarchy`` says so for what one level sends a level with lines no shorter, single core); the kernel
        then skips those tests (``_run_small``)."""
        if not isinstance(chunk, np.ndarray) or chunk.dtype != ACCESS or chunk.ndim != 1:
            raise TypeError(f"cache {self.name!r}: feed() needs a 1-d numpy array of gemmsim.trace.ACCESS records")
        n = chunk.shape[0]
        if self.copies > 1 and n and int(chunk["core"].max()) >= self.copies:
            bad = int(np.argmax(chunk["core"] >= self.copies))
            raise CacheConfigError(
                f"cache {self.name!r}: access {bad} comes from core {int(chunk['core'][bad])}, "
                f"but the level has only {self.copies} per-core copies"
            )
        # Records this level may send per access: the line load and the victim; with coherence also the other
        # copies' write-backs and an invalidate record.
        per = 2 if (self._small or self._wide) else 2 + self.copies
        if self._out.shape[0] < per * n + 64:
            self._out = np.empty(per * n + 64, dtype=ACCESS)
        words = as_words(chunk)
        pos, w = 0, 0
        while True:
            # The kernels stop at an access spanning lines; _drive cuts it into one access per line touched and goes
            # on. It returns early only when the buffer may be too small (many spanning accesses): grow it.
            pos, k = self._run(words, pos, n, self._out.view(np.uint64)[2 * w :], per, trusted)
            w += k
            if pos >= n:
                return self._out[:w]
            bigger = np.empty(2 * self._out.shape[0] + per * (n - pos) + 64, dtype=ACCESS)
            bigger[:w] = self._out[:w]
            self._out = bigger

    def _run(self, words: np.ndarray, start: int, n: int, out: np.ndarray, per: int, trusted: bool = False) -> tuple[int, int]:
        """Run the kernel that fits this level over records start..n-1 (``_drive``); (next record, records written)."""
        kid = (4 if trusted else 0) if self._small else 1 if self._wide else 2 if self._packed else 3
        none64 = _NONE_I64
        fpw = self._fpw if (self._packed or self._wide) else _NONE_U64
        order = self._order if self._packed else _NONE_U64
        stamps = self._stamps if not self._packed else none64
        mru = self._mru if not self._packed else none64
        return _drive(
            kid, words, start, n, self._tags, self._dirty, fpw, order, stamps, mru, self._cnt, self._st, self.sets,
            self.ways, self._shift, _POLICY_CODE[self.policy], self.write_back, self.write_allocate, self.copies,
            _COHERENCE_CODE[self.coherence], self.forward_invalidations, out, NO_TLB, _NO_TLB_OUT, per, self._scratch,
            bool(trusted),
        )  # fmt: skip

    def feed(self, chunk: np.ndarray) -> np.ndarray:
        """Simulate a chunk of ACCESS records; return the records sent to the next level (a new array).

        For each line an access touches, in order: on a miss that allocates, a load of the whole line, then the
        victim's write-back (a store of its line) if it was dirty; with write-through, the store itself; with
        no-write-allocate, a store miss itself. Records keep the ``core`` of the access that caused them.
        """
        return self._feed(chunk).copy()

    def _sum(self) -> np.ndarray:
        return self._cnt.sum(axis=0)

    def _dirty_per_copy(self) -> np.ndarray:
        return self._dirty.reshape(self.copies, -1).sum(axis=1, dtype=np.int64)

    @staticmethod
    def _as_dict(c: np.ndarray, dirty: int, coherent: bool) -> dict:
        out = {
            "loads": int(c[_LOAD_HITS] + c[_LOAD_MISSES]),
            "stores": int(c[_STORE_HITS] + c[_STORE_MISSES]),
            "load_hits": int(c[_LOAD_HITS]),
            "load_misses": int(c[_LOAD_MISSES]),
            "store_hits": int(c[_STORE_HITS]),
            "store_misses": int(c[_STORE_MISSES]),
            "writebacks": int(c[_WRITEBACKS]),
            "evictions": int(c[_EVICTIONS]),
            "dirty_at_end": int(dirty),
        }
        if coherent:
            out["invalidations"] = int(c[_INVALIDATIONS])
        return out

    def counters(self) -> dict:
        """Counts since the last reset (summed over per-core copies), one per line touched.

        loads, stores: line accesses; load_hits/load_misses, store_hits/store_misses; writebacks: dirty lines
        written to the next level; evictions: valid lines replaced; dirty_at_end: dirty lines still cached.
        Coherent copies add ``invalidations`` (copies dropped because another core wrote the line).
        """
        return self._as_dict(self._sum(), int(self._dirty_per_copy().sum()), self.coherence != "none")

    def core_counters(self) -> list[dict]:
        """``counters()`` of each per-core copy, core 0 first."""
        dirty = self._dirty_per_copy()
        return [self._as_dict(self._cnt[k], int(dirty[k]), self.coherence != "none") for k in range(self.copies)]

    def lines(self, copy: int = 0) -> np.ndarray:
        """Sorted byte addresses of the lines one copy holds now (for tests and explanations)."""
        t = self._tags.reshape(self.copies, -1)[copy]
        return np.sort(t[t >= 0]) << self._shift

    def __repr__(self) -> str:
        wt = "" if self.write_back else ", write-through"
        nwa = "" if self.write_allocate else ", no-write-allocate"
        cp = f", {self.copies} copies" if self.copies > 1 else ""
        return f"Cache({self.name}: {self.sets} sets x {self.ways} ways x {self.line_bytes} B, {self.policy}{wt}{nwa}{cp})"
