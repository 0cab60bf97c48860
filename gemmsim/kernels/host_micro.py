"""The host's real SIMD microkernel: ``packed_micro`` (and ``gemm``) computed on this computer as BLIS computes it.

``gemmsim.kernels.cpu_packed`` traces the packed five loops with a SIMD register-blocked MR x NR microkernel, but
its host implementation is a plain numba loop nest that LLVM does not keep in registers; timed against the model
it taught the wrong lesson (the "SIMD microkernel" slower than blocked loops). This module is what the host runs
instead (``gemmsim.run.host`` uses ``host_gemm`` for ``packed_micro`` and ``gemm``):

- packing: for every KC x NC panel of B, the panel is copied into NR-wide micro-panels (element ``(q, p, c)`` at
  ``(q * kc + p) * NR + c``, zero-padded to whole micro-panels); for every MC x KC block of A, into MR-tall
  micro-panels (``(q, p, r)`` at ``(q * kc + p) * MR + r``). Packing converts to the accumulator type (int8 -> int32).
- microkernel (``micro_tile``): MR x ceil(NR / lanes) vector accumulators, one LLVM value each, live across the
  whole kc loop; per k step it loads NR/lanes vectors of B, broadcasts each of the MR elements of A and issues one
  vector FMA (``llvm.fma``; integer multiply-add for int32) per accumulator; at the end it stores the tile once.
  It is a numba ``@intrinsic`` that emits this LLVM IR directly: numba's auto-vectoriser, given the same
  loops over a small local array, vectorised the k loop with gathers and scatters instead (measured here: 2
  GFLOP/s). The accumulators are stack slots of vector type that LLVM's SROA promotes to registers, so the
  loop body is loads, broadcasts and FMAs only (``vfmadd231ps zmm`` with AVX-512, ``ymm`` with AVX2; ``fmla`` on
  Arm; check with ``asm_fma_count``).
- the tile is added to C through a bounds mask at the edges (h x w of the MR x NR tile exist), the rest of the
  padded tile being zeros times zeros.

MR, NR, KC, MC, NC are those the model uses for the same machine (``gemmsim.kernels.cpu_packed.resolve`` with the
host machine file): the host runs the shape and blocking the model times. The vector width is the host's
(``host_vector_bits``: 512 with AVX-512, 256 with AVX2, 128 otherwise), so a vector is ``bits / 8 / itemsize`` lanes.
"""

from __future__ import annotations

import functools
import re

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.errors import RequireLiteralValue
from numba.extending import intrinsic

from gemmsim.errors import KernelError
from gemmsim.kernels.cpu_packed import pack_a, pack_b
from gemmsim.machine.measure import host_vector_bits


@intrinsic
def micro_tile(typingctx, Ap, Bp, kc, ab0, bb0, out, MR, NR, VB):
    """out[0 : MR*NR] (row-major MR x NR) = sum over p < kc of Ap[ab0 + p*MR + r] * Bp[bb0 + p*NR + c].

    MR, NR and VB (vector bits) must be compile-time literals: the accumulators are MR x ceil(NR / lanes) LLVM
    vectors that stay in registers for the whole kc loop.
    """
    for lit in (MR, NR, VB):
        if not isinstance(lit, types.IntegerLiteral):
            raise RequireLiteralValue(lit)
    mr, nr, vb = MR.literal_value, NR.literal_value, VB.literal_value
    dt = Ap.dtype
    is_float = isinstance(dt, types.Float)

    def codegen(context, builder, sig, args):
        ap, bp, kcv, ab0v, bb0v, outv = args[:6]
        et = context.get_value_type(dt)
        lanes = max(1, vb // dt.bitwidth)
        chunks = [(c, min(lanes, nr - c)) for c in range(0, nr, lanes)]
        vts = {w: ir.VectorType(et, w) for _, w in chunks}
        align = dt.bitwidth // 8
        i64, i32 = ir.IntType(64), ir.IntType(32)
        A = context.make_array(sig.args[0])(context, builder, ap).data
        B = context.make_array(sig.args[1])(context, builder, bp).data
        O = context.make_array(sig.args[5])(context, builder, outv).data
        acc = {}
        for r in range(mr):
            for c0, w in chunks:
                slot = cgutils.alloca_once(builder, vts[w])
                builder.store(ir.Constant(vts[w], None), slot)
                acc[r, c0] = slot
        fma = {
            w: cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt] * 3), f"llvm.fma.v{w}f{dt.bitwidth}")
            for w, vt in vts.items()
        } if is_float else {}
        with cgutils.for_range(builder, kcv) as loop:
            p = loop.index
            bbase = builder.add(bb0v, builder.mul(p, ir.Constant(i64, nr)))
            abase = builder.add(ab0v, builder.mul(p, ir.Constant(i64, mr)))
            bvec = {}
            for c0, w in chunks:
                ptr = builder.gep(B, [builder.add(bbase, ir.Constant(i64, c0))])
                bvec[c0] = builder.load(builder.bitcast(ptr, vts[w].as_pointer()), align=align)
            for r in range(mr):
                a = builder.load(builder.gep(A, [builder.add(abase, ir.Constant(i64, r))]))
                for c0, w in chunks:
                    av = builder.insert_element(ir.Constant(vts[w], None), a, ir.Constant(i32, 0))
                    av = builder.shuffle_vector(av, ir.Constant(vts[w], None), ir.Constant(ir.VectorType(i32, w), None))
                    old = builder.load(acc[r, c0])
                    new = builder.call(fma[w], [av, bvec[c0], old]) if is_float else builder.add(old, builder.mul(av, bvec[c0]))
                    builder.store(new, acc[r, c0])
        for r in range(mr):
            for c0, w in chunks:
                ptr = builder.gep(O, [ir.Constant(i64, r * nr + c0)])
                builder.store(builder.load(acc[r, c0]), builder.bitcast(ptr, vts[w].as_pointer()), align=align)
        if vb > 256:
            # x86 cores that prefer 256-bit vectors treat 512-bit types as illegal unless the function asks for them
            # (LLVM's "min-legal-vector-width"); llvmlite's attribute set does not list it, so add it to the set directly.
            set.add(builder.function.attributes, f'"min-legal-vector-width"="{vb}"')
        return context.get_dummy_value()

    return types.none(Ap, Bp, types.intp, types.intp, types.intp, out, MR, NR, VB), codegen


@njit(cache=True)
def _gemm_rows(A, B, C, m0, m1, MR, NR, KC, MC, NC, VB):
    """C[m0:m1] += A[m0:m1] @ B by the five packed loops, the microkernel holding the C tile in registers."""
    K = A.shape[1]
    N = B.shape[1]
    acc_t = C.dtype
    kcm = min(KC, K)
    ncm = min(NC, N)
    mcm = min(MC, max(1, m1 - m0))
    Bp = np.zeros(kcm * ((ncm + NR - 1) // NR) * NR, dtype=acc_t)
    Ap = np.zeros(kcm * ((mcm + MR - 1) // MR) * MR, dtype=acc_t)
    out = np.empty(MR * NR, dtype=acc_t)
    for jc in range(0, N, NC):
        nc = min(NC, N - jc)
        npb = (nc + NR - 1) // NR
        for pc in range(0, K, KC):
            kc = min(KC, K - pc)
            pack_b(B, pc, kc, jc, nc, NR, Bp)
            for ic in range(m0, m1, MC):
                mc = min(MC, m1 - ic)
                npa = (mc + MR - 1) // MR
                pack_a(A, ic, mc, pc, kc, MR, Ap)
                for jr in range(npb):
                    w = min(NR, nc - jr * NR)
                    cj = jc + jr * NR
                    for ir in range(npa):
                        h = min(MR, mc - ir * MR)
                        micro_tile(Ap, Bp, kc, ir * kc * MR, jr * kc * NR, out, numba.literally(MR), numba.literally(NR), numba.literally(VB))
                        ci = ic + ir * MR
                        for r in range(h):
                            for c in range(w):
                                C[ci + r, cj + c] += out[r * NR + c]


@njit(cache=True, parallel=True)
def _gemm_threads(A, B, C, MR, NR, KC, MC, NC, VB, T):
    """Threads over contiguous runs of MR-row micro-panels (BLIS loop 3), each with its own packed buffers."""
    M = A.shape[0]
    P = (M + MR - 1) // MR
    for t in prange(T):
        m0 = min(M, t * P // T * MR)
        m1 = min(M, (t + 1) * P // T * MR)
        if m0 < m1:
            _gemm_rows(A, B, C, m0, m1, numba.literally(MR), numba.literally(NR), KC, MC, NC, numba.literally(VB))


_ACC = {np.dtype(np.float64): np.float64, np.dtype(np.float32): np.float32, np.dtype(np.int32): np.int32}


def host_gemm(A: np.ndarray, B: np.ndarray, C: np.ndarray, MR: int, NR: int, KC: int, MC: int, NC: int, threads: int = 1) -> None:
    """C += A @ B by the packed five loops and the SIMD microkernel (see the module docstring).

    A (M x K), B (K x N) float64, float32 or int8; C (M x N) of the same float type, or int32 for int8.
    """
    if A.ndim != 2 or B.ndim != 2 or C.ndim != 2 or A.shape[1] != B.shape[0] or C.shape != (A.shape[0], B.shape[1]):
        raise KernelError(f"host GEMM needs A (M x K), B (K x N), C (M x N); got {A.shape}, {B.shape}, {C.shape}")
    kinds = (A.dtype, B.dtype, C.dtype)
    if kinds not in ((np.dtype(np.float64),) * 3, (np.dtype(np.float32),) * 3, (np.dtype(np.int8), np.dtype(np.int8), np.dtype(np.int32))):
        raise KernelError(f"host microkernel dtypes must be all float64, all float32, or int8 x int8 -> int32; got {kinds}")
    for name, v in (("MR", MR), ("NR", NR), ("KC", KC), ("MC", MC), ("NC", NC), ("threads", threads)):
        if int(v) < 1:
            raise KernelError(f"host microkernel: {name} must be >= 1, got {v}")
    vb = host_vector_bits()
    MR, NR, KC, MC, NC = (int(x) for x in (MR, NR, KC, MC, NC))
    serial, parallel = _drivers(MR, NR, vb)
    if threads > 1:
        numba.set_num_threads(min(int(threads), numba.config.NUMBA_NUM_THREADS))
        parallel(A, B, C, KC, MC, NC, int(threads))
    else:
        serial(A, B, C, 0, A.shape[0], KC, MC, NC)


@functools.lru_cache(maxsize=None)
def _drivers(MR: int, NR: int, VB: int):
    """Entry points with MR, NR, VB fixed (closure constants reach the jitted code as literals, which the
    microkernel needs; calling a ``literally`` function from Python would go through the compiler on every call)."""

    @njit(cache=True)
    def serial(A, B, C, m0, m1, KC, MC, NC):
        _gemm_rows(A, B, C, m0, m1, MR, NR, KC, MC, NC, VB)

    @njit(cache=True)
    def parallel(A, B, C, KC, MC, NC, T):
        _gemm_threads(A, B, C, MR, NR, KC, MC, NC, VB, T)

    return serial, parallel


def asm_fma_count(MR: int, NR: int, dtype=np.float32) -> dict[str, int]:
    """Vector FMA instructions in the compiled microkernel of an MR x NR tile, by register kind.

    x86: ``vfmadd...ps/pd`` on ``zmm``/``ymm``/``xmm`` registers (``xmm`` counts packed forms only, not the scalar
    ``ss``/``sd``); Arm: ``fmla`` on vector registers (``v..``), counted under ``neon``. Compiles the kernel once.
    """
    dt = np.dtype(dtype)
    Ap = np.zeros(MR * 2, dt)
    Bp = np.zeros(NR * 2, dt)
    out = np.zeros(MR * NR, dt)
    vb = host_vector_bits()

    @njit
    def one(Ap, Bp, kc, out):
        micro_tile(Ap, Bp, kc, 0, 0, out, MR, NR, vb)

    one(Ap, Bp, 2, out)
    asm = one.inspect_asm(one.signatures[0])
    counts = {}
    for reg in ("zmm", "ymm", "xmm"):
        counts[reg] = len(re.findall(rf"\bvfmadd\w*p[sd]\b[^\n]*%{reg}", asm)) + len(re.findall(rf"\bvfmadd\w*p[sd]\s+{reg}", asm))
    counts["neon"] = len(re.findall(r"\bfmla\s+v\d+", asm))
    return counts
