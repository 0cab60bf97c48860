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

The tolerance follows from that arithmetic. With u_acc the unit roundoff of the accumulator (fp64 2^-53,
otherwise fp32 2^-24) and u the unit roundoff of the dtype C is stored in (fp64 2^-53, fp32 2^-24,
fp16 2^-11, bf16 2^-8), the classical bound |C32 - Cref| <= gamma_K(u_acc) |A||B| (Higham, Accuracy and
Stability of Numerical Algorithms, 2nd ed., eq. 3.13) plus one final rounding to the dtype gives
``atol = gamma_K(u_acc) (1 + u) max(|A||B|)`` and ``rtol = u``. The reference uses the same rounded A and B, so
only the kernel's arithmetic is judged. int8 must match exactly.
"""

from __future__ import annotations

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

    ``median_s``: median of the timed repetitions, seconds. ``times_s``: every repetition, seconds.
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
    if k.host is None:
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
    k.host(A[:2, :2].copy(), B[:2, :2].copy(), np.zeros((min(2, M), min(2, N)), C.dtype), p)
    for _ in range(warmup):
        C[...] = 0
        k.host(A, B, C, p)
    times = []
    for _ in range(repeats):
        C[...] = 0
        t0 = time.perf_counter()
        k.host(A, B, C, p)
        times.append(time.perf_counter() - t0)

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
        max_abs_err=max_abs,
        max_rel_err=max_abs / norm,
        ok=ok,
        tolerance=(atol + rtol * ref_max) / norm,
        atol=atol,
        rtol=rtol,
        gamma_k=g,
        note=_NOTES[dtype],
    )
