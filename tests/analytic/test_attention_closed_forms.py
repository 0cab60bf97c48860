"""Closed forms of attention traffic, worked by hand."""

import pytest

from gemmsim.analytic import attention as aa
from gemmsim.errors import KernelError


def test_naive_bytes_by_hand():
    # one head, L = 4, d = 2, 2-byte elements: QK^T reads Q, K (2 * 4*2*2 = 32 B) and writes S (16 * 2 = 32 B);
    # softmax reads S and writes P (64 B); PV reads P (32 B), V (16 B) and writes O (16 B)
    b = aa.naive_bytes(1, 4, 2, 2)
    assert (b["qk"], b["softmax"], b["pv"], b["total"], b["scores"]) == (64, 64, 64, 192, 128)
    assert aa.naive_bytes(3, 4, 2, 2)["total"] == 3 * 192
    # fp32 scores double the score part only: 4 * 16 * 4 = 256 B of scores + 4 * 4*2*2 = 64 B of operands
    assert aa.naive_bytes(1, 4, 2, 2, 4)["total"] == 256 + 64
    assert aa.naive_flops(2, 4, 2) == 2 * 4 * 16 * 2


def test_naive_crossover():
    assert aa.naive_crossover_len(64, 2) == 64  # 4 L^2 * 2 = 4 L * 64 * 2 at L = 64
    assert aa.naive_crossover_len(64, 2, 4) == 32
    L = 64
    b = aa.naive_bytes(1, L, 64, 2)
    assert b["scores"] == b["total"] - b["scores"]  # at the crossover, scores = operands


def test_flash_requested_by_hand():
    # 2 heads, L = 256, d = 64, fp16, Br = 128, Bc = 64: two Q tiles per head, each reads all 256 rows of K and V.
    # per head: Q 256*64*2 = 32,768 B + 2 tiles * 2 (K, V) * 256*64*2 = 131,072 B; O 32,768 B written
    r = aa.flash_requested_bytes(2, 256, 64, 2, 128, 64)
    assert r == {"read": 2 * (32_768 + 131_072), "written": 2 * 32_768}
    # causal: tile 0 (rows 0-127) needs K/V tiles 0-1 (128 rows), tile 1 all four (256 rows)
    c = aa.flash_requested_bytes(1, 256, 64, 2, 128, 64, causal=True)
    assert c["read"] == 32_768 + 2 * (128 + 256) * 64 * 2
    assert aa.kv_tiles(256, 128, 64, 0, True) == 2 and aa.kv_tiles(256, 128, 64, 1, True) == 4
    assert aa.flash_dram_bytes_ideal(2, 256, 64, 2) == 2 * 4 * 32_768
    assert aa.flash_smem_bytes(128, 64, 64, 2) == (128 + 128) * 64 * 2


def test_kv_cache_and_crossover_by_hand():
    # Llama-2-7B-like layer: d = 4096 = 32 heads x 128, d_ff 16384, fp16; GQA with 8 KV heads, batch 8, 4096 tokens
    assert aa.kv_cache_bytes(8, 4096, 8, 128, 2) == 2 * 8 * 4096 * 8 * 128 * 2 == 134_217_728
    w = aa.layer_weight_bytes(4096, 8, 128, 16384, 2)
    assert w == 2 * (2 * 4096**2 + 2 * 4096 * 1024 + 2 * 4096 * 16384) == 352_321_536
    assert aa.decode_crossover_context(8, 4096, 8, 128, 16384, 2) == 352_321_536 / (2 * 8 * 8 * 128 * 2) == 10_752
    mha = aa.decode_crossover_context(8, 4096, 32, 128, 16384, 2)
    mqa = aa.decode_crossover_context(8, 4096, 1, 128, 16384, 2)
    assert mha < 10_752 < mqa


def test_bad_sizes():
    with pytest.raises(KernelError):
        aa.naive_bytes(0, 4, 2, 2)
    with pytest.raises(KernelError):
        aa.kv_cache_bytes(1, 0, 1, 64, 2)
