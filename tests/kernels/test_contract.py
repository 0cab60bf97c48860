"""The GEMM contract (beta, bias + ReLU epilogue) in the bytes and accesses the models see, checked by hand."""

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.kernels.contract import bias_base, cpu_contract, epilogue_chunks
from gemmsim.kernels.cpu import cpu_trace
from gemmsim.machine import load_machine
from gemmsim.sim.cpu import simulate_cpu
from gemmsim.sim.gpu import simulate_gpu
from gemmsim.trace import Layout, LayoutSpec, concat


def test_beta_zero_drops_exactly_the_first_load_of_each_c_element():
    M, N, K = 3, 4, 5
    lay = Layout.build(M, N, K, "fp32")
    full = concat(cpu_trace("ikj", M, N, K))
    kept = concat(cpu_contract(cpu_trace("ikj", M, N, K, chunk=7), lay, 0))  # small chunks: first loads span chunks
    assert len(full) - len(kept) == M * N
    c_loads = lambda t: t[(t["addr"] >= lay.c_base) & (t["is_write"] == 0)]  # noqa: E731
    # ikj loads each C[i][j] once per k: K * M * N loads, of which the first of each element goes
    assert len(c_loads(full)) == K * M * N and len(c_loads(kept)) == (K - 1) * M * N
    # A and B accesses and all stores are untouched
    assert (kept["is_write"] == 1).sum() == (full["is_write"] == 1).sum()
    assert cpu_contract(iter([full]), lay, 1.0) is not None


def test_epilogue_accesses_by_hand():
    lay = Layout.build(2, 3, 4, "fp32")
    fused = concat(epilogue_chunks(lay, "bias_relu"))
    sep = concat(epilogue_chunks(lay, "bias_relu_separate"))
    assert len(concat(epilogue_chunks(lay, "none"))) == 0
    bb = bias_base(lay)
    assert bb % 128 == 0 and bb >= lay.end
    # fused: bias[j] once per C element, loads only; separate: load C[i][j], load bias[j], store C[i][j]
    assert list(fused["addr"]) == [bb + 4 * j for _ in range(2) for j in range(3)] and not fused["is_write"].any()
    assert len(sep) == 3 * 2 * 3 and sep["is_write"].sum() == 6
    assert list(sep["addr"][:3]) == [lay.c(0, 0), bb, lay.c(0, 0)]


def test_cpu_separate_epilogue_is_a_round_trip_of_c():
    m = load_machine("haswell")
    base = simulate_cpu(m, "ikj", 64, 64, 8)
    sep = simulate_cpu(m, "ikj", 64, 64, 8, layout={"epilogue": "bias_relu_separate"})
    fused = simulate_cpu(m, "ikj", 64, 64, 8, layout={"epilogue": "bias_relu"})
    assert sep["L1_loads"] - base["L1_loads"] == 2 * 64 * 64 and sep["L1_stores"] - base["L1_stores"] == 64 * 64
    assert fused["L1_loads"] - base["L1_loads"] == 64 * 64 and fused["L1_stores"] == base["L1_stores"]


def test_gpu_beta_and_epilogue_bytes():
    M = N = 512
    e = 2
    base = simulate_gpu("a100", "tensorcore", M=M, N=N, K=64, dtype="fp16")
    beta = simulate_gpu("a100", "tensorcore", M=M, N=N, K=64, dtype="fp16", layout={"beta": 1})
    sep = simulate_gpu("a100", "tensorcore", M=M, N=N, K=64, dtype="fp16", layout={"epilogue": "bias_relu_separate"})
    fused = simulate_gpu("a100", "tensorcore", M=M, N=N, K=64, dtype="fp16", layout={"epilogue": "bias_relu"})
    # the GPU kernel overwrites C: only beta != 0 reads it, exactly once from DRAM (C starts outside the L2)
    assert base["dram_bytes_read_C"] == 0 and beta["dram_bytes_read_C"] == M * N * e
    # the separate pass reads C and the bias and writes C back: 2 M N e + N e bytes
    assert sep["epilogue_dram_bytes"] == 2 * M * N * e + N * e
    assert sep["dram_bytes"] == pytest.approx(base["dram_bytes"] + 2 * M * N * e + N * e, rel=1e-6)
    assert sep["time_s"] > base["time_s"]
    # fused: the bias (N e bytes) is the only new data
    assert fused["dram_bytes_read"] - base["dram_bytes_read"] == pytest.approx(N * e, abs=2 * 1024)


def test_fused_bias_needs_row_major_b():
    with pytest.raises(KernelError):
        simulate_gpu("a100", "tensorcore", M=128, N=128, K=64, dtype="fp16", layout={"epilogue": "bias_relu", "trans_b": True})
    assert np.isfinite(simulate_gpu("a100", "tensorcore", M=128, N=128, K=64, dtype="fp16", layout={"trans_b": True})["time_s"])
