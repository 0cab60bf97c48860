"""Transformer workloads: one layer's GEMMs for prefill and decode, with their FLOPs and ideal traffic.

Seed 000 section 13 flattens the batch and sequence axes, X in R^{(B L) x d}, and writes one layer as GEMMs:

- fused QKV projection: X @ [W_Q W_K W_V]          M = B*L, N = 3d,  K = d     -> 6 B L d^2 FLOPs
- attention scores, per batch and head: Q K^T       M = L,   N = L,   K = d_h   \\
- attention output, per batch and head: P V         M = L,   N = d_h, K = L     /  together 4 B L^2 d FLOPs
- output projection: O @ W_O                        M = B*L, N = d,   K = d     -> 2 B L d^2 FLOPs
- FFN up (d -> d_ff) and down (d_ff -> d)           M = B*L, N = d_ff, K = d and N = d, K = d_ff
                                                    -> 4 B L d d_ff = 16 B L d^2 FLOPs when d_ff = 4d

so about 24 B L d^2 + 4 B L^2 d FLOPs per layer. Section 14 (decode): one new token per sequence, so every
projection has M = B (a GEMV when B = 1) and attention reads the KV cache: per batch and head QK^T is
1 x kv x d_h and PV is 1 x d_h x kv. A 4096 x 4096 bf16 weight is 32 MiB read for 2 * 4096^2 = 33.5 MFLOP:
about one FLOP per byte, and a batch of B raises it about B-fold because the same weights serve B rows.

The ops here are plain GEMMs (name, M, N, K, count) that every machine kind can run; ``count`` is how many
identical GEMMs the layer (times ``layers``) performs: B * heads for the batched attention GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from gemmsim.schema import Strict
from gemmsim.units import DTYPE_BYTES, dtype_bytes

#: Operation names of a layer, in execution order.
OP_NAMES = ("qkv", "attn_qk", "attn_pv", "out_proj", "ffn_up", "ffn_down")


@dataclass(frozen=True)
class GemmOp:
    """One GEMM of a workload: C (M x N) = A (M x K) @ B (K x N), performed ``count`` times."""

    name: str
    M: int
    N: int
    K: int
    count: int = 1

    @property
    def flops(self) -> float:
        """FLOPs of all ``count`` GEMMs: 2 M N K count (one multiply and one add per term)."""
        return 2.0 * self.M * self.N * self.K * self.count

    def min_bytes(self, dtype: str) -> float:
        """Ideal DRAM traffic of all ``count`` GEMMs in bytes: read A and B, write C once (seed 000 section 8)."""
        return float(dtype_bytes(dtype) * (self.M * self.K + self.K * self.N + self.M * self.N) * self.count)

    def ideal_intensity(self, dtype: str) -> float:
        """FLOP per byte of ideal traffic: the best intensity any kernel can reach on this GEMM (FLOP/B)."""
        return self.flops / self.min_bytes(dtype)


def default_acc_dtype(dtype: str) -> str:
    """The usual accumulator for a storage dtype: int32 for integer inputs, fp64 for fp64, fp32 otherwise."""
    if dtype.startswith("int"):
        return "int32"
    return "fp64" if dtype == "fp64" else "fp32"


class TransformerLayer(Strict):
    """A Transformer layer (or ``layers`` identical layers) in one phase of inference, as GEMMs.

    Sizes follow seed 000 sections 13 and 14: model width d, ``heads`` heads of d_h = d / heads, FFN width
    d_ff (default 4d), batch B, sequence length L. Prefill processes all L tokens of each sequence;
    decode processes one new token per sequence against a KV cache of ``kv_len`` earlier tokens.
    """

    name: str = Field("layer", pattern=r"^[A-Za-z0-9_.-]+$", description="Short name, shown in the results' 'workload' column.")
    d_model: int = Field(gt=0, description="Model width d (elements per token).")
    heads: int = Field(1, gt=0, description="Attention heads h; d_model must be a multiple of heads.")
    d_ff: int | None = Field(None, gt=0, description="FFN hidden width (default 4 * d_model).")
    batch: int = Field(1, gt=0, description="Sequences processed together, B.")
    seq_len: int = Field(gt=0, description="Prefill: tokens per sequence L. Decode: ignored unless kv_len is unset.")
    phase: Literal["prefill", "decode"] = Field("prefill", description="prefill (M = B*L) or decode (one new token per sequence, M = B).")
    kv_len: int | None = Field(None, gt=0, description="Decode: tokens already in the KV cache (default seq_len).")
    layers: int = Field(1, gt=0, description="Identical layers; multiplies every op's count.")
    dtype: str = Field("bf16", description="Storage dtype of weights, activations and outputs (the case dtype).")
    acc_dtype: str | None = Field(None, description="Accumulator dtype (default int32 for int8, fp32 for 16-bit floats).")

    @model_validator(mode="after")
    def _check(self) -> "TransformerLayer":
        problems = []
        if self.d_model % self.heads:
            problems.append(f"d_model {self.d_model} is not a multiple of heads {self.heads}")
        for field in ("dtype", "acc_dtype"):
            v = getattr(self, field)
            if v is not None and v not in DTYPE_BYTES:
                problems.append(f"{field}: unknown dtype {v!r}; known: {', '.join(DTYPE_BYTES)}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def d_head(self) -> int:
        """Width of one head, d_h = d_model / heads."""
        return self.d_model // self.heads

    @property
    def ffn(self) -> int:
        """FFN hidden width: d_ff, or 4 d_model when unset."""
        return self.d_ff or 4 * self.d_model

    @property
    def kv(self) -> int:
        """Decode: tokens in the KV cache that the new token attends to."""
        return self.kv_len or self.seq_len

    @property
    def accumulate(self) -> str:
        """The accumulator dtype (explicit, or the default for the storage dtype)."""
        return self.acc_dtype or default_acc_dtype(self.dtype)

    @property
    def tokens(self) -> int:
        """Rows of the projections' activations: B*L in prefill, B in decode."""
        return self.batch * (self.seq_len if self.phase == "prefill" else 1)

    def ops(self) -> list[GemmOp]:
        """The layer's GEMMs in execution order (see the module docstring for the shapes)."""
        d, dh, ff, n = self.d_model, self.d_head, self.ffn, self.layers
        t = self.tokens
        bh = self.batch * self.heads * n
        if self.phase == "prefill":
            L = self.seq_len
            qk, pv = GemmOp("attn_qk", L, L, dh, bh), GemmOp("attn_pv", L, dh, L, bh)
        else:
            qk, pv = GemmOp("attn_qk", 1, self.kv, dh, bh), GemmOp("attn_pv", 1, dh, self.kv, bh)
        return [
            GemmOp("qkv", t, 3 * d, d, n),
            qk,
            pv,
            GemmOp("out_proj", t, d, d, n),
            GemmOp("ffn_up", t, ff, d, n),
            GemmOp("ffn_down", t, d, ff, n),
        ]

    def flops(self) -> float:
        """FLOPs of every GEMM of the workload (all layers)."""
        return sum(op.flops for op in self.ops())

    def min_bytes(self) -> float:
        """Ideal DRAM traffic of every GEMM, each reading its operands and writing its result once (bytes)."""
        return sum(op.min_bytes(self.dtype) for op in self.ops())

    def closed_form_flops(self) -> float:
        """Seed 000 section 13 in closed form, all layers: 4 B L d (2d + d_ff) + 4 B L^2 d for prefill
        (= 24 B L d^2 + 4 B L^2 d with d_ff = 4d), 4 B d (2d + d_ff) + 4 B kv d for decode."""
        B, d, ff = self.batch, self.d_model, self.ffn
        if self.phase == "prefill":
            L = self.seq_len
            per_layer = 4.0 * B * L * d * (2 * d + ff) + 4.0 * B * L * L * d
        else:
            per_layer = 4.0 * B * d * (2 * d + ff) + 4.0 * B * self.kv * d
        return per_layer * self.layers
