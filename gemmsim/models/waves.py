"""Waves and tile quantization: how a grid of thread blocks fills the GPU, and what a partial fill costs.

NVIDIA, *Matrix Multiplication Background User's Guide* (DU-09799-001), chapter 3 (GPU_FACTS 3.1):

* tile quantization: ``tiles = ceil(M/BM) x ceil(N/BN)``; the last row and column of tiles do full math
  on partly padded data; ``tile_eff = M N / (ceil(M/BM) BM x ceil(N/BN) BN)``;
* wave quantization: ``wave_size = SMs x blocks_per_SM``; ``waves = ceil(tiles / wave_size)``;
  ``wave_eff = tiles / (waves x wave_size)``. A100, 256x128 tiles, 1 block/SM, M = 2304: N = 1536 gives
  108 tiles (1 full wave), N = 1664 gives 117 tiles, 2 waves, 54 %.

Time against grid size has two regimes (``wave_time``), both measured on an H200 (validation/h200/waves.csv):

* ``latency``: blocks that mostly wait (memory latency, barriers, sleeps) overlap fully when co-resident,
  so a wave costs one block time and the time is ``waves x block_time`` -- a staircase with steps every
  SMs x blocks_per_SM blocks;
* ``throughput``: blocks that saturate the SM's pipes share them, so the busiest SM decides:
  ``ceil(grid / SMs) x block_time`` where block_time is one block's pipe time on a saturated SM -- steps
  every SMs blocks, whatever the occupancy beyond saturation.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmsim.errors import KernelError
from gemmsim.machine.gpu import GPUMachine


def _positive_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise KernelError(f"{name} must be a positive integer (got {v!r})")
    return v


@dataclass(frozen=True)
class Waves:
    """How ``tiles`` blocks fill a GPU that holds ``wave_size`` blocks at once."""

    tiles: int
    blocks_per_sm: int
    sms: int
    wave_size: int  # SMs x blocks_per_sm
    waves: int  # ceil(tiles / wave_size)
    waves_fractional: float  # tiles / wave_size (ncu launch__waves_per_multiprocessor)
    full_waves: int  # tiles // wave_size
    tail_blocks: int  # blocks in the last, partial wave (0 when the last wave is full)
    wave_efficiency: float  # tiles / (waves x wave_size)


def waves(machine: GPUMachine, tiles: int, blocks_per_sm: int) -> Waves:
    """Waves of ``tiles`` thread blocks on ``machine`` at ``blocks_per_sm`` resident blocks per SM."""
    _positive_int("tiles", tiles)
    _positive_int("blocks_per_sm", blocks_per_sm)
    size = machine.sms * blocks_per_sm
    n = -(-tiles // size)
    return Waves(
        tiles=tiles,
        blocks_per_sm=blocks_per_sm,
        sms=machine.sms,
        wave_size=size,
        waves=n,
        waves_fractional=tiles / size,
        full_waves=tiles // size,
        tail_blocks=tiles % size,
        wave_efficiency=tiles / (n * size),
    )


@dataclass(frozen=True)
class TileQuantization:
    """Tiles covering an M x N output with BM x BN tiles, and the fraction of their math that is useful."""

    tiles_m: int
    tiles_n: int
    tiles: int
    efficiency: float  # M N / (tiles_m BM x tiles_n BN)


def tile_quantization(M: int, N: int, BM: int, BN: int) -> TileQuantization:
    """Tile quantization of an M x N output (guide example: 257 x 256 with 128 x 128 tiles needs 6 tiles)."""
    for name, v in (("M", M), ("N", N), ("BM", BM), ("BN", BN)):
        _positive_int(name, v)
    tm, tn = -(-M // BM), -(-N // BN)
    return TileQuantization(tm, tn, tm * tn, (M * N) / (tm * BM * tn * BN))


def wave_time(
    machine: GPUMachine,
    grid: int,
    blocks_per_sm: int,
    block_time_s: float,
    regime: str = "latency",
) -> float:
    """Modelled time of a grid of identical blocks, seconds (launch overhead not included).

    ``regime='latency'``: co-resident blocks overlap fully; time = waves x block_time_s, where
    block_time_s is the time of one block (alone or beside others, the same).
    ``regime='throughput'``: blocks share a saturated SM's pipes; time = ceil(grid / SMs) x block_time_s,
    where block_time_s is the SM time one block's work costs at full pipe throughput; ``blocks_per_sm``
    does not enter (the block scheduler spreads blocks breadth-first, so the busiest SM runs ceil(grid / SMs)).
    """
    _positive_int("grid", grid)
    _positive_int("blocks_per_sm", blocks_per_sm)
    if not block_time_s > 0:
        raise KernelError(f"block_time_s must be positive (got {block_time_s!r})")
    if regime == "latency":
        return waves(machine, grid, blocks_per_sm).waves * block_time_s
    if regime == "throughput":
        return -(-grid // machine.sms) * block_time_s
    raise KernelError(f"regime must be 'latency' or 'throughput', not {regime!r}")
