"""The Hopper warp-specialised kernel family (gemmsim.kernels.hopper): names, resources, trace."""

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.kernels.gpu import OP_A, OP_B, OP_C, SPACE_GLOBAL
from gemmsim.kernels.hopper import HOPPER_KERNELS, HopperParams, parse_kernel_name
from gemmsim.trace import Layout

K = HOPPER_KERNELS["hopper_ws"]


@pytest.mark.parametrize("name, want", [
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT", dict(BM=256, BN=128, BK=64, stages=4, cluster_m=2, cluster_n=1,
                                                       schedule="cooperative", split="N")),
    ("nvjet_hsh_128x256_64x4_1x2_h_bz_coopA_NNT", dict(BM=128, BN=256, stages=4, cluster_n=2, split="M")),
    ("nvjet_tst_320x128_64x3_1x2_h_bz_NNT", dict(BM=320, BN=128, BK=64, stages=3, cluster_m=1, cluster_n=2)),
    ("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_pingpong_epi_tma",
     dict(BM=128, BN=256, BK=64, cluster_m=1, cluster_n=2, schedule="pingpong")),
    ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel",
     dict(BM=128, BN=256, BK=64)),
])
def test_kernel_names_give_the_tile(name, want):
    got = parse_kernel_name(name)
    assert {k: got.get(k) for k in want} == want


def test_a_320_row_tile_splits_its_columns_between_the_consumers():
    s = K.spec({"kernel_name": "nvjet_tst_320x128_64x3_2x1_v_bz_coopB_NNT"}, "bf16")
    assert (s.BM, s.BN, s.split, s.mma) == (320, 128, "N", (64, 64, 16))
    assert s.mma_padding == 1.0
    # cuBLAS's 160x192: two 80 x 192 halves with 192 = 3 x 64 as wgmma's M waste nothing (160 x 96 halves would pad
    # 160 to 192); a tile with no such arrangement pays: 96 x 96 pingpong, 96 rows or columns as M -> 128
    t = K.spec({"kernel_name": "nvjet_sm90_hsh_160x192_64x3_2x1_v_bz_coopB_NNN"}, "fp16")
    assert t.mma_padding == 1.0
    u = K.spec(HopperParams(BM=96, BN=96, schedule="pingpong"), "fp16")
    assert u.mma_padding == pytest.approx(128 / 96)
    with pytest.raises(KernelError):  # 48 rows per warpgroup: not a multiple of 32
        K.spec(HopperParams(BM=96, BN=128, split="M"), "bf16")


def test_a_name_without_a_tile_is_a_kernel_error():
    with pytest.raises(KernelError):
        parse_kernel_name("ampere_sgemm_kernel")


def test_resources_of_the_cublas_256x128_kernel():
    s = K.spec({"kernel_name": "nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT"}, "fp16")
    assert (s.BM, s.BN, s.BK, s.stages, s.cluster_m, s.cluster_n) == (256, 128, 64, 4, 2, 1)
    assert s.threads == 384 and s.regs == 168 and s.math_warps == 8
    assert s.smem_bytes == 4 * (256 * 64 + 64 * 128) * 2  # 192 KiB of stages
    # multicast: B's 64 x 128 tile is shared by the 2 CTAs of a cluster column
    assert s.l2_bytes_per_step() == 256 * 64 * 2 + 64 * 128 * 2 / 2


def test_trace_reads_each_operand_tile_once_per_step_and_writes_c_once():
    s = K.spec(HopperParams(BM=128, BN=128, BK=64, stages=3), "fp16")
    L = Layout.build(256, 256, 256, "fp16")
    tr = s.block_trace(L, 1, 1)
    g = tr.of_space(SPACE_GLOBAL)
    lanes = g.lanes_active()
    for op, elems in ((OP_A, 128 * 256), (OP_B, 256 * 128), (OP_C, 128 * 128)):
        sel = g.operand == op
        assert int(lanes[sel].sum()) * 16 == elems * 2
    # every C element of the tile exactly once
    c = g.select(g.operand == OP_C)
    addrs = c.addr[c.lanes_active()]
    assert len(np.unique(addrs)) == len(addrs) == 128 * 128 * 2 // 16


@pytest.mark.parametrize("bad", [dict(BM=96), dict(BK=24), dict(BN=100), dict(BM=80, split="N")])
def test_shapes_wgmma_cannot_run_are_kernel_errors(bad):
    with pytest.raises(KernelError):
        K.spec(HopperParams(**bad), "fp16")


def test_fp32_inputs_are_a_kernel_error():
    with pytest.raises(KernelError):
        K.spec(HopperParams(), "fp64")
