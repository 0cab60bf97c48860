"""CPU GEMM kernels as the libraries write them: packed Goto/BLIS loops, a SIMD register-blocked microkernel,
edge strategies and threads (seed 000, sections 4.1, 4.2, 5, 6, 7).

The five loops (Goto and van de Geijn 2008; BLIS), outer to inner, for ``C += A @ B`` with vectors along N::

    for jc in 0..N step NC:                       # loop 5: a KC x NC panel of B ...
      for pc in 0..K step KC:                     # loop 4
        pack B[pc:pc+kc, jc:jc+nc] -> Bc          #   ... packed into NR-wide micro-panels (fits L3)
        for ic in 0..M step MC:                   # loop 3
          pack A[ic:ic+mc, pc:pc+kc] -> Ac        #   MR-tall micro-panels (fits L2)
          for jr in 0..nc step NR:                # loop 2: one B micro-panel (stays in L1)
            for ir in 0..mc step MR:              # loop 1: one A micro-panel streams past it
              microkernel: load the MR x NR tile of C once; for each of the kc steps load MR elements
              of A (broadcasts) and NR of B (vectors), MR*NR FMAs in registers; store the tile once

What each kernel's trace holds (every access is a record of ``gemmsim.trace.ACCESS``):

- packing is traced as the copies it is: a load from the matrix and a store to the packed buffer for every
  element (or vector, where both sides are contiguous); the packed buffers live at their own page-aligned
  addresses after C (one B buffer shared by all threads, one A buffer and one spill area per thread);
- the microkernel loads the C tile once and stores it once per KC panel (C += ..., so it is read);
- ``packed``: a scalar microkernel (one access per element; shape from the scalar register rule: 4x3 on
  Haswell); ``packed_micro``: the SIMD microkernel, one access per vector of the machine's width (A broadcast
  element by element on x86, A vectors on NEON), MR x NR from the registers unless given; ``gemm``: packed_micro
  with every parameter from the machine (gemmsim.analytic.blis), the CPU default for cross-machine experiments;
- a shape that needs more registers than exist spills: each spilled register is loaded from and stored to the
  thread's stack area on every k step (``gemmsim.analytic.blis.register_budget``);
- edges (``gemmsim.analytic.edges``): ``pad`` (BLIS) packs zeros up to whole MR x NR micro-panels and runs every tile
  full width (ghost loads and FLOPs), C accessed only where it exists (partial vectors); ``masked`` and
  ``special`` touch only real elements (partial vectors; they differ in compute time, not in traffic);
  ``scalar`` runs partial tiles with element accesses;
- threads (``threads`` > 1) split C three ways. ``split="m"`` (BLIS's loop 3): contiguous runs of MR-row
  micro-panels, one B panel shared and packed cooperatively (micro-panel t, t+T, ... by thread t), an A block
  per thread. ``split="n"``: contiguous runs of NR-column micro-panels, each thread its own A and B buffers.
  ``split="jr"`` (BLIS's loop 2): every thread walks every block, A block and B panel both shared and packed
  cooperatively, thread t computing the B micro-panels t, t+T, ... round-robin, so neighbouring threads write
  neighbouring tiles of C at the same time. Each thread's accesses carry its core number, and the streams are
  interleaved round-robin, INTERLEAVE accesses at a time (cores running in lockstep). A tile border that is not
  line aligned puts one line of C in two cores' hands: false sharing, which the hierarchy counts as
  invalidations when both cores hold the line at once (with ``jr``, always; with contiguous ranges only where
  the two writers reach the line close together).

Column-major C is handled as BLIS does, by computing the transposed problem ``C^T += B^T A^T``.
Traces are streamed by one numba fill function resuming a saved loop state, so memory stays bounded.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
from numba import njit, prange
from pydantic import Field

from gemmsim.analytic.blis import (
    Blocking,
    MicroShape,
    analytic_blocking,
    isa_traits,
    microkernel_shape,
    panel_footprints,
    register_budget,
)
from gemmsim.analytic.edges import STRATEGIES, edge_cost, edge_report, partial_fraction
from gemmsim.errors import KernelError
from gemmsim.kernels.base import CPUKernel
from gemmsim.kernels.cpu import FillTrace
from gemmsim.schema import Strict
from gemmsim.trace import ACCESS, CHUNK, Layout

#: Accesses one thread issues before the next thread's turn, when several threads are interleaved.
INTERLEAVE = 64

#: Alignment of each packed buffer (a page, as BLIS's memory pools align them).
BUFFER_ALIGN = 4096

EdgeStrategy = Literal["scalar", "masked", "pad", "special"]
_EDGE_ID = {s: i for i, s in enumerate(STRATEGIES)}  # scalar 0, masked 1, pad 2, special 3
_PAD = _EDGE_ID["pad"]
_SCALAR = _EDGE_ID["scalar"]


class GemmParams(Strict):
    """Parameters of the ``gemm`` kernel (shape and blocking always come from the machine)."""

    edge: EdgeStrategy = Field("pad", description="Edge strategy: scalar tail, masked vectors, zero-padded packing (BLIS), specialised kernels.")
    threads: int = Field(1, ge=1, le=256, description="Threads (cores) splitting C; each thread's accesses carry its core number.")
    split: Literal["m", "n", "jr"] = Field(
        "m",
        description="How threads split C: 'm' contiguous row ranges sharing one packed B panel (BLIS loop 3), 'n' "
        "contiguous column ranges with private buffers, 'jr' B micro-panels round-robin with shared A and B (BLIS loop 2).",
    )


class PackedParams(GemmParams):
    """Parameters of the packed kernels; None means the analytic value for the machine (gemmsim.analytic.blis)."""

    MR: int | None = Field(None, ge=1, le=64, description="Rows of the register tile of C (None: the register rule).")
    NR: int | None = Field(None, ge=1, le=256, description="Columns of the register tile of C (None: the register rule).")
    KC: int | None = Field(None, ge=1, description="Depth of the packed panels, elements (None: Low et al. 2016 from L1).")
    MC: int | None = Field(None, ge=1, description="Rows of the packed A block, elements (None: Low et al. from L2).")
    NC: int | None = Field(None, ge=1, description="Columns of the packed B panel, elements (None: Low et al. from L3).")


@dataclass(frozen=True)
class Resolved:
    """Every parameter of one packed-kernel run, with the machine's analytic values filled in."""

    M: int
    N: int
    K: int
    elem: int
    MR: int
    NR: int
    KC: int
    MC: int
    NC: int
    lanes: int  # elements per access of the microkernel (1 for the scalar kernel)
    edge: str
    threads: int
    split: str
    shape: MicroShape
    blocking: Blocking | None
    a_by_lane: bool
    fma_latency: int
    fma_units: int


def resolve(layout: Layout, params: GemmParams, machine, simd: bool) -> Resolved:
    """Fill the parameters a kernel left open (None) from the machine: shape by the register rule, KC/MC/NC by the
    analytical model; MC, NC become M, N when the machine has no L2, L3 for them. M and N are those of the problem
    the kernel runs (swapped for column-major C, see ``_problem``)."""
    M, N, K = _problem(layout)[:3]
    mr, nr = getattr(params, "MR", None), getattr(params, "NR", None)
    kc, mc, nc = (getattr(params, k, None) for k in ("KC", "MC", "NC"))
    common = dict(M=M, N=N, K=K, elem=layout.elem, edge=params.edge, threads=params.threads, split=params.split)
    if machine is None:
        if None in (mr, nr, kc, mc, nc):
            raise KernelError("packed kernels need a machine to choose MR, NR, KC, MC, NC (or give all five)")
        traits = _GenericTraits(8 if simd else 1)
        shape = register_budget(mr, nr, traits, layout.elem)
        return Resolved(MR=mr, NR=nr, KC=kc, MC=mc, NC=nc, lanes=traits.lanes, shape=shape, blocking=None,
                        a_by_lane=False, fma_latency=traits.fma_latency, fma_units=traits.fma_units, **common)
    if params.threads > machine.cores:
        raise KernelError(f"{params.threads} threads on {machine.name}, which has {machine.cores} cores")
    dtype = layout.dtype
    traits = isa_traits(machine, dtype, simd)
    if mr is None or nr is None:
        best = microkernel_shape(machine, dtype, simd)
        mr = best.MR if mr is None else mr
        nr = best.NR if nr is None else nr
    shape = register_budget(mr, nr, traits, layout.elem)
    blk = None
    if None in (kc, mc, nc):
        blk = analytic_blocking(machine, dtype, mr, nr, params.threads)
    kc = blk.KC if kc is None else kc
    mc = (blk.MC or M) if mc is None else mc
    nc = (blk.NC or N) if nc is None else nc
    return Resolved(MR=mr, NR=nr, KC=kc, MC=mc, NC=nc, lanes=traits.lanes, shape=shape, blocking=blk,
                    a_by_lane=traits.a_by_lane, fma_latency=traits.fma_latency, fma_units=traits.fma_units, **common)


@dataclass(frozen=True)
class _GenericTraits:
    """Register facts when no machine is given (every parameter explicit): AVX2-like."""

    lanes: int
    registers: int = 16
    fma_units: int = 2
    fma_latency: int = 5
    loads_per_cycle: int = 2
    a_by_lane: bool = False


# ---------------------------------------------------------------------------------------------------------
# The fill function. cfg (int64):
_A_BASE, _A_RS, _A_CS, _B_BASE, _B_RS, _B_CS, _C_BASE, _C_RS, _C_CS, _S = range(10)
_M, _N, _K, _MR, _NR, _KC, _MC, _NC, _VL, _EDGE, _BYLANE, _SPILL, _MAXU, _GRAIN = range(10, 24)
# per-thread table tcfg[t] (int64):
_M0, _M1, _N0, _N1, _POFF, _PSTR, _AP, _BP, _STACK, _CORE, _AOFF, _ASTR, _JOFF, _JSTR = range(14)
# per-thread state st[t] (int64): jc, pc, ic, phase (0 pack B, 1 pack A, 2 microkernel, 3 done), a, b, p
_JC, _PC, _IC, _PH, _IA, _IB, _IP = range(7)
_NCFG, _NT, _NST = 24, 14, 7


@njit(cache=True, inline="always")
def _row(addr, size, isw, core, n, base, count, stride, s, vl, w, c):
    """Emit ``count`` elements from ``base`` (``stride`` bytes apart): vectors of up to ``vl`` elements where they
    are contiguous, else one access per element. Returns the new fill position."""
    if stride == s and vl > 1:
        v = 0
        while v < count:
            e = min(vl, count - v)
            addr[n] = base + v * s
            size[n] = e * s
            isw[n] = w
            core[n] = c
            n += 1
            v += e
    else:
        for e in range(count):
            addr[n] = base + e * stride
            size[n] = s
            isw[n] = w
            core[n] = c
            n += 1
    return n


@njit(cache=True)
def _fill_one(addr, size, isw, core, n, quota, cap, cfg, tc, st):
    """Emit one thread's accesses from its saved state until ``quota`` is reached (whole units: a packing row, a
    C tile, one k step) or the buffer cannot hold another unit. Returns the new fill position."""
    a_base, a_rs, a_cs = cfg[_A_BASE], cfg[_A_RS], cfg[_A_CS]
    b_base, b_rs, b_cs = cfg[_B_BASE], cfg[_B_RS], cfg[_B_CS]
    c_base, c_rs, c_cs = cfg[_C_BASE], cfg[_C_RS], cfg[_C_CS]
    s, K = cfg[_S], cfg[_K]
    MR, NR, KC, MC, NC = cfg[_MR], cfg[_NR], cfg[_KC], cfg[_MC], cfg[_NC]
    vl, edge, bylane, spill, maxu = cfg[_VL], cfg[_EDGE], cfg[_BYLANE], cfg[_SPILL], cfg[_MAXU]
    pad = edge == 2
    m0, m1, n1 = tc[_M0], tc[_M1], tc[_N1]
    poff, pstr, ap, bp, stack, cr = tc[_POFF], tc[_PSTR], tc[_AP], tc[_BP], tc[_STACK], tc[_CORE]
    aoff, astr, joff, jstr = tc[_AOFF], tc[_ASTR], tc[_JOFF], tc[_JSTR]
    jc, pc, ic, ph, a, b, p = st[_JC], st[_PC], st[_IC], st[_PH], st[_IA], st[_IB], st[_IP]
    full_stop = False
    while ph != 3:
        if jc >= n1:
            ph = 3
            break
        nc = min(NC, n1 - jc)
        npb = (nc + NR - 1) // NR
        kc = min(KC, K - pc)
        if ph == 0:
            # Pack this thread's share of the B panel (micro-panels poff, poff + pstr, ...): micro-panel a, row p
            # (NR wide, zero-padded with pad).
            while a < npb:
                w = min(NR, nc - a * NR)
                while p < kc:
                    if n >= quota or n + maxu > cap:
                        full_stop = True
                        break
                    src = b_base + (pc + p) * b_rs + (jc + a * NR) * b_cs
                    n = _row(addr, size, isw, core, n, src, w, b_cs, s, vl, 0, cr)
                    dst = bp + ((a * kc + p) * NR) * s
                    n = _row(addr, size, isw, core, n, dst, NR if pad else w, s, s, vl, 1, cr)
                    p += 1
                if full_stop:
                    break
                p = 0
                a += pstr
            if full_stop:
                break
            a = aoff
            p = 0
            ph = 1
            ic = m0
        if ic >= m1:
            # This (jc, pc) panel is done: next KC panel, or next NC panel.
            ph = 0
            a = poff
            p = 0
            pc += KC
            if pc >= K:
                pc = 0
                jc += NC
            continue
        mc = min(MC, m1 - ic)
        npa = (mc + MR - 1) // MR
        if ph == 1:
            # Pack this thread's share of the A block (micro-panels aoff, aoff + astr, ...): micro-panel a, packed
            # row p = column pc+p of A (MR tall, zero-padded with pad).
            while a < npa:
                h = min(MR, mc - a * MR)
                while p < kc:
                    if n >= quota or n + maxu > cap:
                        full_stop = True
                        break
                    src = a_base + (ic + a * MR) * a_rs + (pc + p) * a_cs
                    n = _row(addr, size, isw, core, n, src, h, a_rs, s, vl, 0, cr)
                    dst = ap + ((a * kc + p) * MR) * s
                    n = _row(addr, size, isw, core, n, dst, MR if pad else h, s, s, vl, 1, cr)
                    p += 1
                if full_stop:
                    break
                p = 0
                a += astr
            if full_stop:
                break
            a = joff
            b = 0
            p = 0
            ph = 2
        # Microkernel calls: B micro-panels a = joff, joff + jstr, ... (loop 2), A micro-panel b (loop 1);
        # step p: 0 load C tile, 1..kc the k steps, kc+1 store C tile.
        while a < npb:
            w = min(NR, nc - a * NR)
            j0 = jc + a * NR
            while b < npa:
                h = min(MR, mc - b * MR)
                i0 = ic + b * MR
                scal = vl == 1 or (edge == 0 and (h < MR or w < NR))
                evl = 1 if scal else vl
                rows = MR if pad else h
                cols = NR if pad else w
                avl = vl if (bylane == 1 and not scal) else 1  # A as vectors (NEON) or element broadcasts
                nsp = spill if (vl == 1 or not scal) else 0  # a scalar edge tail keeps no vector accumulators
                per_step = (rows + avl - 1) // avl + (cols + evl - 1) // evl + 2 * nsp
                while p < kc + 2:
                    if n >= quota or n + maxu > cap:
                        full_stop = True
                        break
                    if p == 0 or p == kc + 1:
                        wr = 1 if p else 0
                        for r in range(h):
                            n = _row(addr, size, isw, core, n, c_base + (i0 + r) * c_rs + j0 * c_cs, w, c_cs, s, evl, wr, cr)
                        p += 1
                        continue
                    # As many k steps as the quota and the buffer allow, in one tight loop.
                    steps = min(kc + 1 - p, (quota - n + per_step - 1) // per_step, (cap - maxu - n) // per_step + 1)
                    for kk in range(p - 1, p - 1 + steps):
                        abase = ap + ((b * kc + kk) * MR) * s
                        v = 0
                        while v < rows:
                            e = min(avl, rows - v)
                            addr[n] = abase + v * s
                            size[n] = e * s
                            isw[n] = 0
                            core[n] = cr
                            n += 1
                            v += e
                        bbase = bp + ((a * kc + kk) * NR) * s
                        v = 0
                        while v < cols:
                            e = min(evl, cols - v)
                            addr[n] = bbase + v * s
                            size[n] = e * s
                            isw[n] = 0
                            core[n] = cr
                            n += 1
                            v += e
                        for x in range(nsp):
                            # A spilled accumulator: reloaded from the stack, updated, stored back.
                            addr[n] = stack + x * vl * s
                            size[n] = vl * s
                            isw[n] = 0
                            core[n] = cr
                            addr[n + 1] = stack + x * vl * s
                            size[n + 1] = vl * s
                            isw[n + 1] = 1
                            core[n + 1] = cr
                            n += 2
                    p += steps
                if full_stop:
                    break
                p = 0
                b += 1
            if full_stop:
                break
            b = 0
            a += jstr
        if full_stop:
            break
        a = aoff
        ph = 1
        ic += MC
    st[_JC], st[_PC], st[_IC], st[_PH], st[_IA], st[_IB], st[_IP] = jc, pc, ic, ph, a, b, p
    return n


@njit(cache=True)
def _fill(addr, size, isw, core, cfg, tcfg, st, rr):
    """Fill the buffer with the threads' streams interleaved round-robin, ``cfg[_GRAIN]`` accesses per turn;
    ``rr[0]`` is the thread whose turn is next. Returns the number of accesses written."""
    cap = addr.shape[0]
    T = tcfg.shape[0]
    grain = cfg[_GRAIN]
    maxu = cfg[_MAXU]
    n = 0
    while n + maxu <= cap:
        t = -1
        for d in range(T):
            u = (rr[0] + d) % T
            if st[u, _PH] != 3:
                t = u
                break
        if t < 0:
            break
        n = _fill_one(addr, size, isw, core, n, n + grain, cap, cfg, tcfg[t], st[t])
        rr[0] = (t + 1) % T
    return n


def _align(x: int, a: int = BUFFER_ALIGN) -> int:
    return -(-x // a) * a


def _thread_ranges(r: Resolved) -> list[tuple[int, int, int, int]]:
    """(m0, m1, n0, n1) of each thread: the MR-row micro-panels (split m) or NR-column ones (split n) dealt out
    as evenly as possible in contiguous runs (thread t gets panels [t P / T, (t+1) P / T)); with split jr every
    thread spans all of C (the round-robin is over micro-panels inside each block)."""
    T = r.threads
    if r.split == "jr":
        return [(0, r.M, 0, r.N)] * T
    if r.split == "m":
        P = -(-r.M // r.MR)
        return [(min(r.M, t * P // T * r.MR), min(r.M, (t + 1) * P // T * r.MR), 0, r.N) for t in range(T)]
    P = -(-r.N // r.NR)
    return [(0, r.M, min(r.N, t * P // T * r.NR), min(r.N, (t + 1) * P // T * r.NR)) for t in range(T)]


def _problem(layout: Layout) -> tuple[int, ...]:
    """(M, N, K, a_base, a_rs, a_cs, b_base, b_rs, b_cs, c_base, c_rs, c_cs) of the problem the kernel runs:
    the layout's, or its transpose C^T += B^T A^T when C is column-major."""
    L = layout
    if L.c_cs != L.elem and L.c_rs == L.elem:
        return (L.N, L.M, L.K, L.b_base, L.b_cs, L.b_rs, L.a_base, L.a_cs, L.a_rs, L.c_base, L.c_cs, L.c_rs)
    return (L.M, L.N, L.K, L.a_base, L.a_rs, L.a_cs, L.b_base, L.b_rs, L.b_cs, L.c_base, L.c_rs, L.c_cs)


def buffers(layout: Layout, r: Resolved) -> dict:
    """Addresses of the packed buffers: ``{"B": [base per B buffer], "A": [per thread], "stack": [per thread]}``.

    After C, each page aligned: the shared B buffer (split m, jr) or one per thread (split n), the shared A buffer
    (split jr), then per thread its A buffer (split m, n) and its spill area.
    """
    M, N = r.M, r.N
    s = layout.elem
    b_bytes = min(r.KC, layout.K) * -(-min(r.NC, N) // r.NR) * r.NR * s
    a_bytes = min(r.KC, layout.K) * -(-min(r.MC, M) // r.MR) * r.MR * s
    stack_bytes = max(1, r.shape.spilled) * r.lanes * s
    at = _align(layout.end)
    out: dict = {"B": [], "A": [], "stack": []}
    if r.split in ("m", "jr"):
        out["B"].append(at)
        at = _align(at + b_bytes)
    if r.split == "jr":
        out["A"].append(at)
        at = _align(at + a_bytes)
    for _ in range(r.threads):
        if r.split == "n":
            out["B"].append(at)
            at = _align(at + b_bytes)
        if r.split != "jr":
            out["A"].append(at)
            at = _align(at + a_bytes)
        out["stack"].append(at)
        at = _align(at + stack_bytes)
    out["end"] = at
    return out


def _tables(layout: Layout, r: Resolved) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    M, N, K, ab, ars, acs, bb, brs, bcs, cb, crs, ccs = _problem(layout)
    spill = r.shape.spilled
    maxu = max(2 * r.NR, 2 * r.MR, r.MR * r.NR, r.MR + r.NR + 2 * spill) + 8
    grain = INTERLEAVE if r.threads > 1 else 1 << 62
    cfg = np.array(
        [ab, ars, acs, bb, brs, bcs, cb, crs, ccs, layout.elem, M, N, K, r.MR, r.NR, r.KC, r.MC, r.NC, r.lanes,
         _EDGE_ID[r.edge], int(r.a_by_lane), spill, maxu, grain],
        dtype=np.int64,
    )
    buf = buffers(layout, r)
    tcfg = np.zeros((r.threads, _NT), dtype=np.int64)
    st = np.zeros((r.threads, _NST), dtype=np.int64)
    T = r.threads
    shared_b = r.split in ("m", "jr")
    rr = r.split == "jr"
    for t, (m0, m1, n0, n1) in enumerate(_thread_ranges(r)):
        tcfg[t] = (
            m0, m1, n0, n1,
            t if shared_b else 0, T if shared_b else 1,  # B micro-panels this thread packs
            buf["A"][0 if rr else t], buf["B"][0 if shared_b else t], buf["stack"][t], t,
            t if rr else 0, T if rr else 1,  # A micro-panels it packs
            t if rr else 0, T if rr else 1,  # B micro-panels it computes with (loop 2)
        )
        st[t, _JC] = n0
        st[t, _IC] = m0
        st[t, _IA] = tcfg[t, _POFF]
        if n0 >= n1:
            st[t, _PH] = 3
    return cfg, tcfg, st


def _stream(layout: Layout, r: Resolved, chunk: int) -> FillTrace:
    """The chunks of the threads' interleaved streams (a ``gemmsim.kernels.cpu.FillTrace``, family ``"packed"``)."""
    cfg, tcfg, st = _tables(layout, r)
    rr = np.zeros(1, dtype=np.int64)
    # Every access is at most one vector (lanes x element) wide; a buffer must hold two of the largest units.
    return FillTrace(_fill, (cfg, tcfg, st, rr), lambda: bool(np.all(st[:, _PH] == 3)), chunk, "packed",
                     int(cfg[_VL] * cfg[_S]), min_chunk=2 * int(cfg[_MAXU]))  # fmt: skip


def _check_layout(layout: Layout) -> None:
    if layout.elem not in (1, 2, 4, 8):
        raise KernelError(f"element size {layout.elem} B is not one of 1, 2, 4, 8")


def _trace_for(simd: bool):
    def trace(layout: Layout, params: GemmParams, machine=None, chunk: int = CHUNK) -> Iterator[np.ndarray]:
        _check_layout(layout)
        return _stream(layout, resolve(layout, params, machine, simd), chunk)

    trace.__doc__ = f"Stream the {'SIMD' if simd else 'scalar'} packed kernel's accesses (see the module docstring)."
    return trace


# ---------------------------------------------------------------------------------------------------------
# Analytic columns.


def false_sharing_lines(layout: Layout, r: Resolved, line: int) -> int:
    """Lines of C that two threads write: each border between two threads' parts that does not fall on a line
    boundary shares the line it cuts (one per border for split m; one per row of C and border for split n; for
    split jr every border between micro-panels, each owned by another thread)."""
    M, cb, crs, ccs = r.M, *_problem(layout)[9:]
    if r.split == "jr":
        starts = [jc + q * r.NR for jc in range(0, r.N, r.NC) for q in range(-(-min(r.NC, r.N - jc) // r.NR))]
        borders = [j for j in starts if j > 0] if r.threads > 1 else []
        return sum((cb + i * crs + j * ccs) % line != 0 for i in range(M) for j in borders)
    ranges = [x for x in _thread_ranges(r) if x[0] < x[1] and x[2] < x[3]]
    count = 0
    for m0, _, n0, _ in ranges[1:]:
        if r.split == "m":
            count += (cb + m0 * crs) % line != 0
        else:
            count += sum((cb + i * crs + n0 * ccs) % line != 0 for i in range(M))
    return count


def _extra_for(simd: bool):
    def extra(layout: Layout, params: GemmParams, machine=None) -> dict:
        """Analytic columns: resolved parameters, registers, panel footprints per cache level, edge costs."""
        r = resolve(layout, params, machine, simd)
        M, N, K = r.M, r.N, r.K
        row = {
            "mr": r.MR, "nr": r.NR, "kc": r.KC, "mc": r.MC, "nc": r.NC,
            "vector_lanes": r.lanes,
            "accumulators_per_register": r.lanes,
            "accumulator_registers": r.shape.accumulators,
            "registers_used": r.shape.registers_used,
            "registers_available": r.shape.registers_available,
            "registers_spilled": r.shape.spilled,
            "fma_latency_hidden": r.shape.latency_hidden,
            "packed_bytes_per_flop": r.shape.bytes_per_flop,
            "edge_strategy": r.edge,
            "split": r.split,
        }
        model = {"lanes": r.lanes, "fma_units": r.fma_units, "fma_latency": r.fma_latency}
        row.update(edge_report(M, N, K, r.MR, r.NR, **model))
        own = edge_cost(M, N, K, r.MR, r.NR, r.edge, **model)
        row["edge_time_share"] = own.partial_time_share
        row["ghost_flops"] = own.ghost_flops
        row["compute_slowdown"] = own.time_ratio
        bm, bn = min(r.MC, M), min(r.NC, N)
        row["edge_partial_fraction_blocks"] = partial_fraction(M, N, bm, bn)
        row["edge_ratio_scalar_blocks"] = edge_cost(M, N, K, bm, bn, "scalar", lanes=r.lanes, fma_units=r.fma_units).time_ratio
        if machine is not None:
            row.update(panel_footprints(machine, layout.dtype, r.MR, r.NR, min(r.KC, K), min(r.MC, M), min(r.NC, N), r.threads))
            if r.threads > 1:
                row["c_lines_shared_by_threads"] = false_sharing_lines(layout, r, machine.caches[0].line_bytes)
        return row

    return extra


# ---------------------------------------------------------------------------------------------------------
# Host implementations: the same five loops computed for real (numba), zero-padded packing.


@njit(cache=True, fastmath={"contract"})
def _host_micro(Ap, Bp, acc, kc, MR, NR, ab0, bb0):
    """The microkernel: acc (MR*NR, row-major) += A micro-panel x B micro-panel over kc steps (FMAs allowed)."""
    for p in range(kc):
        ab = ab0 + p * MR
        bb = bb0 + p * NR
        for r in range(MR):
            av = Ap[ab + r]
            for c in range(NR):
                acc[r * NR + c] += av * Bp[bb + c]


@njit(cache=True)
def pack_b(B, pc, kc, jc, nc, NR, Bp):
    """Pack B[pc:pc+kc, jc:jc+nc] into NR-wide micro-panels: Bp[(q*kc + p)*NR + c] = B[pc+p, jc+q*NR+c], the last
    panel zero-padded to NR columns. Shared by every host kernel that runs the packed loops."""
    for q in range((nc + NR - 1) // NR):
        w = min(NR, nc - q * NR)
        for p in range(kc):
            base = (q * kc + p) * NR
            for c in range(w):
                Bp[base + c] = B[pc + p, jc + q * NR + c]
            for c in range(w, NR):
                Bp[base + c] = 0


@njit(cache=True)
def pack_a(A, ic, mc, pc, kc, MR, Ap):
    """Pack A[ic:ic+mc, pc:pc+kc] into MR-tall micro-panels: Ap[(q*kc + p)*MR + r] = A[ic+q*MR+r, pc+p], the last
    panel zero-padded to MR rows (rows read along, as A is row-major)."""
    for q in range((mc + MR - 1) // MR):
        h = min(MR, mc - q * MR)
        for r in range(h):
            row = ic + q * MR + r
            for p in range(kc):
                Ap[(q * kc + p) * MR + r] = A[row, pc + p]
        for r in range(h, MR):
            for p in range(kc):
                Ap[(q * kc + p) * MR + r] = 0


@njit(cache=True)
def _host_rows(A, B, C, MR, NR, KC, MC, NC, m0, m1):
    """C[m0:m1] += A[m0:m1] @ B by the five packed loops (pack buffers zero-padded to whole micro-panels)."""
    K = A.shape[1]
    N = B.shape[1]
    kcm = min(KC, K)
    ncm = min(NC, N)
    mcm = min(MC, max(1, m1 - m0))
    Bp = np.zeros(kcm * ((ncm + NR - 1) // NR) * NR, dtype=B.dtype)
    Ap = np.zeros(kcm * ((mcm + MR - 1) // MR) * MR, dtype=A.dtype)
    acc = np.zeros(MR * NR, dtype=C.dtype)
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
                    for ir in range(npa):
                        h = min(MR, mc - ir * MR)
                        acc[:] = 0
                        _host_micro(Ap, Bp, acc, kc, MR, NR, ir * kc * MR, jr * kc * NR)
                        for r in range(h):
                            for c in range(w):
                                C[ic + ir * MR + r, jc + jr * NR + c] += acc[r * NR + c]


@njit(cache=True, parallel=True)
def _host_threads(A, B, C, MR, NR, KC, MC, NC, T):
    """The threaded host kernel: the MR-row micro-panels dealt out in T contiguous runs, one per thread (prange)."""
    M = A.shape[0]
    P = (M + MR - 1) // MR
    for t in prange(T):
        m0 = min(M, t * P // T * MR)
        m1 = min(M, (t + 1) * P // T * MR)
        if m0 < m1:
            _host_rows(A, B, C, MR, NR, KC, MC, NC, m0, m1)


@functools.lru_cache(maxsize=1)
def _host_machine():
    from gemmsim.machine import load_machine

    return load_machine("host")


def _host_arrays(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    if A.ndim != 2 or B.ndim != 2 or C.ndim != 2 or A.shape[1] != B.shape[0] or C.shape != (A.shape[0], B.shape[1]):
        raise KernelError(f"host GEMM needs A (M x K), B (K x N), C (M x N); got {A.shape}, {B.shape}, {C.shape}")
    kinds = (A.dtype, B.dtype, C.dtype)
    if kinds in ((np.dtype(np.float64),) * 3, (np.dtype(np.float32),) * 3, (np.dtype(np.int8), np.dtype(np.int8), np.dtype(np.int32))):
        return A, B, C, False
    if kinds == (np.dtype(np.float16),) * 3:
        return A.astype(np.float32), B.astype(np.float32), C.astype(np.float32), True
    raise KernelError(f"host GEMM dtypes must be all float64, all float32, all float16, or int8 x int8 -> int32; got {kinds}")


#: numpy dtype of the host arrays -> gemmsim dtype (fp16/bf16 are computed on float32 copies by gemmsim.run.host)
_HOST_DTYPES = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "int8": "int8", "int32": "int32"}


def _host_for(simd: bool):
    def host(A: np.ndarray, B: np.ndarray, C: np.ndarray, params: GemmParams | None = None) -> None:
        """C += A @ B by the five packed loops for real (numba; parallel over row ranges when threads > 1).

        Parameters left None come from the detected host machine, as the trace's come from the modelled one.
        All edge strategies compute the same numbers here (zero-padded packing).
        """
        params = params if params is not None else GemmParams()
        a, b, c, back = _host_arrays(A, B, C)
        M, K = a.shape
        N = b.shape[1]
        lay = Layout.build(M, N, K, _HOST_DTYPES[a.dtype.name])
        need_machine = None in tuple(getattr(params, k, None) for k in ("MR", "NR", "KC", "MC", "NC"))
        machine = _host_machine() if need_machine else None
        if machine is not None and params.threads > machine.cores:
            params = params.model_copy(update={"threads": machine.cores})
        r = resolve(lay, params, machine, simd)
        if r.threads > 1:
            numba.set_num_threads(min(r.threads, numba.config.NUMBA_NUM_THREADS))
            _host_threads(a, b, c, r.MR, r.NR, r.KC, r.MC, r.NC, r.threads)
        else:
            _host_rows(a, b, c, r.MR, r.NR, r.KC, r.MC, r.NC, 0, M)
        if back:
            C[...] = c

    return host


KERNELS: dict[str, CPUKernel] = {
    "packed": CPUKernel(
        name="packed",
        description="Goto/BLIS five loops with packed A and B panels and a scalar register-tiled microkernel",
        params=PackedParams,
        trace=_trace_for(False),
        host=_host_for(False),
        simd=False,
        extra=_extra_for(False),
        threads=lambda p: p.threads,
    ),
    "packed_micro": CPUKernel(
        name="packed_micro",
        description="packed five loops + SIMD register-blocked MR x NR microkernel (one access per vector)",
        params=PackedParams,
        trace=_trace_for(True),
        host=_host_for(True),
        simd=True,
        extra=_extra_for(True),
        threads=lambda p: p.threads,
    ),
    "gemm": CPUKernel(
        name="gemm",
        description="packed_micro with the machine's analytic shape and blocking (the CPU default)",
        params=GemmParams,
        trace=_trace_for(True),
        host=_host_for(True),
        simd=True,
        extra=_extra_for(True),
        threads=lambda p: p.threads,
    ),
}
