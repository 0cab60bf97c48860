"""Systolic fold schedules and SRAM traces: every product computed once, accesses worked by hand on 2 x 2 arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.errors import KernelError
from gemmsim.kernels.systolic import (
    SYSTOLIC_ACCESS,
    fold_patterns,
    fold_schedule,
    pattern_counts,
    scalesim_fold_cycles,
    trace_chunks,
)
from gemmsim.trace import Layout


def _events(M, N, K, table, dtype="int8"):
    """The trace as a sorted list of (cycle, operand, i, j, is_write), matrix indices decoded from addresses."""
    lay = Layout.build(M, N, K, dtype)
    out = []
    for ch in trace_chunks(table):
        for rec in ch:
            op = "ABC"[rec["operand"]]
            base, width = {"A": (lay.a_base, K), "B": (lay.b_base, N), "C": (lay.c_base, N)}[op]
            i, j = divmod(int(rec["addr"]) - base, width)
            out.append((int(rec["cycle"]), op, i, j, int(rec["is_write"])))
    return sorted(out)


def _scalesim_table(df, M, N, K, R, C):
    s = fold_schedule(df, M, N, K, R, C, "scalesim")
    L = scalesim_fold_cycles(df, R, C, s.stream)
    start = np.concatenate([[0], np.cumsum(L)[:-1]])
    return fold_patterns(s, Layout.build(M, N, K, "int8"), start)


# ---- 2 x 2 arrays, M = N = K = 2, one fold, worked by hand ------------------------------------------------------
# scalesim ws: B row r is pushed at R-1-r (row 1 at cycle 0, row 0 at 1), every column at once; A[m][k] enters
# row k at R + m + k; the partial sum of C[m][n] leaves column n at 2R-1 + m + n. One fold of 2R + C + T - 2 = 6
# cycles.
WS_SCALESIM_2x2 = sorted([
    (0, "B", 1, 0, 0), (0, "B", 1, 1, 0), (1, "B", 0, 0, 0), (1, "B", 0, 1, 0),
    (2, "A", 0, 0, 0), (3, "A", 1, 0, 0), (3, "A", 0, 1, 0), (4, "A", 1, 1, 0),
    (3, "C", 0, 0, 1), (4, "C", 1, 0, 1), (4, "C", 0, 1, 1), (5, "C", 1, 1, 1),
])
# machine ws, tile load starting at 0: column c gets row r at (R-1-r) + c; the fold streams from cycle R = 2:
# A[m][k] at 2 + m + k, C[m][n] written (into the accumulators) at 2 + (R-1) + m + n
WS_MACHINE_2x2 = sorted([
    (0, "B", 1, 0, 0), (1, "B", 1, 1, 0), (1, "B", 0, 0, 0), (2, "B", 0, 1, 0),
    (2, "A", 0, 0, 0), (3, "A", 1, 0, 0), (3, "A", 0, 1, 0), (4, "A", 1, 1, 0),
    (3, "C", 0, 0, 1), (4, "C", 1, 0, 1), (4, "C", 0, 1, 1), (5, "C", 1, 1, 1),
])
# machine is: PE(r, c) holds A[c][r] (m = c, k = r), B[k][n] enters row k at 2 + n + k, C[m][n] leaves column m
IS_MACHINE_2x2 = sorted([
    (0, "A", 0, 1, 0), (1, "A", 1, 1, 0), (1, "A", 0, 0, 0), (2, "A", 1, 0, 0),
    (2, "B", 0, 0, 0), (3, "B", 1, 0, 0), (3, "B", 0, 1, 0), (4, "B", 1, 1, 0),
    (3, "C", 0, 0, 1), (4, "C", 1, 0, 1), (4, "C", 0, 1, 1), (5, "C", 1, 1, 1),
])
# os: PE(r, c) accumulates C[r][c]; A[m][k] enters row m at k + m, B[k][n] column n at k + n.
# machine: the last product of PE(r, c) is at (T-1) + r + c; sums shift out of the bottom, bottom row first:
# C[r][c] leaves at T + 2R - 2 - r + c. scalesim writes C[r][c] at (T-1) + (R-1-r) + c (its ofmap demand).
OS_STREAMS_2x2 = [
    (0, "A", 0, 0, 0), (1, "A", 0, 1, 0), (1, "A", 1, 0, 0), (2, "A", 1, 1, 0),
    (0, "B", 0, 0, 0), (1, "B", 1, 0, 0), (1, "B", 0, 1, 0), (2, "B", 1, 1, 0),
]
OS_MACHINE_2x2 = sorted(OS_STREAMS_2x2 + [(3, "C", 1, 0, 1), (4, "C", 0, 0, 1), (4, "C", 1, 1, 1), (5, "C", 0, 1, 1)])
OS_SCALESIM_2x2 = sorted(OS_STREAMS_2x2 + [(1, "C", 1, 0, 1), (2, "C", 0, 0, 1), (2, "C", 1, 1, 1), (3, "C", 0, 1, 1)])


def test_ws_scalesim_2x2_by_hand():
    assert _events(2, 2, 2, _scalesim_table("ws", 2, 2, 2, 2, 2)) == WS_SCALESIM_2x2


def test_os_scalesim_2x2_by_hand():
    assert _events(2, 2, 2, _scalesim_table("os", 2, 2, 2, 2, 2)) == OS_SCALESIM_2x2


def test_is_scalesim_2x2_by_hand():
    # scalesim is: A[c][r] pushed at R-1-r for every column at once; then as the machine, 2 cycles later
    expect = sorted([(0, "A", 0, 1, 0), (0, "A", 1, 1, 0), (1, "A", 0, 0, 0), (1, "A", 1, 0, 0)] + [e for e in IS_MACHINE_2x2 if e[1] != "A"])
    assert _events(2, 2, 2, _scalesim_table("is", 2, 2, 2, 2, 2)) == expect


@pytest.mark.parametrize("df,expect", [("ws", WS_MACHINE_2x2), ("is", IS_MACHINE_2x2), ("os", OS_MACHINE_2x2)])
def test_machine_2x2_by_hand(df, expect):
    s = fold_schedule(df, 2, 2, 2, 2, 2, "machine")
    start = np.array([0 if df == "os" else 2])
    load = np.array([0])
    assert _events(2, 2, 2, fold_patterns(s, Layout.build(2, 2, 2, "int8"), start, load)) == expect


def test_scalesim_fold_lengths():
    # SCALE-Sim: ws/is 2R + C + T - 2, os T + R + C - 2 (systolic_compute_*.py demand matrices)
    assert scalesim_fold_cycles("ws", 4, 4, 6) == 16
    assert scalesim_fold_cycles("is", 8, 4, 5) == 23
    assert scalesim_fold_cycles("os", 4, 4, 7) == 13


# ---- schedules --------------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    df=st.sampled_from(["ws", "os", "is"]),
    conv=st.sampled_from(["machine", "scalesim"]),
    M=st.integers(1, 20), N=st.integers(1, 20), K=st.integers(1, 20),
    R=st.integers(1, 6), C=st.integers(1, 6), chunk=st.sampled_from([None, 1, 3, 8]),
)
def test_schedule_computes_every_product_once(df, conv, M, N, K, R, C, chunk):
    """Summing each fold's block product gives A @ B: every (m, n, k) product exactly once."""
    rng = np.random.default_rng(M * 400 + N * 20 + K)
    A = rng.integers(-3, 4, (M, K))
    B = rng.integers(-3, 4, (K, N))
    s = fold_schedule(df, M, N, K, R, C, conv, chunk=chunk)
    Cm = np.zeros((M, N), np.int64)
    count = np.zeros((M, N, K), np.int64)
    for i in range(s.folds):
        m, n, k = slice(s.m0[i], s.m0[i] + s.mr[i]), slice(s.n0[i], s.n0[i] + s.nc[i]), slice(s.k0[i], s.k0[i] + s.kr[i])
        Cm[m, n] += A[m, k] @ B[k, n]
        count[m, n, k] += 1
        assert s.used_rows[i] <= R and s.used_cols[i] <= C
    assert np.array_equal(Cm, A @ B)
    assert (count == 1).all()
    assert s.macs() == M * N * K
    ceil = lambda a, b: -(-a // b)  # noqa: E731
    if df == "os":
        assert s.folds == ceil(M, R) * ceil(N, C)
    else:
        stream, col = (M, N) if df == "ws" else (N, M)
        chunks = ceil(stream, chunk) if (chunk and conv == "machine") else 1
        assert s.folds == chunks * ceil(col, C) * ceil(K, R)
    # K folds of one output tile run back to back, first_k .. last_k
    if df != "os":
        assert s.first_k.sum() == s.last_k.sum() == s.folds // ceil(K, R)


@settings(max_examples=40, deadline=None)
@given(df=st.sampled_from(["ws", "os", "is"]), M=st.integers(1, 12), N=st.integers(1, 12), K=st.integers(1, 12),
       R=st.integers(1, 5), C=st.integers(1, 5), chunk=st.sampled_from([64, 100_000]))
def test_trace_closed_form_counts_and_order(df, M, N, K, R, C, chunk):
    """Closed-form counts equal the emitted trace; within a pattern accesses come in (cycle, lane) order."""
    table = _scalesim_table(df, M, N, K, R, C)
    recs = np.concatenate(list(trace_chunks(table, chunk=chunk)))
    assert recs.dtype == SYSTOLIC_ACCESS
    counts = pattern_counts(table)
    for op in range(3):
        for w, key in ((0, "reads"), (1, "writes")):
            assert counts[key][op] == np.count_nonzero((recs["operand"] == op) & (recs["is_write"] == w))
    # SCALE-Sim's totals: A is read once per N (ws) / M (os) tile, B once per M tile (os) or once (ws) ...
    ceil = lambda a, b: -(-a // b)  # noqa: E731
    expect = {
        "ws": (M * K * ceil(N, C), K * N, M * N * ceil(K, R)),
        "os": (M * K * ceil(N, C), K * N * ceil(M, R), M * N),
        "is": (M * K, K * N * ceil(M, C), M * N * ceil(K, R)),
    }[df]
    assert (counts["reads"][0], counts["reads"][1], counts["writes"][2]) == expect
    # per operand the trace is in cycle order (folds run one after the other in this convention)
    for op in range(3):
        cyc = recs["cycle"][recs["operand"] == op]
        assert (np.diff(cyc) >= 0).all()


def test_trace_chunks_are_bounded():
    table = _scalesim_table("ws", 64, 64, 64, 8, 8)
    sizes = [len(c) for c in trace_chunks(table, chunk=4096)]
    assert max(sizes) <= 4096 and sum(sizes) == sum(pattern_counts(table)["reads"]) + sum(pattern_counts(table)["writes"])


def test_bad_schedules_raise():
    with pytest.raises(KernelError):
        fold_schedule("xs", 4, 4, 4, 2, 2)
    with pytest.raises(KernelError):
        fold_schedule("ws", 0, 4, 4, 2, 2)
    with pytest.raises(KernelError):
        fold_schedule("ws", 4, 4, 4, 2, 2, convention="tpu")
