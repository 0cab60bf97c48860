"""Waves and tile quantization: how a grid of thread blocks fills the GPU, and what a partial fill costs.

NVIDIA, *Matrix Multiplication Background User's Guide* (DU-09799-001), chapter 3:

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

Between the two, blocks of FMA chains that cannot fill an SM on their own (``chain_sm_cycles``,
``chain_grid_cycles``): a warp with C independent chains issues C FMAs per FMA latency (``fma_latency_cycles``,
4.06 cycles measured on the H200), at most one per clock; an SM issues at most one warp instruction per clock
per sub-partition. Measured on the H200 (validation/h200/round3/waves3.csv), co-resident blocks do not share
the SM evenly: the oldest blocks keep their full latency-bound rate and a younger block gets only what they
leave, so 9 blocks of 2 single-chain warps take twice as long as 8 (the 8 oldest issue 3.94 of the 4 warp-FMAs
per clock the SM has), not 9/8 as long. The model is that priority, in a fluid form: the resident blocks, oldest
first, each take min(their latency-bound rate, what is left of the SM's issue rate); a block that finishes is
replaced by the next one of the busiest SM's ``ceil(grid / SMs)``.
"""

from __future__ import annotations

import math
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


# ---------------------------------------------------------------------------------------------------
# Blocks of FMA chains: a per-block rate from warps, chains and the FMA latency
# ---------------------------------------------------------------------------------------------------
def chain_block_rate(warps: int, chains: int, fma_latency: float) -> float:
    """Warp-FMAs per clock one block issues when nothing else competes: each warp ``chains`` per
    ``fma_latency`` cycles, at most one per clock (a warp issues one instruction per clock)."""
    _positive_int("warps", warps)
    _positive_int("chains", chains)
    if not fma_latency > 0:
        raise KernelError(f"fma_latency must be positive (got {fma_latency!r})")
    return warps * min(chains / fma_latency, 1.0)


def saturating_blocks(warps: int, chains: int, fma_latency: float, issue_per_clk: float) -> int:
    """Blocks an SM runs at their full latency-bound rate at once (at least 1): floor(issue / block rate)."""
    return max(1, math.floor(issue_per_clk / chain_block_rate(warps, chains, fma_latency) + 1e-9))


def chain_sm_cycles(blocks: int, blocks_per_sm: int, warps: int, chains: int, steps: int, fma_latency: float,
                    issue_per_clk: float) -> float:
    """Cycles one SM needs for ``blocks`` identical blocks of ``warps`` warps x ``chains`` chains x ``steps``
    dependent FMAs, at most ``blocks_per_sm`` resident (the rest start as residents finish).

    Fluid, oldest first: each resident block takes min(its latency-bound rate, the SM's issue rate left by
    older blocks); events are block completions. A block alone takes ``steps x fma_latency`` (chains <=
    latency); blocks that together exceed the issue rate queue behind the older ones.
    """
    if blocks < 0:
        raise KernelError(f"blocks must be >= 0 (got {blocks})")
    if blocks == 0:
        return 0.0
    _positive_int("blocks_per_sm", blocks_per_sm)
    _positive_int("steps", steps)
    if not issue_per_clk > 0:
        raise KernelError(f"issue_per_clk must be positive (got {issue_per_clk!r})")
    cap = chain_block_rate(warps, chains, fma_latency)
    work = float(warps * chains * steps)  # warp-FMAs per block
    resident = [work] * min(blocks, blocks_per_sm)  # remaining work, oldest first
    waiting = blocks - len(resident)
    t = 0.0
    while resident:
        left = issue_per_clk
        rates = []
        for _ in resident:
            r = min(cap, left)
            rates.append(r)
            left -= r
        dt = min(rem / r for rem, r in zip(resident, rates) if r > 0)
        t += dt
        nxt = []
        for rem, r in zip(resident, rates):
            rem -= r * dt
            if rem > work * 1e-9:
                nxt.append(rem)
        finished = len(resident) - len(nxt)
        new = min(finished, waiting)
        waiting -= new
        resident = nxt + [work] * new
    return t


@dataclass(frozen=True)
class ChainGridTime:
    """Modelled time of a grid of FMA-chain blocks (launch overhead not included)."""

    cycles: float  # the busiest SM's cycles
    blocks_on_sm: int  # ceil(grid / SMs)
    saturating_blocks: int  # blocks an SM runs at full latency-bound rate at once
    rounds: int  # ceil(blocks_on_sm / min(saturating_blocks, blocks_per_sm)): the steps the time climbs in
    regime: str  # 'latency' (the busiest SM's blocks never fill its issue rate) or 'issue'
    issue_busy: float  # fraction of the busiest SM's cycles its issue slots are busy with FMAs


def chain_grid_cycles(machine: GPUMachine, grid: int, blocks_per_sm: int, threads: int, chains: int, steps: int,
                      fma_latency: float | None = None) -> ChainGridTime:
    """Busiest-SM cycles of ``grid`` blocks of ``threads`` threads, each thread ``chains`` independent chains of
    ``steps`` dependent fp32 FMAs. The block scheduler deals blocks out breadth-first, so the busiest SM runs
    ceil(grid / SMs); the SM issues one warp instruction per clock per sub-partition."""
    _positive_int("grid", grid)
    _positive_int("threads", threads)
    lat = fma_latency if fma_latency is not None else machine.fma_latency_cycles
    if lat is None:
        raise KernelError(f"{machine.name}: fma_latency_cycles is not set in the machine file")
    warps = -(-threads // machine.limits.warp_size)
    issue = float(machine.limits.sub_partitions)
    nb = -(-grid // machine.sms)
    cyc = chain_sm_cycles(nb, blocks_per_sm, warps, chains, steps, lat, issue)
    k = saturating_blocks(warps, chains, lat, issue)
    group = min(k, blocks_per_sm)
    busy = nb * warps * chains * steps / issue / cyc
    return ChainGridTime(cyc, nb, k, -(-nb // group), "issue" if busy >= 0.5 else "latency", busy)
