"""GPU cases: kernel spec -> occupancy -> memory system -> shared-memory banks -> timing -> one result row.

``KERNELS`` (name -> parameter model) has the GEMM kernels of ``gemmsim.kernels.gpu`` (naive and the
loop-order names, tiled_smem/blocked, tensorcore, gemm, seed003_cutlass) and pattern kernels for the
micro-experiments:

* ``smem_pattern``: one shared-memory warp instruction -- lane i reads ``offset + i*stride*width`` bytes
  (``width`` 4/8/16), or, with ``transpose_tile`` = TILE, column ``column`` of a ``float [TILE][TILE+pad]``
  tile (lane i reads element [i % TILE][column]); wavefronts, the ideal, bank conflicts (the banks model);
* ``global_pattern``: one global warp request -- lane i reads ``offset + i*stride*width`` bytes; 32-byte
  sectors, 128-byte lines and the efficiency (the coalescing model);
* ``waves_sleep`` / ``waves_fma``: the H200 wave kernels of validation/h200/waves.cu (a block that sleeps
  ``block_ns``; a block of ``iters`` x 16 x 8 FMAs per thread), a grid of ``grid`` blocks (or one per
  BM x BN tile of the case's shape), resident blocks set by ``smem`` -- the two regimes of the waves model
  through the same SM timing as the GEMMs.

``run_case(machine, case)`` returns the common columns of ``gemmsim.sim.dispatch`` plus the GPU counters;
``simulate_gpu(machine, kernel, M=, N=, K=, dtype=, **params)`` is the same for notebooks.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, ValidationError, model_validator

from gemmsim.timing import gpu as gt
from gemmsim.timing.sol import sol_columns
from gemmsim.analytic.bounds import gpu_bound_columns
from gemmsim.analytic.layouts import alignment_columns
from gemmsim import guards
from gemmsim.errors import KernelError, wrong_kind
from gemmsim.machine.schema import validation_problems
from gemmsim.kernels.contract import gpu_contract, gpu_epilogue_pass
from gemmsim.kernels.gpu import KERNELS as GPU_KERNELS
from gemmsim.kernels.gpu import SPACE_SHARED, GPUKernelSpec, TensorCoreSpec
from gemmsim.kernels.hopper import HopperSpec
from gemmsim.machine.gpu import GPUMachine
from gemmsim.models.banks import ideal_wavefronts, smem_fewest_wavefronts_batch, smem_wavefronts_batch
from gemmsim.models.coalesce import coalescing
from gemmsim.models.gpu_memory import simulate_memory, simulate_memory_drifting, weighted_counters
from gemmsim.models import tc_schedule as tcs
from gemmsim.models import sm_pipeline as sp
from gemmsim.sim.reference_tc import reference_columns
from gemmsim.models.occupancy import occupancy, resident
from gemmsim.models.waves import chain_grid_cycles
from gemmsim.models.waves import tile_quantization, waves
from gemmsim.schema import Strict
from gemmsim.sim.attention import KERNELS as ATTENTION_KERNELS
from gemmsim.sim import attention as sim_attention
from gemmsim.sim.dispatch import Case
from gemmsim.trace import Layout, LayoutSpec
from gemmsim.units import dtype_bytes

WARP = 32


# ---------------------------------------------------------------------------------------------------
# Pattern kernels
# ---------------------------------------------------------------------------------------------------
class SmemPatternParams(Strict):
    """One shared-memory warp instruction (a load): a strided pattern or a transposed tile column."""

    stride: int = Field(1, ge=0, description="Elements (of `width` bytes) between consecutive lanes.")
    width: Literal[4, 8, 16] = Field(4, description="Bytes each lane reads (LDS.32/.64/.128).")
    offset: int = Field(0, ge=0, description="Byte offset of lane 0 (a multiple of width).")
    transpose_tile: int | None = Field(
        None, ge=1, le=64, description="If set (TILE): lanes read a column of float [TILE][TILE+pad] instead of the stride pattern."
    )
    pad: int = Field(0, ge=0, le=32, description="Padding elements per tile row ([TILE][TILE+pad]).")
    column: int = Field(0, ge=0, description="Tile column the warp reads (transpose_tile only).")

    @model_validator(mode="after")
    def _align(self) -> "SmemPatternParams":
        if self.offset % self.width:
            raise ValueError(f"offset {self.offset} is not a multiple of the access width {self.width}")
        if self.transpose_tile is not None and self.width != 4:
            raise ValueError("transpose_tile reads 4-byte floats (width: 4)")
        return self


class GlobalPatternParams(Strict):
    """One global warp request (a load): lane i reads offset + i*stride*width bytes."""

    stride: int = Field(1, ge=0, description="Elements (of `width` bytes) between consecutive lanes.")
    width: Literal[1, 2, 4, 8, 16] = Field(4, description="Bytes each lane reads.")
    offset: int = Field(0, ge=0, description="Byte offset of lane 0 from a 128-byte boundary (a multiple of width).")

    @model_validator(mode="after")
    def _align(self) -> "GlobalPatternParams":
        if self.offset % self.width:
            raise ValueError(f"offset {self.offset} is not a multiple of the access width {self.width}")
        return self


class _WaveGrid(Strict):
    grid: int | None = Field(
        None, ge=1, description="Blocks in the grid; None: one block per BM x BN tile of the case's M x N (as a GEMM)."
    )
    BM: int = Field(256, ge=1, description="Tile rows used to count blocks from the shape when grid is None.")
    BN: int = Field(128, ge=1, description="Tile columns used to count blocks from the shape when grid is None.")


class WavesSleepParams(_WaveGrid):
    """validation/h200/waves.cu sleep_kernel: every block waits block_ns; blocks per SM set through smem."""

    threads: int = Field(128, ge=1, le=1024, description="Threads per block.")
    smem: int = Field(0, ge=0, description="Dynamic shared memory per block, bytes (sets the resident blocks).")
    regs: int = Field(16, ge=1, le=255, description="Registers per thread.")
    block_ns: float = Field(50_000, gt=0, description="How long each block waits, ns.")


class WavesFMAParams(_WaveGrid):
    """validation/h200/waves.cu fma_kernel: iters x 16 x 8 independent fp32 FMAs per thread."""

    threads: int = Field(256, ge=1, le=1024, description="Threads per block.")
    smem: int = Field(0, ge=0, description="Dynamic shared memory per block, bytes (sets the resident blocks).")
    regs: int = Field(32, ge=1, le=255, description="Registers per thread.")
    iters: int = Field(200, ge=1, description="Outer iterations; each does 16 dependent FMAs on each chain.")
    chains: int = Field(8, ge=1, le=64, description="Independent FMA chains per thread (8 in waves.cu; 1, 2, 4 in "
                        "round3/waves3.cu); with fewer warps x chains than the SM's issue rate x FMA latency a block "
                        "runs at its latency-bound rate (gemmsim.models.waves.chain_grid_cycles).")


#: Every GPU kernel name and its parameter model.
KERNELS: dict[str, type[Strict]] = {
    **{name: k.params for name, k in GPU_KERNELS.items()},
    "smem_pattern": SmemPatternParams,
    "global_pattern": GlobalPatternParams,
    "waves_sleep": WavesSleepParams,
    "waves_fma": WavesFMAParams,
    **ATTENTION_KERNELS,
}

#: Whether a tensor-core kernel's DRAM latency (``dram.latency_ns``) becomes cycles at the clock the kernel is timed at
#: (``clock_mhz_tensor_timing``), as ``timing.gpu.load_latency_clk`` is written to be used; before round 34 it was
#: converted at ``clock_mhz_max`` whatever the kernel's clock (kept so that earlier predictions can be recomputed).
LATENCY_AT_TIMING_CLOCK = True


def smem_pattern_addresses(p: SmemPatternParams) -> np.ndarray:
    """The 32 lane byte addresses of a smem_pattern instruction."""
    lane = np.arange(WARP, dtype=np.int64)
    if p.transpose_tile is not None:
        T = p.transpose_tile
        return ((lane % T) * (T + p.pad) + p.column) * 4
    return p.offset + lane * p.stride * p.width


def global_pattern_addresses(p: GlobalPatternParams) -> np.ndarray:
    """The 32 lane byte addresses of a global_pattern request (from a 128-byte aligned base)."""
    return p.offset + np.arange(WARP, dtype=np.int64) * p.stride * p.width


def _nan_common(bound: str, time_s: float) -> dict:
    return {"flops": 0.0, "dram_bytes": 0.0, "intensity_flop_per_byte": float("nan"), "time_s": time_s, "gflops": 0.0,
            "peak_fraction": float("nan"), "bound": bound}


def _run_smem_pattern(m: GPUMachine, p: SmemPatternParams) -> dict:
    a = smem_pattern_addresses(p)
    wf = int(smem_wavefronts_batch(m, a[None, :], p.width)[0])
    ideal = ideal_wavefronts(p.width)
    row = _nan_common("smem", wf / (m.clock_mhz_max * 1e6))
    row.update(
        wavefronts=wf, ideal_wavefronts=ideal, bank_conflicts=max(wf - ideal, 0), bytes_requested=WARP * p.width,
        smem_efficiency=ideal / wf, lane_addresses=" ".join(str(int(x)) for x in a[:8]) + " ...",
        smem_bytes_per_clk_effective=WARP * p.width / wf,
    )
    return row


def _run_global_pattern(m: GPUMachine, p: GlobalPatternParams) -> dict:
    a = global_pattern_addresses(p)
    c = coalescing(m, a, p.width)
    row = _nan_common("L1", c.sectors * m.l1.sector_bytes / m.smem.bytes_per_clk / (m.clock_mhz_max * 1e6))
    row.update(
        sectors=c.sectors, lines=c.lines, bytes_requested=c.bytes_requested, bytes_moved=c.bytes_moved,
        coalescing_efficiency=c.efficiency, sectors_ideal=-(-WARP * p.width // m.l1.sector_bytes),
        lane_addresses=" ".join(str(int(x)) for x in a[:8]) + " ...",
    )
    return row


def _launch_columns(m: GPUMachine, occ) -> dict:
    return {
        "threads": occ.threads_per_block, "regs": occ.registers_per_thread, "smem_per_block": occ.smem_per_block,
        "smem_alloc_per_block": occ.smem_alloc_per_block, "blocks_per_sm": occ.blocks_per_sm,
        "limiter": occ.limiter, "occupancy": occ.occupancy, "warps_per_sm": occ.warps_per_sm,
    }


def _run_waves(m: GPUMachine, name: str, p, case: Case) -> dict:
    if p.grid is None:
        if case.M is None or case.N is None:
            raise KernelError(f"{name}: give grid, or a shape (M, N) to count BM x BN tiles")
        p = p.model_copy(update={"grid": -(-case.M // p.BM) * -(-case.N // p.BN)})
    guards.check_gpu(p.grid, 1, f"{name} with {p.grid} blocks on {m.name}")
    occ = resident(m, threads=p.threads, regs=p.regs, smem=p.smem)
    clk = m.clock_mhz_max
    if name == "waves_sleep":
        costs = gt.StepCosts(steps=1, stages=1, latency_clk=p.block_ns * clk / 1e3, pipe={})
        flops = 0.0
    else:
        flops_block = 2.0 * p.threads * p.iters * 16 * p.chains
        warp_fma = p.threads * p.iters * 16 * p.chains / WARP
        rate = m.flops_per_clk("fp32", tensor=False)
        costs = gt.StepCosts(steps=1, stages=1, latency_clk=0.0,
                             pipe=gt.pipe_terms(m, flops_block, rate, 0, 0, warp_fma))
        flops = flops_block * p.grid
    w = waves(m, p.grid, occ.blocks_per_sm)
    n_waves = w.waves
    if name == "waves_fma" and m.fma_latency_cycles is not None:
        # a per-block rate from warps, chains and the FMA latency; blocks that cannot fill the SM overlap
        cg = chain_grid_cycles(m, p.grid, occ.blocks_per_sm, p.threads, p.chains, p.iters * 16)
        t_sm = cg.cycles / (clk * 1e6)
        t = gt.GPUTime(time_s=t_sm, bound="compute" if cg.regime == "issue" else "latency", t_sm_s=t_sm, t_dram_s=0.0,
                       t_l2_s=0.0, sm_regime="compute" if cg.regime == "issue" else "latency", pipe_busy=cg.issue_busy,
                       pipe_clk_per_step=costs.pipe_clk, latency_clk_per_step=p.iters * 16 * m.fma_latency_cycles,
                       transfer_clk_per_step=0.0, kappa=float("nan"), blocks_on_busiest_sm=cg.blocks_on_sm,
                       clock_mhz=clk, terms=dict(costs.pipe))
        n_waves = cg.rounds  # the steps the time climbs in: groups of blocks the SM runs at full rate
    else:
        t = gt.gpu_time(costs, p.grid, m.sms, occ.blocks_per_sm, clk, 0.0, m.dram.bandwidth_gbps)
    peak = m.peak_tflops("fp32", tensor=False)
    row = {
        "flops": flops, "dram_bytes": 0.0, "intensity_flop_per_byte": float("nan"), "time_s": t.time_s,
        "gflops": flops / t.time_s / 1e9, "peak_fraction": flops / t.time_s / 1e12 / peak if flops else float("nan"),
        "bound": t.bound,
    }
    row.update(_launch_columns(m, occ))
    row.update(grid=p.grid, tiles=p.grid, waves=n_waves, waves_resident=w.waves, waves_fractional=w.waves_fractional, wave_size=w.wave_size,
               wave_efficiency=w.wave_efficiency, tail_blocks=w.tail_blocks, sm_regime=t.sm_regime,
               blocks_on_busiest_sm=t.blocks_on_busiest_sm, pipe_busy=t.pipe_busy,
               time_per_wave_s=t.time_s / n_waves)
    return row


# ---------------------------------------------------------------------------------------------------
# GEMM kernels
# ---------------------------------------------------------------------------------------------------
def _smem_per_step(m: GPUMachine, spec: GPUKernelSpec) -> tuple[float, float, float]:
    """(wavefronts, ideal wavefronts, shared instructions) per k-step of one block, from a block trace over
    ``stages`` steps (the shared addresses repeat with the stage buffer, not with the tile position)."""
    sample_steps = max(spec.stages, 1)
    L = Layout.build(spec.BM, spec.BN, spec.kstep * sample_steps, spec.dtype)
    tr = spec.block_trace(L, 0, 0, spaces=[SPACE_SHARED])
    if not len(tr):
        return 0.0, 0.0, 0.0
    wf = ideal = 0
    for w in np.unique(tr.width):
        sel = tr.select(tr.width == w)
        args = (m, sel.addr.astype(np.int64), int(w), sel.lanes_active())
        wf += int(smem_wavefronts_batch(*args).sum())
        ideal += int(smem_fewest_wavefronts_batch(*args).sum())  # of the words each instruction touches (broadcasts: 1)
    return wf / sample_steps, ideal / sample_steps, len(tr) / sample_steps


def l1_carveout(m: GPUMachine, occ) -> int:
    """Shared-memory configuration the driver picks, bytes: the smallest carve-out that holds the resident blocks'
    shared memory, which leaves the most L1 (ncu on the H200 SGEMM: launch__shared_mem_config_size = 32 KiB for
    2 blocks x 9 KiB; the occupancy API's default assumes the largest)."""
    return m.align_up_to_carveout(occ.blocks_per_sm * occ.smem_alloc_per_block)


def _flops_rate(m: GPUMachine, spec: GPUKernelSpec) -> tuple[float, float]:
    """(FLOP/clk/SM the kernel's math runs at, datasheet peak TFLOP/s it is compared with)."""
    try:
        if spec.tensor:
            rate = m.flops_per_clk(spec.dtype, spec.acc, tensor=True)
            frac = 1.0 if isinstance(spec, HopperSpec) else m.mma_sync_fraction  # wgmma runs at the full rate
            return rate * frac, m.peak_tflops(spec.dtype, spec.acc, tensor=True)
        return float(m.flops_per_clk(spec.dtype, tensor=False)), m.peak_tflops(spec.dtype, tensor=False)
    except ValueError as err:
        raise KernelError(str(err)) from None


def reference_traffic(M: int, N: int, K: int, dtype: str, BM: int, BN: int) -> dict:
    """Seed 001's two reference traffics for a tiled GEMM (bytes): no reuse beyond the block tile
    (A read once per column of tiles, B once per row of tiles, C written once: the crude 2MNK/T for square
    tiles, plus C) and perfect reuse (A, B read once, C written once)."""
    e = dtype_bytes(dtype)
    tn, tm = -(-N // BN), -(-M // BM)
    return {
        "dram_bytes_no_reuse": e * (M * K * tn + K * N * tm + M * N),
        "dram_bytes_perfect_reuse": e * (M * K + K * N + M * N),
    }


def _blocks_claim(claimed: int | None, allowed: int) -> str:
    """Seed 003's blocks-per-SM claim against what a machine allows at the paper's registers, in words."""
    if claimed is None:
        return "the paper claims no block count here"
    if allowed == claimed:
        return f"the paper's {claimed} block(s)/SM can hold"
    if allowed < claimed:
        return f"the paper's {claimed} block(s)/SM cannot hold"
    return f"more than the paper's {claimed} block(s)/SM fit"


def _seed003_columns(m: GPUMachine, spec: TensorCoreSpec, occ, tflops: float) -> dict:
    """Seed 003's numbers beside the model, and a plain check of its claims (pipeline_depth.yaml)."""
    sd = gt.SEED_003
    S = spec.stages
    paper_gpu = m.compute_capability == "8.9"  # the seed measured an RTX 4060 (AD107, sm_89)
    measured = dict(sd.measured_tflops) if paper_gpu else {}
    p_inf, kappa = gt.fit_pipeline([(s, t) for s, t in sd.measured_tflops if s in (2, 3)])
    fit = p_inf * gt.pipeline_efficiency(S, kappa)
    claimed = dict(sd.blocks_claimed).get(S, 2 if S < 3 else None)
    regs_claimed = dict(sd.regs_claimed).get(S, 64)
    occ_claimed_regs = occupancy(m, threads=spec.threads, regs=regs_claimed, smem=spec.smem_bytes)
    peak16 = m.peak_tflops("fp16", "fp16", tensor=True) if "fp16" in m.tensor_flops_per_clk.get("fp16", {}) else float("nan")
    peak32 = m.peak_tflops("fp16", "fp32", tensor=True)
    meas = measured.get(S, float("nan"))
    clk_needed = meas * 1e12 / (m.sms * m.flops_per_clk("fp16", "fp32")) / 1e6 if meas == meas else float("nan")
    holds_blocks = claimed is not None and occ_claimed_regs.blocks_per_sm == claimed
    text = (
        f"S={S}: {spec.smem_bytes // 1024} KiB smem/block + 1 KiB reserve; {m.name} allows "
        f"{occ_claimed_regs.blocks_per_sm} block(s)/SM at the paper's ~{regs_claimed} regs "
        f"({occ_claimed_regs.limiter}) and {occ.blocks_per_sm} at the estimated {occ.registers_per_thread} regs "
        f"({occ.limiter}); {_blocks_claim(claimed, occ_claimed_regs.blocks_per_sm)}. "
    )
    if paper_gpu and meas == meas:
        text += (
            f"Measured {meas} TFLOP/s is {meas / sd.peak_tflops:.1%} of {sd.peak_tflops} (the fp16-accumulate peak) but "
            f"{meas / peak32:.1%} of the fp32-accumulate peak {peak32:.2f} TFLOP/s at {m.clock_mhz_tensor:.0f} MHz; "
            f"it needs a sustained clock >= {clk_needed:.0f} MHz."
        )
    return {
        "seed_measured_tflops": meas,
        "seed_fit_p_inf_tflops": p_inf,
        "seed_fit_kappa": kappa,
        "seed_model_tflops": fit,
        "seed_model_vs_measured": fit / meas - 1 if meas == meas else float("nan"),
        "seed_claimed_blocks_per_sm": claimed if claimed is not None else float("nan"),
        "seed_claimed_regs": regs_claimed,
        "blocks_per_sm_at_claimed_regs": occ_claimed_regs.blocks_per_sm,
        "claim_blocks_hold": holds_blocks,
        "peak_fp16_acc_tflops": peak16,
        "peak_fp32_acc_tflops": peak32,
        "seed_fraction_of_fp32_acc_peak": meas / peak32 if meas == meas else float("nan"),
        "seed_clock_needed_mhz": clk_needed,
        "model_fraction_of_seed_peak": tflops / sd.peak_tflops,
        "claim_check": text.rstrip(),
    }


def padded_copy_ceiling_gbps(m: GPUMachine, mem: dict) -> float:
    """The chip's throughput for cp.async into padded shared rows, GB/s of the bytes asked for: the machine's measured
    ``async_copy_l2_gbps_padded_rows``; where the tag lookups per request it was measured at are given
    (``async_copy_l2_lookups_per_request_padded_rows``), a tag-lookup rate: x that / the kernel's lookups per sector read
    (the memory model's ``l2_lookups / l2_sectors_read``, at least 1: a read that misses its near L2 partition is
    looked up again in the line's home partition, and those lookups take from the same rate; round 9)."""
    ceiling = m.async_copy_l2_gbps_padded_rows
    ref = m.async_copy_l2_lookups_per_request_padded_rows
    if ceiling and ref and mem.get("l2_sectors_read") and mem.get("l2_lookups"):
        ceiling *= ref / max(mem["l2_lookups"] / mem["l2_sectors_read"], 1.0)
    return ceiling


def _pipeline_cost(m: GPUMachine, spec: TensorCoreSpec, steps: int, mma_clk: float, smem_clk: float, latency_clk: float,
                   transfer_clk: float, l2_bpc: float, active_sms: int, blocks_per_sm: int = 1,
                   l2_step_bytes: float = 0.0, dram_step_bytes: float = 0.0, dram_bpc: float = 0.0,
                   l2_copy_bpc: float = 0.0, sm_path_bpc: float = 0.0) -> sp.StepCost:
    """One k-step of a tensor-core block for the SM pipeline model (``models.sm_pipeline``), from the machine file:

    * copy: ``transfer_clk`` (the step's bytes at the SM's share of the L2 and DRAM bandwidths -- shared by the
      ``active_sms`` SMs that have blocks, not by all of them -- and, for cp.async, at most what the SM's copy path
      moves for its resident warps, min(blocks x warps x ``async_copy_bytes_per_clk_warp``, ``async_copy_bytes_per_clk``)
      (per block, ``async_copy_bytes_per_clk_block``, where no per-warp rate is given), all measured with cp.async;
      TMA copies are its own engine: at most ``tma_bytes_per_clk`` for the whole tile, measured) then ``latency_clk`` (L2 / DRAM latency by
      hit rate, plus for cp.async the excess of its measured round trip, ``async_copy_latency_cycles``, over the
      pointer chase's L2 latency; a held launch too big for the L2 -- ``tc_dram_round_trip``, ``_launch_memory`` --
      takes a DRAM access's latency instead of the average by hit rate);
    * multistage (cp.async + mma.sync): the step's ldmatrix/cp.async wavefronts on the shared pipe, and per
      ``__syncthreads`` the latency of the shared-memory read after it (``l1.hit_latency_cycles``: the L1/shared
      SRAM's load-to-use latency);
    * issue (multistage): a warp's executed instructions per k-step, in two measured parts -- its compute phase's
      (``warp_instructions_per_step``: the copy-less twin's, ncu) and its copies' (``warp_copy_instructions_per_step``:
      the kernel's minus the twin's) -- hold its sub-partition one clock each besides its MMAs, which hold it at the
      tensor rate: the SMSP is held for the MMAs plus the other instructions (``issue_with_mma``). The copy's issue
      does not overlap the MMAs' because the same warps issue both, from the same issue port, one after the other in
      each k-step (no warp specialisation); a step also takes at least all its instructions x the ALU's
      dependent-issue latency (``fma_latency_cycles``, measured): each warp's instructions taken as one dependent
      chain, so few warps per sub-partition leave issue slots idle;
    * copy phase (multistage, where the kernel gives ``copy_trace`` -- its warp's executed copy code -- and the machine
      ``copy_code_latency_cycles``): the copy phase lasts at least that code's in-order dependent chain at the measured
      latencies (``sm_pipeline.copy_segments``): its runs of issue hold the SMSP, queueing behind the other warps, and
      its waits leave the SMSP to them; the step's shortest time is then the compute phase's instructions x the FMA
      latency plus that chain;
    * fragment waits (multistage, where the kernel gives ``fragment_trace`` -- its ldmatrix / mma order, e.g. from
      the SASS -- and the machine ``ldmatrix_latency_cycles``): a warp's step as groups of mma that wait for their
      ldmatrix (``sm_pipeline.fragment_groups``: the measured ldmatrix latency, the wait before an ldmatrix may
      overwrite a register an mma reads, the mma.sync rate), simulated warp by warp, so other warps on the SMSP fill
      the waits where they have work;
    * warp-specialised (TMA + wgmma): no block barrier, no issue term (a few wgmma per k-step), no ldmatrix (wgmma reads shared memory itself), the
      consumer warpgroups' warps;
    * epilogue: the C tile's bytes at the SM's L2 share, plus one L2 latency;
    * loaded latency (``queues``, M/D/1 waits solved with the step time): the SM's cp.async path (the step's bytes
      at the measured per-SM throughput, one SM's blocks), the chip's L2 (the step's L2 bytes at the L2 bandwidth --
      for cp.async into padded shared rows, ``l2_copy_bpc``: the machine's measured ``async_copy_l2_gbps_padded_rows``
      where lower --, shared by ``active_sms``) and DRAM (the step's DRAM bytes at the DRAM bandwidth, likewise); for
      TMA its measured path (``tma_bytes_per_clk``, the whole tile);
    * the SM's own path for padded-row copies (``sm_path_bpc``: the machine's ``async_copy_bytes_per_clk_padded_rows``,
      measured with few SMs copying): the port holds a copy at that rate instead of at the SM's average share of the
      chip, and the chip's L2 / DRAM stations hold the copies back through their round trip where the chip saturates
      (``StepCost.little``: Little's law in ``sm_pipeline.pipeline_time``).
    """
    hopper = isinstance(spec, HopperSpec)
    issue = copy_issue = chain = copy_chain = 0.0
    groups = segments = ()
    if not hopper:
        compute = spec.warp_compute_instructions_per_step()
        copy_issue = spec.warp_copy_instructions_per_step()
        issue = max(compute - spec.mma_per_warp_per_stage, 0.0)  # the MMAs hold the SMSP at the tensor rate (mma_clk)
        chain = (compute + copy_issue) * (m.fma_latency_cycles or 1.0)
        ctrace = (spec.extra or {}).get("copy_trace")
        if ctrace and m.copy_code_latency_cycles:  # the copy code's own chain at measured latencies (round 6)
            segments = sp.copy_segments(ctrace, m.copy_code_latency_cycles)
            copy_chain = sum(n + w for n, w in segments)
            chain = compute * (m.fma_latency_cycles or 1.0) + copy_chain
        trace = (spec.extra or {}).get("fragment_trace")
        if trace and m.ldmatrix_latency_cycles:  # which mma waits for which ldmatrix, at the measured latencies
            t_one = mma_clk * m.limits.sub_partitions / spec.warps / spec.mma_per_warp_per_stage
            groups = sp.fragment_groups(trace, m.ldmatrix_latency_cycles, m.ldmatrix_war_cycles or 0.0, t_one)
            if sum(g[1] for g in groups) != spec.mma_per_warp_per_stage:
                raise KernelError(f"fragment_trace holds {sum(g[1] for g in groups):.0f} mma, the warp tile "
                                  f"{spec.WM}x{spec.WN}x{spec.BK} needs {spec.mma_per_warp_per_stage} per k-step")
    copy = transfer_clk * active_sms / m.sms
    if m.async_copy_bytes_per_clk_warp:  # the copying warps' limit (measured per warp), else the per-block one
        share = blocks_per_sm * spec.warps * m.async_copy_bytes_per_clk_warp
    else:
        share = blocks_per_sm * m.async_copy_bytes_per_clk_block if m.async_copy_bytes_per_clk_block else None
    rates = [r for r in (m.async_copy_bytes_per_clk, share) if r]
    queues = []
    if not hopper and m.async_copy_latency_cycles:  # cp.async's own round trip beyond the pointer chase's
        latency_clk += max(m.async_copy_latency_cycles - m.l2.hit_latency_cycles, 0.0)
    if sm_path_bpc and not hopper:  # the SM's own path for these copies (measured with few SMs copying): the port holds
        rates.append(sm_path_bpc)  # a copy at that rate, and the chip's share is left to the L2 / DRAM stations (Little)
    if rates and not hopper:  # cp.async's path, as measured; TMA has its own path (below)
        requested = (spec.BM * spec.BK + spec.BK * spec.BN) * spec.elem
        # one port per SM: B blocks share min(B x W x warp, SM); at least the SM's average share of the chip, unless
        # the SM's own path is given (then the chip's stations hold the copies back: sm_pipeline.pipeline_time)
        copy = requested / min(rates) if sm_path_bpc else max(copy, requested / min(rates))
        queues.append(("port", requested / min(rates), 1.0))  # a copy holds the SM's path this long; B blocks use it
    if hopper and m.tma_bytes_per_clk:  # the SM's TMA path (measured, validation/h200/round25): a stage's tiles land
        requested = (spec.BM + spec.BN) * spec.BK * spec.elem  # whole in every CTA, multicast or not
        copy = max(copy, requested / m.tma_bytes_per_clk)
        queues.append(("port", requested / m.tma_bytes_per_clk, 1.0))
    if l2_step_bytes > 0 and l2_bpc > 0:
        queues.append(("l2", l2_step_bytes / ((l2_copy_bpc or l2_bpc) * m.sms), float(active_sms)))
    if dram_step_bytes > 0 and dram_bpc > 0:
        queues.append(("dram", dram_step_bytes / (dram_bpc * m.sms), float(active_sms)))
    return sp.StepCost(
        steps=steps, stages=spec.stages, warps=spec.math_warps if hopper else spec.warps, mma_clk=mma_clk,
        copy_latency_clk=latency_clk, copy_clk=copy, smem_clk=0.0 if hopper else smem_clk, issue_clk=issue,
        copy_issue_clk=copy_issue, copy_chain_clk=copy_chain, copy_segments=segments, issue_with_mma=not hopper,
        warp_latency_clk=chain,
        barrier_clk=0.0 if hopper else m.l1.hit_latency_cycles, kind="warp_specialized" if hopper else "multistage",
        sub_partitions=m.limits.sub_partitions,
        epilogue_clk=m.l2.hit_latency_cycles + spec.BM * spec.BN * spec.elem / (l2_bpc * m.sms / active_sms),
        queues=tuple(queues), groups=groups,
        ldsm_latency_clk=(m.ldmatrix_latency_cycles or 0.0) if groups else 0.0, little=bool(sm_path_bpc) and not hopper,
    )


def _pipeline_sm_time(m: GPUMachine, spec: TensorCoreSpec, cost: sp.StepCost, grid: int, blocks_per_sm: int,
                      spread: float = 0.0):
    """(the launch's time as ``timing.gpu.SMTime``, the resident set's pipeline) for a tensor-core kernel; ``spread``:
    how unequal its blocks' times are (``sm_pipeline.dispatch_cycles``)."""
    if isinstance(spec, HopperSpec) and spec.persistent:
        ctas = spec.ctas or (m.sms // spec.cluster_size) * spec.cluster_size * blocks_per_sm
        sched = sp.persistent_cycles(cost, grid, ctas, epilogue_overlap=spec.schedule == "pingpong")
    else:
        sched = sp.grid_cycles(cost, grid, m.sms, blocks_per_sm, m.l2_favoured_sms or 0, m.l2_favoured_share or 1.0,
                               spread, m.sm_even_copy_groups, m.l2_favoured_ramp)
    res = sched.resident
    busy = sched.tiles_on_sm * cost.steps * cost.mma_clk / sched.cycles if sched.cycles else 0.0
    part = res.bound
    if busy >= 0.5 or part in ("mma", "contention"):
        regime = "smem" if cost.smem_clk > cost.compute_clk * 0.999 and cost.smem_clk > cost.mma_clk else "compute"
    else:
        regime = "latency"
    return gt.SMTime(sched.cycles, sched.tiles_on_sm, sched.rounds, regime, min(busy, 1.0)), res


def _block_costs(m: GPUMachine, spec: GPUKernelSpec, mem: dict, steps: int, grid: int, blocks_per_sm: int) -> dict:
    """Per-step costs of one (interior) block from the memory system's counters: the pipe terms (``costs``) and, for a
    tensor-core kernel, the SM pipeline's step (``pcost``, else None)."""
    wf, wf_ideal, smem_inst = _smem_per_step(m, spec)
    per_step = 1.0 / (mem["blocks"] * steps)  # counters are for the whole launch
    glob_inst = mem["global_requests"] * per_step
    rate, peak = _flops_rate(m, spec)
    flops_step = 2.0 * spec.BM * spec.BN * spec.kstep
    warp_inst = glob_inst + smem_inst + spec.math_instructions_per_step()
    terms = gt.pipe_terms(m, flops_step, rate, wf, 0.0, warp_inst)
    terms["L1"] = mem["l1_data_cycles"] * per_step
    clock = m.clock_mhz_tensor_timing if spec.tensor else m.clock_mhz_max
    ns_clock = clock if LATENCY_AT_TIMING_CLOCK else m.clock_mhz_max  # DRAM latency (ns) to cycles of this clock
    lat = gt.load_latency_clk(m, mem["l1_hit_rate"], mem["l2_hit_rate"], clock_mhz=ns_clock)
    if mem.get("tc_dram_round_trip"):  # every stage waits for a line from DRAM: a DRAM access's whole latency (the
        lat = m.dram.latency_ns * ns_clock / 1e3  # pointer chase's, the way through the L2 included)
    # the SM's share of the chip's bandwidths, bytes per SM clock
    dram_bpc = m.dram.bandwidth_gbps * 1e3 / m.sms / clock
    l2_bpc = m.l2.bandwidth_gbps * 1e3 / m.sms / clock
    l2_read = mem["l2_sectors_read"] * m.l2.sector_bytes
    l2_total = mem["l2_bytes"]
    if isinstance(spec, HopperSpec):  # TMA multicast: the L2 sends a shared tile once per cluster
        share = spec.l2_bytes_per_step() / ((spec.BM + spec.BN) * spec.BK * spec.elem)
        l2_total -= l2_read * (1 - share)
        l2_read *= share
    l2_copy_bpc, sm_path_bpc = l2_bpc, 0.0
    pad = ((spec.extra or {}).get("smem_row_pad") or 0) if isinstance(spec, TensorCoreSpec) else 0
    if pad and not isinstance(spec, HopperSpec) and m.async_copy_l2_gbps_padded_rows and (spec.BK + pad) * spec.elem % 32:
        # cp.async into padded shared rows (pitch off 32 bytes): the chip's measured throughput for them, where lower
        l2_copy_bpc = min(l2_bpc, padded_copy_ceiling_gbps(m, mem) * 1e3 / m.sms / clock)
        sm_path_bpc = m.async_copy_bytes_per_clk_padded_rows or 0.0
    transfer = max(mem["dram_bytes_read"] * per_step / dram_bpc, l2_read * per_step / l2_copy_bpc)
    costs = gt.StepCosts(steps=steps, stages=spec.stages, latency_clk=lat, pipe=terms,
                         epilogue_clk=m.l2.hit_latency_cycles, transfer_clk=transfer)
    pcost = None
    if isinstance(spec, TensorCoreSpec):
        mma_clk = flops_step / rate * (spec.mma_padding if isinstance(spec, HopperSpec) else 1.0)
        pcost = _pipeline_cost(m, spec, steps, mma_clk, wf, lat, transfer, l2_bpc, min(grid, m.sms),
                               min(blocks_per_sm, -(-grid // m.sms)), l2_step_bytes=l2_read * per_step,
                               dram_step_bytes=mem["dram_bytes_read"] * per_step, dram_bpc=dram_bpc,
                               l2_copy_bpc=l2_copy_bpc, sm_path_bpc=sm_path_bpc)
    return dict(costs=costs, pcost=pcost, clock=clock, wf=wf, wf_ideal=wf_ideal, smem_inst=smem_inst, peak=peak,
                l2_total=l2_total)


def _copy_round_trip(m: GPUMachine, l2_hit_rate: float) -> float:
    """A cp.async's round trip at this L2 hit rate, SM cycles, as ``_pipeline_cost`` charges it (no queueing)."""
    extra = max(m.async_copy_latency_cycles - m.l2.hit_latency_cycles, 0.0) if m.async_copy_latency_cycles else 0.0
    clock = m.clock_mhz_tensor_timing if LATENCY_AT_TIMING_CLOCK else m.clock_mhz_max
    return gt.load_latency_clk(m, 0.0, l2_hit_rate, clock_mhz=clock) + extra


def _launch_memory(m: GPUMachine, spec: GPUKernelSpec, layout: Layout, blocks_per_sm: int, l1_bytes: int,
                   max_blocks: int | None, steps: int, grid: int) -> dict:
    """The memory system's counters for the launch, on the schedule its kernel family follows.

    Multistage tensor-core kernels (cp.async + mma.sync) follow ``models.tc_schedule``: the first wave starts
    together; the blocks hold in step where what a trailing block gains from finding its tiles in L2 outweighs
    the push apart (``tc_schedule.holds``; the SM pipeline's step from the lockstep run's counters), else each wave is
    spread further (``tc_schedule.wave_staggers``) and the launch's counters are the runs at ``STAGGER_GRID``
    weighted by its waves. Adds ``tc_restoring_gain``, ``tc_holds``, ``tc_stagger_mean``, ``tc_schedule_runs`` and
    ``tc_dram_round_trip`` (held, and A and B larger than the L2: every copy waits for a DRAM access, ``_block_costs``).
    Every other kernel: ``gpu_memory.simulate_memory_drifting`` (its own ``start_stagger``)."""
    if not isinstance(spec, TensorCoreSpec) or isinstance(spec, HopperSpec) or not tcs.APPLY:
        return simulate_memory_drifting(m, spec, layout, blocks_per_sm, l1_bytes, max_blocks=max_blocks).counters
    first = simulate_memory(m, spec, layout, blocks_per_sm, l1_bytes, max_blocks=max_blocks, stagger=0.0).counters
    pcost = _block_costs(m, spec, first, steps, grid, blocks_per_sm)["pcost"]
    gain = tcs.restoring_gain(pcost, min(blocks_per_sm, -(-grid // m.sms)), _copy_round_trip(m, 1.0),
                              _copy_round_trip(m, 0.0))
    wave = m.sms * blocks_per_sm
    holds = tcs.holds(gain, blocks_per_sm)
    weights = {0.0: 1.0} if holds or grid <= wave else tcs.grid_weights(*tcs.wave_staggers(grid, wave, blocks_per_sm))
    runs = {0.0: first}
    runs.update({s: simulate_memory(m, spec, layout, blocks_per_sm, l1_bytes, max_blocks=max_blocks, stagger=s).counters
                 for s in weights if s != 0.0})
    c = weighted_counters(runs, weights)
    # held in step, the blocks that share a tile ask for it together: the trailing ones "hit" only on lines still on
    # their way from DRAM, so a stage lands with its slowest line (tc_schedule.HELD_DRAM_ROUND_TRIP)
    cold = (layout.M * layout.K + layout.K * layout.N) * layout.elem > m.l2.size  # else warm from the last launch
    dram_wait = tcs.HELD_DRAM_ROUND_TRIP and holds and cold and c["dram_bytes_read"] > 0
    c.update(tc_restoring_gain=gain, tc_holds=int(holds), tc_stagger_mean=sum(s * w for s, w in weights.items()),
             tc_schedule_runs=len(runs), tc_dram_round_trip=int(dram_wait))
    return c


def _run_gemm(m: GPUMachine, case: Case) -> dict:
    if case.M is None or case.N is None or case.K is None:
        raise KernelError(f"kernel {case.kernel!r} needs a GEMM shape (M, N, K)")
    kernel = GPU_KERNELS[case.kernel]
    params = kernel.params(**case.params)
    spec = kernel.spec(params, case.dtype, m, M=case.M)
    M, N, K = case.M, case.N, case.K
    guards.check_gpu(-(-M // spec.BM) * -(-N // spec.BN), spec.steps(K), f"{case.kernel} M={M} N={N} K={K} {case.dtype} on {m.name}")
    occ = resident(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
    contract = LayoutSpec(**(case.layout or {}))
    layout = Layout.build(M, N, K, case.dtype, contract)
    spec = gpu_contract(spec, layout, contract.beta, contract.epilogue)  # beta != 0 reads C; fused bias epilogue
    l1_bytes = m.l1_size(l1_carveout(m, occ))
    tiles_m, tiles_n = spec.grid(M, N)
    grid = tiles_m * tiles_n
    steps = spec.steps(K)
    wv = waves(m, grid, occ.blocks_per_sm)
    tq = tile_quantization(M, N, spec.BM, spec.BN)
    mem = _launch_memory(m, spec, layout, occ.blocks_per_sm, l1_bytes, params.max_blocks, steps, grid)
    bc = _block_costs(m, spec, mem, steps, grid, occ.blocks_per_sm)
    costs, pcost, clock, wf, wf_ideal, smem_inst = (bc[k] for k in ("costs", "pcost", "clock", "wf", "wf_ideal", "smem_inst"))
    peak, l2_total = bc["peak"], bc["l2_total"]
    smt, pipe = None, None
    if pcost is not None:  # the SM pipeline model: copies in flight, MMAs, barriers
        spread = tcs.work_spread(bool(mem["tc_holds"]), occ.blocks_per_sm) if "tc_holds" in mem else 0.0
        smt, pipe = _pipeline_sm_time(m, spec, pcost, grid, occ.blocks_per_sm, spread)
    t = gt.gpu_time(costs, grid, m.sms, occ.blocks_per_sm, clock, mem["dram_bytes"], m.dram.bandwidth_gbps,
                    l2_total, m.l2.bandwidth_gbps, sm=smt)

    flops = 2.0 * M * N * K
    tflops = flops / t.time_s / 1e12
    ref = reference_traffic(M, N, K, case.dtype, spec.BM, spec.BN)
    row = {
        "flops": flops,
        "dram_bytes": mem["dram_bytes"],
        "intensity_flop_per_byte": flops / mem["dram_bytes"] if mem["dram_bytes"] else float("inf"),
        "time_s": t.time_s,
        "gflops": tflops * 1e3,
        "peak_fraction": tflops / peak,
        "bound": t.bound,
        "tflops": tflops,
        "peak_tflops": peak,
        "tensor_cores": spec.tensor,
        "acc": spec.acc,
        "BM": spec.BM,
        "BN": spec.BN,
        "kstep": spec.kstep,
        "stages": spec.stages,
        "raster": spec.raster,
        "tiles": grid,
        "tiles_m": tiles_m,
        "tiles_n": tiles_n,
        "waves": wv.waves,
        "waves_fractional": wv.waves_fractional,
        "wave_size": wv.wave_size,
        "wave_efficiency": wv.wave_efficiency,
        "tile_efficiency": tq.efficiency,
        "smem_wavefronts": wf * steps * grid,
        "smem_wavefronts_ideal": wf_ideal * steps * grid,
        "smem_conflicts": (wf - wf_ideal) * steps * grid,
        "smem_wavefronts_per_instruction": wf / smem_inst if smem_inst else float("nan"),
        **ref,
        "time_no_reuse_s": ref["dram_bytes_no_reuse"] / (m.dram.bandwidth_gbps * 1e9),
        "time_perfect_reuse_s": ref["dram_bytes_perfect_reuse"] / (m.dram.bandwidth_gbps * 1e9),
        "time_compute_s": flops / (peak * 1e12),
    }
    row.update(_launch_columns(m, occ))
    row.update({k: v for k, v in mem.items() if k not in ("dram_bytes", "blocks_per_sm", "waves")})
    row.update({k: v for k, v in t.columns().items() if k not in ("time_s", "bound")})
    if pipe is not None:
        row.update(pipeline=pcost.kind, pipe_step_clk=pipe.step_clk, pipe_tensor_busy=pipe.tensor_busy,
                   pipe_copy_clk=pcost.copy_total_clk, pipe_compute_clk=pcost.compute_clk, pipe_issue_clk=pcost.issue_clk,
                   pipe_copy_issue_clk=pcost.copy_issue_clk,
                   pipe_closed_form_step_clk=pcost.closed_form_step_clk(), pipe_latency_clk=pipe.latency_clk,
                   pipe_queue_wait_clk=pipe.queue_wait_clk, pipe_copy_phase_clk=pipe.copy_phase_clk,
                   **{f"pipe_rho_{q[0]}": r for q, r in zip(pcost.queues, pipe.rho)},
                   **{f"pipe_{k}_clk": v for k, v in pipe.parts.items()},
                   **{f"pipe_phase_{k}_clk": v for k, v in pipe.phases.items()},
                   **{f"pipe_blocks_{k}": v for k, v in pipe.arrangement.items()})
    row.update(reference_columns(m.name, case.kernel, case.params, spec, M, N, K, case.dtype, clock))
    if isinstance(spec, HopperSpec):
        row.update(cluster=f"{spec.cluster_m}x{spec.cluster_n}", schedule=spec.schedule, persistent=spec.persistent)
    if case.kernel == "seed003_cutlass":
        row.update(_seed003_columns(m, spec, occ, tflops))
    if contract.epilogue == "bias_relu_separate":  # the unfused epilogue: its own launch, C read and written again
        row.update(_separate_epilogue(m, M, N, layout, row))
    # tile quantization in threads and outputs, alignment of the rows, and the Hong-Kung floor (issue 15)
    row.update(threads_launched=grid * spec.threads, tile_outputs_useful=M * N, tile_outputs_padded=grid * spec.BM * spec.BN)
    row.update(alignment_columns(layout, m.l2.sector_bytes))
    row.update(gpu_bound_columns(m, M, N, K, case.dtype, mem["dram_bytes"], mem["l2_bytes"]))
    return row


def _separate_epilogue(m: GPUMachine, M: int, N: int, layout: Layout, row: dict) -> dict:
    """Columns after adding the separate bias + ReLU launch (memory model; time = its bytes at DRAM / L2 bandwidth)."""
    spec, lay = gpu_epilogue_pass(M, N, layout)
    occ = resident(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
    c = simulate_memory(m, spec, lay, occ.blocks_per_sm).counters
    t = max(c["dram_bytes"] / (m.dram.bandwidth_gbps * 1e9), c["l2_bytes"] / (m.l2.bandwidth_gbps * 1e9))
    dram = row["dram_bytes"] + c["dram_bytes"]
    time_s = row["time_s"] + t
    return {"epilogue_dram_bytes": c["dram_bytes"], "epilogue_time_s": t, "dram_bytes": dram, "time_s": time_s,
            "intensity_flop_per_byte": row["flops"] / dram, "gflops": row["flops"] / time_s / 1e9,
            "tflops": row["flops"] / time_s / 1e12, "peak_fraction": row["peak_fraction"] * row["time_s"] / time_s}


def run_case(machine, case: Case) -> dict:
    """Simulate one GPU case and return its result columns (the common columns first)."""
    if not isinstance(machine, GPUMachine):
        raise wrong_kind(machine, "gpu", "simulate_gpu")
    if case.kernel not in KERNELS:
        raise KernelError(f"unknown GPU kernel {case.kernel!r}; known: {', '.join(sorted(KERNELS))}")
    try:
        params = KERNELS[case.kernel](**case.params)
    except ValidationError as err:
        raise KernelError(f"invalid parameters for kernel {case.kernel!r}", problems=validation_problems(err)) from None
    guards.positive_dims(f"{case.kernel} on {machine.name}", M=case.M, N=case.N, K=case.K)
    if case.kernel == "smem_pattern":
        return _run_smem_pattern(machine, params)
    if case.kernel == "global_pattern":
        return _run_global_pattern(machine, params)
    if case.kernel in ("waves_sleep", "waves_fma"):
        return _run_waves(machine, case.kernel, params, case)
    if case.kernel in ATTENTION_KERNELS:
        return sim_attention.run_case(machine, case)
    row = _run_gemm(machine, case)
    row.update(sol_columns(row, machine))  # Nsight Compute's speed of light, from the same counters
    return row


def simulate_gpu(machine, kernel: str, M: int | None = None, N: int | None = None, K: int | None = None,
                 dtype: str = "fp32", layout: dict | None = None, **params) -> dict:
    """Simulate one GPU kernel on a machine (a GPUMachine or a machine name) and return its result row.

    Example: ``simulate_gpu("h100", "tiled_smem", M=2048, N=2048, K=2048, raster="grouped")`` gives
    ``dram_bytes_read``, ``l2_hit_rate``, ``waves``, ``time_s``, ``bound`` ... (see ``run_case``).
    """
    if isinstance(machine, str):
        from gemmsim.machine import load_machine

        machine = load_machine(machine)
    if getattr(machine, "kind", None) != "gpu":
        raise wrong_kind(machine, "gpu", "simulate_gpu")
    case = Case(experiment="simulate_gpu", machine=machine.name, kernel=kernel, params=params, M=M, N=N, K=K,
                dtype=dtype, layout=layout or {})
    return run_case(machine, case)
