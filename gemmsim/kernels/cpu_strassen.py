"""Strassen's and Winograd's fast GEMM as CPU trace generators (seed 000 section 17).

One level splits op(A) (M x K), op(B) (K x N) and C (M x N) into 2 x 2 blocks and computes C = A B from 7 block
products (instead of 8) plus block additions; the recursion goes on while every dimension is even and larger
than ``cutoff``, then each product is an ordinary ``packed_micro`` call (Goto/BLIS with the SIMD microkernel,
its blocking from the machine). Everything the algorithm touches is traced:

* a block addition X = Y +- Z reads Y and Z and writes X, one vector access at a time (the machine's SIMD
  width), row by row: 1 FLOP per 3 elements moved, the lowest arithmetic intensity there is;
* a block copy (C11 = M1) reads one block and writes another;
* temporaries live in a workspace after C (page aligned), one set per recursion level, reused by every
  product at that level; the packed buffers of the base-case calls lie after the workspace, shared by all calls.

Schedules (C = A B, beta = 0; numerics of the same recursions: gemmsim.numerics.strassen):

* ``strassen``: per level one S (A side), one T (B side) and one P (product) buffer; each M_i = S T goes to P
  and is added into the C blocks that need it (10 operand additions, 8 additions into C, 4 copies: 18 additions).
* ``winograd``: Winograd's variant (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., ch. 23):
  8 operand additions into 4 S and 4 T buffers, 7 products into 7 buffers, 7 additions to form C (15 additions).
  Memory-frugal schedules exist (Boyer et al., ISSAC 2009, use 2 temporaries); this one keeps every
  intermediate, so its workspace traffic is an upper bound.

Approximations: a base-case call computes P += S T, so it also reads the (stale) P tile that a beta = 0 call
would not; the modelled compute time counts each base-case FMA as 2 FLOPs and each block addition as one vector
slot per element (2 FLOP-equivalents), through the ``compute_flops`` column.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Literal

import numpy as np
from pydantic import Field

from gemmsim.errors import KernelError
from gemmsim.kernels.base import CPUKernel
from gemmsim.kernels.cpu_packed import KERNELS as PACKED
from gemmsim.kernels.cpu_packed import PackedParams
from gemmsim.schema import Strict
from gemmsim.trace import CHUNK, Layout, make_chunk

PAGE = 4096

#: Block additions per level, by variant.
ADDITIONS = {"strassen": 18, "winograd": 15}


class StrassenParams(Strict):
    """Parameters of the fast-GEMM kernels; the base case's blocking comes from the machine unless given."""

    cutoff: int = Field(128, ge=1, description="Recurse while M, N and K are all even and larger than this; then packed_micro.")
    MR: int | None = Field(None, ge=1, le=64, description="Base case: register tile rows (None: the register rule).")
    NR: int | None = Field(None, ge=1, le=256, description="Base case: register tile columns (None: the register rule).")
    KC: int | None = Field(None, ge=1, description="Base case: packed panel depth (None: Low et al. from L1).")
    MC: int | None = Field(None, ge=1, description="Base case: packed A block rows (None: Low et al. from L2).")
    NC: int | None = Field(None, ge=1, description="Base case: packed B panel columns (None: Low et al. from L3).")


def levels(M: int, N: int, K: int, cutoff: int) -> int:
    """Recursion levels: halve all three while each is even and larger than the cutoff."""
    lv = 0
    while min(M, N, K) > cutoff and M % 2 == 0 and N % 2 == 0 and K % 2 == 0:
        M, N, K = M // 2, N // 2, K // 2
        lv += 1
    return lv


class _Mat:
    """A block: rows x cols at base with row stride rs and column stride cs (bytes)."""

    __slots__ = ("base", "rows", "cols", "rs", "cs")

    def __init__(self, base, rows, cols, rs, cs):
        self.base, self.rows, self.cols, self.rs, self.cs = base, rows, cols, rs, cs

    def quad(self, r: int, c: int) -> "_Mat":
        h, w = self.rows // 2, self.cols // 2
        return _Mat(self.base + r * h * self.rs + c * w * self.cs, h, w, self.rs, self.cs)


def _workspace(M: int, N: int, K: int, lv: int, elem: int, start: int, variant: str) -> tuple[list[dict], int]:
    """Temporaries per level (row-major, page aligned) and the end address."""
    at = -(-start // PAGE) * PAGE
    per_level = []
    nS, nT, nP = (1, 1, 1) if variant == "strassen" else (4, 4, 7)
    for level in range(lv):
        hm, hn, hk = M >> (level + 1), N >> (level + 1), K >> (level + 1)
        bufs: dict[str, list[_Mat]] = {"S": [], "T": [], "P": []}
        for name, n, (r, c) in (("S", nS, (hm, hk)), ("T", nT, (hk, hn)), ("P", nP, (hm, hn))):
            for _ in range(n):
                bufs[name].append(_Mat(at, r, c, c * elem, elem))
                at = -(-(at + r * c * elem) // PAGE) * PAGE
        per_level.append(bufs)
    return per_level, at


class _Tracer:
    def __init__(self, layout: Layout, params: StrassenParams, machine, variant: str, chunk: int):
        if machine is None:
            raise KernelError(f"{variant}: needs a CPU machine (vector width and the base case's blocking)")
        self.lay, self.p, self.machine, self.variant, self.chunk = layout, params, machine, variant, chunk
        self.elem = layout.elem
        self.vec = max(self.elem, machine.simd_bits // 8)
        self.lv = levels(layout.M, layout.N, layout.K, params.cutoff)
        self.ws, self.end = _workspace(layout.M, layout.N, layout.K, self.lv, self.elem, layout.end, variant)
        self.base_params = PackedParams(MR=params.MR, NR=params.NR, KC=params.KC, MC=params.MC, NC=params.NC)
        self.adds = 0  # elements added (one FLOP each)
        self.copies = 0
        self.fmas = 0  # base-case multiply-adds

    # -- block operations -----------------------------------------------------------------------------------
    def _row_addrs(self, m: _Mat, r: int) -> np.ndarray:
        """Vector-access addresses along row r of m (contiguous rows: one per vector; strided: one per element)."""
        if m.cs == self.elem:
            starts = np.arange(0, m.cols * self.elem, self.vec, dtype=np.uint64)
            return m.base + r * m.rs + starts
        return m.base + r * m.rs + np.arange(m.cols, dtype=np.uint64) * m.cs

    def _elementwise(self, dst: _Mat, srcs: list[_Mat]) -> Iterator[np.ndarray]:
        """dst = combination of srcs, row by row: for each vector, read every source then write dst."""
        contiguous = all(m.cs == self.elem for m in srcs + [dst])
        size = self.vec if contiguous else self.elem
        per_row = -(-dst.cols * self.elem // self.vec) if contiguous else dst.cols
        n_ops = len(srcs) + 1
        rows_per_chunk = max(1, self.chunk // (per_row * n_ops))
        for r0 in range(0, dst.rows, rows_per_chunk):
            rows = range(r0, min(dst.rows, r0 + rows_per_chunk))
            addr = np.empty((len(rows), per_row, n_ops), dtype=np.uint64)
            for t, r in enumerate(rows):
                for q, m in enumerate(srcs + [dst]):
                    a = self._row_addrs(m, r) if contiguous else m.base + r * m.rs + np.arange(m.cols, dtype=np.uint64) * m.cs
                    addr[t, :, q] = a[:per_row]
            is_write = np.zeros(n_ops, np.uint8)
            is_write[-1] = 1
            sizes = np.full(n_ops, size, np.uint32)
            if contiguous and (dst.cols * self.elem) % self.vec:  # partial last vector
                sizes2 = np.broadcast_to(sizes, (len(rows), per_row, n_ops)).copy()
                sizes2[:, -1, :] = (dst.cols * self.elem) % self.vec
                yield make_chunk(addr.ravel(), sizes2.ravel(), np.broadcast_to(is_write, addr.shape).ravel())
            else:
                yield make_chunk(addr.ravel(), np.broadcast_to(sizes, addr.shape).ravel(), np.broadcast_to(is_write, addr.shape).ravel())

    def add(self, dst: _Mat, a: _Mat, b: _Mat) -> Iterator[np.ndarray]:
        self.adds += dst.rows * dst.cols
        return self._elementwise(dst, [a, b])

    def copy(self, dst: _Mat, a: _Mat) -> Iterator[np.ndarray]:
        self.copies += dst.rows * dst.cols
        return self._elementwise(dst, [a])

    def base_mul(self, C: _Mat, A: _Mat, B: _Mat) -> Iterator[np.ndarray]:
        self.fmas += A.rows * A.cols * B.cols
        sub = replace(self.lay, M=A.rows, N=B.cols, K=A.cols, a_base=A.base, b_base=B.base, c_base=C.base,
                      a_rs=A.rs, a_cs=A.cs, b_rs=B.rs, b_cs=B.cs, c_rs=C.rs, c_cs=C.cs, end=self.end)
        return PACKED["packed_micro"].trace(sub, self.base_params, self.machine)

    # -- recursion --------------------------------------------------------------------------------------------
    def mul(self, C: _Mat, A: _Mat, B: _Mat, level: int) -> Iterator[np.ndarray]:
        if level == self.lv:
            yield from self.base_mul(C, A, B)
            return
        w = self.ws[level]
        A11, A12, A21, A22 = A.quad(0, 0), A.quad(0, 1), A.quad(1, 0), A.quad(1, 1)
        B11, B12, B21, B22 = B.quad(0, 0), B.quad(0, 1), B.quad(1, 0), B.quad(1, 1)
        C11, C12, C21, C22 = C.quad(0, 0), C.quad(0, 1), C.quad(1, 0), C.quad(1, 1)
        nxt = level + 1
        if self.variant == "strassen":
            S, T, P = w["S"][0], w["T"][0], w["P"][0]
            steps = [
                ("add", S, A11, A22), ("add", T, B11, B22), ("mul", P, S, T), ("copy", C11, P), ("copy", C22, P),  # M1
                ("add", S, A21, A22), ("mul", P, S, B11), ("copy", C21, P), ("add", C22, C22, P),  # M2
                ("add", T, B12, B22), ("mul", P, A11, T), ("copy", C12, P), ("add", C22, C22, P),  # M3
                ("add", T, B21, B11), ("mul", P, A22, T), ("add", C11, C11, P), ("add", C21, C21, P),  # M4
                ("add", S, A11, A12), ("mul", P, S, B22), ("add", C11, C11, P), ("add", C12, C12, P),  # M5
                ("add", S, A21, A11), ("add", T, B11, B12), ("mul", P, S, T), ("add", C22, C22, P),  # M6
                ("add", S, A12, A22), ("add", T, B21, B22), ("mul", P, S, T), ("add", C11, C11, P),  # M7
            ]
        else:
            S1, S2, S3, S4 = w["S"]
            T1, T2, T3, T4 = w["T"]
            P1, P2, P3, P4, P5, P6, P7 = w["P"]
            steps = [
                ("add", S1, A21, A22), ("add", S2, S1, A11), ("add", S3, A11, A21), ("add", S4, A12, S2),
                ("add", T1, B12, B11), ("add", T2, B22, T1), ("add", T3, B22, B12), ("add", T4, T2, B21),
                ("mul", P1, A11, B11), ("mul", P2, A12, B21), ("mul", P3, S4, B22), ("mul", P4, A22, T4),
                ("mul", P5, S1, T1), ("mul", P6, S2, T2), ("mul", P7, S3, T3),
                ("add", C11, P1, P2), ("add", P6, P1, P6), ("add", P7, P6, P7), ("add", C22, P7, P5),  # U2 in P6, U3 in P7
                ("add", P5, P6, P5), ("add", C12, P5, P3), ("add", C21, P7, P4),  # U4 in P5; U5, U6
            ]
        for op, dst, a, b in (s if len(s) == 4 else (*s, None) for s in steps):
            if op == "add":
                yield from self.add(dst, a, b)
            elif op == "copy":
                yield from self.copy(dst, a)
            else:
                yield from self.mul(dst, a, b, nxt)


def _tracer(variant: str):
    def trace(layout: Layout, params: StrassenParams, machine=None, chunk: int = CHUNK) -> Iterator[np.ndarray]:
        t = _Tracer(layout, params, machine, variant, chunk)
        L = layout
        yield from t.mul(_Mat(L.c_base, L.M, L.N, L.c_rs, L.c_cs), _Mat(L.a_base, L.M, L.K, L.a_rs, L.a_cs),
                         _Mat(L.b_base, L.K, L.N, L.b_rs, L.b_cs), 0)

    trace.__doc__ = f"Stream the {variant} kernel's accesses (see the module docstring)."
    return trace


def counts(M: int, N: int, K: int, cutoff: int, variant: str) -> dict:
    """Closed-form operation counts of the traced schedule: base-case FMAs, block-addition elements, copies."""
    lv = levels(M, N, K, cutoff)
    fmas = 7**lv * (M >> lv) * (N >> lv) * (K >> lv)
    adds = copies = 0
    for level in range(lv):
        hm, hn, hk = M >> (level + 1), N >> (level + 1), K >> (level + 1)
        calls = 7**level
        if variant == "strassen":
            adds += calls * (5 * hm * hk + 5 * hk * hn + 8 * hm * hn)
            copies += calls * 4 * hm * hn
        else:
            adds += calls * (4 * hm * hk + 4 * hk * hn + 7 * hm * hn)
    return {"levels": lv, "fmas": fmas, "adds": adds, "copies": copies}


def _extra_for(variant: str):
    def extra(layout: Layout, params: StrassenParams, machine=None) -> dict:
        c = counts(layout.M, layout.N, layout.K, params.cutoff, variant)
        classical = layout.M * layout.N * layout.K
        return {
            "strassen_levels": c["levels"],
            "strassen_mul_fraction": c["fmas"] / classical,
            "strassen_add_flops": c["adds"],
            "strassen_add_bytes": 3 * c["adds"] * layout.elem + 2 * c["copies"] * layout.elem,
            # base-case FMAs at 2 FLOPs each, block additions at one vector slot (2 FLOP-equivalents) per element
            "compute_flops": 2.0 * (c["fmas"] + c["adds"]),
        }

    return extra


KERNELS: dict[str, CPUKernel] = {
    v: CPUKernel(
        name=v,
        description=f"{v.capitalize()} fast GEMM: 7 block products per level ({ADDITIONS[v]} block additions), packed_micro below the cutoff",
        params=StrassenParams,
        trace=_tracer(v),
        simd=True,
        extra=_extra_for(v),
    )
    for v in ("strassen", "winograd")
}
