"""Exactly emulated floating-point arithmetic for the narrow formats a GEMM stores and accumulates in.

Every value lives in a float64 but is kept *representable* in its format: after each operation the float64
result is rounded to the format (round to nearest, ties to even, gradual underflow, overflow to infinity),
which is what the hardware does. Why the float64 detour gives the exact IEEE answer:

* Products of fp32-or-narrower operands are exact in float64 (2 x 24 = 48 significant bits <= 53).
* A sum (or the ``a*b + c`` of a fused multiply-add) computed in float64 is rounded once there; rounding that
  float64 again to a p-bit format can go wrong (double rounding) only when the first rounding lands on a
  midpoint of the p-bit format. We avoid that for every operation by recovering the exact float64 rounding
  error with TwoSum (Knuth; Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 4.3) and
  turning the float64 result into *round to odd*: if the float64 result was inexact and its last bit is even,
  it moves one float64 ulp towards the exact value. Rounding an odd-rounded value of precision p + 2 or more to
  p bits gives the correctly rounded result (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums:
  proved algorithms using rounding to odd", IEEE Trans. Computers 57(4), 2008). 53 >= 24 + 2, so this is exact
  for fp32, fp16, bf16 and the fp8 formats. (For plain additions Figueroa's theorem, p' >= 2p + 2, already makes
  double rounding innocuous; the odd-rounding step costs little and also covers the FMA.)

The tests check this element by element against numpy's float16/float32, ml_dtypes' bfloat16 and an exact
rational reference (fractions.Fraction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from gemmsim.errors import ExperimentError


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: precision p (significand bits, hidden bit included), exponent range."""

    name: str
    p: int  # significand bits including the hidden bit
    emin: int  # exponent of the smallest normal number
    emax: int  # exponent of the largest finite number
    max_value: float  # largest finite value
    has_inf: bool = True  # False for fp8 e4m3fn: overflow gives NaN there (ml_dtypes)
    bytes: int = 4

    @property
    def u(self) -> float:
        """Unit roundoff 2^-p (half an ulp of 1)."""
        return 2.0 ** (-self.p)

    @property
    def tiny(self) -> float:
        """Smallest positive normal number."""
        return 2.0**self.emin

    @property
    def denorm_min(self) -> float:
        """Smallest positive subnormal number."""
        return 2.0 ** (self.emin - self.p + 1)

    def code(self) -> tuple[int, int, float]:
        """(p, emin, max_value) as passed to the compiled kernels; p = 53 means native float64."""
        return self.p, self.emin, self.max_value


def _fmt(name, p, emin, emax, has_inf=True, nbytes=4, max_value=None):
    mv = max_value if max_value is not None else (2.0 - 2.0 ** (1 - p)) * 2.0**emax
    return Format(name, p, emin, emax, mv, has_inf, nbytes)


#: Floating-point formats by gemmsim dtype name (units.DTYPE_BYTES names them the same way).
FORMATS: dict[str, Format] = {
    "fp64": _fmt("fp64", 53, -1022, 1023, nbytes=8),
    "fp32": _fmt("fp32", 24, -126, 127, nbytes=4),
    "tf32": _fmt("tf32", 11, -126, 127, nbytes=4),
    "fp16": _fmt("fp16", 11, -14, 15, nbytes=2),
    "bf16": _fmt("bf16", 8, -126, 127, nbytes=2),
    # OCP 8-bit formats; e4m3fn has no infinity and its largest value is 448 (the all-ones pattern is NaN).
    "fp8_e4m3": _fmt("fp8_e4m3", 4, -6, 8, has_inf=False, nbytes=1, max_value=448.0),
    "fp8_e5m2": _fmt("fp8_e5m2", 3, -14, 15, nbytes=1),
}

#: Formats an accumulator (or C) may be kept in.
ACC_FORMATS = ("fp64", "fp32", "fp16", "bf16")


def get_format(name: str, *, what: str = "dtype") -> Format:
    """The format called ``name``, or an ExperimentError listing the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ExperimentError(f"unknown {what} {name!r} (known: {', '.join(FORMATS)})") from None


# --------------------------------------------------------------------------------------------------------------
# Compiled primitives. A format is passed as (p, emin, maxv); p >= 53 means "native float64, no rounding".


@njit(cache=True, inline="always")
def two_sum(a: float, b: float) -> tuple[float, float]:
    """s = fl(a + b) and the exact error e: a + b = s + e (Knuth's TwoSum, no branch)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@intrinsic
def _f2i(typingctx, x):
    """Reinterpret a float64's bits as an int64 (no conversion)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _i2f(typingctx, x):
    """Reinterpret an int64's bits as a float64."""
    if x != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


_SIGN = np.int64(-0x8000000000000000)
_MAG = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def to_odd(s: float, e: float) -> float:
    """Round to odd: s is fl(x) with x = s + e exactly; return x rounded to odd in float64.

    If x is inexact and s's last significand bit is even, step one ulp towards x (that neighbour is odd).
    """
    if e == 0.0:
        return s
    b = _f2i(s)
    if b & 1:
        return s
    if (e > 0.0) == (s > 0.0):
        return _i2f(b + 1)  # larger magnitude
    return _i2f(b - 1)


@njit(cache=True, inline="always")
def _round_slow(x: float, p: int, emin: int, maxv: float) -> float:
    m, e = math.frexp(x)  # x = m 2^e, 0.5 <= |m| < 1: the leading bit has exponent e - 1
    E = e - 1
    if E < emin:
        E = emin
    q = math.ldexp(1.0, E - p + 1)  # the ulp at x's binade (the subnormal ulp below 2^emin)
    r = np.rint(x / q) * q  # x / q is exact (power-of-two scaling); rint rounds half to even
    if abs(r) > maxv:
        return math.copysign(math.inf, x)
    return r


@njit(cache=True, inline="always")
def round_to(x: float, p: int, emin: int, maxv: float) -> float:
    """x (a float64) rounded to nearest, ties to even, in the format (p, emin, maxv): subnormals, overflow to inf.

    Fast path on the bit pattern: add half an ulp of the target (minus one, plus the kept last bit, which makes
    ties go to even) and clear the dropped bits; a carry into the exponent field is the correct rounding up.
    Results whose ulp is 2^52 times the float64 ulp or more (deep subnormals) take the frexp path.
    """
    if p >= 53:
        return x
    b = _f2i(x)
    mag = b & _MAG
    E = (mag >> 52) - 1023
    if E > 1023 - 1 or mag == 0:  # inf, nan, zero (and the top float64 binade, never reached from fp32)
        return x
    shift = 53 - p
    if E < emin:
        shift += emin - E
    if shift >= 52:
        return _round_slow(x, p, emin, maxv)
    lsb = (mag >> shift) & 1
    mag = (mag + ((np.int64(1) << (shift - 1)) - 1 + lsb)) & ~((np.int64(1) << shift) - 1)
    r = _i2f(mag | (b & _SIGN))
    if abs(r) > maxv:
        return math.copysign(math.inf, x)
    return r


@njit(cache=True, inline="always")
def add(a: float, b: float, p: int, emin: int, maxv: float) -> float:
    """fl(a + b) in the format."""
    if p >= 53:
        return a + b
    s, e = two_sum(a, b)
    return round_to(to_odd(s, e), p, emin, maxv)


@njit(cache=True, inline="always")
def mul(a: float, b: float, p: int, emin: int, maxv: float) -> float:
    """fl(a * b) in the format (exact product in float64 for operands of 24 bits or fewer)."""
    return round_to(a * b, p, emin, maxv)


@njit(cache=True, inline="always")
def fma(a: float, b: float, c: float, p: int, emin: int, maxv: float) -> float:
    """fl(a * b + c) with one rounding. Operands must be fp32 or narrower (their product is exact in float64)."""
    if p >= 53:
        return a * b + c
    s, e = two_sum(a * b, c)
    return round_to(to_odd(s, e), p, emin, maxv)


@njit(cache=True)
def _round_array(x, p, emin, maxv):
    out = np.empty_like(x)
    for i in range(x.size):
        out.flat[i] = round_to(x.flat[i], p, emin, maxv)
    return out


def round_array(x: np.ndarray, fmt: str | Format) -> np.ndarray:
    """Every element of x (float64) rounded to the format, as float64."""
    f = get_format(fmt) if isinstance(fmt, str) else fmt
    x = np.ascontiguousarray(x, dtype=np.float64)
    return _round_array(x, f.p, f.emin, f.max_value)


def _ml(name: str):
    import ml_dtypes

    return {
        "bf16": ml_dtypes.bfloat16,
        "fp8_e4m3": ml_dtypes.float8_e4m3fn,
        "fp8_e5m2": ml_dtypes.float8_e5m2,
    }[name]


def numpy_dtype(name: str):
    """The numpy (or ml_dtypes) scalar type that stores the format, or None for tf32 (stored as fp32)."""
    if name in ("bf16", "fp8_e4m3", "fp8_e5m2"):
        return _ml(name)
    return {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}.get(name)


def quantize(x: np.ndarray, fmt: str) -> np.ndarray:
    """x stored in the format (via numpy / ml_dtypes conversion where one exists), returned as float64."""
    get_format(fmt)
    dt = numpy_dtype(fmt)
    x = np.asarray(x, dtype=np.float64)
    if dt is None:
        return round_array(x, fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dt).astype(np.float64)


@njit(cache=True)
def _binary(a, b, op, p, emin, maxv):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        if op == 0:
            out[i] = add(a[i], b[i], p, emin, maxv)
        else:
            out[i] = mul(a[i], b[i], p, emin, maxv)
    return out


@njit(cache=True)
def _fma_arr(a, b, c, p, emin, maxv):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = fma(a[i], b[i], c[i], p, emin, maxv)
    return out


def _flat(*xs):
    return [np.ascontiguousarray(np.ravel(x), dtype=np.float64) for x in xs]


def add_array(a, b, fmt: str | Format) -> np.ndarray:
    """Elementwise fl(a + b) in the format (inputs must hold values of the format)."""
    f = get_format(fmt) if isinstance(fmt, str) else fmt
    x, y = _flat(a, b)
    return _binary(x, y, 0, f.p, f.emin, f.max_value).reshape(np.shape(a))


def mul_array(a, b, fmt: str | Format) -> np.ndarray:
    """Elementwise fl(a * b) in the format."""
    f = get_format(fmt) if isinstance(fmt, str) else fmt
    x, y = _flat(a, b)
    return _binary(x, y, 1, f.p, f.emin, f.max_value).reshape(np.shape(a))


def fma_array(a, b, c, fmt: str | Format) -> np.ndarray:
    """Elementwise fl(a * b + c) with one rounding (operands of 24 significant bits or fewer)."""
    f = get_format(fmt) if isinstance(fmt, str) else fmt
    x, y, z = _flat(a, b, c)
    return _fma_arr(x, y, z, f.p, f.emin, f.max_value).reshape(np.shape(a))
