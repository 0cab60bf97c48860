"""Attention kernels on the GPU models as trace generators: what one thread block of each kernel reads and writes.

Closed forms of the same traffic are in ``gemmsim.analytic.attention`` (the tests check one against the other).
Every kernel here moves contiguous tiles with 16-byte copies (``cp.async.cg``: L2 only, like the tensor-core
GEMM's), so a block is a list of contiguous byte ranges read or written in program order:

* ``FlashAttentionSpec`` -- FlashAttention-2's forward pass (Dao 2023, Algorithm 1): one block per (head, Br-row
  tile of Q); it loads its Q tile once, then for each of the ceil(L / Bc) K/V tiles loads K_j and V_j (Bc x d
  each), and finally stores its Br x d tile of O. Scores live in registers and shared memory only.
* ``SoftmaxSpec`` -- the middle kernel of naive attention: one block per ``rows`` rows of the L x L score matrix,
  read in full, then the same rows of P written.
* ``DecodeSpec`` -- one decode step's attention over a KV cache (FlashDecoding-style, one block per sequence and KV
  head): it loads the query rows of the ``group`` query heads that share the KV head, streams the cached K and V
  of ``context`` tokens in Bc-row tiles, and stores the group's output rows. MHA has group 1, MQA group = heads.

The naive kernel's two GEMMs (S = Q K^T, O = P V) are the ordinary tensor-core GEMM of ``gemmsim.kernels.gpu``
(``Layout`` with ``trans_b`` for K^T); ``gemmsim.sim.attention`` puts the launches together.

Blocks of one launch differ only by whole-line shifts of their Q/O region (tile_m) and of their K/V region
(tile_n), so the memory model simulates one template block and shifts it: ``StreamLayout`` gives the model the
per-block strides (``a_rs``: bytes between consecutive blocks' op-A regions, ``b_cs``: between their op-B regions,
``c_rs``: between their op-C regions) with BM = BN = 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmsim.kernels.gpu import OP_A, OP_B, OP_C, SPACE_GLOBAL, WARP, GPUKernelSpec, WarpTrace, _assemble, _Group

COPY = 16  # bytes per lane per copy instruction


@dataclass(frozen=True)
class StreamLayout:
    """Where a streaming kernel's regions live, in the shape ``gemmsim.models.gpu_memory`` expects of a Layout.

    Block b (launch order) reads op A at ``a_base + b * a_rs``, op B ranges at ``b_bases[i] + b_block[b] * b_cs``
    and writes op C at ``c_base + b * c_rs``. ``M`` and ``N`` are the block count (BM = BN = 1), so every block is
    interior and blocks are shifts of block 0 whenever the strides are whole lines.
    """

    blocks: int
    a_base: int
    a_rs: int
    b_bases: tuple[int, ...]
    b_cs: int
    c_base: int
    c_rs: int
    elem: int
    b_block: tuple[int, ...] | None = None  # op-B region index of each block (default: the block's own index)
    a_cs: int = 0
    b_rs: int = 0
    c_cs: int = 0

    @property
    def M(self) -> int:
        return self.blocks

    @property
    def N(self) -> int:
        return self.blocks if self.b_block is None else max(self.b_block) + 1


def _copies(base: int, nbytes: int, threads: int, op: int, write: bool, steps: int = 1, step_bytes: int = 0) -> list[_Group]:
    """16-byte copies of ``nbytes`` contiguous bytes at ``base`` (+ s * step_bytes for step s), ``threads`` lanes per
    instruction round: one _Group per instruction, each (steps, warps, 32)."""
    warps = -(-threads // WARP)
    chunks = -(-nbytes // COPY)
    tid = np.arange(warps, dtype=np.int64)[:, None] * WARP + np.arange(WARP, dtype=np.int64)[None, :]
    s = np.arange(steps, dtype=np.int64)[:, None, None]
    out = []
    for i in range(-(-chunks // threads)):
        c = i * threads + tid
        act = np.broadcast_to((c < chunks) & (tid < threads), (steps, warps, WARP))
        out.append(_Group(base + s * step_bytes + c[None] * COPY, act, COPY, SPACE_GLOBAL, write, True, op))
    return out


@dataclass(frozen=True)
class StreamSpec(GPUKernelSpec):
    """A block that loads an op-A region once, streams ``b_tiles`` tiles of ``b_tile_bytes`` from each op-B base,
    then stores an op-C region. BM = BN = 1: tile_m is the block index, tile_n its op-B region."""

    a_bytes: int = 0
    b_tile_bytes: int = 0
    b_tiles: int = 0
    c_bytes: int = 0
    n_blocks: int = 1
    b_block: tuple[int, ...] | None = None

    def order(self, M: int, N: int) -> tuple[np.ndarray, np.ndarray]:
        b = np.arange(self.n_blocks, dtype=np.int64)
        return b, (b if self.b_block is None else np.asarray(self.b_block, np.int64))

    def block_trace(self, layout: StreamLayout, tile_m: int, tile_n: int, spaces=None) -> WarpTrace:
        L = layout
        parts = []
        if self.a_bytes:
            parts.append(_assemble(_copies(L.a_base + tile_m * L.a_rs, self.a_bytes, self.threads, OP_A, False), spaces))
        if self.b_tiles and self.b_tile_bytes:
            groups = []
            for base in L.b_bases:
                groups += _copies(base + tile_n * L.b_cs, self.b_tile_bytes, self.threads, OP_B, False,
                                  steps=self.b_tiles, step_bytes=self.b_tile_bytes)
            parts.append(_assemble(groups, spaces))
        if self.c_bytes:
            parts.append(_assemble(_copies(L.c_base + tile_m * L.c_rs, self.c_bytes, self.threads, OP_C, True), spaces))
        return WarpTrace.concat(parts)

    def requested_bytes(self) -> tuple[int, int]:
        """(bytes read, bytes written) per block, from the tile sizes (whole 16-byte copies)."""
        r = -(-self.a_bytes // COPY) * COPY + len(self._bases) * self.b_tiles * -(-self.b_tile_bytes // COPY) * COPY
        return r, -(-self.c_bytes // COPY) * COPY

    @property
    def _bases(self) -> tuple:
        return self.extra.get("b_bases", (0, 0))


def _line_up(x: int, line: int = 128) -> int:
    return -(-x // line) * line


def flash_attention(heads: int, L: int, d: int, dtype_bytes_: int, Br: int, Bc: int, threads: int, regs: int, name: str = "attention_flash",
                    dtype: str = "fp16") -> tuple[StreamSpec, StreamLayout]:
    """The FlashAttention-2 forward launch for ``heads`` heads (batch x heads) of L x d: spec and layout.

    Q, K, V, O are [heads][L][d] row-major, one after another (each region 128-byte aligned). ``L`` must be a
    multiple of Bc and Br (the kernel reads whole tiles)."""
    e = dtype_bytes_
    head = L * d * e
    q = 0
    k = _line_up(q + heads * head)
    v = _line_up(k + heads * head)
    o = _line_up(v + heads * head)
    tiles = L // Br
    n = heads * tiles
    b_block = tuple(int(x) for x in np.arange(n) // tiles)
    smem = (Br + 2 * Bc) * d * e
    spec = StreamSpec(
        name=name, dtype=dtype, BM=1, BN=1, threads=threads, regs=regs, smem_bytes=smem, tensor=True, acc="fp32",
        a_bytes=Br * d * e, b_tile_bytes=Bc * d * e, b_tiles=L // Bc, c_bytes=Br * d * e, n_blocks=n, b_block=b_block,
        extra={"b_bases": (k, v)},
    )
    lay = StreamLayout(blocks=n, a_base=q, a_rs=Br * d * e, b_bases=(k, v), b_cs=head, c_base=o, c_rs=Br * d * e, elem=e,
                       b_block=b_block)
    return spec, lay


def softmax_rows(heads: int, L: int, score_bytes: int, rows: int, threads: int, regs: int = 32, dtype: str = "fp16") -> tuple[StreamSpec, StreamLayout]:
    """The softmax launch of naive attention over ``heads`` L x L score matrices: ``rows`` rows per block, each row
    read (S) and written (P) once; S and P are [heads][L][L] one after the other."""
    row = L * score_bytes
    s_base = 0
    p_base = _line_up(heads * L * row)
    n = heads * L // rows
    spec = StreamSpec(
        name="softmax", dtype=dtype, BM=1, BN=1, threads=threads, regs=regs, smem_bytes=0, tensor=False, acc="fp32",
        a_bytes=0, b_tile_bytes=rows * row, b_tiles=1, c_bytes=rows * row, n_blocks=n, extra={"b_bases": (s_base,)},
    )
    lay = StreamLayout(blocks=n, a_base=0, a_rs=0, b_bases=(s_base,), b_cs=rows * row, c_base=p_base, c_rs=rows * row, elem=score_bytes)
    return spec, lay


def decode_attention(batch: int, heads: int, kv_heads: int, head_dim: int, context: int, e: int, Bc: int, threads: int,
                     regs: int = 64, dtype: str = "fp16") -> tuple[StreamSpec, StreamLayout]:
    """One decode step's attention: one block per (sequence, KV head) reading its group's query rows, the cached K and
    V ([batch][kv_heads][context][head_dim]) in Bc-token tiles, and writing the group's output rows."""
    group = heads // kv_heads
    n = batch * kv_heads
    kv = context * head_dim * e
    q = 0
    k = _line_up(batch * heads * head_dim * e)
    v = _line_up(k + n * kv)
    o = _line_up(v + n * kv)
    tiles = -(-context // Bc)
    spec = StreamSpec(
        name="attention_decode", dtype=dtype, BM=1, BN=1, threads=threads, regs=regs,
        smem_bytes=2 * Bc * head_dim * e, tensor=False, acc="fp32", a_bytes=group * head_dim * e,
        b_tile_bytes=Bc * head_dim * e, b_tiles=tiles, c_bytes=group * head_dim * e, n_blocks=n, extra={"b_bases": (k, v)},
    )
    if context % Bc:
        # the last tile is partial: stream whole tiles of the rounded-up context (the cache is allocated in pages of
        # Bc tokens, as paged KV caches are); the closed form counts the same
        pass
    lay = StreamLayout(blocks=n, a_base=q, a_rs=group * head_dim * e, b_bases=(k, v), b_cs=kv, c_base=o,
                       c_rs=group * head_dim * e, elem=e)
    return spec, lay
