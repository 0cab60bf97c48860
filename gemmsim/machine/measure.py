"""Microbenchmarks of this host: the numbers ``machines detect --measure`` writes instead of estimates.

Each benchmark is short (milliseconds to a second) and reports the best of a few repetitions (the least disturbed
by other processes on a shared machine). What each measures and how:

- ``clock_ghz``: a chain of dependent integer adds (x86-64 inline assembly, ``addq reg, reg``, 16 per loop trip;
  one add retires per cycle when each needs the previous one's result) timed with ``time.perf_counter``: adds per
  second = cycles per second. This is the clock the core actually runs at (turbo included), which the timing model
  needs, not the nominal one lscpu prints. None on other architectures (the caller keeps lscpu's clock).
- ``fma_latency_cycles``: one chain of dependent vector FMAs (``llvm.fma``, x = x * a + b, full vector width), cycles
  per FMA. ``fma_units``: many independent chains (enough to cover latency x 2 units twice over), vector FMAs per
  cycle, rounded.
- ``chase_ns(size)``: pointer chasing (lmbench's lat_mem_rd): one index per cache line, the lines of a working set
  of ``size`` bytes linked in one random cycle, so every load needs the previous one's result and a stream
  prefetcher cannot guess the next line. Pages are visited in a random order and the 64 lines of each page
  together in a random order, so TLB misses (which the timing model counts separately) add little. ns per load;
  the staircase of these against size shows each cache level's latency. An adjacent-line prefetcher may still
  fetch some lines early, so latencies beyond L2 can read a little low. The chase is an indexed load
  (``i = nxt[i]``), whose address arithmetic adds a cycle or two to the load-to-use latency vendors quote (7 cycles
  measured for L1 on a Sapphire Rapids guest, against Intel's 5): what a compiled loop of dependent loads pays.
- ``read_bytes_per_cycle(size)`` / ``write_bytes_per_cycle(size)``: streaming a ``size``-byte float32 array
  (a vectorised sum, or a vectorised fill) many times; bytes per cycle of the measured clock. Working sets that fit
  a level give that level's bandwidth; one far beyond the last level gives DRAM's.

``measure_host(caches)`` runs them all for a list of cache levels (size in bytes) in well under a minute and returns
measured fields plus the raw staircase.
"""

from __future__ import annotations

import functools
import math
import platform
import time
from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import RequireLiteralValue
from numba.extending import intrinsic

#: Adds per trip of the clock loop.
_CHAIN = 16

#: Lines per 4 KiB page (64-byte lines): the pointer chase visits a page's lines together, in a random order, so
#: a TLB miss (a page walk, costly under virtualisation) is paid once per 64 loads, not on every load.
PAGE_LINES = 64


def _is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


@intrinsic
def _add_chain(typingctx, x, n):
    """x plus 16 n register adds, each needing the one before (x86-64 inline assembly the compiler cannot fold)."""

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        # register + register: some cores (Intel Golden Cove) fold chains of add-immediate at rename, in zero cycles
        asm = ir.InlineAsm(ir.FunctionType(i64, [i64, i64]), "addq $2, $0", "=r,0,r", side_effect=True)
        slot = cgutils.alloca_once_value(builder, args[0])
        with cgutils.for_range(builder, args[1]) as loop:
            v = builder.load(slot)
            step = builder.or_(loop.index, ir.Constant(i64, 1))
            for _ in range(_CHAIN):
                v = builder.call(asm, [v, step])
            builder.store(v, slot)
        return builder.load(slot)

    return types.int64(types.int64, types.int64), codegen


@njit
def _clock_loop(x, n):
    return _add_chain(x, n)


@intrinsic
def _fma_chains(typingctx, x, n, CH, LANES):
    """CH independent chains of vector FMAs (LANES float32 lanes each), n steps each; returns the sum of all lanes."""
    for lit in (CH, LANES):
        if not isinstance(lit, types.IntegerLiteral):
            raise RequireLiteralValue(lit)
    ch, lanes = CH.literal_value, LANES.literal_value

    def codegen(context, builder, sig, args):
        f32 = ir.FloatType()
        vt = ir.VectorType(f32, lanes)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt] * 3), f"llvm.fma.v{lanes}f32")
        xv = builder.fptrunc(args[0], f32)
        splat = builder.insert_element(ir.Constant(vt, None), xv, ir.Constant(ir.IntType(32), 0))
        splat = builder.shuffle_vector(splat, ir.Constant(vt, None), ir.Constant(ir.VectorType(ir.IntType(32), lanes), None))
        # a = 0.999999, b = x * 1e-7: the chains stay finite and depend on the runtime x (nothing folds)
        a = builder.fsub(ir.Constant(vt, [1.0] * lanes), builder.fmul(splat, ir.Constant(vt, [1e-6] * lanes)))
        b = builder.fmul(splat, ir.Constant(vt, [1e-7] * lanes))
        slots = []
        for c in range(ch):
            s = cgutils.alloca_once(builder, vt)
            builder.store(builder.fadd(splat, ir.Constant(vt, [float(c)] * lanes)), s)
            slots.append(s)
        with cgutils.for_range(builder, args[1]):
            for s in slots:
                builder.store(builder.call(fma, [builder.load(s), a, b]), s)
        total = ir.Constant(f32, 0.0)
        for s in slots:
            v = builder.load(s)
            for i in range(lanes):
                total = builder.fadd(total, builder.extract_element(v, ir.Constant(ir.IntType(32), i)))
        bits = max(lanes * 32, 128)
        if bits > 256:
            set.add(builder.function.attributes, f'"min-legal-vector-width"="{bits}"')
        return builder.fpext(total, ir.DoubleType())

    return types.float64(types.float64, types.int64, CH, LANES), codegen


def _fma_runner(chains: int, lanes: int):
    @njit
    def run(x, n):
        return _fma_chains(x, n, chains, lanes)

    return run


@njit
def _chase(nxt, steps):
    i = 0
    for _ in range(steps):
        i = nxt[i]
    return i


@njit(fastmath=True)
def _read(a, reps):
    s = np.float32(0.0)
    for _ in range(reps):
        for i in range(a.size):
            s += a[i]
    return s


@njit
def _write(a, reps):
    for r in range(reps):
        v = np.float32(r)
        for i in range(a.size):
            a[i] = v


def _best(fn, repeats: int = 3) -> float:
    """Smallest wall time of ``repeats`` calls of fn (seconds)."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def clock_ghz(adds: int = 4_000_000, repeats: int = 30) -> float | None:
    """The core clock measured by a dependent add chain (x86-64 only; None elsewhere): the fastest of ``repeats``
    short runs, as a run can only be slowed (by other processes, or the vCPU descheduled), never sped up."""
    if not _is_x86_64():
        return None
    import llvmlite.binding as ll

    try:
        ll.initialize_native_asmparser()  # numba does not; the inline assembly needs it
    except Exception:  # noqa: BLE001 - an llvmlite without it: no measured clock
        return None
    _clock_loop(0, 1)
    trips = max(1, adds // _CHAIN)
    t = _best(lambda: _clock_loop(1, trips), repeats)
    return trips * _CHAIN / t / 1e9


@functools.lru_cache(maxsize=1)
def host_vector_bits() -> int:
    """Widest vector register LLVM may use on this host: 512 (AVX-512F), 256 (AVX2/AVX), else 128 (SSE, NEON)."""
    import llvmlite.binding as ll

    feats = {k for k, on in ll.get_host_cpu_features().items() if on}
    if "avx512f" in feats:
        return 512
    if "avx2" in feats or "avx" in feats:
        return 256
    return 128


def vector_lanes_fp32() -> int:
    """fp32 lanes of this host's widest vector (16 with AVX-512, 8 with AVX2, 4 otherwise)."""
    return host_vector_bits() // 32


def fma_rates(clock: float, steps: int = 2_000_000, lanes: int | None = None) -> dict:
    """FMA latency (cycles, one dependent chain) and throughput (vector FMAs per cycle, 16 independent chains)."""
    lanes = lanes or vector_lanes_fp32()
    out = {}
    for name, chains in (("dependent", 1), ("independent", 16)):
        run = _fma_runner(chains, lanes)
        run(0.5, 10)
        n = max(1, steps // chains)
        t = _best(lambda: run(0.5, n), 10)
        out[name] = chains * n / (t * clock * 1e9)  # vector FMAs per cycle
    return {
        "fma_latency_cycles": 1.0 / out["dependent"],
        "fma_per_cycle": out["independent"],
        "lanes": lanes,
    }


def _cycle(lines: int, stride: int, rng: np.random.Generator, per_page: int = PAGE_LINES) -> np.ndarray:
    """A next-index array linking one element per line into one cycle: pages (``per_page`` lines) in a random order,
    the lines of each page in a random order (one permutation, rotated by a random amount per page)."""
    pages = max(1, -(-lines // per_page))
    inner = rng.permutation(per_page)
    shift = rng.integers(0, per_page, pages)
    porder = rng.permutation(pages)
    order = (porder[:, None] * per_page + (inner[None, :] + shift[porder][:, None]) % per_page).ravel()
    nxt = np.zeros(pages * per_page * stride, dtype=np.int64)
    nxt[order * stride] = np.roll(order, -1) * stride
    return nxt


def chase_ns(size: int, loads: int = 1_000_000, line: int = 64, seed: int = 0) -> float:
    """ns per load of a pointer chase over a random cycle of the lines of a ``size``-byte working set."""
    stride = max(1, line // 8)
    lines = max(2, size // line)
    nxt = _cycle(lines, stride, np.random.default_rng(seed))
    _chase(nxt, min(loads, 4 * lines))  # warm: bring the working set into the levels it fits
    t = _best(lambda: _chase(nxt, loads), 3)
    return t / loads * 1e9


def _stream_bytes_per_cycle(kernel, size: int, clock: float, total: int) -> float:
    a = np.ones(max(16, size // 4), np.float32)
    reps = max(1, total // a.nbytes)
    kernel(a, 1)  # compile and warm
    t = _best(lambda: kernel(a, reps), 3)
    return a.nbytes * reps / t / (clock * 1e9)


def read_bytes_per_cycle(size: int, clock: float, total: int = 200_000_000) -> float:
    """Bytes per cycle streaming (summing) a float32 array of ``size`` bytes, about ``total`` bytes per timing."""
    return _stream_bytes_per_cycle(_read, size, clock, total)


def write_bytes_per_cycle(size: int, clock: float, total: int = 200_000_000) -> float:
    """Bytes per cycle filling a float32 array of ``size`` bytes (store bandwidth), about ``total`` bytes per timing."""
    return _stream_bytes_per_cycle(_write, size, clock, total)


@dataclass
class Measured:
    """What ``measure_host`` found: values for the machine file's fields, how each was measured, the staircase."""

    fields: dict = field(default_factory=dict)  # field path -> value (as the machine file stores it)
    methods: dict = field(default_factory=dict)  # field path -> how it was measured
    staircase: list = field(default_factory=list)  # (working set bytes, ns per load)
    bandwidth: list = field(default_factory=list)  # (working set bytes, read B/cycle, write B/cycle)
    clock_ghz: float = 0.0
    seconds: float = 0.0
    sizes: list = field(default_factory=list)  # working set used for each level's numbers, L1 first, DRAM last


def level_sizes(caches: list[int], dram_bytes: int) -> list[int]:
    """The working set used for each level (L1 first, then DRAM): half the level, but no more than 4x the level
    above (just past it: sizes reported by a virtual machine can be larger than the cache the core really reaches)
    and at least 2x it; DRAM's is ``dram_bytes``."""
    out, prev = [], 0
    for size in caches:
        out.append(max(2 * prev, min(size // 2, 4 * prev)) if prev else size // 2)
        prev = size
    out.append(dram_bytes)
    return out


def dram_working_set(caches: list[int]) -> int:
    """Bytes standing for DRAM: twice the last level, at least 256 MiB, at most 1 GiB."""
    return int(min(1 << 30, max(256 << 20, 2 * (caches[-1] if caches else 0))))


def staircase_sizes(smallest: int, largest: int, per_octave: int = 2) -> list[int]:
    """Working sets from ``smallest`` to ``largest`` bytes, ``per_octave`` per doubling, whole lines."""
    n = int(round(math.log2(largest / smallest) * per_octave))
    return sorted({int(smallest * 2 ** (i / per_octave)) // 64 * 64 for i in range(n + 1)})


def measure_host(caches: list[int], line: int = 64, dram_bytes: int | None = None, clock_fallback: float | None = None, quick: bool = False) -> Measured:
    """Measure this host (see the module docstring). ``caches``: sizes of the data cache levels, bytes, L1 first.

    ``dram_bytes``: the working set standing for DRAM (default ``dram_working_set``). ``quick`` shrinks every
    benchmark and stops at the last cache level (the tests use it; values are noisier).
    """
    t0 = time.perf_counter()
    dram_bytes = dram_bytes or dram_working_set(caches)
    m = Measured()
    scale = 0.05 if quick else 1.0
    clk = clock_ghz(int(4_000_000 * scale)) or clock_fallback
    if not clk:
        raise ValueError("cannot measure the clock on this architecture and no fallback clock was given")
    m.clock_ghz = clk
    m.fields["clock_ghz"] = round(clk, 3)
    m.methods["clock_ghz"] = "dependent integer add chain (one add per cycle), adds per second, fastest of 30 runs"
    f = fma_rates(clk, int(2_000_000 * scale))
    m.fields["fma_latency_cycles"] = max(1, int(round(f["fma_latency_cycles"])))
    m.fields["fma_units"] = max(1, int(round(f["fma_per_cycle"])))
    m.methods["fma_latency_cycles"] = f"one dependent chain of {f['lanes']}-lane fp32 FMAs: {f['fma_latency_cycles']:.2f} cycles per FMA"
    m.methods["fma_units"] = f"16 independent chains of {f['lanes']}-lane fp32 FMAs: {f['fma_per_cycle']:.2f} vector FMAs per cycle"

    loads = int(300_000 * scale) or 1000
    total = int(100_000_000 * scale)
    sizes = level_sizes(caches, dram_bytes)
    top = dram_bytes if not quick else max(sizes[:-1])
    for s in staircase_sizes(4096, top, 2 if not quick else 1):
        m.staircase.append((s, chase_ns(s, loads, line)))
    lat_ns = []
    for i, s in enumerate(sizes):
        if quick and i == len(sizes) - 1:
            s = sizes[-2]
        ns = chase_ns(s, loads, line)
        rd = read_bytes_per_cycle(s, clk, total)
        wr = write_bytes_per_cycle(s, clk, total)
        lat_ns.append(ns)
        m.bandwidth.append((s, rd, wr))
        if i < len(caches):
            m.fields[f"caches[{i}].latency_cycles"] = round(ns * clk, 1)
            m.fields[f"caches[{i}].bandwidth_bytes_per_cycle"] = round(rd, 2)
            m.methods[f"caches[{i}].latency_cycles"] = f"pointer chase over {s} B (random cycle of lines): {ns:.2f} ns per load"
            m.methods[f"caches[{i}].bandwidth_bytes_per_cycle"] = f"vectorised sum streaming {s} B: {rd:.1f} B/cycle read ({wr:.1f} written)"
        else:
            m.fields["dram.latency_ns"] = round(ns, 1)
            m.fields["dram.bandwidth_gbps"] = round(rd * clk, 2)
            m.methods["dram.latency_ns"] = f"pointer chase over {s} B (random cycle of lines, TLB misses included)"
            m.methods["dram.bandwidth_gbps"] = f"vectorised sum streaming {s} B, one core: {rd * clk:.1f} GB/s read ({wr * clk:.1f} written)"
    # Little's law: lines in flight = bandwidth x latency / line
    mlp = m.fields["dram.bandwidth_gbps"] * m.fields["dram.latency_ns"] / line
    m.fields["miss_parallelism"] = max(1, int(round(mlp)))
    m.methods["miss_parallelism"] = "Little's law from the measured DRAM bandwidth and latency: GB/s x ns / line bytes"
    m.seconds = time.perf_counter() - t0
    m.sizes = sizes
    return m
