"""Systolic model: cycles worked by hand, invariants, trace-driven = closed form, the dataflow recomputes A @ B."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim import load_machine, simulate_systolic
from gemmsim.errors import KernelError, MachineFileError
from gemmsim.models.systolic import array_state

S4 = load_machine("systolic_4")
TPU = load_machine("tpu_v1")


def ceil(a, b):
    return -(-a // b)


# ---- cycles worked by hand ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "df,M,N,K,R,C,folds,total",
    [
        # SCALE-Sim convention: folds x (2R + C + T - 2) - 1 for ws (T = M) and is (T = N); os: T + R + C - 2, T = K
        ("ws", 2, 2, 2, 2, 2, 1, 1 * (4 + 2 + 2 - 2) - 1),  # 5
        ("is", 2, 2, 2, 2, 2, 1, 5),
        ("os", 2, 2, 2, 2, 2, 1, 1 * (2 + 2 + 2 - 2) - 1),  # 3
        # 4 x 4, M=6 N=5 K=7: ws folds = ceil(7/4) * ceil(5/4) = 4 of 8+4+6-2 = 16 -> 63
        ("ws", 6, 5, 7, 4, 4, 4, 4 * 16 - 1),
        # os folds = ceil(6/4) * ceil(5/4) = 4 of 7+4+4-2 = 13 -> 51
        ("os", 6, 5, 7, 4, 4, 4, 4 * 13 - 1),
        # is folds = ceil(7/4) * ceil(6/4) = 4 of 8+4+5-2 = 15 -> 59
        ("is", 6, 5, 7, 4, 4, 4, 4 * 15 - 1),
    ],
)
def test_scalesim_cycles_by_hand(df, M, N, K, R, C, folds, total):
    r = simulate_systolic(S4, M=M, N=N, K=K, dataflow=df, convention="scalesim", rows=R, cols=C)
    assert (r.folds, r.total_cycles, r.compute_cycles, r.stall_cycles) == (folds, total, total, 0)
    # utilization over the cycle count (total + 1); SCALE-Sim's 'Overall Util' divides by the last index
    assert r.utilization == pytest.approx(M * N * K / (R * C * (total + 1)))
    assert r.extras["scalesim_overall_util"] == pytest.approx(M * N * K / (R * C * total))


@pytest.mark.parametrize(
    "df,M,N,K,R,compute",
    [
        # one fold on 2 x 2, M=N=K=2: ws/is: tile load R = 2, stream T = 2, then R-1 + C-1 to leave -> 6
        ("ws", 2, 2, 2, 2, 6),
        ("is", 2, 2, 2, 2, 6),
        # os: T = 2 products, then the sums shift out: T + 2R + C - 2 = 6
        ("os", 2, 2, 2, 2, 6),
        # 4 x 4 ws, M=6 N=4 K=8: two K folds. Fold 0 loads at 0, streams at 4; fold 1's tile shifts in behind
        # it from 4 and may stream at max(4 + 6, 4 + 4) = 10; it ends 10 + T + R + C - 2 = 22
        ("ws", 6, 4, 8, 4, 22),
        # is is ws with A and B exchanged: M=4 N=6 K=8 -> 22
        ("is", 4, 6, 8, 4, 22),
        # 4 x 4 os, M=6 N=4 K=8: two M folds of T = 8, 8 apart (max(T, R)); the second ends 8 + 8 + 8 + 4 - 2 = 26
        ("os", 6, 4, 8, 4, 26),
    ],
)
def test_machine_compute_cycles_by_hand(df, M, N, K, R, compute):
    r = simulate_systolic(S4, M=M, N=N, K=K, dataflow=df, rows=R, cols=R)
    assert r.compute_cycles == compute


def test_machine_stalls_by_hand():
    """2 x 2 ws, M=N=K=2 at 1 byte per cycle: B tile 4 B (cycles 0-4), A tile 4 B (4-8), tile shifts in 4-6,
    stream waits for A until 8, ends at 8 + 2 + 2 + 2 - 2 = 12, then 4 int32 results = 16 B leave: 12-28."""
    r = simulate_systolic(S4, M=2, N=2, K=2, dataflow="ws", rows=2, cols=2, dram_bandwidth_gbps=1.0)
    assert (r.total_cycles, r.compute_cycles, r.stall_cycles) == (28, 6, 22)
    assert r.dram_bytes_by_operand == {"A": 4, "B": 4, "C": 16}


def test_machine_compute_closed_form():
    """Back-to-back folds with double buffering: R + sum max(T, R) over all folds but the last + its T + R + C' - 2."""
    for df, M, N, K in (("ws", 37, 70, 90), ("is", 70, 37, 90), ("os", 90, 70, 37)):
        r = simulate_systolic(S4, M=M, N=N, K=K, dataflow=df, rows=8, cols=8, accumulator_entries=64, unified_buffer="1MiB")
        s = r.schedule
        T, R = s.stream, 8
        head = 0 if df == "os" else R
        tail = T[-1] + (2 * R if df == "os" else R) + s.used_cols[-1] - 2
        assert r.compute_cycles == head + int(np.maximum(T[:-1], R).sum()) + tail
        assert r.fold_grid[0] == (ceil(M if df == "ws" else N, 32) if df != "os" else ceil(N, 8))


# ---- invariants, and the trace-driven path equal to the closed forms ---------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    df=st.sampled_from(["ws", "os", "is"]),
    conv=st.sampled_from(["machine", "scalesim"]),
    M=st.integers(1, 40), N=st.integers(1, 40), K=st.integers(1, 40),
    R=st.integers(1, 6), C=st.integers(1, 6),
    bw=st.sampled_from([0.5, 4.0, 1000.0]),
    sram=st.sampled_from([200, 1024, 65536]),
)
def test_invariants_and_trace_equals_closed_form(df, conv, M, N, K, R, C, bw, sram):
    r = simulate_systolic(S4, M=M, N=N, K=K, dataflow=df, convention=conv, rows=R, cols=C, dram_bandwidth_gbps=bw,
                          ifmap_sram=sram, filter_sram=sram, ofmap_sram=sram)
    assert r.macs == M * N * K
    assert 0 < r.utilization <= 1
    assert 0 < r.mapping_efficiency <= 1
    assert r.total_cycles == r.compute_cycles + r.stall_cycles and r.stall_cycles >= 0
    folds = ceil(M, R) * ceil(N, C) if df == "os" else int(np.prod(r.fold_grid))
    assert r.folds == folds == int(np.prod(r.fold_grid))
    if df != "os":
        assert r.fold_grid[1:] == ((ceil(N, C) if df == "ws" else ceil(M, C)), ceil(K, R))
    tc = r.trace_counters(chunk=4096)
    assert tc["sram_reads"] == r.sram_reads
    assert tc["sram_writes"] == r.sram_writes
    if conv == "scalesim":
        assert tc["dram_words"] == r.extras["dram_words"]
        assert tc["stall_cycles"] == r.stall_cycles
        if r.schedule.used_cols[-1] == C and (df == "os" or r.schedule.used_rows[-1] == R):
            assert tc["last_cycle"] == r.compute_cycles  # the last demand line carries the last write
    else:
        assert tc["last_cycle"] == r.extras["last_write_cycle"]
        assert r.total_cycles >= r.dram_bytes / (bw / S4.clock_ghz) - 1


@pytest.mark.parametrize("df", ["ws", "os", "is"])
@pytest.mark.parametrize("conv", ["machine", "scalesim"])
def test_dataflow_recomputes_the_product(df, conv):
    """Replay what every PE multiplies, cycle by cycle, and add it where the partial sum goes: the result is A @ B,
    every product exactly once."""
    M, N, K, R, C = 5, 3, 4, 3, 2
    rng = np.random.default_rng(7)
    A = rng.integers(-5, 6, (M, K))
    B = rng.integers(-5, 6, (K, N))
    r = simulate_systolic(S4, M=M, N=N, K=K, dataflow=df, convention=conv, rows=R, cols=C, accumulator_entries=4)
    out = np.zeros((M, N), np.int64)
    seen = np.zeros((M, N, K), np.int64)
    for cyc in range(r.total_cycles + 1):
        s = array_state(r, cyc)
        busy = s["mov_i"] >= 0
        for pr, pc in zip(*np.nonzero(busy)):
            si, sj, mi, mj = (int(s[k][pr, pc]) for k in ("stat_i", "stat_j", "mov_i", "mov_j"))
            oi, oj = int(s["out_i"][pr, pc]), int(s["out_j"][pr, pc])
            if df == "ws":  # B[si][sj] x A[mi][mj], k = sj... the stationary B row is the k
                k, prod = si, B[si, sj] * A[mi, mj]
                assert mj == si
            elif df == "is":
                k, prod = sj, A[si, sj] * B[mi, mj]
                assert mi == sj
            else:  # os: the PE holds C[si][sj]; A[mi][mj] meets B[mj][sj]
                k, prod = mj, A[mi, mj] * B[mj, sj]
                assert (oi, oj) == (si, sj) == (mi, sj)
            out[oi, oj] += prod
            seen[oi, oj, k] += 1
    assert np.array_equal(out, A @ B)
    assert (seen == 1).all()


# ---- memory: stalls when bandwidth is short or buffers small --------------------------------------------------------
def test_tpu_decode_is_weight_bandwidth_bound():
    """M = 1, K = N = 4096 on TPU v1: 16 MiB of weights at 34 GB/s dominate; the array idles (seed 000 s14)."""
    r = simulate_systolic(TPU, M=1, N=4096, K=4096)
    assert r.dram_bytes_by_operand["B"] == 4096 * 4096
    dram_cycles = r.dram_bytes / TPU.dram_bytes_per_cycle
    assert dram_cycles <= r.total_cycles <= dram_cycles * 1.01
    assert r.stall_cycles > 0.8 * r.total_cycles
    assert r.utilization < 0.001 and r.mapping_efficiency == 1.0
    big = simulate_systolic(TPU, M=2048, N=4096, K=4096)
    assert big.utilization > 300 * r.utilization


def test_small_matrix_leaves_the_array_idle():
    """Seed 001: a matrix smaller than the array leaves most PEs multiplying nothing."""
    r = simulate_systolic(TPU, M=64, N=64, K=64, dram_bandwidth_gbps=1e6)
    assert r.mapping_efficiency == pytest.approx(64 * 64 / 65536)
    assert r.utilization < 0.01


def test_bandwidth_buffers_and_double_buffering():
    base = dict(M=256, N=256, K=256, dataflow="ws")
    fast = simulate_systolic(S4, **base, rows=16, cols=16, dram_bandwidth_gbps=1e4)
    slow = simulate_systolic(S4, **base, rows=16, cols=16, dram_bandwidth_gbps=4)
    assert fast.compute_cycles == slow.compute_cycles
    assert slow.stall_cycles > fast.stall_cycles
    # a unified buffer too small for the A panel: A is fetched again for every N tile
    roomy = simulate_systolic(S4, **base, rows=16, cols=16, unified_buffer="1MiB", accumulator_entries=512)
    tight = simulate_systolic(S4, **base, rows=16, cols=16, unified_buffer="4KiB", accumulator_entries=512)
    assert roomy.dram_bytes_by_operand["A"] == 256 * 256
    assert tight.dram_bytes_by_operand["A"] == 256 * 256 * ceil(256, 16)
    # without the second weight register the tile load is exposed in every fold
    single = simulate_systolic(S4, **base, rows=16, cols=16, double_buffered_stationary=False)
    double = simulate_systolic(S4, **base, rows=16, cols=16)
    assert single.compute_cycles > double.compute_cycles
    # a deeper weight FIFO can only help
    totals = [simulate_systolic(S4, **base, rows=16, cols=16, weight_fifo_tiles=d, dram_bandwidth_gbps=8).total_cycles for d in (1, 2, 4)]
    assert totals == sorted(totals, reverse=True)


def test_accumulators_chunk_the_stream():
    """Partial sums live in accumulator_entries / 2 rows; a longer M is cut, and B is read once per chunk."""
    r = simulate_systolic(S4, M=20, N=4, K=8, dataflow="ws")  # 16 entries, double buffered -> 8 rows
    assert r.fold_grid == (3, 1, 2)
    assert r.dram_bytes_by_operand["B"] == 4 * 8 * 3
    assert r.sram_writes["C"] == 20 * 4 * 2 and r.sram_reads["C"] == 20 * 4 * 1


# ---- the machine files and the API's edges ----------------------------------------------------------------------------
def test_tpu_v1_derived_figures():
    """Jouppi et al. 2017: 65,536 MACs, 92 TOPS, 64 KiB tiles, 4 MiB accumulators, ridge ~1350 MACs per byte."""
    d = TPU.derived()
    assert d["pes"] == 65536
    assert d["peak_tops"]["int8"] == pytest.approx(91.75, abs=0.01)
    assert d["stationary_tile_bytes"] == 64 * 1024
    assert d["accumulator_bytes"] == 4 * 1024 * 1024
    assert d["ridge_point_macs_per_byte"]["int8"] == pytest.approx(1350, rel=0.01)


def test_dtype_the_array_lacks_is_noted():
    r = simulate_systolic(TPU, M=8, N=8, K=8, dtype="fp32")
    assert r.dtype == "int8" and "fp32" in r.extras["compute_dtype_note"]
    assert "compute_dtype_note" not in simulate_systolic(TPU, M=8, N=8, K=8, dtype="int8").extras


def test_bad_calls_raise():
    with pytest.raises(KernelError):
        simulate_systolic(S4, M=4, N=4, K=4, warp_size=32)
    with pytest.raises(KernelError):
        simulate_systolic(S4, M=0, N=4, K=4)
    with pytest.raises(KernelError):
        simulate_systolic(S4, M=4, N=4, K=4, dataflow="rs")
    with pytest.raises(MachineFileError):
        simulate_systolic(S4, M=4, N=4, K=4, rows=0)
    with pytest.raises(KernelError):
        simulate_systolic(load_machine("haswell"), M=4, N=4, K=4)


def test_what_if_dataflow_is_flagged():
    assert simulate_systolic(TPU, M=8, N=8, K=8, dataflow="ws").native_dataflow
    assert not simulate_systolic(TPU, M=8, N=8, K=8, dataflow="os").native_dataflow
