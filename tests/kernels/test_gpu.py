"""GPU trace generators checked by hand: lane addresses of the first instructions, instruction counts by
closed form, launch orders, the loop-order lane mapping, the swizzled shared layout, and the shift property
the memory model relies on (an interior block's trace is block (0, 0)'s moved by whole tiles)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from gemmsim.errors import KernelError
from gemmsim.kernels.gpu import (
    KERNELS,
    LOOP_ORDER_LANES,
    OP_A,
    OP_B,
    OP_C,
    SPACE_GLOBAL,
    SPACE_SHARED,
    launch_order,
    tensorcore_registers,
)
from gemmsim.machine import load_machine
from gemmsim.models.banks import smem_wavefronts_batch
from gemmsim.trace import Layout

LANE = np.arange(32)


def spec(name, dtype="fp32", **params):
    return KERNELS[name].spec(params, dtype)


def counts_of(tr):
    g, s, w = tr.space == SPACE_GLOBAL, tr.space == SPACE_SHARED, tr.is_write == 1
    return {
        "global_loads": int((g & ~w).sum()),
        "global_stores": int((g & w).sum()),
        "shared_loads": int((s & ~w).sum()),
        "shared_stores": int((s & w).sum()),
    }


# ---- tiled_smem: the validation/h200 SGEMM -------------------------------------------------------------
def test_tiled_first_instructions_by_hand():
    L = Layout.build(128, 128, 128, "fp32")
    s = spec("tiled_smem", TILE=32)
    tr = s.block_trace(L, 1, 2)
    # instruction 0: warp 0 (ty = 0) loads A[32 + 0][0 + lane]; instruction 1: warp 1 loads row 33
    assert tr.space[0] == SPACE_GLOBAL and tr.is_write[0] == 0 and tr.width[0] == 4 and tr.operand[0] == OP_A
    assert (tr.addr[0] == L.a_base + 32 * 128 * 4 + LANE * 4).all()
    assert (tr.addr[1] == L.a_base + 33 * 128 * 4 + LANE * 4).all() and tr.warp[1] == 1
    # after the 32 warps' A loads: warp 0 loads B[0 + 0][64 + lane]
    assert tr.operand[32] == OP_B and (tr.addr[32] == L.b_base + (64 + LANE) * 4).all()
    # then the shared stores As[ty][tx] (warp 0: offsets 0..124) and Bs[ty][tx] (after As: 32*32*4 = 4096)
    assert tr.space[64] == SPACE_SHARED and tr.is_write[64] == 1 and (tr.addr[64] == LANE * 4).all()
    assert (tr.addr[96] == 4096 + LANE * 4).all()
    # the inner loop: As[0][0..3] as one 16-byte broadcast (LDS.128), then Bs[k][tx] stride-1
    assert tr.width[128] == 16 and (tr.addr[128] == 0).all()
    assert tr.width[160] == 4 and (tr.addr[160] == 4096 + LANE * 4).all()
    # the last instructions store C[32 + ty][64 + tx], one per warp
    last = tr.select(slice(len(tr) - 32, len(tr)))
    assert (last.is_write == 1).all() and (last.operand == OP_C).all()
    assert (last.addr[5] == L.c_base + (32 + 5) * 128 * 4 + (64 + LANE) * 4).all()


@pytest.mark.parametrize("T,pad,K", [(32, 0, 128), (16, 1, 96), (8, 0, 40)])
def test_tiled_counts_closed_form(T, pad, K):
    L = Layout.build(2 * T, 2 * T, K, "fp32")
    s = spec("tiled_smem", TILE=T, pad=pad)
    tr = s.block_trace(L, 1, 1)
    expect = s.counts(L.M, L.N, K)
    warps, steps = -(-T * T // 32), -(-K // T)
    vec = 4 if (T % 4 == 0 and (T + pad) % 4 == 0) else 1
    assert expect["global_loads"] == 2 * steps * warps
    assert expect["shared_loads"] == (T + T // vec) * steps * warps
    assert counts_of(tr) == {k: v for k, v in expect.items()}
    assert s.smem_bytes == 2 * T * (T + pad) * 4 and s.threads == T * T


def test_tiled_edge_block_masks_lanes_outside_the_matrix():
    L = Layout.build(40, 40, 40, "fp32")  # 2 x 2 tiles of 32; the last ones hold 8 rows / columns
    tr = KERNELS["tiled_smem"].spec({}, "fp32").block_trace(L, 1, 1, spaces=[SPACE_GLOBAL])
    a = tr.select(tr.operand == OP_A)
    # rows 32..39 exist: warps 0..7 load A; in step 1 only k = 32..39 (8 lanes) are inside K
    assert set(a.warp.tolist()) == set(range(8))
    assert bin(int(a.mask[-1])).count("1") == 8
    c = tr.select(tr.operand == OP_C)
    assert len(c) == 8 and all(bin(int(m)).count("1") == 8 for m in c.mask)


# ---- naive / loop orders ------------------------------------------------------------------------------
def test_loop_order_names_map_the_later_of_i_and_j_to_lanes():
    assert LOOP_ORDER_LANES == {"ijk": "j", "ikj": "j", "kij": "j", "jik": "i", "jki": "i", "kji": "i"}
    L = Layout.build(64, 64, 8, "fp32")
    j_fast = spec("ikj").block_trace(L, 0, 0)
    i_fast = spec("jki").block_trace(L, 0, 0)
    # j across lanes: A[i][k] is one address for the whole warp, B[k][j] consecutive floats
    assert (j_fast.addr[0] == j_fast.addr[0][0]).all() and j_fast.operand[0] == OP_A
    b = j_fast.select(j_fast.operand == OP_B)
    assert (np.diff(b.addr[0].astype(np.int64)) == 4).all()
    # i across lanes: A[i][k] strided by a row (K * 4 bytes), B[k][j] broadcast
    assert (np.diff(i_fast.addr[0].astype(np.int64)) == 8 * 4).all()
    b = i_fast.select(i_fast.operand == OP_B)
    assert (b.addr[0] == b.addr[0][0]).all()


def test_naive_counts_and_tile():
    s = spec("jik", BX=32, BY=4)
    assert (s.BM, s.BN) == (32, 4) and s.threads == 128
    L = Layout.build(64, 64, 12, "fp32")
    tr = s.block_trace(L, 1, 3)
    assert counts_of(tr) == s.counts(64, 64, 12)
    assert s.counts(64, 64, 12)["global_loads"] == 2 * 12 * 4


# ---- launch orders ------------------------------------------------------------------------------------
def test_launch_orders_by_hand():
    tm, tn = launch_order(3, 4, "row")
    assert list(zip(tm[:5], tn[:5])) == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    tm, tn = launch_order(3, 4, "column")
    assert list(zip(tm[:4], tn[:4])) == [(0, 0), (1, 0), (2, 0), (0, 1)]
    # grouped, GROUP_M = 2 on 3 x 4 tiles: rows 0-1 column by column, then the lone row 2
    tm, tn = launch_order(3, 4, "grouped", group_m=2)
    assert list(zip(tm.tolist(), tn.tolist())) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3)
    ]
    for order in ("row", "column", "grouped"):
        tm, tn = launch_order(5, 7, order, group_m=3)
        assert sorted(zip(tm.tolist(), tn.tolist())) == [(m, n) for m in range(5) for n in range(7)]
    with pytest.raises(KernelError):
        launch_order(2, 2, "diagonal")


# ---- tensor-core kernel --------------------------------------------------------------------------------
def test_tensorcore_cp_async_addresses_and_counts():
    L = Layout.build(256, 256, 64, "fp16")
    s = spec("tensorcore", "fp16", BM=128, BN=128, BK=32, WM=64, WN=64, stages=3)
    assert s.threads == 128 and s.smem_bytes == 3 * (128 * 32 + 32 * 128) * 2 == 49152
    tr = s.block_trace(L, 1, 0)
    g = tr.select(tr.space == SPACE_GLOBAL)
    # first cp.async: lane l copies A[128 + l // 4][(l % 4) * 8 .. +8] (4 x 16 B per 64-byte row), bypassing L1
    assert g.width[0] == 16 and g.bypass_l1[0] == 1
    assert (g.addr[0] == L.a_base + (128 + LANE // 4) * 64 * 2 + (LANE % 4) * 16).all()
    assert counts_of(tr) == {k: v for k, v in s.counts(256, 256, 64).items() if k != "mma"}
    assert s.counts(256, 256, 64)["mma"] == (64 // 16) * (64 // 8) * (32 // 16) * 2 * 4


def test_swizzled_ldmatrix_is_conflict_free_and_plain_is_not():
    m = load_machine("a100")
    L = Layout.build(128, 128, 32, "fp16")
    for swz, conflict_free in ((True, True), (False, False)):
        tr = spec("tensorcore", "fp16", swizzle=swz).block_trace(L, 0, 0, spaces=[SPACE_SHARED])
        reads = tr.select(tr.is_write == 0)
        wf = smem_wavefronts_batch(m, reads.addr.astype(np.int64), 16)
        assert (wf == 4).all() == conflict_free  # 512 B per ldmatrix.x4 = 4 wavefronts at best
    # the swizzle is a bijection: the copies of one stage write every 16-byte chunk exactly once
    tr = spec("tensorcore", "fp16").block_trace(L, 0, 0, spaces=[SPACE_SHARED])
    st = tr.select(tr.is_write == 1).addr.reshape(-1)
    assert len(np.unique(st)) == len(st) == (128 * 32 + 32 * 128) * 2 // 16


def test_registers_estimate_matches_ptxas_for_seed_003_tile():
    assert tensorcore_registers(64, 64, 4) == 224  # ptxas reports 226 for CUTLASS 256x128x32 (ptxas -v, sm_89)
    s = KERNELS["seed003_cutlass"].spec({"stages": 3}, "fp16")
    assert (s.BM, s.BN, s.threads, s.smem_bytes, s.acc) == (256, 128, 256, 73728, "fp32")


def test_gemm_default_by_dtype():
    m = load_machine("h100")
    assert KERNELS["gemm"].spec({}, "fp16", m).name == "tensorcore"
    assert KERNELS["gemm"].spec({}, "fp32", m).name == "tiled_smem"
    b = KERNELS["blocked"].spec({"BM": 16, "BN": 16, "BK": 16}, "fp32")
    assert (b.BM, b.threads) == (16, 256)
    with pytest.raises(ValidationError):
        KERNELS["blocked"].params(BM=32, BN=16, BK=32)


# ---- the shift property the memory model uses ---------------------------------------------------------
@pytest.mark.parametrize("name,dtype,params", [
    ("tiled_smem", "fp32", {"TILE": 16}),
    ("kji", "fp32", {}),
    ("tensorcore", "fp16", {"BM": 64, "BN": 64, "WM": 32, "WN": 32}),
])
def test_interior_block_is_block_zero_shifted(name, dtype, params):
    L = Layout.build(192, 256, 64, dtype)
    s = KERNELS[name].spec(params, dtype)
    base = s.block_trace(L, 0, 0, spaces=[SPACE_GLOBAL])
    tm, tn = 1, 2
    other = s.block_trace(L, tm, tn, spaces=[SPACE_GLOBAL])
    off = {OP_A: tm * s.BM * L.a_rs, OP_B: tn * s.BN * L.b_cs, OP_C: tm * s.BM * L.c_rs + tn * s.BN * L.c_cs}
    shift = np.array([off[int(o)] for o in base.operand], np.uint64)[:, None]
    act = base.lanes_active()
    assert (other.mask == base.mask).all()
    assert (np.where(act, base.addr + shift, 0) == other.addr).all()
