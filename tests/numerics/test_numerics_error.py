"""Reference products against exact rationals; measured errors against Higham's gamma_K |A||B| bound."""

from fractions import Fraction

import numpy as np
import pytest

from gemmsim.numerics.arith import FORMATS, quantize
from gemmsim.numerics.error import abs_product, differing_fraction, gamma, metrics, reference
from gemmsim.numerics.orders import ORDERS, gemm, rounding_depth


def test_reference_is_exact_to_float64():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 60)) * np.exp2(rng.integers(-30, 30, (4, 60)))
    B = rng.standard_normal((60, 3))
    B[:, 0] = -B[:, 1]  # nothing special; and a column that cancels almost exactly:
    A[0, 1] = -A[0, 0] * B[0, 2] / B[1, 2]
    R = reference(A, B)
    for i in range(4):
        for j in range(3):
            exact = sum(Fraction(a) * Fraction(b) for a, b in zip(A[i], B[:, j]))
            assert R[i, j] == float(exact)  # correctly rounded here; in general within one float64 ulp


def test_gamma():
    assert gamma(10, 2.0**-24) == pytest.approx(10 * 2.0**-24, rel=1e-6)
    assert gamma(2**24, 2.0**-24) == float("inf")


@pytest.mark.parametrize("acc", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("data", ["positive", "signed", "cancel", "range"])
def test_every_order_within_its_bound(acc, data):
    rng = np.random.default_rng(5)
    M, N = 6, 5
    K = 120 if acc == "bf16" else 700  # K u < 1, or gamma_K is infinite and the bound says nothing
    if data == "positive":
        A, B = rng.random((M, K)), rng.random((K, N))
    elif data == "signed":
        A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    elif data == "cancel":  # pairs of terms that cancel, plus a small remainder
        A = rng.random((M, K))
        A[:, 1::2] = -A[:, ::2]
        B = np.repeat(rng.random((K // 2, N)), 2, axis=0) + 1e-3 * rng.random((K, N))
    else:  # large dynamic range (kept inside fp16's range)
        A = rng.standard_normal((M, K)) * np.exp2(rng.integers(-6, 6, (M, K)))
        B = rng.standard_normal((K, N)) * np.exp2(rng.integers(-6, 6, (K, N)))
    A, B = quantize(A, acc), quantize(B, acc)
    R, G = reference(A, B), abs_product(A, B)
    u = FORMATS[acc].u
    for order in ORDERS:
        for fma in (True, False):
            m = metrics(gemm(A, B, acc=acc, order=order, use_fma=fma), R, G, u, rounding_depth(order, K))
            assert m["nonfinite"] == 0
            assert m["bound_ratio"] <= 1.0, (order, fma, m)


def test_metrics_see_a_known_error():
    R = np.array([[1.0, 2.0]])
    C = np.array([[1.0 + 2.0**-10, 2.0]])
    G = np.array([[1.0, 2.0]])
    m = metrics(C, R, G, 2.0**-11, 1)
    assert m["max_rel"] == 2.0**-10 and m["max_err_u"] == 2.0
    assert m["bound_ratio"] == pytest.approx(2.0**-10 / gamma(1, 2.0**-11))
    assert differing_fraction(C, R) == 0.5


def test_fp16_accumulation_error_grows_with_k_and_fp32_accumulation_removes_it():
    rng = np.random.default_rng(6)
    errs = {}
    for K in (64, 4096):
        A, B = quantize(rng.random((4, K)), "fp16"), quantize(rng.random((K, 4)), "fp16")
        R, G = reference(A, B), abs_product(A, B)
        errs[K] = {acc: metrics(gemm(A, B, acc=acc), R, G, 1, 1)["max_rel"] for acc in ("fp16", "fp32")}
    assert errs[4096]["fp16"] > 8 * errs[64]["fp16"]
    assert errs[4096]["fp32"] < errs[4096]["fp16"] / 100
