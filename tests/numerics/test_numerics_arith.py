"""Emulated arithmetic against numpy float16/float32, ml_dtypes bfloat16/fp8 and exact rationals, element by element."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from gemmsim.errors import ExperimentError
from gemmsim.numerics.arith import FORMATS, add_array, fma_array, get_format, mul_array, quantize, round_array
from fracref import round_fraction

NATIVE = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32}


def _random_values(dtype, n, rng):
    """n finite values of the dtype from random bit patterns (every binade, subnormals, both signs)."""
    width = np.dtype(dtype).itemsize * 8
    ui = {16: np.uint16, 32: np.uint32}[width]
    bits = rng.integers(0, 2**width, size=4 * n, dtype=np.uint64).astype(ui)
    with np.errstate(invalid="ignore"):
        v = bits.view(dtype).astype(np.float64)
    v = v[np.isfinite(v)]
    return v[:n]


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32"])
def test_add_mul_match_native_types(name):
    rng = np.random.default_rng(1)
    dt = NATIVE[name]
    a = _random_values(dt, 20000, rng)
    b = _random_values(dt, 20000, rng)
    # also nearby magnitudes (real cancellation and carries) and results that overflow
    b[:5000] = quantize(-a[:5000] * (1 + rng.uniform(-1e-2, 1e-2, 5000)), name)
    with np.errstate(all="ignore"):
        ref_add = (a.astype(dt) + b.astype(dt)).astype(np.float64)
        ref_mul = (a.astype(dt) * b.astype(dt)).astype(np.float64)
    np.testing.assert_array_equal(add_array(a, b, name), ref_add)
    np.testing.assert_array_equal(mul_array(a, b, name), ref_mul)


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp32"])
def test_rounding_matches_conversion(name):
    rng = np.random.default_rng(2)
    f = FORMATS[name]
    # doubles from far below the smallest subnormal to beyond the largest value, plus exact ties
    x = rng.standard_normal(50000) * np.exp2(rng.integers(f.emin - f.p - 4, f.emax + 3, 50000))
    with np.errstate(all="ignore"):
        v = quantize(x[:4000], name)
        v = v[np.isfinite(v) & (np.abs(v) >= f.tiny) & (np.abs(v) < f.max_value)]
        ties = v + np.sign(v) * np.exp2(np.floor(np.log2(np.abs(v))) - f.p)  # halfway to the next value up
    x = np.concatenate([x, ties, [0.0, -0.0, f.denorm_min / 2, f.denorm_min * 1.5, f.max_value]])
    dt = NATIVE.get(name) or {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}[name]
    with np.errstate(all="ignore"):
        ref = x.astype(dt).astype(np.float64)
    got = round_array(x, name)
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(got[finite], ref[finite])
    # overflow: infinity here; ml_dtypes gives NaN for e4m3fn, which has no infinity
    assert np.all(np.isinf(got[~finite]))


def _fma_exact(a, b, c, name):
    f = get_format(name)
    return [round_fraction(Fraction(x) * Fraction(y) + Fraction(z), f.p, f.emin, f.max_value) for x, y, z in zip(a, b, c)]


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32"])
def test_fma_against_exact_rationals(name):
    rng = np.random.default_rng(3)
    n = 3000
    a = quantize(rng.standard_normal(n) * np.exp2(rng.integers(-8, 8, n)), name)
    b = quantize(rng.standard_normal(n) * np.exp2(rng.integers(-8, 8, n)), name)
    c = quantize(rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n)), name)
    c[: n // 3] = quantize(-a[: n // 3] * b[: n // 3], name)  # cancellation: the result is the product's rounding error
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    a, b, c = a[ok], b[ok], c[ok]
    assert ok.sum() > n // 2
    got = fma_array(a, b, c, name)
    np.testing.assert_array_equal(got, _fma_exact(a, b, c, name))


def test_fma_double_rounding_trap():
    """c + a*b lies just below an fp32 midpoint, and float64 rounds it onto the midpoint: a naive float64 FMA
    then rounds the tie to even and is one ulp too high. Exact: 1 + 2^-23 + 2^-24 - 2^-70 -> 1 + 2^-23."""
    a = 1 + 2.0**-23
    b = 2.0**-24 * (1 - 2.0**-23)
    c = 1 + 2.0**-23
    assert np.float32(a) == a and np.float32(b) == b
    naive = float(np.float32(a * b + c))
    got = fma_array(np.array([a]), np.array([b]), np.array([c]), "fp32")[0]
    assert got == 1 + 2.0**-23
    assert naive == 1 + 2.0**-22  # the trap is real
    assert got == _fma_exact([a], [b], [c], "fp32")[0]


def test_fma_differs_from_mul_add():
    """fp32: fl(a*b + c) keeps the product's low bits that mul + add loses (c = -fl(a*b) exposes them)."""
    a = np.float32(1 + 2.0**-12)
    p = float(a) * float(a)  # 1 + 2^-11 + 2^-24 exactly
    c = -float(np.float32(p))
    fused = fma_array(np.array([float(a)]), np.array([float(a)]), np.array([c]), "fp32")[0]
    separate = add_array(mul_array(np.array([float(a)]), np.array([float(a)]), "fp32"), np.array([c]), "fp32")[0]
    assert fused == 2.0**-24 and separate == 0.0


def test_unknown_format_is_a_gemmsim_error():
    with pytest.raises(ExperimentError, match="unknown dtype 'fp12'"):
        get_format("fp12")
