"""Attention cases on GPU machines: naive (scores through DRAM), FlashAttention-style tiled, KV-cache decode.

Each launch's blocks run through the GPU memory model (``gemmsim.models.gpu_memory``: L1, the partitioned L2,
DRAM) and its time is a roofline of the launch: max(FLOPs / tensor peak, DRAM bytes / DRAM bandwidth, L2 bytes /
L2 bandwidth); launches add up. Occupancy (``models.occupancy``) reports how many blocks of each kernel fit an SM
with its shared-memory footprint. Closed forms of the same bytes (``gemmsim.analytic.attention``) sit beside the
simulated ones in every row (``closed_form_*``).

* ``attention_naive``: S = Q K^T (tensor-core GEMM, K read transposed), softmax (S read, P written), O = P V. One head
  is simulated and its counters are multiplied by batch x heads (the heads are independent batched GEMMs); each
  launch starts with a cold L2, so scores go to DRAM and come back -- true once batch x heads x L^2 scores exceed
  the L2, optimistic for the naive kernel below that.
* ``attention_flash``: one launch of batch x heads x L / Br blocks (``kernels.attention.flash_attention``).
* ``attention_decode``: one decode step of one layer: the attention launch over the KV cache
  (``kernels.attention.decode_attention``), plus the layer's weights as a closed form (a GEMV streams each weight
  once), so ``bytes_per_token`` and ``kv_fraction`` show where the cache overtakes the weights.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gemmsim.analytic import attention as aa
from gemmsim.errors import KernelError
from gemmsim.kernels.attention import decode_attention, flash_attention, softmax_rows
from gemmsim.kernels.gpu import KERNELS as GPU_KERNELS
from gemmsim.kernels.gpu import TensorCoreParams
from gemmsim.models.gpu_memory import simulate_memory
from gemmsim.models.occupancy import occupancy
from gemmsim.schema import Strict
from gemmsim.trace import Layout, LayoutSpec
from gemmsim.units import dtype_bytes


class _Heads(Strict):
    batch: int = Field(1, ge=1, description="Sequences in the batch.")
    heads: int = Field(16, ge=1, description="Attention (query) heads.")
    head_dim: int = Field(64, ge=8, description="d: elements per head.")


class FlashParams(_Heads):
    """FlashAttention-2 forward: Br x d Q tiles per block, Bc x d K/V tiles streamed through shared memory."""

    seq_len: int = Field(1024, ge=1, description="L: tokens per sequence (a multiple of Br and Bc).")
    Br: int = Field(128, ge=16, description="Q rows per block.")
    Bc: int = Field(64, ge=16, description="K/V rows per streamed tile.")
    threads: int = Field(128, ge=32, le=1024, description="Threads per block (4 warps in FlashAttention-2).")
    regs: int = Field(128, ge=1, le=255, description="Registers per thread (estimate).")

    @model_validator(mode="after")
    def _tiles(self) -> "FlashParams":
        if self.seq_len % self.Br or self.seq_len % self.Bc:
            raise ValueError(f"seq_len {self.seq_len} must be a multiple of Br {self.Br} and Bc {self.Bc}")
        return self


class NaiveAttentionParams(_Heads):
    """Naive attention: two tensor-core GEMMs and a softmax, the L x L scores written to and read from memory."""

    seq_len: int = Field(1024, ge=16, description="L: tokens per sequence.")
    scores: Literal["same", "fp32"] = Field("same", description="Scores stored in the input dtype ('same') or in fp32.")
    softmax_rows: int = Field(4, ge=1, description="Score rows per softmax block.")


class DecodeParams(_Heads):
    """One decode step of one layer: attention over a KV cache of `context` tokens, and the layer's weights."""

    heads: int = Field(32, ge=1, description="Query heads.")
    head_dim: int = Field(128, ge=8, description="Elements per head.")
    kv_heads: int = Field(32, ge=1, description="K/V heads: = heads (MHA), heads / group (GQA), 1 (MQA).")
    context: int = Field(4096, ge=1, description="Tokens already in the KV cache (a multiple of Bc).")
    d_ff: int | None = Field(None, ge=1, description="FFN width (default 4 x heads x head_dim).")
    Bc: int = Field(64, ge=1, description="Cache tokens per streamed tile.")
    threads: int = Field(128, ge=32, le=1024, description="Threads per block.")

    @model_validator(mode="after")
    def _groups(self) -> "DecodeParams":
        if self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} must be a multiple of kv_heads {self.kv_heads}")
        if self.context % self.Bc:
            raise ValueError(f"context {self.context} must be a multiple of Bc {self.Bc} (the cache is paged in Bc tokens)")
        return self


KERNELS = {"attention_naive": NaiveAttentionParams, "attention_flash": FlashParams, "attention_decode": DecodeParams}


def _launch(m, spec, layout, flops: float, peak_tflops: float, scale: float = 1.0) -> dict:
    """Simulate one launch; its counters (times ``scale``) and roofline time."""
    occ = occupancy(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
    if occ.blocks_per_sm < 1:
        raise KernelError(f"{spec.name}: a block does not fit an SM of {m.name} ({occ.limiter})")
    c = simulate_memory(m, spec, layout, occ.blocks_per_sm).counters
    dram = c["dram_bytes"] * scale
    l2 = c["l2_bytes"] * scale
    terms = {
        "compute": flops / (peak_tflops * 1e12),
        "dram": dram / (m.dram.bandwidth_gbps * 1e9),
        "L2": l2 / (m.l2.bandwidth_gbps * 1e9),
    }
    bound = max(terms, key=terms.get)
    return {"dram": dram, "dram_read": c["dram_bytes_read"] * scale, "dram_written": c["dram_bytes_written"] * scale,
            "l2": l2, "l2_read": c["l2_sectors_read"] * m.l2.sector_bytes * scale, "l2_hit_rate": c["l2_hit_rate"],
            "time": terms[bound], "bound": bound, "occ": occ, "sampled": c["sampled"]}


def _common(flops: float, dram: float, time_s: float, peak: float, bound: str) -> dict:
    return {"flops": flops, "dram_bytes": dram, "intensity_flop_per_byte": flops / dram if dram else float("inf"),
            "time_s": time_s, "gflops": flops / time_s / 1e9, "peak_fraction": flops / time_s / (peak * 1e12), "bound": bound}


def _occ_columns(occ, smem: int) -> dict:
    return {"smem_per_block": smem, "blocks_per_sm": occ.blocks_per_sm, "occupancy": occ.occupancy, "limiter": occ.limiter}


def _peak(m, dtype: str) -> float:
    try:
        return m.peak_tflops(dtype, "fp32", tensor=True)
    except (ValueError, KeyError) as err:
        raise KernelError(f"{m.name}: no tensor-core rate for {dtype}: {err}") from None


def run_flash(m, p: FlashParams, dtype: str) -> dict:
    e = dtype_bytes(dtype)
    bh = p.batch * p.heads
    spec, lay = flash_attention(bh, p.seq_len, p.head_dim, e, p.Br, p.Bc, p.threads, p.regs, dtype=dtype)
    flops = aa.naive_flops(bh, p.seq_len, p.head_dim)
    peak = _peak(m, dtype)
    r = _launch(m, spec, lay, flops, peak)
    req = aa.flash_requested_bytes(bh, p.seq_len, p.head_dim, e, p.Br, p.Bc)
    row = _common(flops, r["dram"], r["time"], peak, r["bound"])
    row.update(
        seq_len=p.seq_len, batch_heads=bh, dram_bytes_read=r["dram_read"], dram_bytes_written=r["dram_written"],
        l2_bytes=r["l2"], l2_read_bytes=r["l2_read"], l2_hit_rate=r["l2_hit_rate"], score_bytes=0, sampled=r["sampled"],
        closed_form_dram_bytes=aa.flash_dram_bytes_ideal(bh, p.seq_len, p.head_dim, e),
        closed_form_l2_read_bytes=req["read"], closed_form_naive_dram_bytes=aa.naive_bytes(bh, p.seq_len, p.head_dim, e)["total"],
        **_occ_columns(r["occ"], spec.smem_bytes),
    )
    return row


def run_naive(m, p: NaiveAttentionParams, dtype: str) -> dict:
    e = dtype_bytes(dtype)
    s_dtype = dtype if p.scores == "same" else "fp32"
    s = dtype_bytes(s_dtype)
    L, d, bh = p.seq_len, p.head_dim, p.batch * p.heads
    peak = _peak(m, dtype)
    tc = GPU_KERNELS["tensorcore"]
    mma = {1: "16x8x32", 2: "16x8x16", 4: "16x8x8"}.get(e, "16x8x16")
    # S = Q K^T: Q (L x d) row-major, K stored L x d row-major = op(B) transposed; C = S stored in the score dtype
    # (the GEMM writes elements of its own dtype, so fp32 scores are modelled as an fp32-sized C via a second layout)
    bk = max(32, 32 // e)
    qk_spec = tc.spec(TensorCoreParams(BM=128, BN=128, BK=bk, WM=64, WN=64, mma=mma), dtype, m)
    qk_lay = Layout.build(L, L, d, dtype, LayoutSpec(trans_b=True))
    r_qk = _launch(m, qk_spec, qk_lay, 2.0 * L * L * d * bh, peak, scale=bh)
    sm_spec, sm_lay = softmax_rows(1, L, s, p.softmax_rows, 128, dtype=dtype)
    r_sm = _launch(m, sm_spec, sm_lay, 5.0 * L * L * bh, peak, scale=bh)
    pv_spec = tc.spec(TensorCoreParams(BM=128, BN=min(128, max(16, d)), BK=bk, WM=64, WN=min(64, max(16, d)), mma=mma), dtype, m)
    pv_lay = Layout.build(L, d, L, dtype)
    r_pv = _launch(m, pv_spec, pv_lay, 2.0 * L * L * d * bh, peak, scale=bh)
    if s != e:  # fp32 scores: S is written and P read at s bytes instead of e (the GEMM models moved e-byte elements)
        for r, extra in ((r_qk, L * L * (s - e) * bh), (r_pv, L * L * (s - e) * bh)):
            r["dram"] += extra
            r["time"] = max(r["time"], r["dram"] / (m.dram.bandwidth_gbps * 1e9))
    launches = (("qk", r_qk), ("softmax", r_sm), ("pv", r_pv))
    flops = aa.naive_flops(bh, L, d)
    dram = sum(r["dram"] for _, r in launches)
    time_s = sum(r["time"] for _, r in launches)
    slowest = max(launches, key=lambda x: x[1]["time"])
    cf = aa.naive_bytes(bh, L, d, e, s)
    row = _common(flops, dram, time_s, peak, slowest[1]["bound"])
    row.update(
        seq_len=L, batch_heads=bh, l2_bytes=sum(r["l2"] for _, r in launches), score_bytes=cf["scores"],
        closed_form_dram_bytes=cf["total"], closed_form_naive_dram_bytes=cf["total"],
        closed_form_flash_dram_bytes=aa.flash_dram_bytes_ideal(bh, L, d, e), slowest_launch=slowest[0],
        **{f"dram_bytes_{n}": r["dram"] for n, r in launches}, **{f"time_{n}_s": r["time"] for n, r in launches},
        sampled=any(r["sampled"] for _, r in launches), **_occ_columns(r_qk["occ"], qk_spec.smem_bytes),
    )
    return row


def run_decode(m, p: DecodeParams, dtype: str) -> dict:
    e = dtype_bytes(dtype)
    d_model = p.heads * p.head_dim
    d_ff = p.d_ff or 4 * d_model
    spec, lay = decode_attention(p.batch, p.heads, p.kv_heads, p.head_dim, p.context, e, p.Bc, p.threads, dtype=dtype)
    att_flops = 4.0 * p.batch * p.heads * p.context * p.head_dim
    peak = _peak(m, dtype)
    r = _launch(m, spec, lay, att_flops, peak)
    weights = aa.layer_weight_bytes(d_model, p.kv_heads, p.head_dim, d_ff, e)
    w_flops = 2.0 * p.batch * weights / e
    t_w = max(weights / (m.dram.bandwidth_gbps * 1e9), w_flops / (peak * 1e12))
    kv = aa.kv_cache_bytes(p.batch, p.context, p.kv_heads, p.head_dim, e)
    dram = r["dram"] + weights
    row = _common(att_flops + w_flops, dram, r["time"] + t_w, peak, "dram" if r["bound"] == "dram" or t_w > r["time"] else r["bound"])
    row.update(
        context=p.context, kv_heads=p.kv_heads, group=p.heads // p.kv_heads, attention_dram_bytes=r["dram"],
        weight_bytes=weights, kv_cache_bytes=kv, closed_form_kv_bytes=kv, bytes_per_token=dram / p.batch,
        kv_fraction=r["dram"] / dram, crossover_context=aa.decode_crossover_context(p.batch, d_model, p.kv_heads, p.head_dim, d_ff, e),
        time_attention_s=r["time"], time_weights_s=t_w, l2_hit_rate=r["l2_hit_rate"], sampled=r["sampled"],
        **_occ_columns(r["occ"], spec.smem_bytes),
    )
    return row


def run_case(m, case) -> dict:
    """Simulate one attention case (the kernel's parameters from ``case.params``, the dtype from ``case.dtype``)."""
    params = KERNELS[case.kernel](**case.params)
    if case.kernel == "attention_flash":
        return run_flash(m, params, case.dtype)
    if case.kernel == "attention_naive":
        return run_naive(m, params, case.dtype)
    return run_decode(m, params, case.dtype)
