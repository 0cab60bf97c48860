"""Hong-Kung / red-blue pebbling bound: hand-worked numbers, the tiled schedule above it, simulated caches above it."""

import math

import pytest

from gemmsim.analytic.bounds import (
    compulsory_words,
    cpu_bound_columns,
    hong_kung_bytes,
    hong_kung_words,
    pebbling_words,
    tile_side,
    tiled_words,
)
from gemmsim.errors import KernelError
from gemmsim.machine import load_machine
from gemmsim.sim.cpu import simulate_cpu


def test_hand_worked_1024_cube_in_32KiB():
    # S = 32 KiB / 4 B = 8192 words, sqrt(S) = 64 sqrt(2); 2 * 2^30 / (2^6 * 2^0.5) = 2^24.5 = 23,726,566.5
    # minus 2 S = 16,384 -> 23,710,182.5 words; compulsory is only 3 * 2^20 = 3,145,728 words
    assert pebbling_words(1024, 1024, 1024, 8192) == pytest.approx(23_710_182.5, abs=1)
    assert hong_kung_words(1024, 1024, 1024, 8192) == pytest.approx(23_710_182.5, abs=1)
    assert hong_kung_bytes(1024, 1024, 1024, 32 * 1024, "fp32") == pytest.approx(4 * 23_710_182.5, abs=4)
    # fp64: the same 32 KiB holds 4096 words: 2^31 / 64 - 8192 = 33,546,240 words of 8 bytes
    assert hong_kung_bytes(1024, 1024, 1024, 32 * 1024, "fp64") == pytest.approx(8 * 33_546_240, rel=1e-12)


def test_small_problem_is_compulsory():
    # 16^3 with 8192 words: 2 * 4096 / 90.5 - 16384 < 0, so the floor is reading A, B and writing C: 3 * 256 words
    assert pebbling_words(16, 16, 16, 8192) < 0
    assert compulsory_words(16, 16, 16) == 768
    assert hong_kung_words(16, 16, 16, 8192) == 768
    assert compulsory_words(2, 3, 5) == 2 * 5 + 5 * 3 + 2 * 3


def test_tile_side_and_tiled_schedule():
    assert tile_side(8192) == 52  # floor(sqrt(2730)) = 52 (52^2 = 2704, 53^2 = 2809)
    assert tile_side(3) == 1
    # 1024 / 52 -> 20 tile rows and columns: 20 * 2^20 (A) + 20 * 2^20 (B) + 2 * 2^20 (C) = 42 * 2^20 words
    assert tiled_words(1024, 1024, 1024, 52) == 42 * 2**20
    # the schedule that keeps three tiles is a feasible schedule, so it can never beat the bound
    for m, n, k in ((64, 64, 64), (1000, 300, 77), (4096, 4096, 4096), (5, 4096, 9)):
        for S in (48, 1000, 8192, 1 << 20):
            assert tiled_words(m, n, k, tile_side(S)) >= hong_kung_words(m, n, k, S)
    # and for a large cube it is within about sqrt(3) of the leading term 2 n^3 / sqrt(S)
    r = tiled_words(4096, 4096, 4096, tile_side(8192)) / hong_kung_words(4096, 4096, 4096, 8192)
    assert 1.6 < r < 2.0


def test_bad_input_is_a_gemmsim_error():
    with pytest.raises(KernelError):
        hong_kung_words(0, 4, 4, 100)
    with pytest.raises(KernelError):
        hong_kung_words(4, 4, 4, 0)


@pytest.mark.parametrize("kernel,params", [("ijk", {}), ("kji", {}), ("blocked", {"BM": 4, "BN": 4, "BK": 4})])
def test_simulated_caches_never_beat_the_bound(kernel, params):
    # the toy machine's 128-byte L1 makes the pebbling term bind; every level's traffic must sit on or above it
    m = load_machine("toy")
    r = simulate_cpu(m, kernel, 24, 24, 24, **params)
    for c in m.caches:
        assert r[f"traffic_over_bound_{c.name}"] >= 1.0, c.name
    assert r["traffic_over_bound"] >= 1.0
    assert r["hong_kung_bytes"] == r["hong_kung_bytes_dram"]


def test_cpu_bound_columns_counts_private_levels_per_core():
    m = load_machine("haswell")
    one = cpu_bound_columns(m, 512, 512, 512, "fp32", {}, threads=1)
    four = cpu_bound_columns(m, 512, 512, 512, "fp32", {}, threads=4)
    l1 = m.caches[0].size
    assert one["hong_kung_bytes_L1"] == pytest.approx(4 * max(2 * 512**3 / math.sqrt(l1 / 4) - 2 * l1 / 4, 3 * 512**2))
    assert four["hong_kung_bytes_L1"] < one["hong_kung_bytes_L1"]  # four L1s hold more, so the floor is lower


def test_seed_001_intensity_formulas_against_the_gpu_traces():
    from gemmsim.analytic.bounds import naive_intensity, tile_intensity
    from gemmsim.sim.gpu import simulate_gpu

    assert naive_intensity(4) == 0.25
    assert tile_intensity(32, 32, 4) == 8.0  # T / 4
    assert tile_intensity(128, 128, 2) == 64.0 and tile_intensity(256, 256, 2) == 128.0
    # independent check: FLOPs over the bytes the kernels' global loads request (the C stores taken out)
    M = N = K = 256
    t = simulate_gpu("a100", "tiled_smem", M=M, N=N, K=K, dtype="fp32", TILE=32)
    assert t["flops"] / (t["global_sectors"] * 32 - M * N * 4) == 8.0
    c = simulate_gpu("a100", "tensorcore", M=M, N=N, K=K, dtype="fp16", BM=128, BN=128, BK=32)
    assert c["flops"] / (c["l2_sectors_read"] * 32) == 64.0  # cp.async goes to L2 only: every load request is counted there
    # the naive kernel: each thread's loads of A (broadcast within a warp) and B: per warp-instruction pair 2 x 32
    # FMAs need 2 x 32 x 4 bytes requested by the lanes
    n = simulate_gpu("a100", "naive", M=64, N=64, K=64, dtype="fp32")
    lane_bytes = 2 * 64 * 64 * 64 * 4
    assert n["flops"] / lane_bytes == naive_intensity(4)
