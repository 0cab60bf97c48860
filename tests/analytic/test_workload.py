"""Transformer workloads against seed 000 sections 13-14, worked in closed form."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gemmsim.analytic.workload import OP_NAMES, GemmOp, TransformerLayer, default_acc_dtype

MiB = 1 << 20


@settings(max_examples=60, deadline=None)
@given(
    d_h=st.integers(1, 64),
    heads=st.integers(1, 16),
    B=st.integers(1, 64),
    L=st.integers(1, 4096),
    layers=st.integers(1, 4),
)
def test_prefill_flops_are_24BLd2_plus_4BL2d(d_h, heads, B, L, layers):
    d = d_h * heads
    w = TransformerLayer(d_model=d, heads=heads, batch=B, seq_len=L, layers=layers)
    by_op = {op.name: op.flops for op in w.ops()}
    # section 13 term by term: QKV 6BLd^2, output 2BLd^2, FFN 16BLd^2 (d_ff = 4d), QK^T + PV 4BL^2d
    assert by_op["qkv"] == 6 * B * L * d * d * layers
    assert by_op["out_proj"] == 2 * B * L * d * d * layers
    assert by_op["ffn_up"] + by_op["ffn_down"] == 16 * B * L * d * d * layers
    assert by_op["attn_qk"] == by_op["attn_pv"] == 2 * B * L * L * d * layers
    assert w.flops() == (24 * B * L * d * d + 4 * B * L * L * d) * layers == w.closed_form_flops()


def test_prefill_shapes():
    w = TransformerLayer(d_model=512, heads=8, batch=4, seq_len=128)
    ops = {op.name: op for op in w.ops()}
    assert [op.name for op in w.ops()] == list(OP_NAMES)
    assert (ops["qkv"].M, ops["qkv"].N, ops["qkv"].K, ops["qkv"].count) == (512, 1536, 512, 1)  # M = B*L, N = 3d
    assert (ops["attn_qk"].M, ops["attn_qk"].N, ops["attn_qk"].K, ops["attn_qk"].count) == (128, 128, 64, 32)  # L x L x d_h, B*h of them
    assert (ops["attn_pv"].M, ops["attn_pv"].N, ops["attn_pv"].K) == (128, 64, 128)
    assert (ops["ffn_up"].N, ops["ffn_up"].K, ops["ffn_down"].N, ops["ffn_down"].K) == (2048, 512, 512, 2048)


def test_d_ff_other_than_4d():
    w = TransformerLayer(d_model=64, heads=4, d_ff=172, batch=2, seq_len=10)
    assert w.flops() == w.closed_form_flops() == 4 * 2 * 10 * 64 * (2 * 64 + 172) + 4 * 2 * 10 * 10 * 64


def test_decode_gemv_reads_32_MiB_for_33_5_MFLOP():
    """Seed 000 section 14: W 4096 x 4096 bf16 is 32 MiB for 2 * 4096^2 ~ 33.5 MFLOP: about 1 FLOP per byte."""
    w = TransformerLayer(d_model=4096, heads=32, batch=1, seq_len=1, kv_len=2048, phase="decode", dtype="bf16")
    out = {op.name: op for op in w.ops()}["out_proj"]
    assert (out.M, out.N, out.K) == (1, 4096, 4096)
    assert out.K * out.N * 2 == 32 * MiB
    assert out.flops == 2 * 4096 * 4096 == pytest.approx(33.5e6, rel=2e-3)
    assert out.ideal_intensity("bf16") == pytest.approx(1.0, rel=1e-3)
    # decode attention reads the KV cache: per batch and head 1 x kv x d_h and 1 x d_h x kv
    qk = {op.name: op for op in w.ops()}["attn_qk"]
    assert (qk.M, qk.N, qk.K, qk.count) == (1, 2048, 128, 32)
    assert w.flops() == w.closed_form_flops() == 24 * 4096**2 + 4 * 2048 * 4096


def test_batching_moves_decode_right():
    """The same weights serve B rows: ideal intensity 2BKN / (s(BK + KN + BN)) grows about B-fold while B << d."""
    I = [
        {op.name: op for op in TransformerLayer(d_model=4096, heads=32, batch=b, seq_len=1, phase="decode").ops()}["out_proj"].ideal_intensity("bf16")
        for b in (1, 8, 64, 256)
    ]
    assert I == sorted(I) and I[0] < 1.01
    for b, i in zip((1, 8, 64, 256), I):
        assert i == pytest.approx(2 * b * 4096 * 4096 / (2 * (b * 4096 + 4096 * 4096 + b * 4096)))
    assert I[1] == pytest.approx(8, rel=0.01)


def test_prefill_is_far_right_of_decode():
    pre = TransformerLayer(d_model=4096, heads=32, batch=1, seq_len=2048)
    dec = TransformerLayer(d_model=4096, heads=32, batch=1, seq_len=2048, phase="decode")
    assert pre.flops() / pre.min_bytes() > 100 * dec.flops() / dec.min_bytes()


def test_min_bytes_of_one_op():
    op = GemmOp("x", 2, 3, 5, count=7)
    assert op.flops == 2 * 2 * 3 * 5 * 7
    assert op.min_bytes("fp32") == 4 * (2 * 5 + 5 * 3 + 2 * 3) * 7


def test_accumulator_defaults_and_bad_sizes():
    assert default_acc_dtype("int8") == "int32" and default_acc_dtype("bf16") == "fp32" and default_acc_dtype("fp64") == "fp64"
    assert TransformerLayer(d_model=8, seq_len=2, dtype="int8").accumulate == "int32"
    assert TransformerLayer(d_model=8, seq_len=2, dtype="fp16", acc_dtype="fp16").accumulate == "fp16"
    with pytest.raises(ValidationError, match="not a multiple of heads"):
        TransformerLayer(d_model=10, heads=4, seq_len=2)
    with pytest.raises(ValidationError, match="unknown dtype 'bf17'"):
        TransformerLayer(d_model=8, seq_len=2, dtype="bf17")
    with pytest.raises(ValidationError, match="unknown key|Extra inputs"):
        TransformerLayer(d_model=8, seq_len=2, colour=1)
