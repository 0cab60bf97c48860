"""Strassen and Winograd: exact on integers, operation counts by an independent recursion, error within Higham."""

import numpy as np
import pytest

from gemmsim.errors import ExperimentError
from gemmsim.numerics.arith import quantize
from gemmsim.numerics.error import reference
from gemmsim.numerics.strassen import fast_gemm, flop_counts, higham_bound, levels


@pytest.mark.parametrize("alg", ["strassen", "winograd"])
def test_exact_on_small_integers(alg):
    rng = np.random.default_rng(0)
    A = rng.integers(-8, 9, (64, 64)).astype(float)
    B = rng.integers(-8, 9, (64, 64)).astype(float)
    np.testing.assert_array_equal(fast_gemm(A, B, algorithm=alg, cutoff=4, acc="fp32"), A @ B)


def _count(n, n0, a):
    """(mul, add) by recursion: 7 half-size products + a half-size block additions per level."""
    if n <= n0 or n % 2:
        return n**3, n * n * (n - 1)
    m, s = _count(n // 2, n0, a)
    return 7 * m, 7 * s + a * (n // 2) ** 2


@pytest.mark.parametrize("alg,a", [("strassen", 18), ("winograd", 15)])
def test_counts(alg, a):
    for n, n0 in [(4, 2), (64, 8), (1024, 32)]:
        c = flop_counts(n, n0, alg)
        assert (c["mul"], c["add"]) == _count(n, n0, a)
    c = flop_counts(32 * 2**5, 32, alg)
    assert c["levels"] == 5
    assert c["mul"] / (32 * 2**5) ** 3 == pytest.approx((7 / 8) ** 5)  # 0.513: half the multiplications
    assert flop_counts(4, 2, "strassen")["add"] == 28 + 72  # 7 products of 2x2 (4 adds each) + 18 2x2 additions


def test_error_within_higham_bound_and_grows_faster_than_classical():
    rng = np.random.default_rng(1)
    n, n0 = 128, 8
    A, B = quantize(rng.random((n, n)), "fp32"), quantize(rng.random((n, n)), "fp32")
    R = reference(A, B)
    u, norm = 2.0**-24, np.abs(A).max() * np.abs(B).max()
    err = {alg: np.abs(fast_gemm(A, B, algorithm=alg, cutoff=n0, acc="fp32") - R).max() / (u * norm)
           for alg in ("classical", "strassen", "winograd")}
    for alg, e in err.items():
        assert e <= higham_bound(n, n0, alg), (alg, e)
    assert err["strassen"] > err["classical"] and err["winograd"] > err["classical"]


def test_levels_and_errors():
    assert levels(1024, 32) == 5 and levels(96, 32) == 2 and levels(100, 8) == 2
    with pytest.raises(ExperimentError, match="unknown algorithm"):
        fast_gemm(np.eye(4), np.eye(4), algorithm="coppersmith")
    with pytest.raises(ExperimentError, match="square"):
        fast_gemm(np.ones((4, 2)), np.ones((2, 4)))
