"""Occupancy: how many thread blocks of a kernel an SM holds at once, and which resource decides it.

This is NVIDIA's algorithm, transcribed from ``cuda_occupancy.h`` (``cudaOccMaxActiveBlocksPerMultiprocessor``,
CUDA 13.0), which is the calculator behind ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` and the
Occupancy Calculator spreadsheet. Each limit is a number of blocks per SM; the smallest one wins:

* warps: ``floor(max_warps_per_sm / ceil(T / 32))``;
* blocks: the per-SM block cap (32 on cc 8.0/9.0, 24 on 8.9);
* registers: registers are allocated per warp in units of 256 and each warp's registers must fit in one of
  the 4 sub-partitions (16,384 registers each), so
  ``floor(sub_partitions * floor(16384 / roundup(R * 32, 256)) / W)`` -- which can be lower than the
  whole-SM estimate ``65536 / (rpw * W)`` (R = 40, T = 96 gives 16, not 17, as the H200's API does: validation/h200/occupancy.csv);
* shared memory: every block is charged its static + dynamic shared memory plus the 1 KiB the driver
  reserves (cc >= 8), rounded up to 128 B; the SM's shared-memory size is the carve-out preference snapped
  up to the next configuration the hardware has, or, if that is too small for one block, the smallest
  configuration that holds one block;
* barriers (cc >= 9): ``barriers_per_sm / barriers``.

Validated against the CUDA runtime on an H200 in validation/h200/occupancy.csv (tests/models/test_occupancy.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gemmsim.errors import LaunchError
from gemmsim.machine.gpu import GPUMachine

#: Order in which limits are reported when several bind at once (cuda_occupancy.h's flag order).
LIMITS = ("warps", "registers", "shared_memory", "blocks", "barriers")

_UNLIMITED = 1 << 30


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM of one launch configuration and every limit behind it.

    All ``limit_*`` values are blocks per SM; ``limit_barriers`` is None where the machine has no barrier
    term (cc < 9) and ``limit_registers`` is None for a kernel that uses no registers.
    """

    blocks_per_sm: int
    limiter: str  # the first binding limit of LIMITS ('warps'|'registers'|'shared_memory'|'blocks'|'barriers')
    limiters: tuple[str, ...]  # every limit equal to blocks_per_sm
    limit_warps: int
    limit_registers: int | None
    limit_shared_memory: int
    limit_blocks: int
    limit_barriers: int | None
    threads_per_block: int
    warps_per_block: int
    warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float  # warps_per_sm / max_warps_per_sm, 0..1
    registers_per_thread: int
    registers_per_warp_alloc: int  # roundup(R * 32, 256)
    registers_per_block_alloc: int  # registers_per_warp_alloc * warps_per_block
    smem_per_block: int  # what the kernel asked for (static + dynamic), bytes
    smem_alloc_per_block: int  # charged per block: roundup(smem + reserve, alloc_unit), bytes
    smem_config_bytes: int  # the carve-out the SM runs with, bytes
    carveout_pct: int | None  # the preference asked for (None = driver default)
    reason: str = ""  # why no block fits (blocks_per_sm == 0), else ""

    def to_dict(self) -> dict:
        """Plain, JSON-able form."""
        return asdict(self)


def _check_gpu(machine) -> GPUMachine:
    if not isinstance(machine, GPUMachine):
        raise LaunchError(f"occupancy needs a GPU machine, not {type(machine).__name__} {getattr(machine, 'name', '')!r}")
    return machine


def _roundup(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(
    machine: GPUMachine,
    threads: int,
    regs: int,
    smem: int = 0,
    carveout: int | None = None,
    barriers: int = 1,
    opt_in: bool = True,
) -> Occupancy:
    """Resident blocks per SM for ``threads`` threads/block, ``regs`` registers/thread (ptxas' count) and
    ``smem`` bytes of shared memory per block (static + dynamic).

    ``carveout`` is the shared-memory carve-out preference in percent (0-100; None = the driver default,
    the largest configuration). ``barriers`` is the number of block barriers the kernel uses (1 for any
    kernel, cuda_occupancy.h's default). ``opt_in`` says the kernel raised its dynamic shared-memory limit
    with cudaFuncAttributeMaxDynamicSharedMemorySize, so a block may use up to ``smem.per_block_optin``;
    without it the per-block limit is 48 KiB.

    A launch whose block cannot fit an SM's resources (registers x threads above the register file, e.g.
    65 registers x 1024 threads on the H200) gives ``blocks_per_sm == 0`` with ``limiter`` naming the
    resource and ``reason`` the arithmetic -- what cudaOccupancyMaxActiveBlocksPerMultiprocessor (0) and
    NVIDIA's calculator show. Raises LaunchError for requests outside the launch limits themselves (more
    than ``max_threads_per_block`` threads, more than ``max_registers_per_thread`` registers, more shared
    memory than a block may have with or without opt-in) and for malformed arguments.
    """
    m = _check_gpu(machine)
    lim, sm = m.limits, m.smem
    problems = []
    if not isinstance(threads, int) or threads < 1:
        problems.append(f"threads per block must be a positive integer (got {threads!r})")
    if not isinstance(regs, int) or regs < 0:
        problems.append(f"registers per thread must be a non-negative integer (got {regs!r})")
    if not isinstance(smem, int) or smem < 0:
        problems.append(f"shared memory per block must be a non-negative number of bytes (got {smem!r})")
    if carveout is not None and (not isinstance(carveout, int) or not 0 <= carveout <= 100):
        problems.append(f"carveout must be a percentage 0-100 or None (got {carveout!r})")
    if not isinstance(barriers, int) or barriers < 0:
        problems.append(f"barriers must be a non-negative integer (got {barriers!r})")
    if problems:
        raise LaunchError("invalid launch description", source=m.name, problems=problems)

    # Hard launch limits (each makes cuda_occupancy.h return 0 blocks; the launch fails).
    if threads > lim.max_threads_per_block:
        raise LaunchError(
            f"{threads} threads per block exceed the limit of {lim.max_threads_per_block} (max_threads_per_block)",
            source=m.name,
        )
    if regs > lim.max_registers_per_thread:
        raise LaunchError(
            f"{regs} registers per thread exceed the limit of {lim.max_registers_per_thread} (max_registers_per_thread)",
            source=m.name,
        )
    block_limit = sm.per_block_optin if (opt_in and smem > sm.per_block_default) else sm.per_block_default
    if smem > block_limit:
        how = "with opt-in" if opt_in else "without opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize)"
        raise LaunchError(
            f"{smem} B of shared memory per block exceed the per-block limit of {block_limit} B {how}",
            source=m.name,
        )

    warps = -(-threads // lim.warp_size)

    # (a) warp slots
    limit_warps = lim.max_warps_per_sm // warps

    # (b) block slots
    limit_blocks = lim.max_blocks_per_sm

    # (c) registers: per warp in units of register_alloc_unit, in sub-partitions. The hardware check
    # assumes the block's warps are spread over all sub-partitions, so it rounds warps up to a multiple of 4.
    rpw = _roundup(regs * lim.warp_size, lim.register_alloc_unit)
    regs_block = rpw * warps
    regs_assumed = rpw * _roundup(warps, lim.sub_partitions)
    reason = ""
    if max(regs_block, regs_assumed) > lim.max_registers_per_block:
        limit_regs = 0
        reason = (
            f"{regs} registers x {threads} threads need {regs_assumed} registers per block "
            f"({rpw} per warp x {_roundup(warps, lim.sub_partitions)} warps rounded to the {lim.sub_partitions} "
            f"sub-partitions), more than the {lim.max_registers_per_block} of max_registers_per_block"
        )
    elif rpw == 0:
        limit_regs = None
    else:
        warps_per_sub = m.registers_per_sub_partition // rpw
        limit_regs = (warps_per_sub * lim.sub_partitions) // warps

    # (d) shared memory: the block is charged its own bytes plus the driver's reserve, rounded to the unit.
    alloc = _roundup(smem + sm.reserved_per_block, sm.alloc_unit)
    pref = sm.per_sm_max if carveout is None else m.align_up_to_carveout(carveout * sm.per_sm_max // 100)
    config = pref if pref >= alloc else m.align_up_to_carveout(alloc)
    limit_smem = config // alloc if alloc > 0 else _UNLIMITED

    # (e) barriers (cc >= 9)
    if lim.barriers_per_sm is not None and barriers > 0:
        limit_bar = lim.barriers_per_sm // barriers
    else:
        limit_bar = None

    values = {
        "warps": limit_warps,
        "registers": limit_regs if limit_regs is not None else _UNLIMITED,
        "shared_memory": limit_smem,
        "blocks": limit_blocks,
        "barriers": limit_bar if limit_bar is not None else _UNLIMITED,
    }
    blocks = min(values.values())
    if blocks == 0 and not reason:
        reason = "no block fits an SM: " + ", ".join(f"{k} {v}" for k, v in values.items() if v == 0)
    binding = tuple(k for k in LIMITS if values[k] == blocks)
    return Occupancy(
        blocks_per_sm=blocks,
        limiter=binding[0],
        limiters=binding,
        limit_warps=limit_warps,
        limit_registers=limit_regs,
        limit_shared_memory=limit_smem,
        limit_blocks=limit_blocks,
        limit_barriers=limit_bar,
        threads_per_block=threads,
        warps_per_block=warps,
        warps_per_sm=blocks * warps,
        max_warps_per_sm=lim.max_warps_per_sm,
        occupancy=blocks * warps / lim.max_warps_per_sm,
        registers_per_thread=regs,
        registers_per_warp_alloc=rpw,
        registers_per_block_alloc=regs_block,
        smem_per_block=smem,
        smem_alloc_per_block=alloc,
        smem_config_bytes=config,
        carveout_pct=carveout,
        reason=reason,
    )


def resident(machine: GPUMachine, threads: int, regs: int, smem: int = 0, **kw) -> Occupancy:
    """:func:`occupancy` for a launch that must run: raises LaunchError (with the reason) where no block fits."""
    occ = occupancy(machine, threads, regs, smem, **kw)
    if occ.blocks_per_sm == 0:
        raise LaunchError(f"the launch cannot run: {occ.reason} ({occ.limiter})", source=machine.name)
    return occ
