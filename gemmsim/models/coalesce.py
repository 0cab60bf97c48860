"""Global-memory coalescing: the 32-byte sectors and 128-byte lines one warp request touches.

From compute capability 6.0 on, "the concurrent accesses of the threads of a warp will coalesce into a
number of transactions equal to the number of 32-byte transactions necessary to service all of the
threads of the warp" (CUDA C++ Best Practices Guide 10.2.1). L1 and L2 lines are 128 B made of four 32 B
sectors, and a miss fetches only the missing sectors. So a request costs as many sectors as distinct
32 B-aligned blocks its active lanes touch, and it looks up as many tags as distinct 128 B lines.

Stride-1 fp32 over 32 lanes: 128 B = 4 sectors, 1 line (perfect); the same shifted by 4 B: 5 sectors,
2 lines; stride-2 fp32: 8 sectors; stride >= 8 fp32: 32 sectors, 1 useful 4-byte word in each 32 B.
Nsight Compute reports it as ``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum`` per request;
tests/models/test_coalesce.py checks the model against measurements on an H200 (validation/h200/).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmsim.machine.gpu import GPUMachine
from gemmsim.models.banks import _as_batch


def _distinct_per_row(ids: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Number of distinct values per row among active lanes (vectorised: sort, count steps)."""
    big = np.iinfo(np.int64).max
    v = np.where(active, ids, big)
    v.sort(axis=1)
    steps = (v[:, 1:] != v[:, :-1]) & (v[:, 1:] != big)
    return (v[:, 0] != big).astype(np.int64) + steps.sum(axis=1)


def _units(byte_addresses, width: int, unit: int, active) -> np.ndarray:
    a, m = _as_batch(byte_addresses, width, active)
    # aligned accesses no wider than a sector never straddle one, so each lane touches exactly one unit
    return _distinct_per_row(a // unit, m)


def global_sectors_batch(machine: GPUMachine, byte_addresses, width: int, active=None) -> np.ndarray:
    """32-byte sectors touched by each of n warp requests (``byte_addresses`` (n, 32); optional active mask)."""
    return _units(byte_addresses, width, machine.l1.sector_bytes, active)


def global_lines_batch(machine: GPUMachine, byte_addresses, width: int, active=None) -> np.ndarray:
    """128-byte lines (tag lookups) touched by each of n warp requests."""
    return _units(byte_addresses, width, machine.l1.line_bytes, active)


def global_sectors(machine: GPUMachine, byte_addresses, width: int, active=None) -> int:
    """32-byte sectors one warp request touches: 32 byte addresses, ``width`` 1/2/4/8/16 bytes, aligned."""
    return int(global_sectors_batch(machine, byte_addresses, width, active)[0])


def global_lines(machine: GPUMachine, byte_addresses, width: int, active=None) -> int:
    """128-byte lines one warp request touches."""
    return int(global_lines_batch(machine, byte_addresses, width, active)[0])


@dataclass(frozen=True)
class Coalescing:
    """What one warp request costs: sectors and lines touched, bytes used and moved, and the efficiency."""

    sectors: int
    lines: int
    bytes_requested: int  # active lanes x width
    bytes_moved: int  # sectors x 32
    efficiency: float  # bytes_requested / bytes_moved (1.0 = perfectly coalesced)


def coalescing(machine: GPUMachine, byte_addresses, width: int, active=None) -> Coalescing:
    """Sectors, lines and efficiency (useful bytes / moved bytes) of one warp request."""
    a, m = _as_batch(byte_addresses, width, active)
    sectors = global_sectors(machine, a[0], width, m[0])
    lines = global_lines(machine, a[0], width, m[0])
    requested = int(m[0].sum()) * width
    moved = sectors * machine.l1.sector_bytes
    return Coalescing(sectors, lines, requested, moved, requested / moved if moved else 0.0)
