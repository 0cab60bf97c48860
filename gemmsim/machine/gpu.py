"""GPU machine schema (``kind: gpu``): SMs, per-SM limits, shared memory, caches, DRAM and throughput.

Every number a machine file holds is something NVIDIA documents, a datasheet value, or a measurement
(the YAML files say which, number by number); derived figures -- peak TFLOP/s, ridge points, L2 sets,
shared-memory bandwidth -- are properties computed here, never second numbers in a file.

Sources: CUDA C++ Programming Guide section 20 (Table 27, carve-outs, the 1 KiB per-block reserve);
``cuda_occupancy.h`` (register and shared-memory allocation granularities, sub-partitions, barrier limit);
the A100/H100/Ada whitepapers; measurements on an H200 (validation/h200/).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gemmsim.machine.schema import MachineHeader
from gemmsim.schema import Bytes, Strict
from gemmsim.units import DTYPE_BYTES, is_power_of_two

#: Accumulator type assumed when ``peak_tflops`` is asked for a tensor-core input dtype without one:
#: what a GEMM normally accumulates in (fp32 for floating inputs, int32 for int8, fp64 for fp64).
DEFAULT_ACC: dict[str, str] = {
    "fp16": "fp32",
    "bf16": "fp32",
    "tf32": "fp32",
    "fp8": "fp32",
    "int8": "int32",
    "fp64": "fp64",
    "fp32": "fp32",
}


class SMLimits(Strict):
    """Per-SM and per-block resource limits (Programming Guide Table 27; ``cuda_occupancy.h``)."""

    warp_size: int = Field(32, gt=0, description="Threads per warp.")
    max_threads_per_sm: int = Field(gt=0, description="Maximum resident threads per SM.")
    max_warps_per_sm: int = Field(gt=0, description="Maximum resident warps per SM (= max_threads_per_sm / warp_size).")
    max_blocks_per_sm: int = Field(gt=0, description="Maximum resident thread blocks per SM.")
    max_threads_per_block: int = Field(gt=0, description="Maximum threads in one thread block.")
    registers_per_sm: int = Field(gt=0, description="32-bit registers in one SM's register file.")
    max_registers_per_block: int = Field(gt=0, description="32-bit registers one thread block may hold.")
    max_registers_per_thread: int = Field(gt=0, description="Registers one thread may use (ptxas limit).")
    register_alloc_unit: int = Field(
        gt=0, description="Registers are allocated per warp in multiples of this many (256 = 8 per thread)."
    )
    sub_partitions: int = Field(
        gt=0,
        description="SM sub-partitions (SMSPs); each holds registers_per_sm / sub_partitions registers and a warp's "
        "registers must fit in one of them.",
    )
    barriers_per_sm: int | None = Field(
        None,
        gt=0,
        description="Named-barrier resources per SM that limit resident blocks (cc >= 9: 2 x max_blocks_per_sm); "
        "null where cuda_occupancy.h applies no barrier term.",
    )


class SharedMemory(Strict):
    """Shared memory: capacity, carve-outs, per-block limits, allocation rules and banks."""

    per_sm_max: Bytes = Field(description="Largest shared-memory carve-out of one SM (sharedMemPerMultiprocessor).")
    per_block_default: Bytes = Field(description="Per-block limit without opt-in (sharedMemPerBlock, 48 KiB).")
    per_block_optin: Bytes = Field(
        description="Per-block limit with cudaFuncAttributeMaxDynamicSharedMemorySize opt-in (sharedMemPerBlockOptin)."
    )
    reserved_per_block: Bytes = Field(
        description="Shared memory the driver reserves for every resident block (reservedSharedMemPerBlock, cc >= 8)."
    )
    alloc_unit: int = Field(gt=0, description="Per-block allocations are rounded up to a multiple of this, bytes.")
    carveouts: list[Bytes] = Field(
        min_length=1,
        description="The discrete shared-memory sizes an SM can be configured to, ascending, ending at per_sm_max.",
    )
    banks: int = Field(gt=0, description="Number of shared-memory banks.")
    bank_bytes: int = Field(gt=0, description="Width of one bank, bytes (successive words go to successive banks).")
    bytes_per_clk: int = Field(gt=0, description="Shared-memory bandwidth of one SM, bytes per SM clock (one wavefront).")


class L1Cache(Strict):
    """The per-SM L1 data cache, which shares one SRAM array with shared memory."""

    unified_size: Bytes = Field(description="Size of the combined L1 + shared-memory array of one SM.")
    line_bytes: int = Field(gt=0, description="Cache line (tag) size, bytes.")
    sector_bytes: int = Field(gt=0, description="Sector size, bytes: the unit filled on a miss and moved per request.")
    sets: int = Field(
        gt=0, description="Sets assumed for the L1 model; ways follow from the L1 size left by the carve-out."
    )
    hit_latency_cycles: float = Field(gt=0, description="Load-to-use latency of an L1 hit, SM cycles.")


class L2Cache(Strict):
    """The L2 cache shared by all SMs (sectored, write-back)."""

    size: Bytes = Field(description="Capacity, bytes; must equal sets x ways x line_bytes.")
    line_bytes: int = Field(gt=0, description="Cache line (tag) size, bytes.")
    sector_bytes: int = Field(gt=0, description="Sector size, bytes: the unit read from or written to DRAM.")
    ways: int = Field(gt=0, description="Associativity assumed for the model (NVIDIA does not publish it).")
    bandwidth_gbps: float = Field(gt=0, description="L2 to SMs read bandwidth, GB/s (1e9 B/s), whole chip.")
    hit_latency_cycles: float = Field(gt=0, description="Load-to-use latency of an L2 hit, SM cycles.")
    partitions: int = Field(
        1, gt=0, description="Halves (partitions) of the L2, each caching what its own SMs read, so shared data is held once per partition."
    )


class GPUDRAM(Strict):
    """Device memory (HBM or GDDR)."""

    capacity: Bytes = Field(description="Device memory capacity, bytes.")
    bandwidth_gbps: float = Field(gt=0, description="Theoretical peak bandwidth, GB/s (1e9 B/s).")
    latency_ns: float = Field(gt=0, description="Load latency of a DRAM access (L2 miss), nanoseconds.")


class ColumnDrift(Strict):
    """How fast the block columns of a lockstep kernel (``spec.lockstep``: blocks tied by a line they all read each k
    step) drift apart in column order, where each block column keeps a slot group of its own (the resident blocks
    are a whole number of block columns). Measured from block-start traces; a rate, not a byte count."""

    per_wave: float = Field(gt=0, le=1, description="Start offset gained per wave between neighbouring block "
                            "columns, in block times, at reference_tiles tiles per block column.")
    reference_tiles: int = Field(gt=0, description="Tiles per block column (grid rows) per_wave was measured at.")
    exponent: float = Field(ge=0, le=8, description="The rate scales as (tiles per block column / reference_tiles) "
                            "** exponent.")
    runaway_rate: float | None = Field(None, gt=0, le=1, description="Where a wave holds a little less than a whole "
                                       "number of block columns (0 < d < runaway_end), the offset's growth a wave "
                                       "as a fraction of itself once it runs away. null: no runaway.")
    runaway_plateau: float = Field(0.0, ge=0, le=1, description="Where the runaway levels off just short of a whole "
                                   "number (d -> 0), as a fraction of even spacing (1 / g).")
    runaway_end: float = Field(0.0, ge=0, le=1, description="Shortfall d (of a column a wave) at which the plateau, "
                               "falling linearly, reaches 0.")


class GPUMachine(MachineHeader):
    """A GPU: SMs with per-SM limits, shared memory banks, L1/L2, DRAM and per-dtype throughput."""

    kind: Literal["gpu"] = Field(description="Machine type.")
    compute_capability: str = Field(pattern=r"^\d+\.\d+$", description="CUDA compute capability, 'major.minor'.")
    sms: int = Field(gt=0, description="Streaming multiprocessors enabled on the product.")
    clock_mhz_max: float = Field(gt=0, description="Maximum (boost) SM clock, MHz; used for CUDA-core and memory-side peaks.")
    clock_mhz_tensor: float = Field(gt=0, description="SM clock NVIDIA quotes tensor-core peaks at (or sustained under MMA load), MHz.")
    clock_mhz_tensor_sustained: float | None = Field(
        None, gt=0, description="SM clock measured under sustained tensor-core load (power cap), MHz; tensor-core kernels are "
        "timed at it (peaks stay at clock_mhz_tensor). null: time them at clock_mhz_tensor.",
    )
    async_copy_bytes_per_clk: float | None = Field(
        None, gt=0, description="Bytes per SM clock one SM's cp.async (global -> shared) path moves at most, measured; "
        "null: only the SM's share of the L2 / DRAM bandwidth limits copies.",
    )
    async_copy_bytes_per_clk_block: float | None = Field(
        None, gt=0, description="Bytes per SM clock ONE resident block's async copies move at most (measured with one "
        "block on every SM); B resident blocks move min(B x this, async_copy_bytes_per_clk). null: no per-block limit.",
    )
    async_copy_bytes_per_clk_warp: float | None = Field(
        None, gt=0, description="Bytes per SM clock ONE warp's async copies move at most (measured: the per-block limit "
        "scales with the block's warps); W resident copying warps move min(W x this, async_copy_bytes_per_clk). Takes "
        "the place of async_copy_bytes_per_clk_block when set. null: the per-block limit.",
    )
    async_copy_l2_gbps_padded_rows: float | None = Field(
        None, gt=0, description="Chip-wide throughput of cp.async tile copies from L2 into shared-memory rows whose pitch "
        "is not a multiple of 32 bytes (K-contiguous tiles padded by 16 bytes a row for conflict-free ldmatrix), every "
        "SM copying, GB/s of the bytes the copies ask for, measured; for such kernels it takes the place of "
        "l2.bandwidth_gbps where lower (an SM's share of it, and the L2 queue). null: l2.bandwidth_gbps.",
    )
    async_copy_l2_lookups_per_request_padded_rows: float | None = Field(
        None, gt=0, description="L2 tag lookups per L2 read request in the measurement of async_copy_l2_gbps_padded_rows "
        "(ncu). With it that ceiling is a tag-lookup rate: a kernel's padded-row copies reach it x this / the kernel's "
        "lookups per sector read (the memory model's l2_lookups / l2_sectors_read: a read that misses its near L2 "
        "partition is looked up again in the line's home partition). null: the ceiling as measured, whatever the lookups.",
    )
    async_copy_bytes_per_clk_padded_rows: float | None = Field(
        None, gt=0, description="Bytes per SM clock one SM's cp.async path moves at most for copies into padded shared "
        "rows (as async_copy_l2_gbps_padded_rows), with few SMs copying, measured; a lower bound of the SM's own path "
        "for them. null: async_copy_bytes_per_clk.",
    )
    l2_favoured_sms: int | None = Field(
        None, ge=0, description="SMs the L2 serves a larger part of its throughput when every SM's copies saturate it "
        "(measured: each SM's time for equal copy work, all SMs copying); the count can differ from one device of a "
        "product to the next. Used by the dispatch model of a launch (models.sm_pipeline.dispatch_cycles). null: none.",
    )
    l2_favoured_share: float | None = Field(
        None, gt=0, description="How many times the others' part of the saturated L2 each of l2_favoured_sms draws "
        "(their time for equal copy work over the others', inverted), measured. null: 1.",
    )
    l2_favoured_ramp: list[tuple[float, float]] | None = Field(
        None, description="How the favoured SMs' part grows with the load: points (copy groups outstanding on each SM, "
        "fraction of l2_favoured_share's gain), groups increasing, fractions 0..1 and not decreasing; linear between, "
        "the end values outside. Measured with a copy-only benchmark (one group a block, k blocks on every SM: the "
        "favoured SMs' time over the others' at each k). null: the whole share at any load.",
    )
    sm_even_copy_groups: int | None = Field(
        None, ge=1, description="Copy groups in flight on one SM (cp.async groups committed and not yet waited for, "
        "over all its blocks) up to which the SM shares itself evenly among its blocks, so blocks it started together "
        "end together; above, it serves its oldest block first (the model then draws each block's time on its own). "
        "Measured with a copy-only benchmark (the spread of "
        "co-started blocks' ends against groups in flight). Used by the dispatch model of a launch "
        "(models.sm_pipeline.dispatch_cycles). null: every block's time drawn on its own.",
    )
    tma_bytes_per_clk: float | None = Field(
        None, gt=0, description="Bytes per SM clock one SM's tensor memory accelerator (cp.async.bulk.tensor, global -> "
        "shared) moves at most, measured with one SM copying from L2; the warp-specialised Hopper kernels' tile copies "
        "are held to it besides the SM's share of the chip (it binds where few SMs copy). null: the share alone.",
    )
    async_copy_latency_cycles: float | None = Field(
        None, gt=0, description="Round trip of one unloaded 16-byte cp.async from L2 (issue to cp.async.wait_group "
        "returning), SM cycles, measured; its excess over l2.hit_latency_cycles (the pointer chase) is added to every "
        "cp.async copy's latency. null: the pointer-chase latencies alone.",
    )
    fma_latency_cycles: float | None = Field(
        None, gt=0, description="Dependent-issue latency of an fp32 FMA (FFMA), SM cycles: how long a warp waits before "
        "the next FMA of the same chain; sets the rate of blocks with too few warps or independent chains to fill the "
        "SM (gemmsim.models.waves). null: such blocks are assumed to saturate the FMA pipes.",
    )
    ldmatrix_latency_cycles: float | None = Field(
        None, gt=0, description="Issue-to-use latency of a conflict-free ldmatrix.x4 (one warp, dependent chain), SM "
        "cycles, measured: how long an mma waits for the fragment it reads (gemmsim.models.sm_pipeline.fragment_groups). "
        "null: fragment waits are not modelled.",
    )
    ldmatrix_war_cycles: float | None = Field(
        None, ge=0, description="Cycles from an mma.sync's issue to the issue of an ldmatrix that overwrites a fragment "
        "register the mma reads (the register is free only once the mma has read it), measured. null: 0.",
    )
    copy_code_latency_cycles: dict[str, float] | None = Field(
        None, description="Measured latencies (SM cycles) of the instructions a multistage kernel's copy code is made of, "
        "by gemmsim.models.sm_pipeline.copy_phase's kinds (alu, wide, s2r, s2ur, ldc, pred, bra, brat, sync, ldgsts): how "
        "long one warp's copy phase takes alone, from the kernel's executed SASS path (kernel parameter copy_trace). "
        "null: the copy phase holds its issue slots only.",
    )
    column_drift: ColumnDrift | None = Field(
        None, description="Drift of a lockstep kernel's block columns in column order (gemmsim.models.gpu_memory."
        "column_drift_offsets), measured. null: they stay in lockstep.",
    )
    limits: SMLimits = Field(description="Per-SM and per-block resource limits.")
    smem: SharedMemory = Field(description="Shared memory.")
    l1: L1Cache = Field(description="Per-SM L1 data cache.")
    l2: L2Cache = Field(description="Shared L2 cache.")
    dram: GPUDRAM = Field(description="Device memory.")
    cuda_core_flops_per_clk: dict[str, int] = Field(
        description="CUDA-core (non-tensor) FLOP per clock per SM by dtype; an FMA counts as 2."
    )
    tensor_flops_per_clk: dict[str, dict[str, int]] = Field(
        description="Dense tensor-core FLOP (int8: ops) per clock per SM, by input dtype then accumulator dtype."
    )
    mma_sync_fraction: float = Field(
        1.0,
        gt=0,
        le=1,
        description="Fraction of the tensor peak the warp-level mma.sync/WMMA path reaches (Hopper's full rate needs wgmma).",
    )

    @model_validator(mode="after")
    def _consistency(self) -> "GPUMachine":
        problems: list[str] = []
        lim, sm = self.limits, self.smem
        if lim.max_warps_per_sm * lim.warp_size != lim.max_threads_per_sm:
            problems.append(
                f"limits: max_warps_per_sm {lim.max_warps_per_sm} x warp_size {lim.warp_size} != "
                f"max_threads_per_sm {lim.max_threads_per_sm}"
            )
        if lim.max_threads_per_block % lim.warp_size or lim.max_threads_per_block > lim.max_threads_per_sm:
            problems.append(f"limits.max_threads_per_block {lim.max_threads_per_block} is not a multiple of the warp size "
                            "or exceeds max_threads_per_sm")
        if lim.registers_per_sm % (lim.sub_partitions * lim.register_alloc_unit):
            problems.append(
                f"limits.registers_per_sm {lim.registers_per_sm} is not a multiple of sub_partitions x register_alloc_unit"
            )
        if lim.max_registers_per_block > lim.registers_per_sm:
            problems.append("limits.max_registers_per_block exceeds registers_per_sm")
        from gemmsim.models.sm_pipeline import COPY_KINDS  # noqa: PLC0415 (the kinds copy_phase knows)

        for k, v in (self.copy_code_latency_cycles or {}).items():
            if k not in (*COPY_KINDS, "pred") or k == "slot" or not (v >= 0 and v < float("inf")):
                problems.append(f"copy_code_latency_cycles: {k!r}: {v!r} (kinds: {', '.join(c for c in COPY_KINDS if c != 'slot')}, "
                                "pred; cycles >= 0)")
        cv = sm.carveouts
        if any(b <= a for a, b in zip(cv, cv[1:])):
            problems.append(f"smem.carveouts {cv} are not strictly ascending")
        if cv[-1] != sm.per_sm_max:
            problems.append(f"smem.carveouts end at {cv[-1]} B, not at smem.per_sm_max {sm.per_sm_max} B")
        if sm.per_block_default > sm.per_block_optin:
            problems.append("smem.per_block_default exceeds smem.per_block_optin")
        if sm.per_block_optin + sm.reserved_per_block > sm.per_sm_max:
            problems.append("smem.per_block_optin + smem.reserved_per_block exceeds smem.per_sm_max")
        if not is_power_of_two(sm.alloc_unit):
            problems.append(f"smem.alloc_unit {sm.alloc_unit} is not a power of two")
        if sm.bytes_per_clk != sm.banks * sm.bank_bytes:
            problems.append(f"smem.bytes_per_clk {sm.bytes_per_clk} != banks x bank_bytes ({sm.banks * sm.bank_bytes})")
        if sm.per_sm_max > self.l1.unified_size:
            problems.append("smem.per_sm_max exceeds l1.unified_size (shared memory is carved out of the L1 array)")
        for name, level in (("l1", self.l1), ("l2", self.l2)):
            if not is_power_of_two(level.line_bytes) or not is_power_of_two(level.sector_bytes):
                problems.append(f"{name}: line_bytes and sector_bytes must be powers of two")
            elif level.line_bytes % level.sector_bytes:
                problems.append(f"{name}.line_bytes {level.line_bytes} is not a multiple of sector_bytes {level.sector_bytes}")
        if self.l2.size % (self.l2.ways * self.l2.line_bytes) or self.l2.size == 0:
            problems.append(f"l2.size {self.l2.size} B is not sets x ways {self.l2.ways} x line {self.l2.line_bytes} B")
        if self.clock_mhz_tensor > self.clock_mhz_max:
            problems.append("clock_mhz_tensor exceeds clock_mhz_max")
        if self.clock_mhz_tensor_sustained is not None and self.clock_mhz_tensor_sustained > self.clock_mhz_max:
            problems.append("clock_mhz_tensor_sustained exceeds clock_mhz_max")
        if self.l2_favoured_sms is not None and self.l2_favoured_sms > self.sms:
            problems.append(f"l2_favoured_sms ({self.l2_favoured_sms}) exceeds sms ({self.sms})")
        if self.l2_favoured_ramp is not None:
            xs = [x for x, _ in self.l2_favoured_ramp]
            fs = [f for _, f in self.l2_favoured_ramp]
            if len(xs) < 2 or any(b <= a for a, b in zip(xs, xs[1:])) or xs[0] < 0:
                problems.append("l2_favoured_ramp: needs two or more points with groups >= 0 and increasing")
            if any(not 0 <= f <= 1 for f in fs) or any(b < a for a, b in zip(fs, fs[1:])):
                problems.append("l2_favoured_ramp: fractions must lie in 0..1 and not decrease")
        for d in self.cuda_core_flops_per_clk:
            if d not in DTYPE_BYTES:
                problems.append(f"cuda_core_flops_per_clk: unknown dtype {d!r}")
        if "fp32" not in self.cuda_core_flops_per_clk:
            problems.append("cuda_core_flops_per_clk: needs an fp32 entry")
        for d, accs in self.tensor_flops_per_clk.items():
            if d not in DTYPE_BYTES:
                problems.append(f"tensor_flops_per_clk: unknown input dtype {d!r}")
            for a in accs:
                if a not in DTYPE_BYTES:
                    problems.append(f"tensor_flops_per_clk.{d}: unknown accumulator dtype {a!r}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # ---- identity -------------------------------------------------------------------------------------
    @property
    def cc(self) -> tuple[int, int]:
        """Compute capability as (major, minor)."""
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def clock_mhz_tensor_timing(self) -> float:
        """Clock tensor-core kernels are timed at: the measured sustained clock where the file has one, else clock_mhz_tensor."""
        return self.clock_mhz_tensor_sustained or self.clock_mhz_tensor

    # ---- compute peaks ---------------------------------------------------------------------------------
    def flops_per_clk(self, dtype: str, acc: str | None = None, tensor: bool = True) -> int:
        """FLOP per clock per SM for a dtype on tensor cores (by accumulator type) or CUDA cores.

        ``acc`` defaults to DEFAULT_ACC[dtype]. Raises ValueError listing what the machine has when the
        combination is not in the file (e.g. fp8 tensor cores on an A100).
        """
        if not tensor:
            try:
                return self.cuda_core_flops_per_clk[dtype]
            except KeyError:
                raise ValueError(
                    f"{self.name}: no CUDA-core rate for {dtype!r}; known: {', '.join(self.cuda_core_flops_per_clk)}"
                ) from None
        accs = self.tensor_flops_per_clk.get(dtype)
        if not accs:
            raise ValueError(
                f"{self.name}: no tensor-core rate for input {dtype!r}; known: {', '.join(self.tensor_flops_per_clk)}"
            )
        a = acc if acc is not None else DEFAULT_ACC.get(dtype, next(iter(accs)))
        if a not in accs:
            raise ValueError(f"{self.name}: tensor cores take {dtype!r} with accumulators {', '.join(accs)}, not {a!r}")
        return accs[a]

    def peak_tflops(self, dtype: str, acc: str | None = None, tensor: bool = True) -> float:
        """Dense peak TFLOP/s: SMs x FLOP/clk/SM x clock (clock_mhz_tensor for tensor cores, clock_mhz_max otherwise).

        A100 fp16/fp32-acc tensor: 108 x 2048 x 1.41 GHz = 311.9 TFLOP/s (datasheet 312).
        """
        clock = self.clock_mhz_tensor if tensor else self.clock_mhz_max
        return self.sms * self.flops_per_clk(dtype, acc, tensor) * clock * 1e6 / 1e12

    def ridge_point(self, dtype: str, acc: str | None = None, tensor: bool = True) -> float:
        """Arithmetic intensity (FLOP per DRAM byte) above which a kernel is compute bound on this GPU."""
        return self.peak_tflops(dtype, acc, tensor) * 1e12 / (self.dram.bandwidth_gbps * 1e9)

    # ---- memory-side figures ---------------------------------------------------------------------------
    @property
    def smem_bandwidth_gbps(self) -> float:
        """Aggregate shared-memory bandwidth, GB/s: bytes_per_clk x SMs x clock_mhz_max (A100: ~19.5 TB/s)."""
        return self.smem.bytes_per_clk * self.sms * self.clock_mhz_max * 1e6 / 1e9

    @property
    def l2_sets(self) -> int:
        """Sets of the L2 model: size / (ways x line_bytes)."""
        return self.l2.size // (self.l2.ways * self.l2.line_bytes)

    @property
    def l2_sectors_per_line(self) -> int:
        """32 B sectors in one 128 B line."""
        return self.l2.line_bytes // self.l2.sector_bytes

    def l1_size(self, smem_config: int | None = None) -> int:
        """Bytes of L1 left when shared memory is configured to ``smem_config`` (default: the largest carve-out)."""
        cfg = self.smem.per_sm_max if smem_config is None else smem_config
        return max(self.l1.unified_size - cfg, 0)

    @property
    def dram_bytes_per_clk(self) -> float:
        """DRAM bandwidth in bytes per SM clock (clock_mhz_max), whole chip."""
        return self.dram.bandwidth_gbps * 1e9 / (self.clock_mhz_max * 1e6)

    @property
    def registers_per_sub_partition(self) -> int:
        """Registers in one SM sub-partition (65,536 / 4 = 16,384)."""
        return self.limits.registers_per_sm // self.limits.sub_partitions

    def align_up_to_carveout(self, nbytes: int) -> int:
        """The smallest carve-out >= nbytes (cudaOccAlignUpShmemSizeVoltaPlus); ValueError above the largest."""
        for c in self.smem.carveouts:
            if c >= nbytes:
                return c
        raise ValueError(f"{self.name}: {nbytes} B of shared memory exceed the largest carve-out {self.smem.carveouts[-1]} B")

    def derived(self) -> dict:
        """Every derived figure, for ``machines show``."""
        tensor = {
            f"{d}->{a}": self.peak_tflops(d, a, True) for d, accs in self.tensor_flops_per_clk.items() for a in accs
        }
        cuda = {d: self.peak_tflops(d, tensor=False) for d in self.cuda_core_flops_per_clk}
        return {
            "peak_tflops_tensor": tensor,
            "peak_tflops_cuda_core": cuda,
            "ridge_point_flop_per_byte_tensor": {
                k: v * 1e12 / (self.dram.bandwidth_gbps * 1e9) for k, v in tensor.items()
            },
            "ridge_point_flop_per_byte_cuda_core": {
                k: v * 1e12 / (self.dram.bandwidth_gbps * 1e9) for k, v in cuda.items()
            },
            "smem_bandwidth_gbps": self.smem_bandwidth_gbps,
            "l2_sets": self.l2_sets,
            "l2_sectors_per_line": self.l2_sectors_per_line,
            "l1_size_at_max_carveout_bytes": self.l1_size(),
            "dram_bytes_per_clk": self.dram_bytes_per_clk,
            "registers_per_sub_partition": self.registers_per_sub_partition,
            "max_threads_per_gpu": self.sms * self.limits.max_threads_per_sm,
        }
