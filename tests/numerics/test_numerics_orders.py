"""Summation orders against literal scalar loops in numpy's own float16/float32 arithmetic."""

import numpy as np
import pytest

from gemmsim.errors import ExperimentError
from gemmsim.numerics.arith import quantize
from gemmsim.numerics.orders import LOOP_ORDERS, gemm, loop_order_gemm, rounding_depth, sample_rows

DT = {"fp16": np.float16, "fp32": np.float32}


def _inputs(M, K, N, name, seed=0, positive=True):
    rng = np.random.default_rng(seed)
    f = (lambda s: rng.random(s)) if positive else (lambda s: rng.standard_normal(s))
    return quantize(f((M, K)), name), quantize(f((K, N)), name)


def _np_sum(terms, dt):
    s = dt(0)
    for t in terms:
        s = dt(s + t)
    return s


def _np_products(a, b, dt):
    return [dt(dt(x) * dt(y)) for x, y in zip(a, b)]


@pytest.mark.parametrize("name", ["fp16", "fp32"])
def test_sequential_mul_add_matches_numpy_scalar_loop(name):
    dt = DT[name]
    A, B = _inputs(5, 300, 6, name, positive=False)
    C = gemm(A, B, acc=name, use_fma=False)
    ref = np.array([[_np_sum(_np_products(A[i], B[:, j], dt), dt) for j in range(6)] for i in range(5)], dtype=np.float64)
    np.testing.assert_array_equal(C, ref)


def _np_tree(vals, dt):
    vals = list(vals)
    while len(vals) > 1:
        half, odd = len(vals) // 2, len(vals) % 2
        vals = [dt(vals[l] + vals[l + half + odd]) for l in range(half)] + vals[half : half + odd]
    return vals[0]


@pytest.mark.parametrize("order,param", [("blocked", 64), ("lanes", 8), ("lanes", 5), ("splitk", 3), ("pairwise", 4), ("kahan", None)])
def test_orders_match_numpy_scalar_reimplementation(order, param):
    dt = np.float16
    A, B = _inputs(3, 250, 5, "fp16", seed=1)
    C = gemm(A, B, acc="fp16", order=order, param=param, use_fma=False)
    K = A.shape[1]
    for i in range(3):
        for j in range(5):
            pr = _np_products(A[i], B[:, j], dt)
            if order == "blocked":
                want = _np_sum([_np_sum(pr[k : k + param], dt) for k in range(0, K, param)], dt)
            elif order == "lanes":
                want = _np_tree([_np_sum(pr[l::param], dt) for l in range(param)], dt)
            elif order == "splitk":
                ch = -(-K // param)
                want = _np_sum([_np_sum(pr[k : k + ch], dt) for k in range(0, K, ch)], dt)
            elif order == "pairwise":
                want = _np_tree([_np_sum(pr[k : k + param], dt) for k in range(0, K, param)], dt)
            else:
                s, c = dt(0), dt(0)
                for p in pr:
                    y = dt(p - c)
                    t = dt(s + y)
                    c = dt(dt(t - s) - y)
                    s = t
                want = s
            assert C[i, j] == float(want), (order, i, j)


def test_six_loop_orders_give_identical_bits_and_blocking_does_not():
    A, B = _inputs(16, 512, 12, "fp16", seed=2)
    seq = gemm(A, B, acc="fp16", use_fma=True)
    for lo in LOOP_ORDERS:
        np.testing.assert_array_equal(loop_order_gemm(A, B, lo, acc="fp16", use_fma=True), seq)
    assert np.any(gemm(A, B, acc="fp16", order="blocked", param=64) != seq)


def test_degenerate_parameters_reduce_to_sequential():
    A, B = _inputs(7, 129, 9, "bf16", seed=3, positive=False)
    seq = gemm(A, B, acc="bf16", use_fma=True)
    for order, param in [("blocked", 1000), ("lanes", 1), ("splitk", 1), ("pairwise", 1000)]:
        np.testing.assert_array_equal(gemm(A, B, acc="bf16", order=order, param=param, use_fma=True), seq)


def test_fp16_accumulator_stagnates_at_2048():
    """Summing 4096 ones: fp16 has 11 bits, so 2048 + 1 is a tie that rounds back to 2048 (by hand); bf16 (8 bits)
    stops at 256; fp32 reaches 4096; pairwise summation adds equal powers of two and is exact in fp16."""
    A, B = np.ones((1, 4096)), np.ones((4096, 1))
    assert gemm(A, B, acc="fp16")[0, 0] == 2048
    assert gemm(A, B, acc="bf16")[0, 0] == 256
    assert gemm(A, B, acc="fp32")[0, 0] == 4096
    assert gemm(A, B, acc="fp16", order="pairwise")[0, 0] == 4096


def test_output_format_and_rows():
    A, B = _inputs(10, 64, 8, "fp16", seed=4)
    full = gemm(A, B, acc="fp32")
    np.testing.assert_array_equal(gemm(A, B, acc="fp32", out="fp16"), quantize(full, "fp16"))
    np.testing.assert_array_equal(gemm(A, B, acc="fp32", rows=np.array([7, 2])), full[[7, 2]])


def test_sample_rows_and_depths():
    assert len(sample_rows(64, 64, 64)) == 64
    r = sample_rows(4096, 4096, 4096, n=32)
    assert len(r) == 32 and np.all(np.diff(r) > 0)
    assert rounding_depth("sequential", 1000) == 1000
    assert rounding_depth("pairwise", 1024, 1) == 1 + 10
    assert rounding_depth("blocked", 1024, 256) == 256 + 4


def test_bad_choices_are_gemmsim_errors():
    A, B = _inputs(2, 4, 2, "fp32")
    with pytest.raises(ExperimentError, match="unknown summation order"):
        gemm(A, B, order="zigzag")
    with pytest.raises(ExperimentError, match="do not multiply"):
        gemm(A, B.T[:, :3], acc="fp32")
    with pytest.raises(ExperimentError, match="not supported"):
        gemm(A, B, acc="fp8_e4m3")
    with pytest.raises(ExperimentError, match="permutation"):
        loop_order_gemm(A, B, "iik")
