"""The host's SIMD microkernel: right answers against numpy (odd sizes, every dtype it takes), vector FMAs in its code."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.kernels.host_micro import asm_fma_count, host_gemm, host_vector_bits

# One shape and blocking for every test (each new MR x NR compiles the kernel once, about 2 s).
SHAPE = dict(MR=6, NR=16, KC=7, MC=12, NC=40)


def _cpu_flags() -> set[str]:
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return set()
    m = re.search(r"^(flags|Features)\s*:\s*(.*)$", text, re.M)
    return set(m.group(2).split()) if m else set()


@pytest.mark.parametrize("dtype", ["fp64", "fp32", "int8"])
def test_microkernel_gemm_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    M, N, K = 29, 45, 23  # not multiples of MR, NR, KC, MC or NC: every edge and every loop runs more than once
    if dtype == "int8":
        A = rng.integers(-128, 128, (M, K), dtype=np.int8)
        B = rng.integers(-128, 128, (K, N), dtype=np.int8)
        C = rng.integers(-5, 5, (M, N), dtype=np.int32)
    else:
        t = np.float64 if dtype == "fp64" else np.float32
        A, B = rng.uniform(-1, 1, (M, K)).astype(t), rng.uniform(-1, 1, (K, N)).astype(t)
        C = rng.uniform(-1, 1, (M, N)).astype(t)
    want = C.astype(np.float64) + A.astype(np.float64) @ B.astype(np.float64)
    host_gemm(A, B, C, **SHAPE)
    if dtype == "int8":
        assert (C == want).all()
    else:
        tol = 1e-12 if dtype == "fp64" else 1e-5
        np.testing.assert_allclose(C, want, rtol=0, atol=tol * K)


def test_microkernel_threads_match_numpy():
    rng = np.random.default_rng(4)
    A, B = rng.uniform(-1, 1, (31, 9)).astype(np.float32), rng.uniform(-1, 1, (9, 17)).astype(np.float32)
    C = np.zeros((31, 17), np.float32)
    host_gemm(A, B, C, threads=2, **SHAPE)
    np.testing.assert_allclose(C, A @ B, rtol=0, atol=1e-5)


def test_microkernel_is_vector_fmas():
    """The compiled kernel holds the tile in vector registers: MR x NR/lanes packed FMAs per k step, on this CPU's widest vectors."""
    flags = _cpu_flags()
    counts = asm_fma_count(SHAPE["MR"], SHAPE["NR"], np.float32)
    if "fma" in flags or "avx512f" in flags:  # x86 with FMA3
        reg = {512: "zmm", 256: "ymm"}.get(host_vector_bits(), "xmm")
        lanes = host_vector_bits() // 32
        assert counts[reg] >= SHAPE["MR"] * (SHAPE["NR"] // lanes), counts
    elif "asimd" in flags:  # Arm
        assert counts["neon"] >= SHAPE["MR"] * (SHAPE["NR"] // 4), counts
    else:
        pytest.skip("this CPU has no vector FMA the test knows of")


def test_microkernel_bad_inputs():
    with pytest.raises(KernelError, match="dtypes"):
        host_gemm(np.ones((2, 2), np.float16), np.ones((2, 2), np.float16), np.ones((2, 2), np.float16), **SHAPE)
    with pytest.raises(KernelError, match="M x K"):
        host_gemm(np.ones((2, 3), np.float32), np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), **SHAPE)
    with pytest.raises(KernelError, match="MR"):
        host_gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), 0, 16, 4, 4, 4)
