"""Closed forms of attention's memory traffic: naive (scores in DRAM), FlashAttention-style tiling, KV-cache decode.

One attention head computes O = softmax(Q K^T / sqrt(d)) V with Q, K, V, O of L x d (seed 000 sections 13.2, 14.1).

* **Naive** (three kernels): S = Q K^T writes the L x L score matrix, softmax reads S and writes P, O = P V reads P.
  With each kernel reading its inputs once, a head moves ``4 L d e`` bytes of Q, K, V, O plus ``4 L^2 s`` bytes of
  scores (S written, read, P written, read; ``s`` bytes per score): the score term grows with L^2 and passes the
  operand term at L = d e / s (``naive_crossover_len``), i.e. at L = d for 16-bit scores.
* **FlashAttention** (Dao et al. 2022, "FlashAttention: fast and memory-efficient exact attention with IO-awareness",
  NeurIPS, Algorithm 1; FlashAttention-2, Dao 2023, which puts the Q tile in the outer loop): a thread block keeps a
  Br x d tile of Q and streams K and V in Bc x d tiles through shared memory, with an online softmax, and writes
  its Br x d tile of O; the L x L scores never leave the chip. Requested from L2: per head
  ``L d e`` (Q) + ``ceil(L/Br) x 2 L d e`` (K and V once per Q tile) + ``L d e`` (O). From DRAM: ``4 L d e`` when a
  head's K and V stay in L2 between its Q tiles, at most the L2 figure when they do not.
* **KV-cache decode** (Shazeer 2019, "Fast transformer decoding: one write-head is all you need" (MQA); Ainslie
  et al. 2023, "GQA: training generalized multi-query transformer models from multi-head checkpoints"): each new
  token of each sequence reads the cached K and V of every earlier token, ``2 x batch x context x kv_heads x d_head
  x e`` bytes per layer, beside the layer's weights (``d (d + 2 kv_heads d_head) + d^2`` attention projections and
  ``2 d d_ff`` FFN, times e). MHA has kv_heads = heads, GQA heads / group, MQA 1. The KV read passes the weight
  read at ``decode_crossover_context``.
"""

from __future__ import annotations

from gemmsim.errors import KernelError


def _pos(**kw) -> None:
    for name, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise KernelError(f"{name} must be a positive integer (got {v!r})")


def naive_bytes(heads: int, L: int, d: int, e: int, s: int | None = None) -> dict:
    """Bytes of the three naive kernels for ``heads`` independent heads (batch x heads), each reading its inputs once:
    ``qk`` (Q, K read, S written), ``softmax`` (S read, P written), ``pv`` (P, V read, O written), and ``total``."""
    s = e if s is None else s
    _pos(heads=heads, L=L, d=d, e=e, s=s)
    qk = heads * (2 * L * d * e + L * L * s)
    sm = heads * 2 * L * L * s
    pv = heads * (L * L * s + 2 * L * d * e)
    return {"qk": qk, "softmax": sm, "pv": pv, "total": qk + sm + pv, "scores": heads * 4 * L * L * s}


def naive_flops(heads: int, L: int, d: int) -> float:
    """FLOPs of naive (and flash) attention without masking: 2 L^2 d for Q K^T and 2 L^2 d for P V, per head."""
    _pos(heads=heads, L=L, d=d)
    return 4.0 * heads * L * L * d


def naive_crossover_len(d: int, e: int, s: int | None = None) -> float:
    """Sequence length at which the naive kernels' score traffic 4 L^2 s equals the operand traffic 4 L d e."""
    s = e if s is None else s
    _pos(d=d, e=e, s=s)
    return d * e / s


def kv_tiles(L: int, Br: int, Bc: int, q_tile: int, causal: bool) -> int:
    """K/V tiles the block of Q tile ``q_tile`` reads: all ceil(L/Bc), or with a causal mask those that start at or
    before the tile's last row."""
    n = -(-L // Bc)
    if not causal:
        return n
    last_row = min((q_tile + 1) * Br, L) - 1
    return min(n, last_row // Bc + 1)


def flash_requested_bytes(heads: int, L: int, d: int, e: int, Br: int, Bc: int, causal: bool = False) -> dict:
    """Bytes the FlashAttention kernel asks of L2: ``read`` (Q once, K and V once per Q tile) and ``written`` (O)."""
    _pos(heads=heads, L=L, d=d, e=e, Br=Br, Bc=Bc)
    tiles = -(-L // Br)
    kv_rows = 0
    for t in range(tiles):
        n = kv_tiles(L, Br, Bc, t, causal)
        kv_rows += min(n * Bc, L)
    read = heads * (L * d * e + 2 * kv_rows * d * e)
    return {"read": read, "written": heads * L * d * e}


def flash_dram_bytes_ideal(heads: int, L: int, d: int, e: int) -> int:
    """DRAM bytes of FlashAttention when each head's K and V stay in L2 while its Q tiles run: Q, K, V read, O written."""
    _pos(heads=heads, L=L, d=d, e=e)
    return heads * 4 * L * d * e


def flash_smem_bytes(Br: int, Bc: int, d: int, e: int) -> int:
    """Shared memory of one FlashAttention block: a Br x d tile of Q and Bc x d tiles of K and V."""
    _pos(Br=Br, Bc=Bc, d=d, e=e)
    return (Br + 2 * Bc) * d * e


def kv_cache_bytes(batch: int, context: int, kv_heads: int, head_dim: int, e: int) -> int:
    """Bytes of K and V one decode step of one layer reads: 2 x batch x context x kv_heads x head_dim x e."""
    _pos(batch=batch, context=context, kv_heads=kv_heads, head_dim=head_dim, e=e)
    return 2 * batch * context * kv_heads * head_dim * e


def layer_weight_bytes(d_model: int, kv_heads: int, head_dim: int, d_ff: int, e: int) -> int:
    """Weights of one layer: W_Q and W_O (d x d each), W_K and W_V (d x kv_heads head_dim each), FFN 2 d d_ff."""
    _pos(d_model=d_model, kv_heads=kv_heads, head_dim=head_dim, d_ff=d_ff, e=e)
    return e * (2 * d_model * d_model + 2 * d_model * kv_heads * head_dim + 2 * d_model * d_ff)


def decode_crossover_context(batch: int, d_model: int, kv_heads: int, head_dim: int, d_ff: int, e: int) -> float:
    """Context length at which a decode step's KV-cache read equals its weight read (per layer)."""
    w = layer_weight_bytes(d_model, kv_heads, head_dim, d_ff, e)
    return w / (2 * batch * kv_heads * head_dim * e)
