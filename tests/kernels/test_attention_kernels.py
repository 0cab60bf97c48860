"""Attention kernels on the GPU memory model against the closed forms of gemmsim.analytic.attention."""

import numpy as np
import pytest

from gemmsim.analytic import attention as aa
from gemmsim.kernels.attention import decode_attention, flash_attention, softmax_rows
from gemmsim.kernels.gpu import SPACE_GLOBAL
from gemmsim.machine import load_machine
from gemmsim.models.gpu_memory import simulate_memory
from gemmsim.sim.gpu import simulate_gpu


def _bytes(trace, write):
    sel = trace.select((trace.space == SPACE_GLOBAL) & (trace.is_write == (1 if write else 0)))
    return int((sel.lanes_active().sum(axis=1) * sel.width).sum())


def test_flash_block_trace_moves_the_closed_form_bytes():
    heads, L, d, e, Br, Bc = 2, 256, 64, 2, 128, 64
    spec, lay = flash_attention(heads, L, d, e, Br, Bc, threads=128, regs=128)
    tm, tn = spec.order(lay.M, lay.N)
    assert list(tm) == [0, 1, 2, 3] and list(tn) == [0, 0, 1, 1]  # two Q tiles per head, K/V region by head
    read = sum(_bytes(spec.block_trace(lay, int(a), int(b)), False) for a, b in zip(tm, tn))
    written = sum(_bytes(spec.block_trace(lay, int(a), int(b)), True) for a, b in zip(tm, tn))
    assert {"read": read, "written": written} == aa.flash_requested_bytes(heads, L, d, e, Br, Bc)
    # block 3 is head 1's second Q tile: it reads Q rows 128-255 of head 1 = byte offset (256 + 128) * 64 * 2
    t3 = spec.block_trace(lay, 3, 1)
    first = int(t3.addr[0, 0])
    assert first == lay.a_base + (256 + 128) * d * e


def test_flash_on_the_memory_model_reuses_k_and_v_in_l2():
    m = load_machine("a100")
    heads, L, d, e = 4, 512, 64, 2
    spec, lay = flash_attention(heads, L, d, e, 128, 64, threads=128, regs=128)
    c = simulate_memory(m, spec, lay, blocks_per_sm=2).counters
    req = aa.flash_requested_bytes(heads, L, d, e, 128, 64)
    assert c["l2_sectors_read"] * 32 == req["read"]
    # the 40 MB L2 holds every head's K and V while its four Q tiles run: DRAM sees each byte once
    assert c["dram_bytes_read"] == 3 * heads * L * d * e
    assert c["dram_bytes_written"] == heads * L * d * e == req["written"]


def test_softmax_and_decode_traces():
    spec, lay = softmax_rows(2, 64, 2, 4, threads=128)
    tm, tn = spec.order(lay.M, lay.N)
    assert len(tm) == 2 * 64 // 4
    assert sum(_bytes(spec.block_trace(lay, int(a), int(b)), False) for a, b in zip(tm, tn)) == 2 * 64 * 64 * 2
    # decode, GQA: 2 sequences, 8 query heads in 2 KV groups, head_dim 64, 128 cached tokens
    spec, lay = decode_attention(2, 8, 2, 64, 128, 2, Bc=64, threads=128)
    tm, tn = spec.order(lay.M, lay.N)
    rd = sum(_bytes(spec.block_trace(lay, int(a), int(b)), False) for a, b in zip(tm, tn))
    assert rd == aa.kv_cache_bytes(2, 128, 2, 64, 2) + 2 * 8 * 64 * 2  # the cache plus every query row


def test_naive_against_flash_on_the_gpu_model():
    kw = dict(dtype="fp16", batch=2, heads=4, seq_len=512, head_dim=64)
    naive = simulate_gpu("a100", "attention_naive", **kw)
    flash = simulate_gpu("a100", "attention_flash", **kw)
    # naive: each launch starts cold and streams its operands once, as the closed form assumes
    assert naive["dram_bytes"] == pytest.approx(naive["closed_form_dram_bytes"], rel=0.02)
    assert flash["dram_bytes"] == pytest.approx(flash["closed_form_dram_bytes"], rel=0.02)
    assert naive["dram_bytes"] > 4 * flash["dram_bytes"]
    assert naive["time_s"] > flash["time_s"]
    assert flash["smem_per_block"] == aa.flash_smem_bytes(128, 64, 64, 2) and flash["blocks_per_sm"] >= 1


def test_decode_mha_gqa_mqa_order():
    rows = {k: simulate_gpu("a100", "attention_decode", dtype="fp16", batch=2, heads=8, kv_heads=k, head_dim=64, context=1024)
            for k in (8, 2, 1)}
    kv = [rows[k]["attention_dram_bytes"] for k in (8, 2, 1)]
    assert kv[0] > kv[1] > kv[2]
    for k, r in rows.items():
        assert r["attention_dram_bytes"] == pytest.approx(r["kv_cache_bytes"], rel=0.02)
    assert np.isclose(rows[8]["kv_cache_bytes"], 4 * rows[2]["kv_cache_bytes"])
