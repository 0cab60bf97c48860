"""The full GEMM contract around any kernel: C = alpha op(A) op(B) + beta C, then an optional bias + ReLU epilogue.

op(A) and op(B) are strides (``LayoutSpec.trans_a`` / ``trans_b``, see ``gemmsim.trace``). alpha is a multiply
in registers and moves no data. beta and the epilogue change what the kernel moves (seed 000 sections 1, 8, 13.3;
the cuBLASLt epilogues, e.g. CUBLASLT_EPILOGUE_RELU_BIAS, exist to fuse the second):

* ``beta``: None keeps what the kernel does (the CPU kernels accumulate into C, i.e. beta = 1; the GPU kernels
  overwrite it, beta = 0). beta = 0 on a CPU kernel drops the first load of every C element (the accumulator
  starts at zero); beta != 0 on a GPU kernel loads the C tile before storing it (one more read of M x N elements).
* ``epilogue``: ``bias_relu`` fuses C = relu(C + bias) into the kernel's end: only the bias vector (N elements) is
  read, while C is still in registers; ``bias_relu_separate`` runs it as its own pass afterwards: C read, bias read,
  C written -- a round trip of C through the memory hierarchy.

The CPU side wraps a kernel's trace (``cpu_contract``); the GPU side derives the kernel spec with a block trace
that adds the C loads and bias loads (``gpu_contract``) and a separate launch for the unfused epilogue
(``gpu_epilogue_pass``). The bias vector lives after C, 128-byte aligned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields

import numpy as np

from gemmsim.errors import KernelError
from gemmsim.kernels.attention import StreamLayout, StreamSpec
from gemmsim.kernels.gpu import OP_B, OP_C, SPACE_GLOBAL, GPUKernelSpec, WarpTrace
from gemmsim.trace import ACCESS, CHUNK, Layout


def bias_base(lay: Layout) -> int:
    """Address of the bias vector (N elements): after C, 128-byte aligned."""
    return -(-lay.end // 128) * 128


def _drop_first_c_loads(chunks: Iterable[np.ndarray], lay: Layout) -> Iterator[np.ndarray]:
    """The trace without the first load of each C element (beta = 0: nothing to read before the first update)."""
    e = lay.elem
    seen = np.zeros(max((lay.end - lay.c_base) // e, 1), bool)
    for c in chunks:
        a = c["addr"].astype(np.int64)
        inside = (a >= lay.c_base) & (a < lay.end)
        if not inside.any():
            yield c
            continue
        pos = np.flatnonzero(inside)
        idx = (a[pos] - lay.c_base) // e
        first_idx, first_at = np.unique(idx, return_index=True)
        new = ~seen[first_idx]
        cand = pos[first_at[new]]
        drop = cand[c["is_write"][cand] == 0]
        seen[idx] = True
        if len(drop):
            keep = np.ones(len(c), bool)
            keep[drop] = False
            c = c[keep]
        if len(c):
            yield c


def _epilogue_chunks(lay: Layout, epilogue: str, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """Accesses of the epilogue after the kernel, row by row: fused -- the bias read per row (C is in registers);
    separate -- C[i][j] load, bias[j] load, C[i][j] store."""
    e, M, N = lay.elem, lay.M, lay.N
    bb = bias_base(lay)
    j = np.arange(N, dtype=np.int64)
    rows = max(1, chunk // (3 * N))
    for i0 in range(0, M, rows):
        i = np.arange(i0, min(M, i0 + rows), dtype=np.int64)[:, None]
        bias = np.broadcast_to(bb + j * e, (len(i), N))
        if epilogue == "bias_relu":
            addr, wr = bias.reshape(-1), np.zeros(bias.size, np.uint8)
        else:
            caddr = lay.c_base + i * lay.c_rs + j[None, :] * lay.c_cs
            addr = np.stack([caddr, bias, caddr], axis=-1).reshape(-1)
            wr = np.tile(np.array([0, 0, 1], np.uint8), caddr.size)
        out = np.empty(addr.size, ACCESS)
        out["addr"], out["size"], out["is_write"], out["core"] = addr, e, wr, 0
        yield out


def cpu_contract(chunks: Iterable[np.ndarray], lay: Layout, beta: float | None) -> Iterable[np.ndarray]:
    """A CPU kernel's trace under the contract: beta = 0 drops the first C loads; otherwise the trace itself (so a
    trace that can run in one compiled pass keeps doing so)."""
    return _drop_first_c_loads(chunks, lay) if beta == 0 else chunks


def epilogue_chunks(lay: Layout, epilogue: str) -> Iterator[np.ndarray]:
    """The accesses the epilogue adds after the kernel (none for ``"none"``)."""
    if epilogue != "none":
        yield from _epilogue_chunks(lay, epilogue)


def _contract_block_trace(self, layout, tile_m, tile_n, spaces=None) -> WarpTrace:
    """The kernel's block trace with, before its C stores, loads of the same C addresses (beta != 0) and loads of the
    bias elements of the same columns (fused epilogue)."""
    tr = type(self).__mro__[1].block_trace(self, layout, tile_m, tile_n, spaces)
    cst = (tr.operand == OP_C) & (tr.is_write == 1) & (tr.space == SPACE_GLOBAL)
    if not cst.any():
        return tr
    body, stores = tr.select(~cst), tr.select(cst)
    parts = [body]
    if self.extra.get("beta_read"):
        parts.append(WarpTrace(stores.addr, stores.width, stores.space, np.zeros_like(stores.is_write),
                               np.ones_like(stores.bypass_l1), stores.warp, stores.mask, stores.operand))
    bb = self.extra.get("bias_base")
    if bb is not None:
        L = layout
        off = stores.addr.astype(np.int64) - L.c_base
        col = (off % L.c_rs) // L.c_cs
        addr = np.where(stores.lanes_active(), bb + col * L.elem, 0).astype(np.uint64)
        # tagged as B: the bias of tile column tile_n shifts with tile_n * BN elements, as B's columns do (b_cs = elem)
        parts.append(WarpTrace(addr, stores.width, stores.space, np.zeros_like(stores.is_write), stores.bypass_l1,
                               stores.warp, stores.mask, np.full_like(stores.operand, OP_B)))
    parts.append(stores)
    return WarpTrace.concat(parts)


_DERIVED: dict[type, type] = {}


def gpu_contract(spec: GPUKernelSpec, lay: Layout, beta: float | None, epilogue: str) -> GPUKernelSpec:
    """The spec under the contract (the same spec when beta is None/0 and there is no fused epilogue)."""
    beta_read = beta is not None and beta != 0
    fused = epilogue == "bias_relu"
    if not beta_read and not fused:
        return spec
    if fused and not (lay.c_cs == lay.elem and lay.b_cs == lay.elem):
        raise KernelError("the fused bias epilogue is modelled for row-major C and op(B) (c_cs = b_cs = element size)")
    cls = type(spec)
    if cls not in _DERIVED:
        _DERIVED[cls] = type(f"{cls.__name__}WithEpilogue", (cls,), {"block_trace": _contract_block_trace})
    extra = {**spec.extra, "beta_read": beta_read, "bias_base": bias_base(lay) if fused else None}
    return _DERIVED[cls](**{f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "extra"}, extra=extra)


def gpu_epilogue_pass(M: int, N: int, lay: Layout, rows: int = 4, threads: int = 256) -> tuple[StreamSpec, StreamLayout]:
    """The unfused epilogue as its own launch: each block reads ``rows`` rows of C (in place) and the bias, then writes
    the rows back. Row-major C only."""
    if lay.c_cs != lay.elem:
        raise KernelError("the separate epilogue pass is modelled for row-major C")
    rows = max(1, min(rows, M))
    while M % rows:
        rows -= 1
    row = lay.c_rs
    n = M // rows
    bb = bias_base(lay)
    spec = StreamSpec(
        name="epilogue", dtype=lay.dtype, BM=1, BN=1, threads=threads, regs=32, smem_bytes=0, tensor=False, acc="fp32",
        a_bytes=N * lay.elem, b_tile_bytes=rows * row, b_tiles=1, c_bytes=rows * row, n_blocks=n,
        extra={"b_bases": (lay.c_base,)},
    )
    slay = StreamLayout(blocks=n, a_base=bb, a_rs=0, b_bases=(lay.c_base,), b_cs=rows * row, c_base=lay.c_base,
                        c_rs=rows * row, elem=lay.elem)
    return spec, slay
