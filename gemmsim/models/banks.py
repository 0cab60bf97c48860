"""Shared-memory banks: wavefronts (shared-memory cycles) one warp instruction needs.

Shared memory has 32 banks of 4 bytes; successive 32-bit words go to successive banks, and each bank
returns one word per clock, so one *wavefront* moves up to 128 B (CUDA Programming Guide 20.4.3).
One warp instruction is served as follows (CUDA C++ Programming Guide, shared memory of compute capability 5.x and later:
32 banks of 32 bits, broadcast within a word; NVIDIA developer forum thread 77228 on LDS.128):

* accesses of 1, 2 or 4 bytes: the whole warp in one phase;
* 8-byte accesses: two phases of 16 lanes (half-warps); 16-byte accesses: four phases of 8 lanes;
* within a phase, lanes that touch the same 32-bit word share it (a read broadcasts; of several writes to
  one word only one happens), and lanes that touch *different* words of one bank are served one after the
  other: the phase takes as many wavefronts as the largest number of distinct words any bank holds;
* measured on the H200 (validation/h200/smem_wavefronts.csv, 83 patterns): an 8- or 16-byte *load* whose
  lanes 2j and 2j+1 all read the same address ("uniform pairs") needs only half the phases -- 16 distinct
  addresses, then served as 1 phase (8-byte) or 2 phases of 16 lanes (16-byte). So an 8-byte broadcast costs
  1 wavefront and a 16-byte broadcast 2, not 2 and 4. NVIDIA's forum notes that "uniform pairs of addresses
  can halve" an LDS.128 (NVIDIA developer forum thread 77228). Stores never merge.

``wavefronts = sum over phases of max over banks of (distinct words in that bank)``; the ideal is
``ceil(32 x width / 128)`` (1, 2 or 4), and ``bank_conflicts = wavefronts - ideal``. These are the numbers
Nsight Compute reports as ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld`` per executed instruction;
tests/models/test_banks.py checks them against measurements on an H200 (validation/h200/).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gemmsim.errors import KernelError
from gemmsim.machine.gpu import GPUMachine

WIDTHS = (1, 2, 4, 8, 16)
WARP = 32


def _phases(width: int) -> int:
    """Lane groups served one after the other: 1 for <= 4 B, 2 for 8 B, 4 for 16 B accesses."""
    return max(1, width // 4)


def ideal_wavefronts(width: int) -> int:
    """Fewest wavefronts a full warp needs at this access width: ceil(32 x width / 128)."""
    return _phases(width)


@njit(cache=True)
def _wavefronts_batch(addrs, active, width, nbanks, bank_bytes, base_phases, is_load, ideal):
    """Wavefronts of each row of ``addrs`` ((n, 32) byte addresses); inactive lanes are skipped. ``ideal`` (n,)
    receives the wavefronts the same words would need with no two of a phase in one bank: ceil(words / banks)
    per phase that has an active lane."""
    n = addrs.shape[0]
    out = np.zeros(n, dtype=np.int64)
    words_per_lane = max(1, width // bank_bytes)
    seen = np.empty(WARP * words_per_lane, dtype=np.int64)
    count = np.zeros(nbanks, dtype=np.int64)
    for i in range(n):
        phases = base_phases
        if is_load and base_phases > 1:
            # uniform pairs (lanes 2j, 2j+1 read one address) halve the phases of 8- and 16-byte loads
            uniform = True
            for j in range(0, WARP, 2):
                if active[i, j] != active[i, j + 1] or (active[i, j] and addrs[i, j] != addrs[i, j + 1]):
                    uniform = False
                    break
            if uniform:
                phases = base_phases // 2
        lanes_per_phase = WARP // phases
        total = 0
        fewest = 0
        for p in range(phases):
            nseen = 0
            for b in range(nbanks):
                count[b] = 0
            best = 0
            for lane in range(p * lanes_per_phase, (p + 1) * lanes_per_phase):
                if not active[i, lane]:
                    continue
                first = addrs[i, lane] // bank_bytes
                for w in range(words_per_lane):
                    word = first + w
                    dup = False
                    for s in range(nseen):
                        if seen[s] == word:
                            dup = True
                            break
                    if dup:
                        continue
                    seen[nseen] = word
                    nseen += 1
                    bank = word % nbanks
                    count[bank] += 1
                    if count[bank] > best:
                        best = count[bank]
            total += best
            fewest += -(-nseen // nbanks)
        out[i] = total
        ideal[i] = fewest
    return out


def _as_batch(byte_addresses, width: int, active=None) -> tuple[np.ndarray, np.ndarray]:
    """Check and normalise addresses to an (n, 32) int64 array plus an (n, 32) bool mask of active lanes."""
    if width not in WIDTHS:
        raise KernelError(f"access width must be one of {WIDTHS} bytes, not {width!r}")
    a = np.asarray(byte_addresses)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != WARP:
        raise KernelError(f"a warp instruction needs {WARP} lane addresses per row; got an array of shape {np.shape(byte_addresses)}")
    if not np.issubdtype(a.dtype, np.integer):
        raise KernelError(f"byte addresses must be integers, not {a.dtype}")
    a = a.astype(np.int64, copy=False)
    if active is None:
        m = np.ones(a.shape, dtype=np.bool_)
    else:
        m = np.asarray(active, dtype=np.bool_)
        if m.ndim == 1:
            m = m[None, :]
        if m.shape != a.shape:
            raise KernelError(f"active mask shape {m.shape} does not match addresses {a.shape}")
    bad = m & ((a < 0) | (a % width != 0))
    if bad.any():
        i, lane = map(int, np.argwhere(bad)[0])
        raise KernelError(
            f"lane {lane} of instruction {i}: address {int(a[i, lane])} is negative or not aligned to the "
            f"{width}-byte access width (the hardware requires natural alignment)"
        )
    return a, m


def _is_load(op: str) -> bool:
    if op not in ("ld", "st"):
        raise KernelError(f"op must be 'ld' (load) or 'st' (store), not {op!r}")
    return op == "ld"


def smem_wavefronts_batch(machine: GPUMachine, byte_addresses, width: int, active=None, op: str = "ld") -> np.ndarray:
    """Wavefronts of each of n warp instructions: ``byte_addresses`` is (n, 32), ``active`` an optional (n, 32) mask,
    ``op`` 'ld' or 'st'.

    Returns an int64 array of n wavefront counts (0 for an instruction with no active lane).
    """
    return _batch(machine, byte_addresses, width, active, op)[0]


def smem_fewest_wavefronts_batch(machine: GPUMachine, byte_addresses, width: int, active=None, op: str = "ld") -> np.ndarray:
    """Wavefronts each instruction would need without bank conflicts, for the words it actually touches: per
    phase, ceil(distinct words / banks). A broadcast needs 1 where ``ideal_wavefronts`` (a full warp of distinct
    words) says up to 4, so ``wavefronts - fewest`` is the conflict count and never negative."""
    return _batch(machine, byte_addresses, width, active, op)[1]


def _batch(machine: GPUMachine, byte_addresses, width: int, active, op: str) -> tuple[np.ndarray, np.ndarray]:
    is_load = _is_load(op)
    a, m = _as_batch(byte_addresses, width, active)
    sm = machine.smem
    ideal = np.zeros(a.shape[0], np.int64)
    wf = _wavefronts_batch(a, m, int(width), int(sm.banks), int(sm.bank_bytes), _phases(width), is_load, ideal)
    return wf, ideal


def smem_wavefronts(machine: GPUMachine, byte_addresses, width: int, active=None, op: str = "ld") -> int:
    """Wavefronts one warp shared-memory instruction needs: 32 byte addresses, ``width`` 1/2/4/8/16 bytes,
    ``op`` 'ld' (default) or 'st'.

    Stride-1 fp32 gives 1, stride-2 gives 2, stride-32 gives 32, stride-33 gives 1 (the [TILE][TILE+1]
    padding), all lanes on one word give 1 (broadcast), 8-byte stride-1 gives 2, 16-byte stride-1 gives 4.
    """
    a, m = _as_batch(byte_addresses, width, active)
    if a.shape[0] != 1:
        raise KernelError("smem_wavefronts takes one instruction (32 addresses); use smem_wavefronts_batch for many")
    return int(smem_wavefronts_batch(machine, a, width, m, op)[0])


def bank_conflicts(machine: GPUMachine, byte_addresses, width: int, active=None, op: str = "ld") -> int:
    """Extra wavefronts caused by bank conflicts: wavefronts - ideal.

    The ideal is one wavefront per phase that has an active lane, the phases being the full ones (1, 2 or 4
    for a full warp by width) -- so a uniform-pairs 16-byte load that needs 2 wavefronts counts as 0.
    """
    a, m = _as_batch(byte_addresses, width, active)
    phases = _phases(width)
    ideal = int(m[0].reshape(phases, WARP // phases).any(axis=1).sum())
    return max(0, smem_wavefronts(machine, a[0], width, m[0], op) - ideal)
