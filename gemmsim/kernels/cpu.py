"""CPU GEMM kernels as address-trace generators: the six loop orders and the blocked (tiled) kernel.

Every kernel computes ``C[i][j] += A[i][k] * B[k][j]`` (A is M x K, B is K x N, C is M x N) with all loops
ascending. A loop order is named outer -> inner (``ikj``: i outermost, j innermost). ``blocked`` runs tile
loops (steps BM, BN, BK, in ``tile_order``) around element loops within a tile (``inner_order``); a tile at
an edge is clipped to the matrix, so M, N, K need not be multiples of the tile sizes.

What a kernel emits for each innermost iteration depends on register promotion (issue 2):

``promotion="none"`` (what gcc -O0 does: nothing stays in a register)
    each innermost iteration loads C[i][j], loads A[i][k], loads B[k][j], stores C[i][j].
``promotion="hoisted"`` (default; what an optimising compiler does, e.g. gcc -O1)
    - k innermost (ijk, jik): C[i][j] is loaded before the k loop and stored after it; each k loads
      A[i][k] then B[k][j];
    - j innermost (ikj, kij): A[i][k] is loaded before the j loop; each j loads B[k][j], loads C[i][j],
      stores C[i][j];
    - i innermost (jki, kji): B[k][j] is loaded before the i loop; each i loads A[i][k], loads C[i][j],
      stores C[i][j].
    In a blocked kernel "the k loop" is the innermost element loop within one tile.

Both definitions are checked access for access against valgrind lackey traces of the equivalent C program
(gcc 12, -O0 and -O1; tests/data/lackey/). Every access is one element: its size is the dtype's size.

A trace is streamed: one numba fill function, parameterised by the loop permutation, writes up to ``chunk``
accesses into a fresh buffer from a resumable loop state, so memory stays bounded whatever M, N, K are
(an N=1024 ijk trace is over 2 billion accesses). A plain loop order is the blocked nest with a single tile
(BM=M, BN=N, BK=K), so both share the generator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
from numba import njit
from pydantic import Field, ValidationError

from gemmsim.errors import KernelError
from gemmsim.kernels.base import CPUKernel
from gemmsim.schema import Strict
from gemmsim.trace import ACCESS, CHUNK, Layout, LayoutSpec

#: The six loop orders, each named outer -> inner.
ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")

Order = Literal["ijk", "ikj", "jik", "jki", "kij", "kji"]
Promotion = Literal["hoisted", "none"]

# Loop variables are numbered i=0, j=1, k=2; access kinds are numbered as below.
_VAR = {"i": 0, "j": 1, "k": 2}
_LOAD_A, _LOAD_B, _LOAD_C, _STORE_C = 0, 1, 2, 3


class LoopOrderParams(Strict):
    """Parameters of a plain loop-order kernel (ijk, ikj, jik, jki, kij, kji)."""

    promotion: Promotion = Field(
        "hoisted",
        description="Register promotion: 'hoisted' keeps the loop-invariant operand of the innermost loop in a register "
        "(gcc -O1); 'none' loads C, A, B and stores C on every innermost iteration (gcc -O0).",
    )


class BlockedParams(Strict):
    """Parameters of the blocked (tiled) kernel."""

    BM: int = Field(32, ge=1, description="Tile extent along i (rows of A and C), in elements.")
    BN: int = Field(32, ge=1, description="Tile extent along j (columns of B and C), in elements.")
    BK: int = Field(32, ge=1, description="Tile extent along k (columns of A, rows of B), in elements.")
    tile_order: Order = Field("ijk", description="Order of the three tile loops, outer -> inner.")
    inner_order: Order = Field("ikj", description="Order of the three element loops within one tile, outer -> inner.")
    promotion: Promotion = Field(
        "hoisted", description="Register promotion of the innermost element loop ('hoisted' or 'none', as for loop orders)."
    )


# ---------------------------------------------------------------------------------------------------------
# Access pattern of one nest: prologue (before the innermost loop), body (per innermost iteration), epilogue.


def _pattern(innermost: str, promotion: str) -> tuple[int, np.ndarray, int]:
    """(prologue kind or -1, body kinds, epilogue kind or -1) for an innermost loop variable and a promotion."""
    if promotion == "none":
        return -1, np.array([_LOAD_C, _LOAD_A, _LOAD_B, _STORE_C], np.int64), -1
    if innermost == "k":
        return _LOAD_C, np.array([_LOAD_A, _LOAD_B], np.int64), _STORE_C
    if innermost == "j":
        return _LOAD_A, np.array([_LOAD_B, _LOAD_C, _STORE_C], np.int64), -1
    return _LOAD_B, np.array([_LOAD_A, _LOAD_C, _STORE_C], np.int64), -1


def _layout_table(lay: Layout) -> np.ndarray:
    """Per access kind: base, row variable, row stride, column variable, column stride (int64[4, 5])."""
    a = (lay.a_base, _VAR["i"], lay.a_rs, _VAR["k"], lay.a_cs)
    b = (lay.b_base, _VAR["k"], lay.b_rs, _VAR["j"], lay.b_cs)
    c = (lay.c_base, _VAR["i"], lay.c_rs, _VAR["j"], lay.c_cs)
    return np.array([a, b, c, c], dtype=np.int64)


@njit(cache=True, inline="always")
def _operand_address(t, st):
    """Byte address of one operand access of the loop body: ``t`` its row of ``_layout_table`` (base, the two loop
    variables it depends on and their strides), at the nest's current indices ``st[3:6]``."""
    return t[0] + st[3 + t[1]] * t[2] + st[3 + t[3]] * t[4]


@njit(cache=True, inline="always")
def _next_operand(st, hi, q, nb, w):
    """The body position after operand ``q`` of ``nb``: past the last, back to 0 with the innermost index ``w``
    advanced, and the body stage over (``st[6] = 2``) when that index reaches its tile end."""
    q += 1
    if q == nb:
        q = 0
        st[3 + w] += 1
        if st[3 + w] == hi[w]:
            st[6] = 2
    return q


@njit(cache=True, inline="always")
def _tile_ends(st, hi, tiles, dims):
    """``hi[d]``: where the current tile of loop variable d ends (its start ``st[d]`` plus the tile, within the extent)."""
    for d in range(3):
        hi[d] = min(st[d] + tiles[d], dims[d])


@njit(cache=True, inline="always")
def _next_iteration(st, hi, tperm, tiles, dims, w, m0, m1):
    """Advance the nest's state ``st`` past one innermost pass: the two outer element loops (``m0`` outer, ``m1``
    inner; ``w`` restarts), then the tile loops in ``tperm`` order; ``st[8] = 1`` when the whole nest is done."""
    st[3 + w] = st[w]
    st[3 + m1] += 1
    if st[3 + m1] == hi[m1]:
        st[3 + m1] = st[m1]
        st[3 + m0] += 1
        if st[3 + m0] == hi[m0]:
            for p in range(2, -1, -1):
                v = tperm[p]
                st[v] += tiles[v]
                if st[v] < dims[v]:
                    break
                st[v] = 0
                if p == 0:
                    st[8] = 1
            _tile_ends(st, hi, tiles, dims)
            for d in range(3):
                st[3 + d] = st[d]


@njit(cache=True, nogil=True)
def _fill(addr, size, is_write, core, st, dims, tiles, tperm, iperm, pro, body, epi, tab, elem):
    """Write up to len(addr) accesses of a (blocked) loop nest, resuming from and updating ``st``.

    st = [tile start of i, j, k, index of i, j, k, stage (0 prologue, 1 body, 2 epilogue), body position, done].
    dims, tiles: extents and tile sizes by variable (i, j, k); tperm, iperm: variables of the tile loops and of the
    element loops, outer -> inner; tab: _layout_table. Returns the number of accesses written.
    """
    cap = addr.shape[0]
    nb = body.shape[0]
    w = iperm[2]
    m1 = iperm[1]
    m0 = iperm[0]
    hi = np.empty(3, np.int64)
    _tile_ends(st, hi, tiles, dims)
    base = np.empty(nb, np.int64)
    step = np.empty(nb, np.int64)
    wr = np.empty(nb, np.uint8)
    n = 0
    while n < cap and st[8] == 0:
        stage = st[6]
        if stage == 0:
            if pro >= 0:
                t = tab[pro]
                addr[n] = _operand_address(t, st)
                size[n] = elem
                is_write[n] = 0
                core[n] = 0
                n += 1
            st[6] = 1
            st[7] = 0
        elif stage == 1:
            q = st[7]
            if q == 0:
                # fast path: as many whole innermost iterations as fit, each operand a base plus a stride along w
                m = min(hi[w] - st[3 + w], (cap - n) // nb)
                if m > 0:
                    for b in range(nb):
                        t = tab[body[b]]
                        base[b] = _operand_address(t, st)
                        step[b] = (t[2] if t[1] == w else 0) + (t[4] if t[3] == w else 0)
                        wr[b] = 1 if body[b] == 3 else 0
                    for it in range(m):
                        for b in range(nb):
                            addr[n] = base[b] + it * step[b]
                            size[n] = elem
                            is_write[n] = wr[b]
                            core[n] = 0
                            n += 1
                    st[3 + w] += m
                    if st[3 + w] == hi[w]:
                        st[6] = 2
                        continue
                    if n == cap:
                        continue
            while n < cap:
                kd = body[q]
                t = tab[kd]
                addr[n] = _operand_address(t, st)
                size[n] = elem
                is_write[n] = 1 if kd == 3 else 0
                core[n] = 0
                n += 1
                q = _next_operand(st, hi, q, nb, w)
                if st[6] == 2:
                    break
            st[7] = q
        else:
            if epi >= 0:
                t = tab[epi]
                addr[n] = _operand_address(t, st)
                size[n] = elem
                is_write[n] = 1 if epi == 3 else 0
                core[n] = 0
                n += 1
            st[6] = 0
            _next_iteration(st, hi, tperm, tiles, dims, w, m0, m1)
    return n


def _perm(order: str) -> np.ndarray:
    return np.array([_VAR[c] for c in order], dtype=np.int64)


class FillTrace:
    """A kernel's trace: an iterator of chunks (fresh ACCESS arrays of at most ``chunk`` records) that also says
    how it is made, so that a simulator may generate and simulate in one compiled pass instead of iterating.

    ``fill_spec`` = (family, args, max_access_bytes): ``family`` names the fill function (``"nest"``:
    ``_fill`` of this module; ``"packed"``: ``gemmsim.kernels.cpu_packed._fill``), ``args`` its arguments after
    the four output arrays (the loop state among them, advanced by whoever consumes the trace), and
    ``max_access_bytes`` the largest access it emits. Iterating and the fused pass share the state: whichever
    runs consumes the stream. A kernel still knows nothing of caches; ``gemmsim.sim.fused`` does the fusing.
    """

    def __init__(self, fill, args: tuple, done, chunk: int, family: str, max_access_bytes: int, min_chunk: int = 1):
        if chunk < 1:
            raise KernelError(f"chunk must be at least 1 access, not {chunk}")
        self._fill, self._args, self._done = fill, args, done
        self._chunk = max(int(chunk), int(min_chunk))
        self.fill_spec = (family, args, int(max_access_bytes))
        self.min_batch = int(min_chunk)

    def __iter__(self) -> "FillTrace":
        return self

    def __next__(self) -> np.ndarray:
        while not self._done():
            buf = np.empty(self._chunk, dtype=ACCESS)
            n = self._fill(buf["addr"], buf["size"], buf["is_write"], buf["core"], *self._args)
            if n:
                return buf[:n]
        raise StopIteration


def _nest_stream(
    lay: Layout, tiles: tuple[int, int, int], tile_order: str, inner_order: str, promotion: str, chunk: int
) -> FillTrace:
    """Chunks of the (blocked) nest's accesses; each chunk is a fresh ACCESS array of at most ``chunk`` records."""
    if chunk < 1:
        raise KernelError(f"chunk must be at least 1 access, not {chunk}")
    dims = np.array([lay.M, lay.N, lay.K], np.int64)
    til = np.array([min(t, d) for t, d in zip(tiles, dims)], np.int64)
    pro, body, epi = _pattern(inner_order[2], promotion)
    tab = _layout_table(lay)
    st = np.zeros(9, np.int64)
    tperm, iperm = _perm(tile_order), _perm(inner_order)
    args = (st, dims, til, tperm, iperm, pro, body, epi, tab, lay.elem)
    return FillTrace(_fill, args, lambda: st[8] != 0, chunk, "nest", lay.elem)


# ---------------------------------------------------------------------------------------------------------
# Closed-form access counts.


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _counts(M: int, N: int, K: int, tiles: tuple[int, int, int], inner_order: str, promotion: str) -> tuple[int, int]:
    """(loads, stores) of a blocked nest in closed form.

    Summed over tiles, the element iterations total M*N*K; the prologue/epilogue run once per iteration of the two
    outer element loops, i.e. (product of the extents of the two non-innermost variables) x (number of tiles along
    the innermost variable).
    """
    dims = {"i": M, "j": N, "k": K}
    tile = dict(zip("ijk", tiles))
    w = inner_order[2]
    a, b = (v for v in "ijk" if v != w)
    outer_iters = dims[a] * dims[b] * _ceil_div(dims[w], min(tile[w], dims[w]))
    mnk = M * N * K
    if promotion == "none":
        return 3 * mnk, mnk
    if w == "k":
        return mnk * 2 + outer_iters, outer_iters
    return mnk * 2 + outer_iters, mnk


# ---------------------------------------------------------------------------------------------------------
# Host implementations: C += A @ B computed for real, in the kernel's own loop order and blocking.


@njit(cache=True)
def _h_ijk(A, B, C, i0, i1, j0, j1, k0, k1):
    for i in range(i0, i1):
        for j in range(j0, j1):
            acc = C[i, j]
            for k in range(k0, k1):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@njit(cache=True)
def _h_ikj(A, B, C, i0, i1, j0, j1, k0, k1):
    for i in range(i0, i1):
        for k in range(k0, k1):
            a = A[i, k]
            for j in range(j0, j1):
                C[i, j] += a * B[k, j]


@njit(cache=True)
def _h_jik(A, B, C, i0, i1, j0, j1, k0, k1):
    for j in range(j0, j1):
        for i in range(i0, i1):
            acc = C[i, j]
            for k in range(k0, k1):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@njit(cache=True)
def _h_jki(A, B, C, i0, i1, j0, j1, k0, k1):
    for j in range(j0, j1):
        for k in range(k0, k1):
            b = B[k, j]
            for i in range(i0, i1):
                C[i, j] += A[i, k] * b


@njit(cache=True)
def _h_kij(A, B, C, i0, i1, j0, j1, k0, k1):
    for k in range(k0, k1):
        for i in range(i0, i1):
            a = A[i, k]
            for j in range(j0, j1):
                C[i, j] += a * B[k, j]


@njit(cache=True)
def _h_kji(A, B, C, i0, i1, j0, j1, k0, k1):
    for k in range(k0, k1):
        for j in range(j0, j1):
            b = B[k, j]
            for i in range(i0, i1):
                C[i, j] += A[i, k] * b


@njit(cache=True)
def _h_order(oid, A, B, C, i0, i1, j0, j1, k0, k1):
    """Dispatch to the loop order numbered ``oid`` (index into ORDERS) over the box [i0,i1) x [j0,j1) x [k0,k1)."""
    if oid == 0:
        _h_ijk(A, B, C, i0, i1, j0, j1, k0, k1)
    elif oid == 1:
        _h_ikj(A, B, C, i0, i1, j0, j1, k0, k1)
    elif oid == 2:
        _h_jik(A, B, C, i0, i1, j0, j1, k0, k1)
    elif oid == 3:
        _h_jki(A, B, C, i0, i1, j0, j1, k0, k1)
    elif oid == 4:
        _h_kij(A, B, C, i0, i1, j0, j1, k0, k1)
    else:
        _h_kji(A, B, C, i0, i1, j0, j1, k0, k1)


@njit(cache=True)
def _h_blocked(A, B, C, tiles, tperm, oid):
    """Tile loops in the order ``tperm`` (variables outer -> inner), the loop order ``oid`` within each tile."""
    dims = np.array([A.shape[0], B.shape[1], A.shape[1]], np.int64)
    nt = np.empty(3, np.int64)
    for d in range(3):
        nt[d] = (dims[d] + tiles[d] - 1) // tiles[d]
    lo = np.empty(3, np.int64)
    hi = np.empty(3, np.int64)
    total = nt[0] * nt[1] * nt[2]
    for t in range(total):
        r = t
        for p in range(2, -1, -1):
            v = tperm[p]
            lo[v] = (r % nt[v]) * tiles[v]
            hi[v] = min(lo[v] + tiles[v], dims[v])
            r //= nt[v]
        _h_order(oid, A, B, C, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2])


def _host_arrays(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Check shapes and dtypes; fp16 operands are computed on float32 copies (returns copy_back=True)."""
    if A.ndim != 2 or B.ndim != 2 or C.ndim != 2 or A.shape[1] != B.shape[0] or C.shape != (A.shape[0], B.shape[1]):
        raise KernelError(f"host GEMM needs A (M x K), B (K x N), C (M x N); got {A.shape}, {B.shape}, {C.shape}")
    kinds = (A.dtype, B.dtype, C.dtype)
    if kinds in ((np.float64,) * 3, (np.float32,) * 3, (np.dtype(np.int8), np.dtype(np.int8), np.dtype(np.int32))):
        return A, B, C, False
    if kinds == (np.float16,) * 3:
        return A.astype(np.float32), B.astype(np.float32), C.astype(np.float32), True
    raise KernelError(
        "host GEMM dtypes must be all float64, all float32, all float16 (computed in float32), or int8 A, B with an "
        f"int32 C; got {', '.join(str(k) for k in kinds)}"
    )


def _host_order(order: str):
    oid = ORDERS.index(order)

    def host(A: np.ndarray, B: np.ndarray, C: np.ndarray, params: Strict | None = None) -> None:
        a, b, c, back = _host_arrays(A, B, C)
        _h_order(oid, a, b, c, 0, a.shape[0], 0, b.shape[1], 0, a.shape[1])
        if back:
            C[...] = c

    host.__doc__ = f"C += A @ B computed for real in loop order {order} (numba; fp16 on float32 copies, int8 into int32)."
    return host


def _host_blocked(A: np.ndarray, B: np.ndarray, C: np.ndarray, params: BlockedParams) -> None:
    """C += A @ B computed for real with the blocked kernel's tiles and orders (numba; fp16 on float32 copies)."""
    a, b, c, back = _host_arrays(A, B, C)
    tiles = np.array([params.BM, params.BN, params.BK], np.int64)
    _h_blocked(a, b, c, tiles, _perm(params.tile_order), ORDERS.index(params.inner_order))
    if back:
        C[...] = c


# ---------------------------------------------------------------------------------------------------------
# Kernel objects.


def _order_trace(order: str):
    def trace(layout: Layout, params: LoopOrderParams, machine=None, chunk: int = CHUNK) -> Iterator[np.ndarray]:
        return _nest_stream(layout, (layout.M, layout.N, layout.K), "ijk", order, params.promotion, chunk)

    return trace


def _blocked_trace(layout: Layout, params: BlockedParams, machine=None, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    return _nest_stream(layout, (params.BM, params.BN, params.BK), params.tile_order, params.inner_order, params.promotion, chunk)


def _order_extra(order: str):
    def extra(layout: Layout, params: LoopOrderParams, machine=None) -> dict:
        loads, stores = _counts(layout.M, layout.N, layout.K, (layout.M, layout.N, layout.K), order, params.promotion)
        return {"trace_loads": loads, "trace_stores": stores}

    return extra


def _blocked_extra(layout: Layout, params: BlockedParams, machine=None) -> dict:
    """Access counts, the tile working set s(BM*BK + BK*BN + BM*BN) (seed 000 section 4) and the share of C in edge tiles."""
    M, N, K = layout.M, layout.N, layout.K
    loads, stores = _counts(M, N, K, (params.BM, params.BN, params.BK), params.inner_order, params.promotion)
    bm, bn, bk = min(params.BM, M), min(params.BN, N), min(params.BK, K)
    full_c = (M // bm) * bm * (N // bn) * bn
    return {
        "trace_loads": loads,
        "trace_stores": stores,
        "tile_working_set_bytes": layout.elem * (bm * bk + bk * bn + bm * bn),
        "edge_fraction_c": 1.0 - full_c / (M * N),
    }


def _order_description(order: str) -> str:
    inner = order[2]
    held = {"k": "C[i][j] in a register across k", "j": "A[i][k] in a register across j", "i": "B[k][j] in a register across i"}
    return f"loop order {order} (outer -> inner), scalar; hoisted promotion keeps {held[inner]}"


KERNELS: dict[str, CPUKernel] = {
    **{
        o: CPUKernel(
            name=o,
            description=_order_description(o),
            params=LoopOrderParams,
            trace=_order_trace(o),
            host=_host_order(o),
            extra=_order_extra(o),
        )
        for o in ORDERS
    },
    "blocked": CPUKernel(
        name="blocked",
        description="blocked (tiled) loops: BM x BN x BK tiles in tile_order, inner_order within a tile, edges clipped",
        params=BlockedParams,
        trace=_blocked_trace,
        host=_host_blocked,
        extra=_blocked_extra,
    ),
}


def _resolve(kernel: str, params: dict) -> tuple[CPUKernel, Strict]:
    if kernel not in KERNELS:
        raise KernelError(f"unknown CPU kernel {kernel!r} in gemmsim.kernels.cpu; known: {', '.join(KERNELS)}")
    k = KERNELS[kernel]
    try:
        return k, k.params(**params)
    except ValidationError as err:
        problems = [f"{'.'.join(str(x) for x in e['loc']) or '(params)'}: {e['msg']}" for e in err.errors()]
        raise KernelError(f"invalid parameters for kernel {kernel!r}", problems=problems) from None


def _check_shape(M: int, N: int, K: int) -> None:
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise KernelError(f"{name} must be a positive integer, not {v!r}")


def cpu_trace(
    kernel: str,
    M: int,
    N: int,
    K: int,
    dtype: str = "fp32",
    layout: Layout | LayoutSpec | dict | None = None,
    chunk: int = CHUNK,
    **params,
) -> Iterator[np.ndarray]:
    """Stream the address trace of a CPU kernel of this module, in chunks of ``gemmsim.trace.ACCESS`` records.

    ``kernel`` is a loop order (``"ijk"`` ...) or ``"blocked"``; ``params`` are the kernel's parameters
    (``promotion``; for blocked also ``BM``, ``BN``, ``BK``, ``tile_order``, ``inner_order``). ``layout`` is a
    ready Layout (its element size wins over ``dtype``), a LayoutSpec (or its dict) applied to M, N, K and dtype,
    or None for row-major A, B, C contiguous from address 0. Each chunk has at most ``chunk`` accesses; addresses are bytes, sizes are the element size.

    Example: ``sum(len(c) for c in cpu_trace("ijk", 8, 8, 8))`` is 8*8*(2*8+2) = 1152.
    """
    _check_shape(M, N, K)
    k, p = _resolve(kernel, params)
    if isinstance(layout, Layout):
        if (layout.M, layout.N, layout.K) != (M, N, K):
            raise KernelError(f"layout is for {layout.M}x{layout.N}x{layout.K}, not {M}x{N}x{K}")
        lay = layout
    else:
        try:
            spec = layout if isinstance(layout, LayoutSpec) else LayoutSpec(**(layout or {}))
            lay = Layout.build(M, N, K, dtype, spec)
        except (ValidationError, ValueError) as err:
            raise KernelError(f"invalid layout or dtype: {err}") from None
    return k.trace(lay, p, None, chunk=chunk)


def access_count(kernel: str, M: int, N: int, K: int, **params) -> int:
    """Number of accesses (loads + stores) a kernel's trace has, in closed form.

    Loop orders, per promotion: none 4MNK; hoisted with k innermost M*N*(2K+2); with j innermost M*K*(3N+1);
    with i innermost N*K*(3M+1). Blocked: the same per tile, summed over the (clipped) tiles.
    """
    _check_shape(M, N, K)
    _, p = _resolve(kernel, params)
    if kernel == "blocked":
        loads, stores = _counts(M, N, K, (p.BM, p.BN, p.BK), p.inner_order, p.promotion)
    else:
        loads, stores = _counts(M, N, K, (M, N, K), kernel, p.promotion)
    return loads + stores
