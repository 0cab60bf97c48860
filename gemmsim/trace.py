"""Traces: the address streams kernels emit and models consume.

A trace is an iterator of *chunks*. A CPU chunk is a numpy structured array of ``ACCESS`` records
(address, size in bytes, is_write, core); chunks keep memory bounded whatever the problem size, so nothing
ever materialises a whole N=1024 trace. ``Layout`` says where A (M x K), B (K x N) and C (M x N) live.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from gemmsim.errors import KernelError
from gemmsim.schema import Bytes, Strict
from gemmsim.units import dtype_bytes

#: One memory access of a CPU trace. ``core`` is the issuing core (0 for single-threaded kernels).
ACCESS = np.dtype([("addr", np.uint64), ("size", np.uint32), ("is_write", np.uint8), ("core", np.uint8)], align=True)

#: Default number of accesses per chunk (2^18 records of 16 bytes = 4 MiB).
CHUNK = 1 << 18


def empty_chunk(n: int = CHUNK) -> np.ndarray:
    """An uninitialised chunk buffer of n accesses."""
    return np.empty(n, dtype=ACCESS)


def make_chunk(addr, size, is_write, core=0) -> np.ndarray:
    """Build a chunk from array-likes (broadcast against each other)."""
    addr = np.asarray(addr, dtype=np.uint64)
    out = np.empty(addr.shape[0], dtype=ACCESS)
    out["addr"] = addr
    out["size"] = size
    out["is_write"] = is_write
    out["core"] = core
    return out


def concat(chunks: Iterable[np.ndarray]) -> np.ndarray:
    """Concatenate a (small!) trace into one array; for tests and tiny examples only."""
    parts = list(chunks)
    return np.concatenate(parts) if parts else np.empty(0, dtype=ACCESS)


def rechunk(chunks: Iterable[np.ndarray], size: int = CHUNK) -> Iterator[np.ndarray]:
    """Yield the same accesses in chunks of at most ``size`` (splitting large ones, never copying small ones twice)."""
    for c in chunks:
        for s in range(0, len(c), size):
            yield c[s : s + size]


class LayoutSpec(Strict):
    """How the experiment places A, B and C in memory (defaults: row-major, contiguous from address 0)."""

    order: Literal["row", "col"] = Field("row", description="Row-major (C order) or column-major (Fortran order) for all three.")
    pad: int = Field(0, ge=0, description="Elements added to every leading dimension (lda = K + pad for row-major A).")
    align: Bytes = Field(0, description="Align each matrix's base address to this many bytes (0: contiguous, A then B then C).")
    base: int = Field(0, ge=0, description="Address of A's first byte.")
    trans_a: bool = Field(False, description="op(A) = A^T: A is stored K x M (in `order`), so the kernel reads it with swapped strides.")
    trans_b: bool = Field(False, description="op(B) = B^T: B is stored N x K (in `order`), so the kernel reads it with swapped strides.")
    alpha: float = Field(1.0, description="C = alpha op(A) op(B) + beta C: a multiply in registers, no data moved (recorded).")
    beta: float | None = Field(
        None, description="None: what the kernel does (CPU kernels accumulate, beta = 1; GPU kernels overwrite, beta = 0); "
        "0 drops the read of C, any other value reads C once (gemmsim.kernels.contract).",
    )
    epilogue: Literal["none", "bias_relu", "bias_relu_separate"] = Field(
        "none", description="bias + ReLU after the product: fused into the kernel's end (only the bias is read) or as a "
        "separate pass (C read and written again).",
    )


@dataclass(frozen=True)
class Layout:
    """Byte addresses of op(A) (M x K), op(B) (K x N), C (M x N): ``X[r][c]`` lives at ``x_base + r*x_rs + c*x_cs``.

    A transposed operand (``LayoutSpec.trans_a``/``trans_b``, BLAS's op(X) = X^T) is only a different stride
    pattern: its rows and columns swap strides, so every kernel reads it correctly without knowing.
    """

    M: int
    N: int
    K: int
    elem: int
    a_base: int
    b_base: int
    c_base: int
    a_rs: int
    a_cs: int
    b_rs: int
    b_cs: int
    c_rs: int
    c_cs: int
    end: int
    dtype: str = "fp32"

    @classmethod
    def build(cls, M: int, N: int, K: int, dtype: str = "fp32", spec: LayoutSpec | None = None) -> "Layout":
        """Place A, B, C one after the other (A at ``spec.base``), with the spec's order, padding and alignment."""
        spec = spec or LayoutSpec()
        try:
            s = dtype_bytes(dtype)
        except ValueError as exc:
            raise KernelError(str(exc)) from None
        for name, v in (("M", M), ("N", N), ("K", K)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise KernelError(f"{name} must be a non-negative integer, got {v!r}")

        def strides(rows: int, cols: int) -> tuple[int, int, int]:
            if spec.order == "row":
                ld = cols + spec.pad
                return ld * s, s, rows * ld * s
            ld = rows + spec.pad
            return s, ld * s, cols * ld * s

        def align(x: int) -> int:
            return -(-x // spec.align) * spec.align if spec.align else x

        def op_strides(rows: int, cols: int, trans: bool) -> tuple[int, int, int]:
            # a transposed operand is stored cols x rows; element [r][c] of op(X) is stored element [c][r]
            if not trans:
                return strides(rows, cols)
            rs, cs, nbytes = strides(cols, rows)
            return cs, rs, nbytes

        a_rs, a_cs, a_bytes = op_strides(M, K, spec.trans_a)
        b_rs, b_cs, b_bytes = op_strides(K, N, spec.trans_b)
        c_rs, c_cs, c_bytes = strides(M, N)
        a_base = align(spec.base)
        b_base = align(a_base + a_bytes)
        c_base = align(b_base + b_bytes)
        if c_base + c_bytes >= 1 << 64:
            raise KernelError(
                f"A, B and C of M={M} N={N} K={K} {dtype} end at byte {c_base + c_bytes:.3g}, beyond 64-bit addresses"
            )
        return cls(M, N, K, s, a_base, b_base, c_base, a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, c_base + c_bytes, dtype)

    def a(self, i: int, k: int) -> int:
        """Address of A[i][k]."""
        return self.a_base + i * self.a_rs + k * self.a_cs

    def b(self, k: int, j: int) -> int:
        """Address of B[k][j]."""
        return self.b_base + k * self.b_rs + j * self.b_cs

    def c(self, i: int, j: int) -> int:
        """Address of C[i][j]."""
        return self.c_base + i * self.c_rs + j * self.c_cs

    def matrix_of(self, addr: int) -> str:
        """'A', 'B', 'C' or '-' for an address (for explanations and heatmaps)."""
        if self.a_base <= addr < self.b_base:
            return "A"
        if self.b_base <= addr < self.c_base:
            return "B"
        if self.c_base <= addr < self.end:
            return "C"
        return "-"
