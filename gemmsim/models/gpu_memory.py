"""The GPU memory system: blocks on SMs, per-SM L1s, a shared sectored (partitioned) L2, DRAM.

What it models, step by step:

1. **Placement.** ``blocks_per_sm`` (from occupancy) slots on each of the machine's SMs; slot s is on SM
   ``s % sms``, so the first blocks spread over all SMs as the hardware's block scheduler does. Blocks are
   taken in launch (raster) order, each by the slot that frees first (ties: lower slot), and start in the
   round after the previous block of that slot issued its last instruction (the waves). Slot s starts its
   first block ``stagger * s / slots`` of a block's length late (``start_stagger``): most kernels' blocks drift
   apart, so after the first waves they are spread over their k-loop (1); the naive kernel's blocks stay in
   lockstep in row and column order (0), as the H200's block-start traces show -- except that in column order
   the block columns drift apart at a measured rate, against a pull-back where a wave holds less than a whole
   number of them (``column_drift_offsets``, ``simulate_memory_drifting``).
2. **Interleaving.** Round-robin by warp instruction across resident blocks: in each round every resident
   block issues its next warp instruction, in slot order. A block's own instructions come in the order of
   its trace (k-step, instruction, warp; see ``gemmsim.kernels.gpu``). Only global instructions are fed
   here; shared-memory instructions never leave the SM.
3. **Coalescing.** Each warp instruction becomes the sorted set of distinct 32-byte sectors its active
   lanes touch (CUDA Best Practices Guide 10.2.1), then one cache access per 128-byte line with a mask of
   the sectors wanted -- never one access per lane.
4. **L1** (one per SM, sectored, exact LRU, ``machine.l1.sets`` sets and as many 128-byte ways as the L1
   left by the shared-memory carve-out holds): global loads look up L1 and only missing sectors go to L2.
   ``cp.async.cg`` (``bypass_l1``) and stores go straight to L2 (L1 is write-through and does not allocate
   on stores).
5. **L2** (sectored 128 B lines of 32 B sectors, LRU, write-back, write-validate: a store marks its sectors
   valid and dirty without reading DRAM, as Accel-Sim's reverse engineering found, Khairy et al. 2020
   section IV), split in ``l2_partitions(machine)`` partitions (2 on GA100/GH100). Each SM sits next to one
   partition; each line has a home partition (address hash). A read looks in the near partition, then in the
   home one (a far hit costs no DRAM traffic); only home misses read 32 B sectors from DRAM, and the near
   partition keeps a clean copy -- so data every SM reads is held twice. Evicting a line writes its dirty
   sectors back. Sets are indexed by a multiplicative hash of the line number (real L2s hash the address so
   strided streams do not pile into a few sets). Dirty sectors left at the end are written back too and
   counted in ``dram_bytes_written`` (``l2_dirty_at_end_bytes`` says how many). ``l2_hit_rate`` counts
   hits over all sector lookups, near and far, like ncu's ``lts__t_sector_hit_rate``.

Speed: a block's requests are built once (trace, then coalescing) for an interior block and *shifted* for
every other interior block: a block of tile (m, n) touches exactly the sectors of tile (0, 0) moved by
m*BM rows of A and C and n*BN columns of B and C. That holds whenever those shifts are whole sectors; edge
blocks (partial tiles) get their own traces; otherwise every block gets its own. The schedule does not
depend on cache state, so it is computed first (``_schedule``); then each SM's L1 runs on its own over that
SM's loads (its state stays in the host's caches), and finally the L2 sees every SM's L2-bound requests in
global issue order (``_l2_rounds``); all in numba. An SM on which no load hits L1 (the usual case for the
tiled and tensor-core GEMMs) is run without the LRU: a check that stops at the first access that would hit
(then that SM runs the exact LRU) is much cheaper (``_l1_rounds``). ``max_blocks`` simulates only the first blocks in launch
order (rounded up to whole waves, at least ``MIN_SAMPLE_WAVES``), and a launch that would make more than ``budget``
cache accesses is sampled the same way to whole waves; the result then says ``sampled: True``. Sampling
extrapolates in steady state: a second, shorter prefix (half as many blocks in whole waves, and at least the launch
order's first reuse period -- a row of tiles, a column, a GROUP_M group -- when the sample reaches past it) is
simulated too, and the blocks not simulated are charged at the rate between the two prefixes, so the cold misses of
the first waves are counted once. The shorter prefix shares the longer one's rounds up to the first round in which
a later block issues (``_run``).
"""


from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numba import njit

from gemmsim.errors import KernelError
from gemmsim.kernels.gpu import OP_A, OP_B, OP_C, SPACE_GLOBAL, GPUKernelSpec, WarpTrace
from gemmsim.trace import Layout

#: Largest number of per-block templates kept when blocks cannot be shifted copies of one another.
MAX_EXPLICIT_REQUESTS = 60_000_000

#: An explicit ``max_blocks`` sample is rounded up to whole waves of resident blocks (SMs x blocks per SM), at least
#: this many, as the budget sampler's: a sample of part of a wave leaves out blocks that share the L2 with it, and the
#: steady-state rate is taken from the second, warm wave. The 64x64 tensor-core tiles of validation/h200/round3 (5-7
#: blocks per SM, 660-924 a wave) sampled at 264 blocks came out 4-21 % faster than the same launch simulated whole,
#: at 0.06-0.73x its DRAM bytes; one whole wave 0-4.5 % faster at 0.66-1.0x; two waves within 0.3 % at 0.85-1.0x
#: (validation/h200/round29/sampling29.csv). 0 keeps exactly ``max_blocks`` blocks, the rule under which
#: validation/h200/round28's predictions were made.
MIN_SAMPLE_WAVES = 2

#: Start of slot s's first block, as a fraction ``stagger * s / slots`` of a block's instruction count. Real
#: blocks do not run in lockstep: dispatch is staggered and blocks drift, so after the first waves the blocks
#: on the GPU are spread over their k-loop. 0 = lockstep waves; 1 = starts spread over one block's lifetime.
DEFAULT_STAGGER = 1.0


def slot_phases(n_sm: int, blocks_per_sm: int, stagger: float = DEFAULT_STAGGER, stagger_group: int = 1) -> np.ndarray:
    """How late each slot's first block starts, as a fraction of a block: ``stagger * lead / slots``, ``lead`` the
    first slot of the slot's group of ``stagger_group``. Slot s is on SM ``s % n_sm``, so with ``stagger = 1`` the
    slots of one SM start a block over ``blocks_per_sm`` apart -- as the blocks of one H200 SM that nothing ties
    together do (validation/h200/round12: 1.00-1.06 of that gap at 4-8 blocks per SM)."""
    n_slots = n_sm * blocks_per_sm
    lead = np.arange(n_slots) // stagger_group * stagger_group
    return float(stagger) * lead / n_slots


def start_stagger(spec: GPUKernelSpec) -> float:
    """The ``stagger`` of ``simulate_memory`` for a kernel: 0 (lockstep) where ``spec.lockstep``, else
    ``DEFAULT_STAGGER`` (resident blocks spread over a block's length).

    Taken from measurements, not simulated (H200 block-start traces, validation/h200/round3/order_wave_spread.csv
    and round5/order_wave_spread5.csv): the naive 16x16 kernel, which reads A and B from global memory every k
    step, comes out of its first wave up to 0.31 of a block apart and is pulled back into step (0.02-0.14) in row
    order (N = 3072-6144) and column order (3072-4096) -- dispatch cannot do that -- but drifts to 0.85-0.95 in
    grouped order and, after about 15 waves, in column order at 6144; the shared-memory tiled kernel drifts to
    0.6-0.8 in every order. With lockstep the naive kernel's DRAM bytes at N = 4096 in row and column order come
    out at 1.00x the measurement (4.0x with the stagger of 1). What makes a launch hold or lose lockstep is not
    modelled (NOTES.md); replayed with the measured block starts, the model gives the bytes the H200 read where this
    rule misses (validation/h200/round5/README.md, section 4), and the column order loses lockstep at a wave that
    changes from launch to launch (N = 4224 and 5632-8448, validation/h200/round7): there partners in neighbouring
    block columns do not catch up with each other, and each block column drifts as one group (``stagger_group``) --
    at the rate ``column_drift_offsets`` gives (rounds 14-19).
    """
    return 0.0 if getattr(spec, "lockstep", False) else DEFAULT_STAGGER


#: How the offsets of neighbouring block columns spread about their wave's mean: as an exponential distribution
#: (H200 block-start traces of rounds 15-18 where the mean offset is 0.05-0.13 of a block: the 10/25/50/75/90 %
#: quantiles of the partner offsets over their wave's mean are 0.06/0.19/0.73/1.47/2.31, an exponential's
#: 0.11/0.29/0.69/1.39/2.30; validation/h200/round19/README.md). The launch is simulated at this many quantiles.
DRIFT_QUANTILES = 8

#: Offsets (block times) at which a drifting launch is simulated; each wave's quantile offsets are shared out
#: between the two nearest (linear), so the counters are the bytes-against-offset curve read off at them. Finer
#: where the memory model's curve climbs (0.05-0.15 of a block at N = 5600-10752, rounds 15-18).
DRIFT_GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.3)


#: Waves after which the block columns meet the same slot groups again (C = p / q block columns a wave, q in lowest
#: terms) at which they stay tied: the H200 holds them in step at C = 3/2 (N = 11264) and 4/3 (12672), where their
#: neighbours drift (rounds 20-22), and at 8/3 (6336, round 23, predicted before measuring; its neighbours drift in
#: episodes); 11/3 (4608) and 11/2 (3072) hold too. Not at q = 1 (a whole number: each column keeps its slot group
#: and drifts), 4 (11/4, 6144: episodes), 5 or 6 (8/5, 11/6: drift).
TIED_PERIODS = (2, 3)


def column_drift_offsets(machine, spec: GPUKernelSpec, layout: Layout, blocks_per_sm: int) -> np.ndarray | None:
    """How far apart neighbouring block columns of a lockstep kernel start, wave by wave (the mean over the wave's
    partners, block times), or None where they cannot drift.

    Blocks that read the same new line every k step hold together (the trailing one finds the line in L2), so in
    column order each block column runs as one group (validation/h200/round7, 7c-7d), and the groups are pushed apart
    at the rate the machine's ``column_drift`` gives -- ``r = per_wave (T / reference_tiles) ** exponent`` a wave, T
    tiles per block column, measured from the H200's block-start traces (round 14). A wave's slots serve g =
    ceil(C) groups, C the block columns a wave. Where C is whole, each column keeps its slot group and the offset
    grows at r until the columns are evenly spaced (1 / g). Where a wave holds d = g - C of a column less, the
    columns move d of a column against the slot groups each wave, and the blocks that change group take the phase of
    the group they join: the offset is pulled back by d / g of itself a wave,

        o(w + 1) = min(1 / g, o(w) + r - (d / g) o(w)),

    and settles at g r / d. Formed on the traced offsets of rounds 15-17 (a free factor on d / g fitted there comes
    out 0.97), tested on six new sizes (round 19: five within 1.5x of ncu's bytes; 4288 drifted in episodes past
    g r / d). A little more than a whole number of columns a wave (d near 1) keeps the offset within a few
    hundredths of a block, where the memory model reads the lockstep's bytes or a little more.

    Just short of a whole number (0 < d < ``runaway_end``) the traced offsets do not settle there: they run away, at
    ``runaway_rate`` of themselves a wave, and level off, in episodes, about a plateau that falls with d,

        u(w + 1) = min(P (1 - d / runaway_end) / g, u(w) + r + runaway_rate u(w)),   P = ``runaway_plateau``,

    and the offset is the larger of o and u (where the rate alone is large, near two columns a wave, the pull-back's
    balance lies higher). Both taken from block-start traces of rounds 15-24, not from bytes
    (validation/h200/round27/runaway27.py); round 26 held out. Each value is the mean over its wave (of the two
    ends). Row order (every block of a wave shares B's line),
    machines without ``column_drift``, a launch of one wave, a wave of less than two columns and a wave of p / q
    columns with q in ``TIED_PERIODS`` (the columns come back to the same slot groups every two or three waves and
    stay tied, rounds 20-23) give None. The rate
    is the naive kernel's at its own load (round 14: two to five times faster with 4-8 extra FMAs per k step), so it
    is applied only to lockstep kernels.
    """
    drift = getattr(machine, "column_drift", None)
    if drift is None or not getattr(spec, "lockstep", False) or getattr(spec, "raster", "row") != "column":
        return None
    tiles_m = -(-layout.M // spec.BM)
    n_total = tiles_m * -(-layout.N // spec.BN)
    slots = machine.sms * blocks_per_sm
    groups = -(-slots // tiles_m)
    if groups < 2 or n_total <= slots or Fraction(slots, tiles_m).denominator in TIED_PERIODS:
        return None
    rate = drift.per_wave * (tiles_m / drift.reference_tiles) ** drift.exponent
    short = groups - slots / tiles_m  # d
    pull = short / groups
    plateau = 0.0
    if drift.runaway_rate is not None and 0 < short < drift.runaway_end:
        plateau = drift.runaway_plateau * (1 - short / drift.runaway_end) / groups
    waves = -(-n_total // slots)
    out = np.empty(waves)
    o = u = 0.0
    for w in range(waves):
        nxt = min(1 / groups, o + rate - pull * o)
        nu = min(plateau, u + rate + drift.runaway_rate * u) if plateau > 0 else 0.0
        out[w] = 0.5 * max(o + nxt, u + nu)
        o, u = nxt, nu
    return out


def column_drift_weights(offsets: np.ndarray, cap: float, quantiles: int = DRIFT_QUANTILES) -> dict[float, float]:
    """{offset of ``DRIFT_GRID`` (and ``cap``, evenly spaced columns): weight}: every wave's mean offset spread over
    the midpoint quantiles of an exponential distribution of that mean (``DRIFT_QUANTILES``; at most ``cap``), each
    shared linearly between the two nearest grid offsets. The weights sum to 1, and their mean offset is the
    spread offsets' mean."""
    e = -np.log1p(-(np.arange(quantiles) + 0.5) / quantiles)
    x = np.minimum(np.asarray(offsets, float)[:, None] * (e / e.mean())[None, :], cap).ravel()
    grid = np.array(sorted({g for g in DRIFT_GRID if g < cap} | {float(cap)}))
    hi = np.clip(np.searchsorted(grid, x, side="right"), 1, len(grid) - 1)
    frac = (x - grid[hi - 1]) / (grid[hi] - grid[hi - 1])
    w = np.bincount(hi - 1, 1 - frac, len(grid)) + np.bincount(hi, frac, len(grid))
    w /= len(x)
    return {float(g): float(v) for g, v in zip(grid, w) if v > 1e-12}


def weighted_counters(runs: dict, weights: dict) -> dict:
    """The counters of a launch whose blocks sit differently over its waves: the weighted mean of the runs (one per
    key of ``weights``, each a ``MemoryResult.counters``), launch-shape counters (blocks, waves, ...) from the first."""
    first = next(iter(runs.values()))
    c = dict(first)
    for k, v in c.items():
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            c[k] = float(sum(w * runs[d][k] for d, w in weights.items()))
    for k in ("blocks", "blocks_simulated", "blocks_prefix_for_rate", "blocks_per_sm", "waves", "l1_bytes", "l2_partitions"):
        c[k] = first[k]
    c["sampled"] = any(r["sampled"] for r in runs.values())
    c["dram_bytes"] = c["dram_bytes_read"] + c["dram_bytes_written"]
    return c


def simulate_memory_drifting(machine, spec: GPUKernelSpec, layout: Layout, blocks_per_sm: int,
                             l1_bytes: int | None = None, max_blocks: int | None = None,
                             quantiles: int = DRIFT_QUANTILES) -> MemoryResult:
    """``simulate_memory`` for a launch whose block columns drift apart (``column_drift_offsets``): simulated with the
    block columns at each offset of ``column_drift_weights`` (``stagger_group`` = tiles per column), the counters
    the weighted mean of those runs; a launch whose columns cannot drift is one ``simulate_memory`` run. Adds
    ``column_drift_offset_mean`` and ``column_drift_offset_end`` (the waves' mean offsets, block times) and
    ``column_drift_runs``."""
    off = column_drift_offsets(machine, spec, layout, blocks_per_sm)
    if off is None:
        return simulate_memory(machine, spec, layout, blocks_per_sm, l1_bytes, max_blocks=max_blocks)
    tiles_m = -(-layout.M // spec.BM)
    slots = machine.sms * blocks_per_sm
    per_wave = slots / tiles_m  # block columns a wave: phases of neighbours ``delta`` apart
    weights = column_drift_weights(off, 1 / -(-slots // tiles_m), quantiles)
    runs = {d: simulate_memory(machine, spec, layout, blocks_per_sm, l1_bytes, max_blocks=max_blocks,
                               stagger=d * per_wave, stagger_group=tiles_m).counters for d in weights}
    c = weighted_counters(runs, weights)
    c["column_drift_offset_mean"] = float(off.mean())
    c["column_drift_offset_end"] = float(off[-1])
    c["column_drift_runs"] = len(runs)
    return MemoryResult(c)


#: Cache accesses (one per line per instruction) a simulation may make before it samples: above this,
#: only the first whole waves of blocks that fit are simulated and the counters scaled (``sampled`` says so).
#: A tiled SGEMM at N=4096 on an H100 makes 135 M and is simulated whole (~20-40 s on one core).
DEFAULT_BUDGET = 160_000_000

# counter slots of the numba loop
_C_L1_HIT, _C_L1_MISS, _C_L2_RD_HIT, _C_L2_RD_MISS, _C_L2_WR, _C_DRAM_WR_EVICT = range(6)
_C_L2_MISS_A = 6  # + operand: read-miss sectors by operand (A, B, C)
_C_ROUNDS = 9
_C_L1_REQ, _C_L2_REQ = 10, 11
_C_L2_LOOKUP, _C_L2_FAR_HIT, _C_L2_SECTORS_RD = 12, 13, 14
_N_COUNTERS = 15



@njit(cache=True, inline='always')
def _popcount8(x):
    """Set bits of the low byte of x (arithmetic: a table is a global array, which costs a reference count per use)."""
    x &= 0xFF
    x = x - ((x >> 1) & 0x55)
    x = (x & 0x33) + ((x >> 2) & 0x33)
    return (x + (x >> 4)) & 0x0F


@njit(cache=True, inline='always')
def _set_of(line, sets):
    h = (line * np.int64(0x5851F42D4C957F2D)) >> 24
    return (h & np.int64(0xFFFFFFFFFF)) % sets


@njit(cache=True)
def _coalesce(addr, width, mask, sector_shift, ptr, out):
    """Sorted distinct sectors (addr >> sector_shift) of the active lanes of each instruction, CSR form.

    ``ptr`` has n+1 entries; ``out`` must hold every sector (n * 32 * sectors-per-lane at most).
    Returns the number of sectors written.
    """
    n = addr.shape[0]
    buf = np.empty(32 * 64, np.int64)
    pos = 0
    for i in range(n):
        ptr[i] = pos
        m = 0
        w = np.int64(width[i])
        mk = np.int64(mask[i])
        for lane in range(32):
            if (mk >> lane) & 1:
                a = np.int64(addr[i, lane])
                s0 = a >> sector_shift
                s1 = (a + w - 1) >> sector_shift
                for s in range(s0, s1 + 1):
                    buf[m] = s
                    m += 1
        if m == 0:
            continue
        srt = np.sort(buf[:m])
        out[pos] = srt[0]
        pos += 1
        for j in range(1, m):
            if srt[j] != srt[j - 1]:
                out[pos] = srt[j]
                pos += 1
    ptr[n] = pos
    return pos


# The per-access helpers below are inlined into the passes (``inline='always'``): a call between compiled functions
# that passes arrays costs a reference-count update per array, which made an L1 miss ~1.7x slower (same counts).
# Even inlined, a helper that takes arrays (or a view of one) still pays some; the L2 access is therefore written
# out in ``_l2_rounds``.

# An L2 set (l2[partition, set]) is a row of int64 entries kept in recency order (most recent first, so LRU is the
# last): entry = line << 16 | dirty_mask << 8 | valid_mask, -1 for an empty way. One row of 16 ways is 128 bytes,
# which keeps the simulator's own working set small (the L2 of an H100 is 25,600 such rows).


@njit(cache=True, inline='always')
def _home_of(line, parts):
    return ((line * np.int64(0x61C8864680B583EB)) >> 33) % parts


# The L1 of one SM is simulated on its own (see ``_run``), so its state stays in the host's caches and an
# exact LRU with O(1) operations pays off even at ~450 ways per set (a Hopper SM with 32 KiB of shared
# memory has 224 KiB of L1 = 1792 lines in 4 sets): per set, a doubly linked recency list over its ways
# and an open-addressing hash table from line to way (linear probing, backward-shift deletion).
#   key[set, way] line (-1 empty), val[set, way] valid-sector mask, prv/nxt[set, way] recency list,
#   meta[set] = (head = most recent, tail = least recent, ways in use), ht[set, H] way of a line or -1.


@njit(cache=True, inline='always')
def _home(line, hmask):
    return ((line * np.int64(0x2545F4914F6CDD1D)) >> 17) & hmask


@njit(cache=True)
def _schedule(blk_tpl, tpl_ninst, n_slots, first_round):
    """Which slot runs each block and from which round: blocks in launch order take the first free slot.

    A slot that finishes its block in round r takes the next block, which issues from round r + 1; slots
    freed in the same round are served in slot order (the order ``_l2_rounds`` visits them). The schedule does
    not depend on cache state (round-robin issue), so the L1 pass and the L2 pass can both follow it.
    """
    nb = blk_tpl.shape[0]
    slot_of = np.empty(nb, np.int64)
    start = np.empty(nb, np.int64)
    free_at = first_round.copy()  # first round a slot can issue a new block's instruction
    for b in range(nb):
        best = 0
        for s in range(1, n_slots):
            if free_at[s] < free_at[best]:
                best = s
        slot_of[b] = best
        start[b] = free_at[best]
        free_at[best] += tpl_ninst[blk_tpl[b]]
    return slot_of, start


@njit(cache=True)
def _l1_rounds(sm, n_sm, bps, slot_blocks_ptr, slot_blocks, start, blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr,
               inst_flags, inst_op, acc_line, acc_mask, r0, r1, nb, cur, key, val, prv, nxt, meta, ht, out, pos,
               cnt, fifo, recent, ring, nc):
    """Run SM ``sm``'s loads of rounds [r0, r1) through its L1 in issue order, blocks ``>= nb`` left out; write each
    line access's L2-bound sector mask to ``out[pos:]`` and return the new position. Only this SM's L1 state is
    touched (it stays in the host's cache); ``cur`` (per slot of the SM: index into its block list) carries on.

    ``fifo`` False: the exact LRU (the structures above ``_home``). True: every access is taken to miss, which is exact as long as no
    access hits, and that is checked at every access. While no access has hit, every access inserted its line, so a
    set of W ways holds the lines of its last W accesses (each missed, so they are distinct), and an access hits iff
    its line is among them. The accesses of set c are numbered by ``nc[c]``; ``recent[c, h]`` holds the number of the
    latest access to any line of hash h, so it is at least that of the line's own last access: where it is more than
    W back, the line is not among the last W and the access misses. Otherwise the last W lines of the set
    (``ring[c]``, filled round robin from ``nc[sets + c]``) are searched; a line found there would hit: the run stops
    and -1 is returned (the SM must then run the LRU). The L1's contents are otherwise never read (write-through:
    nothing is written back), so nothing but the masks and counters is kept.
    """
    l1_sets, l1_ways = key.shape
    if fifo:
        l1_sets, l1_ways = ring.shape
    hmask = recent.shape[1] - 1
    hmask1 = ht.shape[1] - 1
    for r in range(r0, r1):
        for j in range(bps):
            s = j * n_sm + sm
            k = slot_blocks_ptr[s] + cur[j]
            if k >= slot_blocks_ptr[s + 1]:
                continue
            b = slot_blocks[k]
            if b >= nb:
                continue
            t = blk_tpl[b]
            i = r - start[b]
            if i < 0:
                continue
            if i == tpl_ninst[t] - 1:
                cur[j] += 1
            gi = tpl_inst0[t] + i
            if inst_flags[gi] != 0:  # stores and L1-bypassing loads do not touch L1
                continue
            off = blk_off[b, inst_op[gi]]
            for jj in range(inst_ptr[gi], inst_ptr[gi + 1]):
                line = acc_line[jj] + off
                smask = acc_mask[jj]
                if not fifo:
                    # the exact LRU (structures described above ``_home``), written out here: inlined helpers that
                    # take arrays pay reference counts (~1.4x an access, same counts)
                    if l1_ways == 0:
                        cnt[_C_L1_MISS] += _popcount8(smask)
                        out[pos] = smask
                        pos += 1
                        continue
                    c = _set_of(line, l1_sets)
                    p = _home(line, hmask1)
                    while True:
                        w = ht[c, p]
                        if w < 0 or key[c, w] == line:
                            break
                        p = (p + 1) & hmask1
                    if w >= 0:  # held: the sectors not valid yet miss
                        valid = val[c, w]
                        miss = smask & ~valid & 0xFF
                        cnt[_C_L1_HIT] += _popcount8(smask & valid)
                        cnt[_C_L1_MISS] += _popcount8(miss)
                        val[c, w] = valid | smask
                    else:
                        miss = smask
                        cnt[_C_L1_MISS] += _popcount8(smask)
                        if meta[c, 2] < l1_ways:
                            w = meta[c, 2]
                            meta[c, 2] += 1
                        else:
                            w = meta[c, 1]  # least recently used; L1 lines are never dirty (write-through)
                            # its line leaves the hash table (backward-shift deletion)
                            q = _home(key[c, w], hmask1)
                            while ht[c, q] != w:
                                q = (q + 1) & hmask1
                            hi = q
                            hj = q
                            while True:
                                hj = (hj + 1) & hmask1
                                e = ht[c, hj]
                                if e < 0:
                                    break
                                hk = _home(key[c, e], hmask1)
                                if hi <= hj:
                                    stay = hi < hk <= hj
                                else:
                                    stay = hk > hi or hk <= hj
                                if not stay:
                                    ht[c, hi] = e
                                    hi = hj
                            ht[c, hi] = -1
                            p = _home(line, hmask1)
                            while ht[c, p] >= 0:
                                p = (p + 1) & hmask1
                        ht[c, p] = w
                        key[c, w] = line
                        val[c, w] = smask
                    head = meta[c, 0]  # way w to the head of the recency list (it may be new, not linked yet)
                    if head != w:
                        pw = prv[c, w]
                        nw = nxt[c, w]
                        if pw >= 0:
                            nxt[c, pw] = nw
                        if nw >= 0:
                            prv[c, nw] = pw
                        if meta[c, 1] == w:
                            meta[c, 1] = pw
                        prv[c, w] = -1
                        nxt[c, w] = head
                        if head >= 0:
                            prv[c, head] = w
                        meta[c, 0] = w
                        if meta[c, 1] < 0:
                            meta[c, 1] = w
                    out[pos] = miss
                else:
                    c = _set_of(line, l1_sets)
                    n = nc[c]
                    h = ((line * np.int64(-7046029254386353131)) >> 20) & hmask
                    if n - recent[c, h] <= l1_ways:
                        for w in range(l1_ways):
                            if ring[c, w] == line:
                                return -1
                    recent[c, h] = n
                    nc[c] = n + 1
                    rp = nc[l1_sets + c]
                    ring[c, rp] = line
                    nc[l1_sets + c] = rp + 1 if rp + 1 < l1_ways else 0
                    cnt[_C_L1_MISS] += _popcount8(smask)
                    out[pos] = smask
                pos += 1
    return pos


@njit(cache=True)
def _l2_rounds(n_sm, n_slots, slot_blocks_ptr, slot_blocks, start, blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr,
               inst_flags, inst_op, acc_line, acc_mask, l1_out, l1_pos, l2, r0, r1, nb, cur, cnt):
    """Every block in its slot, round-robin by warp instruction, rounds [r0, r1), blocks ``>= nb`` left out: each
    round, every resident block issues its next instruction, in slot order. L1-routed loads take their L2-bound
    masks from the L1 pass (``l1_out[l1_pos[sm]]``); ``cur`` (per slot) and ``l1_pos`` carry on."""
    parts, sets, ways = l2.shape
    pmask = parts - 1 if parts & (parts - 1) == 0 else -1  # home partition by a mask where parts is a power of 2
    # counters in local variables (an update of ``cnt`` is a memory write the compiler must keep: cnt may alias l2)
    n_l1_req = 0
    n_req = 0
    n_wr = 0
    n_lookup = 0
    n_sec_rd = 0
    n_hit = 0
    n_far = 0
    n_miss = 0
    n_evict = 0
    n_miss_a = 0
    n_miss_b = 0
    n_miss_c = 0
    for r in range(r0, r1):
        for s in range(n_slots):
            k = slot_blocks_ptr[s] + cur[s]
            if k >= slot_blocks_ptr[s + 1]:
                continue
            b = slot_blocks[k]
            if b >= nb:
                continue
            t = blk_tpl[b]
            i = r - start[b]
            if i < 0:
                continue
            if i == tpl_ninst[t] - 1:
                cur[s] += 1
            gi = tpl_inst0[t] + i
            fl = inst_flags[gi]
            is_write = (fl & 1) != 0
            op = inst_op[gi]
            off = blk_off[b, op]
            sm = s % n_sm
            near = sm * parts // n_sm
            for j in range(inst_ptr[gi], inst_ptr[gi + 1]):
                line = acc_line[j] + off
                smask = acc_mask[j]
                if fl != 0:
                    m = smask
                else:
                    n_l1_req += 1
                    m = l1_out[l1_pos[sm]]
                    l1_pos[sm] += 1
                    if m == 0:
                        continue
                n_req += 1
                # The L2 request (mask m) of SM sm. The L2 has ``parts`` partitions (l2[p]); SMs are split in
                # contiguous groups, SM sm sitting next to partition sm * parts // n_sm (SM ids are numbered GPC by
                # GPC), and each line has a home partition (a hash of its address). A read looks in the near
                # partition first; sectors it misses are looked up in the home partition (a far hit costs no DRAM
                # traffic) and only home misses read DRAM; the near partition keeps a clean copy. Stores go to the
                # home partition, write-validate (no DRAM read).
                home = _home_of(line, parts) if pmask < 0 else ((line * np.int64(0x61C8864680B583EB)) >> 33) & pmask
                if is_write:
                    n_wr += _popcount8(m)
                    p = home
                else:
                    k = _popcount8(m)
                    n_lookup += k
                    n_sec_rd += k
                    p = near
                rest = m
                st = _set_of(line, sets)  # the same set in every partition
                while True:
                    # One partition (l2[p], sets x ways; a set's row is kept most recent first): the sectors of
                    # ``rest`` that were valid are ``found``; the line is allocated if absent (the dirty sectors of the
                    # LRU victim are written back), ``rest`` is marked valid (and dirty for a store). Written out here
                    # rather than in a helper: a compiled function that takes arrays, even inlined, pays reference
                    # counts per call, and views (l2[p], a row) do too -- together ~1.5x a request (same counts).
                    idx = 0
                    for w in range(ways):  # the way holding the line: a branch-free scan (empty ways hold -1)
                        idx = max(idx, (w + 1) * ((l2[p, st, w] >> 16) == line))
                    w = idx - 1
                    if w >= 0:
                        e = l2[p, st, w]
                        valid = e & 0xFF
                        dirty = (e >> 8) & 0xFF
                        if is_write:
                            dirty |= rest
                        entry = (line << 16) | (dirty << 8) | (valid | rest)
                        found = rest & valid
                    else:
                        w = ways - 1
                        victim = l2[p, st, w]
                        if victim >= 0:
                            n_evict += _popcount8((victim >> 8) & 0xFF)
                        entry = (line << 16) | ((rest if is_write else 0) << 8) | rest
                        found = 0
                    for k in range(w, 0, -1):  # way w moves to the front with its new entry
                        l2[p, st, k] = l2[p, st, k - 1]
                    l2[p, st, 0] = entry
                    if is_write:
                        break
                    nf = _popcount8(found)
                    n_hit += nf
                    rest &= ~found & 0xFF
                    if p != near:  # the far lookup
                        n_far += nf
                        break
                    if rest == 0 or near == home:
                        break
                    n_lookup += _popcount8(rest)
                    p = home
                if not is_write:
                    nm = _popcount8(rest)
                    n_miss += nm
                    if op == OP_A:
                        n_miss_a += nm
                    elif op == OP_B:
                        n_miss_b += nm
                    else:
                        n_miss_c += nm
    cnt[_C_L1_REQ] += n_l1_req
    cnt[_C_L2_REQ] += n_req
    cnt[_C_L2_WR] += n_wr
    cnt[_C_L2_LOOKUP] += n_lookup
    cnt[_C_L2_SECTORS_RD] += n_sec_rd
    cnt[_C_L2_RD_HIT] += n_hit
    cnt[_C_L2_FAR_HIT] += n_far
    cnt[_C_L2_RD_MISS] += n_miss
    cnt[_C_DRAM_WR_EVICT] += n_evict
    cnt[_C_L2_MISS_A + OP_A] += n_miss_a
    cnt[_C_L2_MISS_A + OP_B] += n_miss_b
    cnt[_C_L2_MISS_A + OP_C] += n_miss_c


@njit(cache=True)
def _line_accesses(inst_ptr, req_sec, sector_shift_line):
    """The cache accesses of each instruction: its sorted sectors grouped by line, one access per line with the mask
    of its sectors. Returns (ptr, line, mask), ptr indexing the accesses of each instruction (CSR). Blocks shifted by
    whole lines make the same accesses shifted, so the passes take these once per template."""
    n = inst_ptr.shape[0] - 1
    ptr = np.empty(n + 1, np.int64)
    line = np.empty(req_sec.shape[0], np.int64)
    mask = np.empty(req_sec.shape[0], np.int64)
    spl_mask = (np.int64(1) << sector_shift_line) - 1
    k = 0
    for i in range(n):
        ptr[i] = k
        j = inst_ptr[i]
        r1 = inst_ptr[i + 1]
        while j < r1:
            ln = req_sec[j] >> sector_shift_line
            m = np.int64(1) << (req_sec[j] & spl_mask)
            j += 1
            while j < r1 and (req_sec[j] >> sector_shift_line) == ln:
                m |= np.int64(1) << (req_sec[j] & spl_mask)
                j += 1
            line[k] = ln
            mask[k] = m
            k += 1
    ptr[n] = k
    return ptr, line[:k].copy(), mask[:k].copy()


def _l1_state(l1_sets, l1_ways):
    """A cold L1 of one SM: (key, val, prv, nxt, meta, ht), the structures described above ``_home``."""
    meta = np.zeros((l1_sets, 3), np.int64)
    meta[:, :2] = -1
    hsize = 2
    while hsize < 2 * l1_ways:
        hsize *= 2
    return (np.full((l1_sets, l1_ways), -1, np.int64), np.zeros((l1_sets, l1_ways), np.int64),
            np.full((l1_sets, l1_ways), -1, np.int64), np.full((l1_sets, l1_ways), -1, np.int64), meta,
            np.full((l1_sets, hsize), -1, np.int64))


def _run(blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr, inst_flags, inst_op, req_sec, n_slots, n_sm, l1_sets,
         l1_ways, l2_shape, sector_shift_line, l1_lines_per_tpl, first_round, n1=0):
    """Counters and end state of the launch's blocks from cold caches: the schedule, then each SM's L1 (one SM at
    a time), then the shared L2 in global issue order. Returns ``[(cnt, l2)]`` for all blocks and, where
    ``0 < n1 < len(blk_tpl)``, a second pair for the first ``n1`` blocks alone.

    The second run shares the first one's work up to the first round in which a block >= n1 issues (``start[n1]``:
    blocks take slots in launch order, so starts rise with it): the first n1 blocks are scheduled alike in both runs
    (each takes the first free slot given the blocks before it), so up to that round both runs make the same accesses
    in the same order. The caches are copied there and each run goes on by itself (the short one leaving the later
    blocks out). The L1 no-hit check runs the same way, on a copy of its own state."""
    nb = blk_tpl.shape[0]
    two = 0 < n1 < nb
    bps = n_slots // n_sm
    # per instruction its line accesses (line relative to the template, sector mask), and block offsets in lines
    inst_ptr, acc_line, acc_mask = _line_accesses(inst_ptr, req_sec, sector_shift_line)
    if (blk_off & ((1 << sector_shift_line) - 1)).any():
        raise AssertionError("a block is not a whole-line shift of its template")
    blk_off = blk_off >> sector_shift_line
    slot_of, start = _schedule(blk_tpl, tpl_ninst, n_slots, first_round)
    order = np.argsort(slot_of, kind="stable")  # blocks grouped by slot, in launch order within a slot
    slot_blocks = order.astype(np.int64)
    slot_blocks_ptr = np.concatenate([[0], np.cumsum(np.bincount(slot_of, minlength=n_slots))]).astype(np.int64)
    end = start + tpl_ninst[blk_tpl]
    last = int(end.max())
    last1 = int(end[:n1].max()) if two else 0
    split = int(start[n1:].min()) if two else last  # first round in which a block >= n1 issues

    def bases(k):
        acc = np.bincount(slot_of[:k] % n_sm, weights=l1_lines_per_tpl[blk_tpl[:k]], minlength=n_sm).astype(np.int64)
        base = np.concatenate([[0], np.cumsum(acc)]).astype(np.int64)
        return base, np.zeros(max(int(base[-1]), 1), np.uint8)

    base, out = bases(nb)
    base1, out1 = bases(n1) if two else (base, out)
    cnt = np.zeros(_N_COUNTERS, np.int64)
    cnt1 = np.zeros(_N_COUNTERS, np.int64)
    args = (n_sm, bps, slot_blocks_ptr, slot_blocks, start, blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr,
            inst_flags, inst_op, acc_line, acc_mask)
    no_state = _l1_state(1, 1)
    # the no-hit check (``_l1_rounds``): per set the accesses so far and the ring position, the last W lines, and the
    # latest access number per line hash; numbers go on from run to run (above every one held: the sets start empty)
    nc = np.zeros(2 * l1_sets, np.int64)
    ring = np.zeros((l1_sets, l1_ways), np.int64)
    hsize = 1 << 15
    while hsize < 32 * l1_ways:
        hsize *= 2
    # numbers grow by the accesses of both runs and W + 1 per SM and run; int32 while they stay below 2**31
    big = 2 * int(base[-1]) + 2 * n_sm * (l1_ways + 1) >= 2**31 - 1
    recent = np.full((l1_sets, hsize), -(l1_ways + 2), np.int64 if big else np.int32)
    first_free = 0

    def l1_fifo(sm):
        """SM sm's L1 accesses of both runs where none hits (``_l1_rounds`` with fifo); False where one would. The
        short run goes on from a copy of the check's state at the split round."""
        nonlocal first_free
        nc[:l1_sets] = first_free
        nc[l1_sets:] = 0
        ring[:] = np.iinfo(np.int64).min  # no line (a line is a sector >> 2 or more)
        cur = np.zeros(bps, np.int64)
        c = np.zeros(_N_COUNTERS, np.int64)
        pos = _l1_rounds(sm, *args, 0, split, nb, cur, *no_state, out, base[sm], c, True, recent, ring, nc)
        if pos >= 0 and two:
            shared = pos - base[sm]
            out1[base1[sm]:base1[sm] + shared] = out[base[sm]:pos]
            saved = (recent.copy(), ring.copy(), nc.copy(), cur.copy(), c.copy())
        if pos >= 0:
            pos = _l1_rounds(sm, *args, split, last, nb, cur, *no_state, out, pos, c, True, recent, ring, nc)
        first_free = max(first_free, int(nc[:l1_sets].max()) + l1_ways + 1)
        if pos < 0:
            return False
        if pos != base[sm + 1]:
            raise AssertionError(f"L1 pass of SM {sm} made {pos - base[sm]} accesses, expected {base[sm + 1] - base[sm]}")
        if two:
            recent[:], ring[:], nc[:] = saved[:3]
            cur1, c1 = saved[3:]
            pos = _l1_rounds(sm, *args, split, last1, n1, cur1, *no_state, out1, base1[sm] + shared, c1, True, recent,
                             ring, nc)
            first_free = max(first_free, int(nc[:l1_sets].max()) + l1_ways + 1)
            if pos < 0:
                return False
            if pos != base1[sm + 1]:
                raise AssertionError(f"L1 pass of SM {sm} (first {n1} blocks) made {pos - base1[sm]} accesses, "
                                     f"expected {base1[sm + 1] - base1[sm]}")
            cnt1[:] += c1
        cnt[:] += c
        return True

    def l1_lru(sm):
        """SM sm's L1 accesses of both runs, exact LRU; the short run goes on from a copy at the split round."""
        st = _l1_state(l1_sets, l1_ways)
        cur = np.zeros(bps, np.int64)
        c = np.zeros(_N_COUNTERS, np.int64)
        pos = _l1_rounds(sm, *args, 0, split, nb, cur, *st, out, base[sm], c, False, recent, ring, nc)
        if two:
            shared = pos - base[sm]
            out1[base1[sm]:base1[sm] + shared] = out[base[sm]:pos]
            st1, cur1, c1 = tuple(x.copy() for x in st), cur.copy(), c.copy()
        pos = _l1_rounds(sm, *args, split, last, nb, cur, *st, out, pos, c, False, recent, ring, nc)
        if pos != base[sm + 1]:
            raise AssertionError(f"L1 pass of SM {sm} made {pos - base[sm]} accesses, expected {base[sm + 1] - base[sm]}")
        cnt[:] += c
        if two:
            pos = _l1_rounds(sm, *args, split, last1, n1, cur1, *st1, out1, base1[sm] + shared, c1, False, recent,
                             ring, nc)
            if pos != base1[sm + 1]:
                raise AssertionError(f"L1 pass of SM {sm} (first {n1} blocks) made {pos - base1[sm]} accesses, "
                                     f"expected {base1[sm + 1] - base1[sm]}")
            cnt1[:] += c1

    for sm in range(n_sm):
        if not (l1_ways and l1_fifo(sm)):
            l1_lru(sm)
    l2 = np.full(l2_shape, -1, np.int64)
    l1_pos = base[:-1].copy()
    cur = np.zeros(n_slots, np.int64)
    c2 = np.zeros(_N_COUNTERS, np.int64)
    args = (n_sm, n_slots, slot_blocks_ptr, slot_blocks, start, blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr,
            inst_flags, inst_op, acc_line, acc_mask)
    _l2_rounds(*args, out, l1_pos, l2, 0, split, nb, cur, c2)
    if two:
        l2b, cur1, pos1, c2b = l2.copy(), cur.copy(), l1_pos - base[:-1] + base1[:-1], c2.copy()
    _l2_rounds(*args, out, l1_pos, l2, split, last, nb, cur, c2)
    cnt += c2
    cnt[_C_ROUNDS] = last
    res = [(cnt, l2)]
    if two:
        _l2_rounds(*args, out1, pos1, l2b, split, last1, n1, cur1, c2b)
        cnt1 += c2b
        cnt1[_C_ROUNDS] = last1
        res.append((cnt1, l2b))
    return res


@njit(cache=True)
def _dirty_sectors(l2):
    n = 0
    for p in range(l2.shape[0]):
        for st in range(l2.shape[1]):
            for w in range(l2.shape[2]):
                e = l2[p, st, w]
                if e >= 0:
                    n += _popcount8((e >> 8) & 0xFF)
    return n


@dataclass(frozen=True)
class Requests:
    """Coalesced global requests of one block: per instruction, its sorted distinct sectors (CSR)."""

    ptr: np.ndarray  # (n+1,) int64
    sectors: np.ndarray  # int64 sector numbers
    flags: np.ndarray  # (n,) uint8: bit 0 store, bit 1 bypasses L1
    operand: np.ndarray  # (n,) uint8

    def __len__(self) -> int:
        return int(self.flags.shape[0])

    @property
    def sectors_per_instruction(self) -> np.ndarray:
        """Distinct 32-byte sectors each instruction touches."""
        return np.diff(self.ptr)

    def lines_per_instruction(self, sectors_per_line: int = 4) -> np.ndarray:
        """Distinct lines each instruction touches (one cache access each)."""
        if not len(self):
            return np.zeros(0, np.int64)
        lines = self.sectors // sectors_per_line
        new = np.ones(lines.shape[0], bool)
        new[1:] = lines[1:] != lines[:-1]
        new[self.ptr[:-1][np.diff(self.ptr) > 0]] = True  # an instruction's first sector starts a new access
        starts = np.concatenate([[0], np.cumsum(new)])
        return starts[self.ptr[1:]] - starts[self.ptr[:-1]]

    def l1_data_cycles(self, sector_bytes: int = 32, bytes_per_clk: int = 128) -> int:
        """L1TEX data-stage cycles of these instructions: at least one per request, else sectors x 32 B / 128 B/clk."""
        per = -(-self.sectors_per_instruction * sector_bytes // bytes_per_clk)
        return int(np.maximum(per, 1).sum())


def coalesce(trace: WarpTrace, sector_bytes: int = 32) -> Requests:
    """Coalesce a trace's global instructions into distinct sectors per instruction."""
    g = trace.of_space(SPACE_GLOBAL)
    n = len(g)
    shift = int(sector_bytes).bit_length() - 1
    if (1 << shift) != sector_bytes:
        raise KernelError(f"sector size {sector_bytes} is not a power of two")
    per_lane = (int(g.width.max()) + sector_bytes - 1) // sector_bytes + 1 if n else 1
    ptr = np.empty(n + 1, np.int64)
    out = np.empty(max(n * 32 * per_lane, 1), np.int64)
    used = _coalesce(g.addr, g.width, g.mask, shift, ptr, out) if n else 0
    if not n:
        ptr[0] = 0
    flags = (g.is_write.astype(np.uint8) | (g.bypass_l1.astype(np.uint8) << 1)).astype(np.uint8)
    return Requests(ptr, out[:used].copy(), flags, g.operand.copy())


@dataclass(frozen=True)
class MemoryResult:
    """Counters of one simulated launch (bytes, sectors; rates as fractions)."""

    counters: dict

    def __getitem__(self, key):
        return self.counters[key]


def l2_partitions(machine) -> int:
    """L2 partitions of a machine (``l2.partitions``). A100 and Hopper build their L2 in two halves joined by a
    crossbar; each SM's reads are cached in its near half (A100 whitepaper), so data every SM reads is held twice.
    The H200 measurements need it: at N = 3072 the SGEMM's 72 MiB of A and B "fit" a 60 MiB L2, yet row order
    re-reads B 26 times (validation/h200/l2_raster.csv), and a pointer chase gets slower from 40 MiB on (latency.csv).
    """
    return machine.l2.partitions


def _tile_offsets(spec: GPUKernelSpec, L: Layout, tm: np.ndarray, tn: np.ndarray) -> np.ndarray:
    """Byte offsets of A, B and C for each block relative to tile (0, 0): (n, 3) int64."""
    off = np.empty((tm.shape[0], 3), np.int64)
    off[:, OP_A] = tm * spec.BM * L.a_rs
    off[:, OP_B] = tn * spec.BN * L.b_cs
    off[:, OP_C] = tm * spec.BM * L.c_rs + tn * spec.BN * L.c_cs
    return off


def simulate_memory(
    machine,
    spec: GPUKernelSpec,
    layout: Layout,
    blocks_per_sm: int,
    l1_bytes: int | None = None,
    max_blocks: int | None = None,
    budget: int | None = DEFAULT_BUDGET,
    stagger: float | None = None,
    stagger_group: int = 1,
) -> MemoryResult:
    """Run a kernel's blocks through the GPU memory system of ``machine``; returns the counters.

    ``blocks_per_sm``: resident blocks per SM (occupancy). ``l1_bytes``: L1 capacity per SM (default: what the
    largest carve-out leaves). ``max_blocks``: simulate only the first blocks in launch order, rounded up to whole
    waves (at least ``MIN_SAMPLE_WAVES``), and scale (then ``sampled`` is True); without it, a launch that would make
    more than ``budget`` cache accesses is sampled to the whole waves that fit (None: never sample). Counters:
    ``dram_bytes_read``/``_written`` (``_A``, ``_B``, ``_C`` split the reads), ``l2_hit_rate`` (read sectors found in
    L2 / read sectors asked for), ``l1_hit_rate``,
    ``l2_sectors_read``, ``l2_sectors_written``, ``global_requests``, ``global_sectors``, ``blocks``,
    ``waves`` (ceil(blocks / (sms * blocks_per_sm))), ``rounds`` (round-robin rounds the schedule took).
    ``stagger``: how far apart the first blocks start (None: ``start_stagger(spec)``). ``stagger_group``: slots
    start in groups of this many consecutive slots, each group at the phase of its first slot -- with the number of
    tiles in one raster line, each block column (column order) starts as one group and the groups are spread over
    ``stagger`` of a block, as drifted column-order launches of the naive kernel run on the H200
    (validation/h200/round7, section 7c).
    """
    if stagger is None:
        stagger = start_stagger(spec)
    if blocks_per_sm < 1:
        raise KernelError(f"blocks_per_sm must be >= 1 (got {blocks_per_sm})")
    if stagger_group < 1:
        raise KernelError(f"stagger_group must be >= 1 (got {stagger_group})")
    L = layout
    n_sm = machine.sms
    sector = machine.l2.sector_bytes
    line_bytes = machine.l2.line_bytes
    spl = line_bytes // sector
    tm_all, tn_all = spec.order(L.M, L.N)
    n_total = tm_all.shape[0]
    interior_all = ((tm_all + 1) * spec.BM <= L.M) & ((tn_all + 1) * spec.BN <= L.N)
    # A shifted template has the same sectors per instruction only for whole-sector shifts, and the same lines per
    # instruction (the L1 pass counts those up front) only for whole-line shifts. Interior blocks are grouped by
    # where their tile offsets fall inside a line (one class when every shift is whole lines; two for 16-float
    # tiles, whose B and C offsets alternate between 0 and 64 bytes into a line); each class shares the template
    # of its first block, moved by whole lines.
    whole_sectors = bool(interior_all.any()) and all(
        x % sector == 0 for x in (spec.BM * L.a_rs, spec.BN * L.b_cs, spec.BM * L.c_rs, spec.BN * L.c_cs))

    # --- requests: per offset class, one template for its interior blocks
    templates: list[Requests] = []
    first = coalesce(spec.block_trace(L, int(tm_all[0]), int(tn_all[0]), spaces=[SPACE_GLOBAL]), sector)
    per_block = int(first.lines_per_instruction(spl).sum())
    # blocks after which the launch order starts re-reading what it read before (a row of tiles, a column, a group)
    tiles_m, tiles_n = -(-L.M // spec.BM), -(-L.N // spec.BN)
    period = {"row": tiles_n, "column": tiles_m}.get(getattr(spec, "raster", "row"), getattr(spec, "group_m", 8) * tiles_n)
    wave = n_sm * blocks_per_sm
    n_sim = n_total
    if max_blocks:
        n_sim = min(n_total, int(max_blocks))
        if MIN_SAMPLE_WAVES:  # whole waves: a partial wave misstates what shares the L2 at once
            n_sim = min(n_total, max(-(-n_sim // wave), MIN_SAMPLE_WAVES) * wave)
    elif budget and per_block * n_total > budget:
        n_sim = min(n_total, max(2 * wave, (budget // max(per_block, 1)) // wave * wave))
        # the sample must reach past the first reuse period to see the steady state (within 4x the budget)
        steady = -(-(period + wave) // wave) * wave
        if n_sim < steady and steady * per_block <= 4 * budget:
            n_sim = min(n_total, steady)
    tm, tn = tm_all[:n_sim], tn_all[:n_sim]
    interior = interior_all[:n_sim] if whole_sectors else np.zeros(n_sim, bool)
    off_bytes = _tile_offsets(spec, L, tm, tn)
    blk_tpl = np.empty(n_sim, np.int64)
    blk_off = np.zeros((n_sim, 3), np.int64)
    if interior.any():
        res = off_bytes % line_bytes
        key = (res[:, 0] * line_bytes + res[:, 1]) * line_bytes + res[:, 2]
        idx = np.flatnonzero(interior)
        classes, first_of = np.unique(key[idx], return_index=True)
        for c, f in zip(classes, idx[first_of]):
            members = idx[key[idx] == c]
            blk_tpl[members] = len(templates)
            blk_off[members] = (off_bytes[members] - off_bytes[f]) // sector
            templates.append(coalesce(spec.block_trace(L, int(tm[f]), int(tn[f]), spaces=[SPACE_GLOBAL]), sector))
    explicit = np.flatnonzero(~interior)
    size = sum(len(t.sectors) for t in templates)
    for b in explicit:
        req = coalesce(spec.block_trace(L, int(tm[b]), int(tn[b]), spaces=[SPACE_GLOBAL]), sector)
        size += len(req.sectors)
        if size > MAX_EXPLICIT_REQUESTS:
            raise KernelError(
                f"{spec.name}: blocks are not whole-sector shifts of one another here (tile {spec.BM}x{spec.BN}, "
                f"{L.elem}-byte elements) and simulating each separately needs too much memory; pass max_blocks to sample"
            )
        blk_tpl[b] = len(templates)
        templates.append(req)

    tpl_ninst = np.array([len(t) for t in templates], np.int64)
    tpl_inst0 = np.concatenate([[0], np.cumsum(tpl_ninst)[:-1]]).astype(np.int64)
    req_base = np.concatenate([[0], np.cumsum([len(t.sectors) for t in templates])[:-1]]).astype(np.int64)
    inst_ptr = np.concatenate([t.ptr[:-1] + rb for t, rb in zip(templates, req_base)] + [[req_base[-1] + len(templates[-1].sectors)]]).astype(np.int64)
    inst_flags = np.concatenate([t.flags for t in templates]).astype(np.uint8)
    inst_op = np.concatenate([t.operand for t in templates]).astype(np.int64)
    req_sec = np.concatenate([t.sectors for t in templates]).astype(np.int64)
    if (tpl_ninst == 0).any():
        # a block without global instructions contributes nothing; give it one empty instruction so it retires
        raise KernelError(f"{spec.name}: a block has no global memory instructions")

    # --- caches
    l1_size = machine.l1_size() if l1_bytes is None else int(l1_bytes)
    l1_sets = machine.l1.sets
    l1_ways = l1_size // (l1_sets * machine.l1.line_bytes)
    parts = l2_partitions(machine)
    if machine.l2_sets % parts:
        raise KernelError(f"{machine.name}: {machine.l2_sets} L2 sets do not split into {parts} partitions")
    spl_shift = spl.bit_length() - 1
    l1_lines_per_tpl = np.array([int(t.lines_per_instruction(spl)[t.flags == 0].sum()) for t in templates], np.int64)
    n_slots = n_sm * blocks_per_sm
    first_round = (slot_phases(n_sm, blocks_per_sm, stagger, stagger_group) * int(tpl_ninst[0])).astype(np.int64)

    n1 = 0
    if n_sim < n_total:
        # Steady-state sampling: the first blocks pay the cold misses of a whole launch (at N = 2048 all of B
        # in row order), so scaling them up would count those misses n_total / n_sim times. Simulate a shorter
        # prefix too (half, in whole waves) and extrapolate the remaining blocks at the rate between the two
        # prefixes: cold misses and the tail of the last wave are counted once.
        n1 = (n_sim // 2) // wave * wave if n_sim >= 2 * wave else n_sim // 2
        if n1 < period and n_sim - period >= min(wave, n_sim // 4):
            n1 = period  # the short prefix holds the cold first period; the rate comes from warm blocks
    # both prefixes from cold caches in one run (the short one shares the long one's first rounds, see ``_run``)
    runs = _run(blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr, inst_flags, inst_op, req_sec, n_slots, n_sm,
                l1_sets, l1_ways, (parts, machine.l2_sets // parts, machine.l2.ways), spl_shift, l1_lines_per_tpl,
                first_round, n1)
    cnt = runs[0][0].astype(np.float64)
    dirty = float(_dirty_sectors(runs[0][1]))
    if n_sim < n_total:
        if n1 >= 1:
            c1, d1 = runs[1][0], int(_dirty_sectors(runs[1][1]))
            rest = (n_total - n_sim) / (n_sim - n1)
            cnt = cnt + (cnt - c1) * rest
            dirty = dirty + (dirty - d1) * rest
        else:
            cnt = cnt * (n_total / n_sim)
            dirty *= n_total / n_sim

    # --- totals (global requests/sectors counted from the templates, so they need no per-access bookkeeping)
    n_req = int(sum(tpl_ninst[blk_tpl]))
    sec_per_tpl = np.array([len(t.sectors) for t in templates], np.int64)
    n_sec = int(sec_per_tpl[blk_tpl].sum())
    l1c_per_tpl = np.array([t.l1_data_cycles(sector, machine.smem.bytes_per_clk) for t in templates], np.int64)
    l1_cycles = int(l1c_per_tpl[blk_tpl].sum())
    scale = n_total / n_sim  # template-derived counts (exact per block); cache counters are extrapolated above
    s = sector
    rd_sec = cnt[_C_L2_SECTORS_RD]
    lookups = cnt[_C_L2_LOOKUP]
    l1_sec = cnt[_C_L1_HIT] + cnt[_C_L1_MISS]
    c = {
        "blocks": n_total,
        "blocks_simulated": n_sim,
        "blocks_prefix_for_rate": n1,
        "sampled": n_sim < n_total,
        "blocks_per_sm": blocks_per_sm,
        "waves": -(-n_total // (n_sm * blocks_per_sm)),
        "rounds": int(round(cnt[_C_ROUNDS])),
        "l1_bytes": l1_size,
        "global_requests": n_req * scale,
        "global_sectors": n_sec * scale,
        "sectors_per_request": n_sec / n_req if n_req else float("nan"),
        "l1_data_cycles": l1_cycles * scale,
        "l1_sectors_hit": cnt[_C_L1_HIT],
        "l1_sectors_missed": cnt[_C_L1_MISS],
        "l1_hit_rate": cnt[_C_L1_HIT] / l1_sec if l1_sec else float("nan"),
        "l2_sectors_read": rd_sec,
        "l2_sectors_written": cnt[_C_L2_WR],
        "l2_partitions": parts,
        "l2_lookups": lookups,
        "l2_read_hits": cnt[_C_L2_RD_HIT],
        "l2_far_hits": cnt[_C_L2_FAR_HIT],
        "l2_read_misses": cnt[_C_L2_RD_MISS],
        "l2_hit_rate": cnt[_C_L2_RD_HIT] / lookups if lookups else float("nan"),
        "l2_chip_hit_rate": 1 - cnt[_C_L2_RD_MISS] / rd_sec if rd_sec else float("nan"),  # served by either partition
        "l2_bytes": (rd_sec + cnt[_C_L2_WR]) * s,
        "dram_bytes_read": cnt[_C_L2_RD_MISS] * s,
        "dram_bytes_read_A": cnt[_C_L2_MISS_A + OP_A] * s,
        "dram_bytes_read_B": cnt[_C_L2_MISS_A + OP_B] * s,
        "dram_bytes_read_C": cnt[_C_L2_MISS_A + OP_C] * s,
        "dram_bytes_written": (cnt[_C_DRAM_WR_EVICT] + dirty) * s,
        "l2_dirty_at_end_bytes": dirty * s,
    }
    c["dram_bytes"] = c["dram_bytes_read"] + c["dram_bytes_written"]
    return MemoryResult(c)
