"""Seed claims that are arithmetic on machine files and shapes (experiments/CLAIMS.md); experiments cover the rest."""

import pytest

from gemmsim.machine import load_machine
from gemmsim.analytic.workload import GemmOp


def test_000_8_intensity_of_4096_cubed_fp16():
    op = GemmOp(name="gemm", M=4096, N=4096, K=4096, count=1)
    assert op.flops == pytest.approx(137.4e9, rel=1e-3)  # ~137 GFLOP
    assert op.min_bytes("fp16") == pytest.approx(100.7e6, rel=1e-3)  # ~100.7 MB of minimum traffic
    assert op.ideal_intensity("fp16") == pytest.approx(1365, rel=1e-3)  # ~1365 FLOP/B
    assert GemmOp(name="g", M=1024, N=1024, K=1024, count=1).ideal_intensity("fp32") == pytest.approx(1024 / 6)  # N/6


def test_000_14_decode_weight_read():
    op = GemmOp(name="decode", M=1, N=4096, K=4096, count=1)
    assert 4096 * 4096 * 2 == 32 << 20  # W is 32 MiB in bf16
    assert op.flops == pytest.approx(33.5e6, rel=1e-2)
    assert op.ideal_intensity("bf16") == pytest.approx(1.0, rel=1e-3)


def test_001_a100_ridges_and_shared_memory_bandwidth():
    d = load_machine("a100").derived()
    assert d["ridge_point_flop_per_byte_cuda_core"]["fp32"] == pytest.approx(10, rel=0.02)  # seed: 10
    assert d["ridge_point_flop_per_byte_tensor"]["fp16->fp32"] == pytest.approx(161, rel=0.01)  # seed: 161
    assert d["ridge_point_flop_per_byte_tensor"]["tf32->fp32"] == pytest.approx(81, rel=0.01)  # seed: ~81
    assert d["smem_bandwidth_gbps"] == pytest.approx(19_500, rel=0.01)  # seed: ~19 TB/s
    # tile intensity I = T/4 (fp32) must reach the ridge: T >= 41 for fp32 CUDA cores, T >= 323 for fp16 tensor cores (T/2)
    assert 4 * d["ridge_point_flop_per_byte_cuda_core"]["fp32"] == pytest.approx(40.3, abs=0.1)
    assert 2 * d["ridge_point_flop_per_byte_tensor"]["fp16->fp32"] == pytest.approx(322.3, abs=0.2)


def test_001_tensor_core_speedups_over_cuda_cores():
    a100 = load_machine("a100")
    assert a100.peak_tflops("fp16", "fp32") / a100.peak_tflops("fp32", tensor=False) == pytest.approx(16)  # 16x on A100
    assert a100.peak_tflops("tf32", "fp32") == pytest.approx(156, rel=0.01)
    assert a100.peak_tflops("fp32", tensor=False) == pytest.approx(19.5, rel=0.01)


def test_003_rtx4060_peaks():
    d = load_machine("rtx4060").derived()["peak_tflops_tensor"]
    assert d["fp16->fp16"] == pytest.approx(60.55, rel=0.01)  # the paper's 60.55 (60.46 at the 2460 MHz boost)
    assert d["fp16->fp32"] == pytest.approx(d["fp16->fp16"] / 2)  # GeForce Ada: half rate with fp32 accumulate
