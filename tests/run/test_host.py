"""Host runs: every CPU kernel computes C += A @ B correctly in every dtype, timed, within a dtype- and K-dependent tolerance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.run.host import UNIT_ROUNDOFF, gamma, round_bf16, run_host
from gemmsim.kernels.cpu import KERNELS, ORDERS

DTYPES = ["fp64", "fp32", "fp16", "bf16", "int8"]
BLOCKED = {"BM": 4, "BN": 3, "BK": 5, "tile_order": "kji", "inner_order": "jik"}


@pytest.mark.parametrize("kernel", list(ORDERS) + ["blocked"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_kernel_and_dtype_is_correct(kernel, dtype):
    params = BLOCKED if kernel == "blocked" else {}
    r = run_host(kernel, 13, 9, 11, dtype, params, warmup=1, repeats=3, seed=1)
    assert r.ok, (r.max_abs_err, r.atol, r.rtol)
    assert r.max_rel_err <= r.tolerance
    assert len(r.times_s) == 3 and min(r.times_s) <= r.median_s <= max(r.times_s) and r.median_s > 0
    if dtype == "int8":
        assert r.max_abs_err == 0 and r.tolerance == 0
    if dtype in ("fp64", "fp32"):
        assert 0 < r.gamma_k == pytest.approx(11 * UNIT_ROUNDOFF[dtype])


def test_blocked_host_every_tile_and_inner_order():
    A = np.random.default_rng(0).uniform(-1, 1, (7, 6))
    B = np.random.default_rng(1).uniform(-1, 1, (6, 5))
    for to in ORDERS:
        for io in ORDERS:
            C = np.zeros((7, 5))
            KERNELS["blocked"].host(A, B, C, KERNELS["blocked"].params(BM=3, BN=2, BK=4, tile_order=to, inner_order=io))
            np.testing.assert_allclose(C, A @ B, rtol=0, atol=1e-13)


def test_host_accumulates_into_c():
    A = np.ones((2, 3), np.float32)
    B = np.ones((3, 2), np.float32)
    C = np.full((2, 2), 10.0, np.float32)
    KERNELS["kji"].host(A, B, C, None)
    assert (C == 13).all()
    C16 = np.full((2, 2), 1.0, np.float16)
    KERNELS["ijk"].host(A.astype(np.float16), B.astype(np.float16), C16, None)
    assert C16.dtype == np.float16 and (C16 == 4).all()


def test_a_wrong_kernel_is_caught():
    def skips_last_k(A, B, C, params):
        C += A[:, :-1] @ B[:-1, :]

    bad = dataclasses.replace(KERNELS["ijk"], name="bad", host=skips_last_k)
    for dtype in ("fp32", "bf16", "int8"):
        r = run_host(bad, 8, 8, 64, dtype, repeats=1)
        assert not r.ok and r.max_rel_err > r.tolerance


def test_tolerance_follows_gamma_k():
    assert gamma(10, 2.0**-24) == pytest.approx(10 * 2.0**-24 / (1 - 10 * 2.0**-24))
    assert gamma(300, 2.0**-8) == float("inf")
    small, large = run_host("ikj", 4, 4, 8, "fp32", repeats=1), run_host("ikj", 4, 4, 256, "fp32", repeats=1)
    assert large.gamma_k == gamma(256, 2.0**-24) > 31 * small.gamma_k
    fp16 = run_host("ikj", 4, 4, 8, "fp16", repeats=1)
    assert fp16.rtol == 2.0**-11 and fp16.gamma_k == small.gamma_k  # fp32 accumulator, fp16 result


def test_round_bf16_nearest_even():
    # bf16 keeps 8 significant bits: spacing 2**-7 just above 1; halfway cases go to the even neighbour
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9, -3.0, 1 + 2**-7 + 2**-9], np.float32)
    assert round_bf16(x).tolist() == [1.0, 1.0, 1 + 2**-6, 1.0, -3.0, 1 + 2**-7]


def test_bad_host_requests():
    with pytest.raises(KernelError, match="unknown CPU kernel"):
        run_host("ijl", 4, 4, 4)
    with pytest.raises(KernelError, match="dtypes"):
        run_host("ijk", 4, 4, 4, "fp8")
    with pytest.raises(KernelError, match="BM"):
        run_host("blocked", 4, 4, 4, "fp32", {"BM": -1})
    with pytest.raises(KernelError, match="int32"):
        run_host("ijk", 2, 2, 200_000, "int8")
    with pytest.raises(KernelError, match="host GEMM"):
        KERNELS["ijk"].host(np.ones((2, 3)), np.ones((2, 2)), np.ones((2, 2)), None)
