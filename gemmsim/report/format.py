"""One number formatter for tables, figures and readings, and the glossary of result columns.

Every number a reader sees goes through ``value(col, v)`` (a result column's value with its unit) or ``eng(x,
unit)`` (engineering form: three significant digits and an SI prefix, ``1.05 MB``, ``505 ps``,
``154 TFLOP/s``). ``header(col)`` is the short table header and ``axis_label(col)`` the axis label with its unit;
``describe(col)`` is the glossary line (``gemmsim columns`` prints them all). Columns are known by exact name or by
pattern (``<LEVEL>_hit_rate``, ``<LEVEL>_traffic_bytes`` ...).

Bytes use decimal prefixes (1 kB = 1000 B) like the bandwidths they are divided by; machine sizes (32 KiB)
keep their binary units where they are written.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n"), (1e-12, "p"), (1e-15, "f"))


def finite(x) -> bool:
    """True for a finite int or float (not a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def eng(x, unit: str = "", digits: int = 3) -> str:
    """``x`` in engineering form with ``digits`` significant digits and an SI prefix: 1048576 B -> '1.05 MB',
    5.05e-10 s -> '505 ps', 1.5442e14 FLOP/s -> '154 TFLOP/s'; '-' for a missing or non-finite value."""
    if not finite(x):
        return "inf" if isinstance(x, float) and math.isinf(x) else "-"
    sep = " " if unit else ""
    if x == 0:
        return f"0{sep}{unit}"
    a = abs(x)
    for f, p in _PREFIXES:
        if a >= f * (1 - 0.5 * 10 ** (-digits)):
            v = x / f
            if abs(round(v, max(0, digits - 1 - int(math.floor(math.log10(abs(v))))))) >= 1000 and p != "T":
                continue  # 999.7 k rounds to 1000 k: go up one prefix
            return f"{_sig(v, digits)} {p}{unit}" if (p or unit) else _sig(v, digits)
    return f"{x:.{digits}g}{sep}{unit}"


def _sig(v: float, digits: int) -> str:
    """v with ``digits`` significant digits, no exponent, trailing zeros of the fraction dropped."""
    if v == 0:
        return "0"
    dec = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))
    s = f"{v:.{dec}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def seconds(s) -> str:
    """A time in seconds with its unit: 5.05e-10 -> '505 ps', 0.0021 -> '2.1 ms'."""
    return eng(s, "s")


def nbytes(n) -> str:
    """A byte count: 1048576 -> '1.05 MB'."""
    return eng(n, "B")


def kib(n) -> str:
    """A size in binary units, as machine files and CUDA write them: 73728 -> '72 KiB', 1572864 -> '1.5 MiB'."""
    if not finite(n):
        return "-"
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= f:
            return f"{_sig(n / f, 3)} {unit}"
    return f"{int(n)} B"


def percent(x, digits: int = 3) -> str:
    """A fraction as a percentage: 1.0 -> '100 %', 0.5412 -> '54.1 %', 0.000123 -> '0.0123 %'."""
    if not finite(x):
        return "-"
    v = 100 * x
    if v == 0:
        return "0 %"
    if abs(v) >= 10 ** (digits - 1):
        return f"{v:.0f} %"
    return f"{_sig(v, digits)} %"


def flop_rate(gflops) -> str:
    """A rate given in GFLOP/s, in engineering form: 154410 -> '154 TFLOP/s', 0.5 -> '500 MFLOP/s'."""
    return eng(gflops * 1e9, "FLOP/s") if finite(gflops) else "-"


def count(n) -> str:
    """A count: exact below 100 000 ('12,288'), engineering form above ('1.05 M')."""
    if not finite(n):
        return "-"
    if float(n).is_integer() and abs(n) < 100_000:
        return f"{int(n):,}"
    if abs(n) >= 100_000:
        return eng(n)
    return _sig(n, 3)


def number(x) -> str:
    """A plain number without a unit: three significant digits, no exponent between 1e-3 and 1e5."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not finite(x):
        return "inf" if isinstance(x, float) and math.isinf(x) else "-"
    if isinstance(x, int) or float(x).is_integer():
        return count(x)
    if 1e-3 <= abs(x) < 1e5:
        return _sig(x, 3)
    return eng(x)


# ------------------------------------------------------------------------------------------------------------
# The column glossary


@dataclass(frozen=True)
class Column:
    """How a result column is shown: its header, its kind of value (unit) and what it means."""

    header: str
    kind: str  # time, bytes, fraction, flop_rate, count, ratio, number, text, flop_per_byte, cycles
    doc: str


#: Columns by exact name (identity, time, bytes, the GPU and systolic counters the headlines use).
COLUMNS: dict[str, Column] = {
    "machine": Column("machine", "text", "Machine name (a file in machines/, or 'host' for this computer)."),
    "kernel": Column("kernel", "text", "Kernel name as written in the experiment."),
    "label": Column("kernel", "text", "The kernel's label in the experiment (default: its name)."),
    "shape": Column("M x N x K", "text", "GEMM shape: C (M x N) += A (M x K) @ B (K x N)."),
    "dtype": Column("dtype", "text", "Element type of A, B and C."),
    "flops": Column("FLOPs", "count", "Floating-point operations, 2MNK."),
    "time_s": Column("model time", "time", "Modelled run time: the largest of the model's roofs (see 'bound')."),
    "bound": Column("bound", "text", "The roof that sets the modelled time (compute, issue, a cache level, dram, latency, smem ...)."),
    "gflops": Column("model FLOP/s", "flop_rate", "Modelled throughput: flops / time_s."),
    "tflops": Column("model FLOP/s", "tflop_rate", "Modelled throughput (given in TFLOP/s)."),
    "peak_fraction": Column("% peak", "fraction", "Modelled throughput as a share of the machine's peak for the dtype."),
    "dram_bytes": Column("DRAM bytes", "bytes", "Bytes read from and written to DRAM, including the final write-back of lines still dirty at the end."),
    "dram_flush_bytes": Column("flush bytes", "bytes", "Of dram_bytes: the final write-back of lines still dirty in a cache at the end (C)."),
    "intensity_flop_per_byte": Column("FLOP/byte", "flop_per_byte", "Arithmetic intensity: flops / dram_bytes (the roofline's x axis)."),
    "ideal_intensity_flop_per_byte": Column("ideal FLOP/byte", "flop_per_byte", "Compulsory intensity 2MNK / (s (MK + KN + MN)): A, B, C moved once."),
    "host_time_s": Column("host time", "time", "Measured time of the same kernel on this computer (median of the repeats)."),
    "host_time_min_s": Column("host min", "time", "Fastest of the host repeats."),
    "host_time_max_s": Column("host max", "time", "Slowest of the host repeats."),
    "host_spread": Column("host spread", "fraction", "(max - min) / median of the host repeats: how far two host times must differ to rank."),
    "host_ok": Column("host ok", "text", "The host result matched numpy within the rounding-error bound."),
    "host_gflops": Column("host FLOP/s", "flop_rate", "Measured throughput on this computer."),
    "threads": Column("threads", "count", "Threads (cores) the kernel runs on."),
    "working_set_bytes": Column("working set", "kib", "A blocked kernel's tile working set s(BM*BK + BK*BN + BM*BN)."),
    # GPU
    "blocks_per_sm": Column("blocks/SM", "count", "Thread blocks resident on one SM at once (the occupancy limit)."),
    "occupancy": Column("occupancy", "fraction", "Resident warps / the SM's warp slots."),
    "tiles": Column("tiles", "count", "Output tiles (thread blocks) the grid launches."),
    "waves": Column("waves", "number", "Tiles / (SMs x blocks per SM): waves of blocks the GPU runs."),
    "wave_size": Column("wave size", "count", "Blocks the whole GPU runs at once: SMs x blocks per SM."),
    "wave_efficiency": Column("wave eff.", "fraction", "Tiles / (whole waves x wave size): the share of the last wave's slots that do work."),
    "tile_efficiency": Column("tile eff.", "fraction", "Useful share of the padded tiles (edge tiles do partial work)."),
    "wavefronts": Column("wavefronts", "count", "Shared-memory wavefronts (128 B per clock) one warp instruction takes."),
    "ideal_wavefronts": Column("ideal wf", "count", "Wavefronts without bank conflicts: 1, 2 or 4 for 4-, 8-, 16-byte accesses."),
    "bank_conflicts": Column("conflicts", "count", "Wavefronts beyond the ideal: lanes waiting for a bank another lane uses."),
    "smem_efficiency": Column("smem eff.", "fraction", "Bytes requested / bytes the wavefronts could have served."),
    "sectors": Column("sectors", "count", "32-byte DRAM/L2 sectors one warp request touches."),
    "sectors_per_request": Column("sectors/req", "number", "32-byte sectors one warp request touches (4 for 32 consecutive floats)."),
    "ideal_sectors": Column("ideal sectors", "count", "Sectors the requested bytes need at best."),
    "coalescing_efficiency": Column("efficiency", "fraction", "Bytes requested / bytes moved in whole sectors."),
    "gmem_efficiency": Column("efficiency", "fraction", "Bytes requested / bytes moved in whole sectors."),
    "l2_hit_rate": Column("L2 hit", "fraction", "Share of L2 reads served by the L2 (the GPU's, both partitions)."),
    "l2_chip_hit_rate": Column("L2 chip hit", "fraction", "Share of reads served by either L2 partition (a copy in the far partition counts)."),
    "dram_bytes_no_reuse": Column("no-reuse bytes", "bytes", "Seed 001's crude model: every block reads its A and B panels from DRAM."),
    "dram_bytes_perfect_reuse": Column("perfect-reuse bytes", "bytes", "A and B read once, C written once: the compulsory traffic."),
    "sectors_ideal": Column("ideal sectors", "count", "Sectors the requested bytes need at best."),
    "bytes_requested": Column("bytes used", "bytes", "Bytes the lanes asked for."),
    "bytes_moved": Column("bytes moved", "bytes", "Bytes the sectors (or wavefronts) carried."),
    "lines": Column("lines", "count", "128-byte cache lines the request touches."),
    "seed_measured_tflops": Column("seed measured", "tflop_rate", "The seed's measured throughput for this case."),
    "stages": Column("stages", "count", "Software-pipeline stages (copies in flight) of the kernel."),
    "pipeline": Column("pipeline", "text", "SM pipeline of a tensor-core kernel: multistage (cp.async, S-1 copies in flight) or warp_specialized (TMA producer, S in flight)."),
    "pipe_step_clk": Column("step clk", "number", "SM cycles between two k-steps of one block in steady state (gemmsim.models.sm_pipeline)."),
    "pipe_closed_form_step_clk": Column("step clk (1 block)", "number", "The step of one block alone on an SM, worked by hand: max(barrier + compute, (barrier + copy)/(S-1), transfer)."),
    "pipe_tensor_busy": Column("tensor busy", "fraction", "Share of the SM's tensor-pipe capacity the resident blocks use in steady state."),
    "pipe_copy_clk": Column("copy clk", "number", "One k-step's copy from issue to data: bytes at the SM's share of bandwidth plus L2/DRAM latency."),
    "pipe_compute_clk": Column("compute clk", "number", "One block's compute phase of a k-step alone on the SM: MMAs, instruction issue or shared pipe."),
    "pipe_issue_clk": Column("issue clk", "number", "Non-MMA compute instructions one warp executes per k-step (one clock each, beside its MMAs)."),
    "pipe_copy_issue_clk": Column("copy issue clk", "number", "Copy instructions (cp.async and their addresses) one warp executes per k-step, one clock each."),
    "pipe_copy_wait_clk": Column("copy wait", "number", "Cycles per k-step a block waits for its stage's copy (ncu's long scoreboard)."),
    "pipe_barrier_clk": Column("barrier", "number", "Cycles per k-step in barriers and the first shared read after them."),
    "pipe_mma_clk": Column("MMA clk", "number", "Cycles per k-step of the block's MMAs (or instruction issue) on its busiest sub-partition."),
    "tc_holds": Column("blocks in step", "count", "1 where a tensor-core launch's blocks hold in step (an L2 hit shortens a trailing block's step more than a busy SM pushes blocks apart), 0 where its waves drift apart (gemmsim.models.tc_schedule)."),
    "tc_restoring_gain": Column("L2-hit gain", "fraction", "How much shorter the unloaded k-step is with every copy from L2 than from DRAM: what a block that trails its neighbours gains."),
    "tc_stagger_mean": Column("mean spread", "fraction", "The launch's blocks' starts spread over this much of a block, averaged over its waves (0: in step; 1: even)."),
    "tc_schedule_runs": Column("memory runs", "count", "Schedules the memory model simulated for the launch (1 in step; up to 3 for drifting waves)."),
    "tc_dram_round_trip": Column("copies wait for DRAM", "count", "1 where the blocks hold in step and A and B do not fit in the L2: every stage waits for a line still on its way from DRAM, so a copy takes a DRAM access's whole latency (0: the latency by L2 hit rate)."),
    "pipe_contention_clk": Column("contention", "number", "Cycles per k-step the compute phase waits for pipes other blocks hold, or for shared memory."),
    "measured_tflops": Column("measured", "tflop_rate", "Throughput measured on real hardware for this configuration (shown beside the model, never an input)."),
    "measured_sm_mhz": Column("measured MHz", "number", "SM clock the measured launches ran at."),
    "measured_tflops_at_model_clock": Column("measured @ model clock", "tflop_rate", "The measured throughput rescaled to the clock the model ran at."),
    "cluster": Column("cluster", "text", "Thread-block cluster shape (M x N) of a Hopper kernel; TMA multicasts shared tiles within it."),
    "schedule": Column("schedule", "text", "cooperative (both consumer warpgroups on one tile) or pingpong (one tile each)."),
    "persistent": Column("persistent", "text", "One CTA per SM looping over tiles (True) or one CTA per tile."),
    "workload": Column("workload", "text", "Workload the GEMM belongs to."),
    "phase": Column("phase", "text", "prefill (a GEMM over all tokens) or decode (one new token per sequence)."),
    "op": Column("op", "text", "The Transformer op (qkv, qk, pv, out_proj, ffn_up, ffn_down)."),
    "op_time_share": Column("time share", "fraction", "Share of the workload's modelled time this op takes (time x count)."),
    "op_time_s": Column("op time", "time", "time_s x count: the op's total time in the workload."),
    "count": Column("count", "count", "How many times the workload runs this GEMM."),
    "batch": Column("batch", "count", "Sequences in the batch."),
    "kc": Column("KC", "count", "Packed panel depth (the k block)."),
    "mc": Column("MC", "count", "Rows of the packed A block."),
    "nc": Column("NC", "count", "Columns of the packed B panel."),
    "mr": Column("MR", "count", "Microkernel tile rows."),
    "nr": Column("NR", "count", "Microkernel tile columns."),
    "fma_latency_hidden": Column("FMA latency hidden", "text", "Enough independent accumulators to hide the FMA latency."),
    "edge_partial_fraction": Column("partial share", "fraction", "Share of C in partial microkernel tiles."),
    "ghost_flops": Column("ghost FLOPs", "count", "FLOPs spent on zero padding."),
    "edge_ratio_scalar_blocks": Column("64-block ratio", "ratio", "Seed 000's estimate: cost with a scalar tail 8x slower, 64-blocks."),
    "array_dtype": Column("array dtype", "text", "The type the array computed in."),
    "M": Column("M", "count", "Rows of A and C."),
    "N": Column("N", "count", "Columns of B and C."),
    "K": Column("K", "count", "Columns of A, rows of B (the reduction)."),
    "machine_kind": Column("kind", "text", "cpu, gpu or systolic."),
    "case_key": Column("case", "text", "Hash of the case (kernel, parameters, shape, dtype, layout) in the results cache."),
    "sim_wall_s": Column("sim wall", "time", "Wall time the simulation of this case took (not a model output)."),
    "from_cache": Column("cached", "text", "The result was read from the results cache, not recomputed."),
    "lane_addresses": Column("lane addresses", "text", "Byte address each of the 32 lanes reads."),
    "memory_line_reads": Column("DRAM line reads", "count", "Lines the last cache level read from DRAM."),
    "memory_line_writes": Column("DRAM line writes", "count", "Lines written back to DRAM during the run (without the final flush)."),
    "memory_flush_line_writes": Column("flush lines", "count", "Lines still dirty at the end, written back once by the final flush."),
    "dram_flush_exact": Column("flush exact", "text", "The flush counted distinct dirty lines (yes) or summed the levels' dirty_at_end (an upper bound)."),
    "time_ecm_s": Column("ECM time", "time", "Execution-Cache-Memory estimate: in-core time plus every transfer added up (no overlap)."),
    "simd": Column("SIMD", "text", "The kernel computes with vector instructions."),
    "peak_tflops": Column("peak", "tflop_rate", "The machine's peak for this dtype and unit."),
    "smem_bytes_per_clk_effective": Column("smem B/clk", "number", "Shared-memory bytes per clock this pattern gets."),
    "rank_tau": Column("Kendall tau", "number", "Kendall's tau of model and host medians for this shape (ties counted as disagreement; see the ranking note)."),
    "claim_check": Column("claim check", "text", "Whether the seed's claims can hold, in words."),
    "smem_per_block": Column("smem/block", "kib", "Shared memory one block allocates."),
    "regs_per_thread": Column("regs/thread", "count", "Registers per thread."),
    # issue 15: bounds, layouts, attention, contract, pyramid
    "hong_kung_bytes": Column("Hong-Kung floor", "bytes", "Least DRAM traffic any schedule of the classical GEMM can move with the chip's fast memory: max(2MNK/sqrt(S) - 2S, MK+KN+MN) words."),
    "traffic_over_bound": Column("x floor", "ratio", "dram_bytes / hong_kung_bytes: how far the kernel is from the communication lower bound."),
    "threads_launched": Column("threads", "count", "Threads the grid launches (tiles x threads per block)."),
    "tile_outputs_useful": Column("useful outputs", "count", "Elements of C: M x N."),
    "tile_outputs_padded": Column("computed outputs", "count", "Elements the tiles compute, padding included: tiles x BM x BN."),
    "vector_load_16B_possible": Column("16B loads", "text", "Every row of A, B and C starts on a 16-byte boundary, so 16-byte vector loads are possible."),
    "rows_16B_aligned": Column("rows 16B-aligned", "text", "Every row of A, B and C starts on a 16-byte boundary."),
    "ld_multiple_of_8": Column("ld % 8 == 0", "text", "Every leading dimension is a multiple of 8 elements."),
    "ldb_elements": Column("ldb", "count", "Leading dimension of B as stored, elements."),
    "b_column_lines": Column("column lines", "count", "Distinct cache lines one column of B spans."),
    "closed_form_dram_bytes": Column("closed form", "bytes", "The hand formula of the same DRAM traffic (gemmsim.analytic)."),
    "kv_fraction": Column("KV share", "fraction", "Share of a decode step's DRAM bytes that are the KV cache."),
    "bytes_per_token": Column("bytes/token", "bytes", "DRAM bytes per generated token (one layer): weights + KV cache."),
    "crossover_context": Column("crossover", "count", "Context length at which the KV-cache read equals the weight read."),
    "avg_latency_cycles": Column("latency", "number", "Average load-to-use latency of a dependent load, cycles (TLB misses included)."),
    "avg_latency_ns": Column("latency ns", "number", "Average load-to-use latency of a dependent load, ns."),
    "served_by": Column("served by", "text", "The level that serves most of the loads."),
    "chase_bytes": Column("working set", "bytes", "Bytes the pointer chase cycles through."),
    "avg_tlb_cycles": Column("TLB cycles", "number", "Average TLB miss penalty per dependent load, cycles."),
    "avg_cache_latency_cycles": Column("cache latency", "number", "Average latency per dependent load without the TLB, cycles."),
    "measured_latency_ns": Column("measured ns", "number", "The host's measured pointer-chase latency at this working set (machines detect --measure)."),
    "model_over_measured": Column("model/measured", "ratio", "Modelled over measured latency (1 = exact)."),
    "fit_point": Column("fit point", "text", "The machine file's latencies were set from a measurement at (about) this size: not a check of the model."),
    "seq_len": Column("L", "count", "Tokens per sequence."),
    "context": Column("context", "count", "Tokens in the KV cache."),
    "kv_heads": Column("KV heads", "count", "K/V heads: = heads (MHA), fewer (GQA), 1 (MQA)."),
    "batch_heads": Column("B x h", "count", "Independent attention heads: batch x heads."),
    "epilogue_dram_bytes": Column("epilogue bytes", "bytes", "DRAM bytes of the separate bias + ReLU pass."),
    # systolic
    "utilization": Column("utilization", "fraction", "Useful MACs / (PEs x total cycles)."),
    "mapping_efficiency": Column("mapping eff.", "fraction", "Share of the PEs a fold maps work onto."),
    "folds": Column("folds", "count", "Weight (or output) tiles the array processes one after another."),
    "total_cycles": Column("cycles", "count", "compute_cycles + stall_cycles."),
    "compute_cycles": Column("compute cyc", "count", "Cycles of tile load, fill, stream and drain."),
    "stall_cycles": Column("stall cyc", "count", "Cycles waiting for DRAM."),
    # CPU
    "registers_used": Column("registers", "count", "Vector registers the microkernel tile needs."),
    "registers_spilled": Column("spilled", "count", "Accumulators that do not fit the registers and go through the stack."),
    "L1_invalidations": Column("L1 invalidations", "count", "L1 lines a core lost because another core wrote them (false or true sharing)."),
    "c_lines_shared_by_threads": Column("shared C lines", "count", "Lines of C written by two threads."),
    "compute_slowdown": Column("slowdown", "ratio", "Compute time of the edge strategy over a perfect multiple of the tile."),
    "edge_partial_fraction_blocks": Column("partial share", "fraction", "Share of C in partial blocks."),
}

#: Columns known by pattern: (regex, header template, kind, doc template); {0} is the level or panel name.
PATTERNS: list[tuple[str, str, str, str]] = [
    (r"hong_kung_bytes_(.+)", "floor {0}", "bytes", "Hong-Kung floor on the traffic below {0} (fast memory: {0} and everything above it)."),
    (r"traffic_over_bound_(.+)", "x floor {0}", "ratio", "Traffic below {0} over its Hong-Kung floor."),
    (r"b_column_sets_(.+)", "{0} sets", "count", "Sets of {0} one column of B maps to (the set histogram in one number)."),
    (r"b_column_capacity_lines_(.+)", "{0} room", "count", "Lines of one column of B that {0} can hold: sets touched x ways."),
    (r"served_(.+)_fraction", "{0} share", "fraction", "Share of the chase's loads {0} serves."),
    (r"sol_(.+)_pct", "SOL {0} %", "number", "Speed of light: how busy {0} is over the modelled time, % of its peak (Nsight Compute's throughput %; gemmsim.timing.sol names the ncu metric)."),
    (r"(.+)_(A|B|C|other)_(compulsory|capacity|conflict)", "{0} {1} {2}", "count", "Misses in {0} of accesses to {1} that were {2} (Hill's 3C)."),
    (r"(.+)_(A|B|C|other)_miss_rate", "{0} {1} miss", "fraction", "Share of the accesses to {1} that missed in {0}."),
    (r"(.+)_(A|B|C|other)_misses", "{0} {1} misses", "count", "Accesses to {1} that missed in {0}."),
    (r"(.+)_(A|B|C|other)_accesses", "{0} {1} accesses", "count", "Line accesses to {1} at {0}."),
    (r"(.+)_(A|B|C|other)_fill_bytes", "{0} {1} fills", "bytes", "Bytes {0} brought in for {1} (its misses x the line size)."),
    (r"(.+)_compulsory", "{0} compulsory", "count", "Misses in {0} that were the first touch of their line."),
    (r"(.+)_capacity", "{0} capacity", "count", "Misses in {0} that a fully associative LRU cache of the same size would also have."),
    (r"(.+)_conflict", "{0} conflict", "count", "Misses in {0} that a fully associative cache of the same size would have served: too many lines in a few sets."),
    (r"(.+)_hit_rate", "{0} hit", "fraction", "Share of the {0} accesses (line accesses: loads and stores) that hit."),
    (r"(.+)_miss_rate", "{0} miss", "fraction", "Share of the {0} lookups that miss (a TLB: page walks)."),
    (r"(.+)_traffic_bytes", "{0} traffic", "bytes", "Bytes moved between {0} and the level below it (line fills and write-backs; the last level: DRAM incl. the final flush)."),
    (r"(.+)_accesses", "{0} accesses", "count", "Line accesses at {0}."),
    (r"(.+)_misses", "{0} misses", "count", "Line accesses that missed in {0}."),
    (r"(.+)_hits", "{0} hits", "count", "Line accesses that hit in {0}."),
    (r"(.+)_writebacks", "{0} write-backs", "count", "Dirty lines {0} evicted and wrote to the level below."),
    (r"(.+)_dirty_at_end", "{0} dirty at end", "count", "Dirty lines still in {0} at the end (flushed into dram_bytes)."),
    (r"(.+)_invalidations", "{0} invalidations", "count", "{0} lines a core lost because another core wrote them."),
    (r"p_(.+)", "{0}", "param", "Kernel parameter {0}."),
    (r"layout_(.+)", "layout {0}", "text", "Memory layout field {0} of A, B and C."),
    (r"t_(.+)_s", "t {0}", "time", "The model's roof for {0}: the time that resource alone would take."),
    (r"(.+)_s", "{0}", "time", "A time in seconds ({0})."),
    (r"(.+)_bytes", "{0}", "bytes", "Bytes ({0})."),
    (r"(.+)_frac_(.+)", "{0} share of {1}", "fraction", "Share of the {1} cache the {0} panel takes."),
]


def column(col: str) -> Column | None:
    """The glossary entry of a result column, exact or by pattern; None if unknown."""
    if col in COLUMNS:
        return COLUMNS[col]
    for rx, head, kind, doc in PATTERNS:
        m = re.fullmatch(rx, col)
        if m:
            return Column(head.format(*m.groups()), kind, doc.format(*m.groups()))
    return None


def header(col: str) -> str:
    """The short table header of a column (its name when the glossary does not know it)."""
    c = column(col)
    return c.header if c else col


_UNIT = {"time": "s", "bytes": "B", "kib": "B", "flop_rate": "FLOP/s", "tflop_rate": "FLOP/s", "fraction": "%", "flop_per_byte": "FLOP/B", "cycles": "cycles"}


def axis_label(col: str) -> str:
    """An axis label: the column's name in words with its unit ('modelled time (s)', 'DRAM bytes (B)')."""
    c = column(col)
    if c is None:
        return col
    name = {"time_s": "modelled time", "gflops": "modelled FLOP/s", "tflops": "modelled FLOP/s", "p_threads": "threads"}.get(col, c.header)
    unit = _UNIT.get(c.kind)
    return f"{name} ({unit})" if unit and unit not in name else name


def scale(col: str) -> float:
    """Factor from the stored value to the unit of ``axis_label`` (fractions to %, GFLOP/s to FLOP/s)."""
    c = column(col)
    kind = c.kind if c else ""
    return {"fraction": 100.0, "flop_rate": 1e9, "tflop_rate": 1e12}.get(kind, 1.0)


def value(col: str, v) -> str:
    """One value of a result column with its unit, as tables and readings show it."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, str):
        return v
    c = column(col)
    kind = c.kind if c else "number"
    if not finite(v):
        return "inf" if isinstance(v, float) and math.isinf(v) else "-"
    if kind == "time":
        return seconds(v)
    if kind == "bytes":
        return nbytes(v)
    if kind == "kib":
        return kib(v)
    if kind == "fraction":
        return percent(v)
    if kind == "flop_rate":
        return flop_rate(v)
    if kind == "tflop_rate":
        return eng(v * 1e12, "FLOP/s")
    if kind == "flop_per_byte":
        return f"{number(v)}"
    if kind == "ratio":
        return f"{number(v)}x"
    if kind == "count":
        return count(v)
    return number(v)


def glossary(cols=None) -> list[tuple[str, str, str]]:
    """(column, header, meaning) for ``cols`` (default: every exact column and every pattern)."""
    if cols is None:
        out = [(k, c.header, c.doc) for k, c in COLUMNS.items()]
        out += [(rx.replace("(.+)", "<X>").replace("\\", ""), h.replace("{0}", "<X>").replace("{1}", "<Y>"), d.replace("{0}", "<X>").replace("{1}", "<Y>")) for rx, h, _, d in PATTERNS]
        return out
    out = []
    for k in cols:
        c = column(k)
        out.append((k, c.header if c else k, c.doc if c else "(not in the glossary)"))
    return out
