"""Run a CPU kernel for real on this host: the cross-check of the model against a measurement.

``run_host`` builds random A (M x K) and B (K x N) of a dtype, runs the kernel's numba implementation of
``C += A @ B`` (C starting at zero, in the kernel's own loop order and blocking) with warm-up and repetitions,
reports the median time and checks the result against numpy.matmul done in float64, following seed 000:
section 15.2 (allocate and initialise outside the timed region, warm up, repeat, take the median, validate; C is
reset before every repetition so each one measures the same problem) and section 15.3 (|C - Cref| <= atol +
rtol |Cref|, element by element) with the error of a K-term sum from section 12.2, gamma_K = K u / (1 - K u).

Arithmetic per dtype (what the numba kernels do on this host):

- fp64, fp32: operands, products and accumulator in the dtype.
- fp16, bf16: A and B are rounded to the dtype (bf16 by round-to-nearest-even of the float32 bits, as numpy has
  no bfloat16), then computed on float32 copies (products and accumulator in fp32, as mixed-precision GEMMs do,
  seed 000 section 12.1); the result is rounded to the dtype once at the end.
- int8: A and B are int8, the accumulator and C are int32 (exact while K * 128 * 128 < 2**31).

Which code runs: each kernel's own ``host`` function, except ``packed_micro`` and ``gemm``, which run the SIMD
register-blocked microkernel of ``gemmsim.kernels.host_micro`` over packed panels with the MR, NR, KC, MC, NC the
model resolves for the host machine (``HOST_MICRO_KERNELS``); the scalar ``packed`` keeps its loop nest.

Timing (seed 000 section 15.2): ``warmup`` untimed runs, then ``repeats`` timed runs; the result keeps every time,
so the median, min and max (the spread) are all reported. A single-threaded kernel is timed by its thread's CPU
time (``time.thread_time``), a threaded one by the wall clock: on a shared machine the wall clock also counts the
time other processes hold the core (measured here, with ~12 runnable processes on 2 cores: ikj at N=256 took 9.5 ms
of CPU time and 29.6 ms of wall time, min of 7), while the CPU time stays within a few per cent run to run. ``blas_time`` times numpy.matmul held to one thread
(threadpoolctl) on the same operands: what a library reaches on this machine. ``host_clock_ghz`` is the clock
measured by ``gemmsim.machine.measure.clock_ghz`` (a dependent add chain) once per process.

Columns a host row gets (``host_columns``; the model's ``time_s`` and ``bound`` are already in the row):

- ``host_time_s``: median measured time, seconds; ``host_time_min_s`` / ``host_time_max_s``: fastest and slowest
  repeat; ``host_repeats``: how many; ``host_spread``: (max - min) / median. A model or ranking difference
  smaller than the spread is noise. ``host_timer``: "thread CPU time" or "wall clock" (above);
  ``host_wall_time_s``: median by the wall clock.
- ``host_gflops``: 2MNK / host_time_s / 1e9; ``host_ok``, ``host_max_rel_err``, ``host_tolerance``: the check.
- ``host_clock_ghz``: the measured core clock while the host ran (None off x86-64).
- ``host_blas_time_s``: median time of single-threaded numpy.matmul (BLAS) for the same shape and dtype (fp16 and
  bf16 on float32 copies, as the kernels; None for int8, which numpy does not hand to BLAS);
  ``host_blas_gflops``; ``host_over_blas``: host_time_s / host_blas_time_s.
- ``model_over_measured``: time_s / host_time_min_s (1 = exact; > 1 the model is pessimistic): against the fastest
  repeat, because other processes and descheduling only ever add time (on a shared machine the median of a
  long kernel is mostly interference); ``model_within_2x``: 0.5 <= model_over_measured <= 2;
  ``model_over_median``: time_s / host_time_s, the same against the median.
- ``host_impl``: which code ran ("simd microkernel" for packed_micro and gemm, else "numba loop nest").

``magnitude_notes`` turns rows into plain sentences: how many are within 2x, and for each that is not, by how much
and which roof the model blamed (its ``bound``). ``ranking_within_spread`` compares the model's and the host's order
of the kernels of each shape, counting only pairs whose measured min..max ranges do not overlap.

The tolerance follows from that arithmetic. With u_acc the unit roundoff of the accumulator (fp64 2^-53,
otherwise fp32 2^-24) and u the unit roundoff of the dtype C is stored in (fp64 2^-53, fp32 2^-24,
fp16 2^-11, bf16 2^-8), the classical bound |C32 - Cref| <= gamma_K(u_acc) |A||B| (Higham, Accuracy and
Stability of Numerical Algorithms, 2nd ed., eq. 3.13) plus one final rounding to the dtype gives
``atol = gamma_K(u_acc) (1 + u) max(|A||B|)`` and ``rtol = u``. The reference uses the same rounded A and B, so
only the kernel's arithmetic is judged. int8 must match exactly.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from gemmsim.errors import KernelError
from gemmsim.kernels.base import CPUKernel
from gemmsim.kernels.cpu import KERNELS as CPU_ORDER_KERNELS

#: Unit roundoff of the storage type of each dtype the host can run (int8: exact integer arithmetic).
UNIT_ROUNDOFF = {"fp64": 2.0**-53, "fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8, "int8": 0.0}

#: Unit roundoff of the accumulator used on the host for each dtype.
ACCUMULATOR_ROUNDOFF = {"fp64": 2.0**-53, "fp32": 2.0**-24, "fp16": 2.0**-24, "bf16": 2.0**-24, "int8": 0.0}

_NOTES = {
    "fp64": "fp64 operands and accumulator",
    "fp32": "fp32 operands and accumulator",
    "fp16": "fp16 inputs computed on float32 copies (fp32 products and accumulator), C rounded to fp16",
    "bf16": "bf16 inputs (rounded from fp32, nearest-even) computed on float32 copies, C rounded to bf16",
    "int8": "int8 operands, int32 accumulator and C (exact)",
}


@dataclass(frozen=True)
class HostResult:
    """Measured time and checked result of one kernel run on this host.

    ``median_s``: median of the timed repetitions, seconds. ``times_s``: every repetition, seconds, by ``timer``:
    the thread's CPU time for single-threaded runs (time.thread_time: time other processes hold the core is not
    counted), the wall clock for threaded ones. ``wall_times_s``: every repetition by the wall clock.
    ``max_abs_err``: max |C - Cref|. ``max_rel_err``: max |C - Cref| / max |Cref| (normwise, so entries of C
    near zero do not blow it up). ``ok``: every element within ``atol + rtol |Cref|``. ``tolerance``: the largest
    error the check allows, normalised like max_rel_err ((atol + rtol max|Cref|) / max|Cref|); ok implies
    max_rel_err <= tolerance. ``gamma_k``: K u_acc / (1 - K u_acc). ``note``: the arithmetic used.
    """

    median_s: float
    times_s: tuple[float, ...]
    max_abs_err: float
    max_rel_err: float
    ok: bool
    tolerance: float
    atol: float
    rtol: float
    gamma_k: float
    note: str
    wall_times_s: tuple[float, ...] = ()
    timer: str = "wall clock"

    @property
    def min_s(self) -> float:
        """Fastest timed repetition, seconds."""
        return float(min(self.times_s))

    @property
    def max_s(self) -> float:
        """Slowest timed repetition, seconds."""
        return float(max(self.times_s))

    @property
    def spread(self) -> float:
        """(max - min) / median of the repetitions."""
        return (self.max_s - self.min_s) / self.median_s if self.median_s > 0 else float("nan")


def gamma(K: int, u: float) -> float:
    """gamma_K = K u / (1 - K u), the relative error bound of a K-term sum with unit roundoff u (inf if K u >= 1)."""
    ku = K * u
    return ku / (1.0 - ku) if ku < 1.0 else float("inf")


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (round to nearest, ties to even), returned as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def _operands(rng: np.random.Generator, M: int, N: int, K: int, dtype: str):
    """(A, B, C) as the kernel gets them, the float64 copies of A and B, and a function storing C in the dtype."""
    if dtype == "int8":
        A = rng.integers(-128, 128, size=(M, K), dtype=np.int8)
        B = rng.integers(-128, 128, size=(K, N), dtype=np.int8)
        return A, B, np.zeros((M, N), np.int32), A.astype(np.float64), B.astype(np.float64), lambda c: c
    a = rng.uniform(-1.0, 1.0, size=(M, K))
    b = rng.uniform(-1.0, 1.0, size=(K, N))
    if dtype == "fp64":
        return a, b, np.zeros((M, N)), a, b, lambda c: c
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    if dtype == "fp32":
        store = lambda c: c  # noqa: E731
    elif dtype == "fp16":
        a32, b32 = a32.astype(np.float16).astype(np.float32), b32.astype(np.float16).astype(np.float32)
        store = lambda c: c.astype(np.float16)  # noqa: E731
    else:
        a32, b32 = round_bf16(a32), round_bf16(b32)
        store = round_bf16
    return a32, b32, np.zeros((M, N), np.float32), a32.astype(np.float64), b32.astype(np.float64), store


def run_host(
    kernel: str | CPUKernel,
    M: int,
    N: int,
    K: int,
    dtype: str = "fp32",
    params: dict | BaseModel | None = None,
    warmup: int = 1,
    repeats: int = 5,
    seed: int = 0,
) -> HostResult:
    """Run a CPU kernel (a name in ``gemmsim.sim.cpu.CPU_KERNELS`` or a CPUKernel) for real; time it and check it.

    The numba function is compiled (or loaded from its cache) on a 2x2x2 problem before anything is timed; then
    ``warmup`` untimed runs and ``repeats`` timed runs on the real problem, C reset to zero before each. The
    result of the last run is checked against float64 numpy.matmul (see the module docstring for the tolerance).
    """
    if isinstance(kernel, CPUKernel):
        k = kernel
    elif kernel in CPU_ORDER_KERNELS:
        k = CPU_ORDER_KERNELS[kernel]
    else:
        from gemmsim.sim.cpu import CPU_KERNELS  # every CPU kernel module (packed kernels too)

        if kernel not in CPU_KERNELS:
            raise KernelError(f"unknown CPU kernel {kernel!r}; known: {', '.join(sorted(CPU_KERNELS))}")
        k = CPU_KERNELS[kernel]
    host_fn = host_function(k, dtype)
    if host_fn is None:
        raise KernelError(f"kernel {k.name!r} has no host implementation")
    if dtype not in UNIT_ROUNDOFF:
        raise KernelError(f"the host runs dtypes {', '.join(UNIT_ROUNDOFF)}; not {dtype!r}")
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise KernelError(f"{name} must be a positive integer, not {v!r}")
    if dtype == "int8" and K * 128 * 128 >= 2**31:
        raise KernelError(f"int8 with K={K} can overflow the int32 accumulator (needs K * 128 * 128 < 2**31)")
    if repeats < 1 or warmup < 0:
        raise KernelError(f"need repeats >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    if isinstance(params, BaseModel):
        p = params
    else:
        try:
            p = k.params(**(params or {}))
        except Exception as err:  # pydantic ValidationError: bad or unknown parameters
            raise KernelError(f"invalid parameters for kernel {k.name!r}: {err}") from None

    rng = np.random.default_rng(seed)
    A, B, C, a64, b64, store = _operands(rng, M, N, K, dtype)
    # Compile (or load from numba's cache) outside every timed region, on operands of the same types.
    host_fn(A[:2, :2].copy(), B[:2, :2].copy(), np.zeros((min(2, M), min(2, N)), C.dtype), p)
    for _ in range(warmup):
        C[...] = 0
        host_fn(A, B, C, p)
    threads = int(getattr(p, "threads", 1) or 1)
    times, walls = [], []
    for _ in range(repeats):
        C[...] = 0
        c0, t0 = time.thread_time(), time.perf_counter()
        host_fn(A, B, C, p)
        walls.append(time.perf_counter() - t0)
        times.append(time.thread_time() - c0)
    if threads > 1:  # the thread's CPU time would miss the other threads' work: wall clock
        times = walls

    ref = a64 @ b64
    got = np.asarray(store(C), dtype=np.float64)
    err = np.abs(got - ref)
    u, u_acc = UNIT_ROUNDOFF[dtype], ACCUMULATOR_ROUNDOFF[dtype]
    g = gamma(K, u_acc)
    scale = float(np.max(np.abs(a64) @ np.abs(b64)))
    atol = g * (1.0 + u) * scale
    rtol = u
    ok = bool(np.all(err <= atol + rtol * np.abs(ref)))
    ref_max = float(np.max(np.abs(ref)))
    max_abs = float(err.max())
    norm = ref_max if ref_max > 0 else 1.0
    return HostResult(
        median_s=float(np.median(times)),
        times_s=tuple(times),
        wall_times_s=tuple(walls),
        timer="wall clock" if threads > 1 else "thread CPU time",
        max_abs_err=max_abs,
        max_rel_err=max_abs / norm,
        ok=ok,
        tolerance=(atol + rtol * ref_max) / norm,
        atol=atol,
        rtol=rtol,
        gamma_k=g,
        note=_NOTES[dtype],
    )


#: Kernels whose host run is the SIMD microkernel of gemmsim.kernels.host_micro (not the kernel module's own loop nest).
HOST_MICRO_KERNELS = ("packed_micro", "gemm")


@functools.lru_cache(maxsize=1)
def _host_machine():
    from gemmsim.machine import load_machine

    return load_machine("host")


def host_function(k: CPUKernel, dtype: str = "fp32"):
    """The function that computes kernel ``k`` on this host: ``host_micro`` for HOST_MICRO_KERNELS, else ``k.host``."""
    if k.name not in HOST_MICRO_KERNELS or k.host is None:
        return k.host

    resolved: dict = {}  # (M, N, K, params) -> (MR, NR, KC, MC, NC, threads): resolved once, outside the timed repeats

    def micro(A: np.ndarray, B: np.ndarray, C: np.ndarray, params=None) -> None:
        from gemmsim.kernels.host_micro import host_gemm

        key = (A.shape, B.shape[1], params.model_dump_json() if params is not None else None)
        if key not in resolved:
            resolved[key] = _resolve_micro(A.shape[0], B.shape[1], A.shape[1], dtype, params)
        MR, NR, KC, MC, NC, T = resolved[key]
        host_gemm(A, B, C, MR, NR, KC, MC, NC, threads=T)

    return micro


def _resolve_micro(M: int, N: int, K: int, dtype: str, params) -> tuple[int, ...]:
    """MR, NR, KC, MC, NC, threads as the model resolves them for the host machine (``cpu_packed.resolve``)."""
    from gemmsim.kernels.cpu_packed import GemmParams, resolve
    from gemmsim.trace import Layout

    params = params if params is not None else GemmParams()
    explicit = [getattr(params, f, None) for f in ("MR", "NR", "KC", "MC", "NC")]
    machine = None if None not in explicit else _host_machine()
    if machine is not None and params.threads > machine.cores:
        params = params.model_copy(update={"threads": machine.cores})
    r = resolve(Layout.build(M, N, K, dtype), params, machine, True)
    return r.MR, r.NR, r.KC, r.MC, r.NC, r.threads


def host_impl(kernel: str) -> str:
    """Plain words for the code a kernel runs on the host."""
    return "simd microkernel (host_micro)" if kernel in HOST_MICRO_KERNELS else "numba loop nest"


_BLAS_CACHE: dict[tuple, tuple[float, float, float] | None] = {}


def blas_time(M: int, N: int, K: int, dtype: str = "fp32", warmup: int = 1, repeats: int = 5, seed: int = 0) -> tuple[float, float, float] | None:
    """(median, min, max) seconds of numpy.matmul on one thread (threadpoolctl) for this shape; None for int8.

    Timed by the calling thread's CPU time (one BLAS thread runs in the caller), like the single-threaded kernels.

    fp16 and bf16 operands are rounded to the dtype and multiplied as float32, as the host kernels do. Results are
    kept per process (one timing per shape and dtype however many kernels share it).
    """
    key = (M, N, K, dtype, warmup, repeats, seed)
    if key in _BLAS_CACHE:
        return _BLAS_CACHE[key]
    if dtype == "int8" or dtype not in UNIT_ROUNDOFF:
        _BLAS_CACHE[key] = None
        return None
    from threadpoolctl import threadpool_limits

    A, B, _, _, _, _ = _operands(np.random.default_rng(seed), M, N, K, dtype)
    A, B = np.ascontiguousarray(A), np.ascontiguousarray(B)
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(warmup):
            A @ B
        times = []
        for _ in range(repeats):
            c0 = time.thread_time()
            A @ B
            times.append(time.thread_time() - c0)
    out = (float(np.median(times)), float(min(times)), float(max(times)))
    _BLAS_CACHE[key] = out
    return out


@functools.lru_cache(maxsize=1)
def host_clock_ghz() -> float | None:
    """The core clock measured once per process (``gemmsim.machine.measure.clock_ghz``); None off x86-64."""
    from gemmsim.machine.measure import clock_ghz

    try:
        return clock_ghz()
    except Exception:  # noqa: BLE001 - a clock we cannot measure is reported as unknown, never fatal
        return None


def host_columns(r: HostResult, M: int, N: int, K: int, model_time_s: float | None = None,
                 blas: tuple[float, float, float] | None = None, clock_ghz: float | None = None, kernel: str = "") -> dict:
    """The host columns of a result row (named in the module docstring)."""
    flops = 2.0 * M * N * K
    row = dict(
        host_time_s=r.median_s,
        host_time_min_s=r.min_s,
        host_time_max_s=r.max_s,
        host_repeats=len(r.times_s),
        host_spread=r.spread,
        host_gflops=flops / r.median_s / 1e9 if r.median_s else float("nan"),
        host_ok=r.ok,
        host_max_rel_err=r.max_rel_err,
        host_tolerance=r.tolerance,
        host_clock_ghz=clock_ghz,
        host_blas_time_s=blas[0] if blas else None,
        host_blas_gflops=flops / blas[0] / 1e9 if blas and blas[0] else None,
        host_over_blas=r.median_s / blas[0] if blas and blas[0] else None,
        host_impl=host_impl(kernel),
        host_timer=r.timer,
        host_wall_time_s=float(np.median(r.wall_times_s)) if r.wall_times_s else None,
    )
    if model_time_s and r.min_s > 0:
        q = model_time_s / r.min_s
        row.update(model_over_measured=q, model_within_2x=bool(0.5 <= q <= 2.0), model_over_median=model_time_s / r.median_s)
    return row


def _case(r: dict) -> str:
    return f"{r.get('label') or r.get('kernel')} {r['M']}x{r['N']}x{r['K']} {r.get('dtype', '')}".rstrip()


def magnitude_notes(rows: list[dict], factor: float = 2.0) -> list[str]:
    """Plain sentences on model/measured: a summary, then each row off by more than ``factor`` with the roof blamed."""
    rs = [r for r in rows if isinstance(r.get("model_over_measured"), float) and r["model_over_measured"] > 0]
    if not rs:
        return []
    qs = [r["model_over_measured"] for r in rs]
    inside = sum(1 / factor <= q <= factor for q in qs)
    gmean = float(np.exp(np.mean(np.log(qs))))
    notes = [
        f"host magnitude: {inside} of {len(rs)} cases modelled within {factor:g}x of the fastest measured repeat "
        f"(model/measured from {min(qs):.2f} to {max(qs):.2f}, geometric mean {gmean:.2f})"
    ]
    for r in sorted(rs, key=lambda r: -abs(np.log(r["model_over_measured"]))):
        q = r["model_over_measured"]
        if 1 / factor <= q <= factor:
            continue
        bound = r.get("bound", "?")
        if q > 1:
            why = (f"the model is {q:.1f}x too slow: its {bound} roof (t_{bound}_s = {r.get(f't_{bound}_s', float('nan')):.3g} s) "
                   "is more pessimistic than this host"
                   + (" (hardware prefetchers hide latency the model charges)" if bound == "latency" else "")
                   + (" (the host's timed repeats find the operands already in cache; the model charges a cold start's "
                      "compulsory DRAM traffic)" if bound == "dram" else ""))
        else:
            why = (f"the model is {1 / q:.1f}x too fast: its highest roof ({bound}) misses a cost this host pays "
                   "(instruction overheads, loop code, or a roof set too high)")
        notes.append(f"host magnitude: {_case(r)}: {why}")
    return notes


def ranking_within_spread(rows: list[dict]) -> list[dict]:
    """For each shape and dtype: do model and host order the kernels the same way, up to measurement spread?

    A pair of kernels counts as discordant only when the model orders them one way and the host's min..max ranges
    do not overlap and order them the other way. Returns one dict per group: shape, pairs, discordant (list of
    label pairs), ties (pairs within the spread).
    """
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if isinstance(r.get("host_time_s"), float) and isinstance(r.get("time_s"), (int, float)):
            groups.setdefault((r["M"], r["N"], r["K"], r.get("dtype")), []).append(r)
    out = []
    for key, rs in groups.items():
        disc, ties, pairs = [], [], 0
        for i in range(len(rs)):
            for j in range(i + 1, len(rs)):
                a, b = rs[i], rs[j]
                pairs += 1
                lo_a, hi_a = a.get("host_time_min_s", a["host_time_s"]), a.get("host_time_max_s", a["host_time_s"])
                lo_b, hi_b = b.get("host_time_min_s", b["host_time_s"]), b.get("host_time_max_s", b["host_time_s"])
                names = (a.get("label") or a.get("kernel"), b.get("label") or b.get("kernel"))
                if (hi_a >= lo_b and hi_b >= lo_a) or a["time_s"] == b["time_s"]:
                    ties.append(names)
                elif (a["time_s"] < b["time_s"]) != (hi_a < lo_b):
                    disc.append(names)
        out.append({"shape": key, "pairs": pairs, "discordant": disc, "ties": ties})
    return out
