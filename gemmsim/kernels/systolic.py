"""Systolic dataflows as data movement: the fold schedule of a GEMM and the SRAM access trace of each operand.

The array has R rows and C columns of PEs. A GEMM larger than the array is cut into *folds*: in each fold one
tile of the *stationary* operand sits in the PEs while another operand *streams* through from the left edge,
one vector per cycle, skewed by one cycle per row (the diagonal wavefront), and the third operand is produced at
the bottom edge (Kung, "Why systolic architectures?", IEEE Computer 1982; Chen, Emer, Sze, ISCA 2016 for the
names). What stays where:

=========  ====================  ==================================  ===================================
dataflow   PE (r, c) holds        enters from the left, row r         leaves at the bottom, column c
=========  ====================  ==================================  ===================================
ws         B[k0+r][n0+c]          A[m][k0+r], m = 0 .. M-1            partial sum of C[m][n0+c]
is         A[m0+c][k0+r]          B[k0+r][n], n = 0 .. N-1            partial sum of C[m0+c][n]
os         C[m0+r][n0+c] (sum)    A[m0+r][k] (and B[k][n0+c] from     C[m0+r][n0+c] once k = K-1
                                  the top, column c), k = 0 .. K-1
=========  ====================  ==================================  ===================================

Two conventions time a fold (``convention``):

- ``"scalesim"`` reproduces SCALE-Sim v3 (Samajdar et al., ISPASS 2020; its ``systolic_compute_*.py``): folds run
  one after the other; a ws/is fold shifts its stationary tile in over R cycles, streams T vectors, and waits for
  the wavefront to cross the array: L = 2R + C + T - 2 cycles (os: L = T + R + C - 2). Folds go N-tile outer,
  K-tile inner (ws), M-tile outer, K-tile inner (is), N-tile outer, M-tile inner (os); the whole of the streamed
  dimension is one vector sequence (T = M for ws, N for is, K for os).
- ``"machine"`` models a TPU-like array: the stationary tile of fold i+1 shifts into shadow registers while fold i
  streams (``double_buffered_stationary``), folds pipeline back to back, and partial sums add up in accumulators
  under the array, so the streamed dimension is cut into *chunks* that fit the accumulators (ws: M chunks,
  is: N chunks) and the order is chunk outer, N- (is: M-) tile, K-tile inner. The cycle each fold starts at
  comes from the timing model (``gemmsim.models.systolic``); this module only says *what* moves *when* relative
  to those starts.

The trace is an iterator of chunks of ``SYSTOLIC_ACCESS`` records (cycle, byte address in the ``Layout``, array
port, operand, read/write), built by a numba fill function from a table of *patterns*: a pattern is one operand's
accesses in one fold, ``cycle = start + t + lane * dl`` for t < T and lane < L, emitted in (cycle, lane) order,
which is the order SCALE-Sim's demand matrices list them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numba import njit

from gemmsim.errors import KernelError
from gemmsim.trace import CHUNK, Layout

#: One SRAM access of a systolic array: the cycle, the byte address (A, B, C placed by ``Layout``), the array
#: port it goes through (the PE row for operands entering from the left, the column for those entering from the
#: top or leaving at the bottom), the operand (0 = A, 1 = B, 2 = C) and whether it is a write.
SYSTOLIC_ACCESS = np.dtype(
    [("cycle", np.int64), ("addr", np.uint64), ("lane", np.uint16), ("operand", np.uint8), ("is_write", np.uint8)], align=True
)

OPERANDS = ("A", "B", "C")



@dataclass(frozen=True)
class FoldSchedule:
    """Every fold of one GEMM on an R x C array, in execution order (one numpy entry per fold).

    A fold covers the GEMM block rows m0 .. m0+mr-1 of C, columns n0 .. n0+nc-1, reduction k0 .. k0+kr-1.
    ``first_k``/``last_k`` say whether the fold starts/completes its output tile (the K folds of one output
    tile accumulate). ``stream`` is the number of vectors streamed through the array (T), ``used_rows`` and
    ``used_cols`` the PEs the fold maps work to.
    """

    dataflow: str
    convention: str
    M: int
    N: int
    K: int
    rows: int
    cols: int
    m0: np.ndarray
    mr: np.ndarray
    n0: np.ndarray
    nc: np.ndarray
    k0: np.ndarray
    kr: np.ndarray
    first_k: np.ndarray
    last_k: np.ndarray

    @property
    def folds(self) -> int:
        """Number of folds."""
        return len(self.m0)

    @property
    def stream(self) -> np.ndarray:
        """Vectors streamed per fold (T): mr for ws, nc for is, kr for os."""
        return {"ws": self.mr, "is": self.nc, "os": self.kr}[self.dataflow]

    @property
    def used_rows(self) -> np.ndarray:
        """PE rows holding work in each fold (ws/is: kr, os: mr)."""
        return self.mr if self.dataflow == "os" else self.kr

    @property
    def used_cols(self) -> np.ndarray:
        """PE columns holding work in each fold (ws/os: nc, is: mr)."""
        return self.mr if self.dataflow == "is" else self.nc

    def macs(self) -> int:
        """MACs of all folds (equals M*N*K: every product is computed exactly once)."""
        return int(np.sum(self.mr * self.nc * self.kr))


def _tiles(n: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    start = np.arange(0, n, size, dtype=np.int64)
    return start, np.minimum(size, n - start)


def fold_schedule(dataflow: str, M: int, N: int, K: int, rows: int, cols: int, convention: str = "machine", chunk: int | None = None) -> FoldSchedule:
    """The folds of C (M x N) = A (M x K) @ B (K x N) on a rows x cols array, in execution order.

    ``chunk`` (machine convention, ws and is only) cuts the streamed dimension (M for ws, N for is) into pieces
    of at most that many vectors, the outer loop; None streams it whole (SCALE-Sim's behaviour).
    """
    if dataflow not in ("ws", "os", "is"):
        raise KernelError(f"unknown dataflow {dataflow!r}; expected ws, os or is")
    if convention not in ("machine", "scalesim"):
        raise KernelError(f"unknown convention {convention!r}; expected machine or scalesim")
    for name, v in (("M", M), ("N", N), ("K", K), ("rows", rows), ("cols", cols)):
        if int(v) != v or v < 1:
            raise KernelError(f"{name} must be a positive integer, got {v!r}")
    if dataflow == "os":
        # N tile outer, M tile inner; the whole K streams through (T = K)
        n0, nc = _tiles(N, cols)
        m0, mr = _tiles(M, rows)
        grid = np.meshgrid(np.arange(len(n0)), np.arange(len(m0)), indexing="ij")
        ni, mi = (g.ravel() for g in grid)
        f = len(ni)
        return FoldSchedule(dataflow, convention, M, N, K, rows, cols, m0[mi], mr[mi], n0[ni], nc[ni],
                            np.zeros(f, np.int64), np.full(f, K, np.int64), np.ones(f, bool), np.ones(f, bool))
    # ws and is: stationary tile over (K rows) x (N or M columns), streamed dimension chunked
    k0, kr = _tiles(K, rows)
    col_dim, stream_dim = (N, M) if dataflow == "ws" else (M, N)
    c0, cn = _tiles(col_dim, cols)
    s0, sn = _tiles(stream_dim, chunk if (chunk and convention == "machine") else stream_dim)
    grid = np.meshgrid(np.arange(len(s0)), np.arange(len(c0)), np.arange(len(k0)), indexing="ij")
    si, ci, ki = (g.ravel() for g in grid)
    first_k, last_k = ki == 0, ki == len(k0) - 1
    if dataflow == "ws":
        return FoldSchedule(dataflow, convention, M, N, K, rows, cols, s0[si], sn[si], c0[ci], cn[ci], k0[ki], kr[ki], first_k, last_k)
    return FoldSchedule(dataflow, convention, M, N, K, rows, cols, c0[ci], cn[ci], s0[si], sn[si], k0[ki], kr[ki], first_k, last_k)


def scalesim_fold_cycles(dataflow: str, rows: int, cols: int, stream: np.ndarray | int) -> np.ndarray | int:
    """SCALE-Sim's cycles per fold: 2R + C + T - 2 (ws, is: R to shift the tile in), T + R + C - 2 (os)."""
    if dataflow == "os":
        return stream + rows + cols - 2
    return 2 * rows + cols + stream - 2


def fold_patterns(sched: FoldSchedule, layout: Layout, start: np.ndarray, load: np.ndarray | None = None, step: int = 1) -> np.ndarray:
    """The pattern table of a schedule: one row per (fold, operand access kind), see the module docstring.

    ``start[i]`` is the cycle fold i's first vector enters the array (scalesim: the fold's first cycle);
    ``load[i]`` the cycle its stationary tile starts shifting in (machine convention, ws/is). ``step`` is the
    cycles per array step (a PE taking several cycles per MAC at a reduced-rate dtype; 1 for scalesim).
    Columns: start, T, lanes, dl, base, t stride, lane stride (bytes), operand, is_write, step, fold; the
    accesses of a row are at cycle start + (t + dl * lane) * step, address base + t * tstride + lane * lstride.
    """
    R = sched.rows
    L = layout
    f = sched.folds
    T = sched.stream
    start = np.asarray(start, np.int64)
    pats = []

    def add(s, t, lanes, dl, base, ts, ls, op, w, stp, mask=None):
        rows = np.empty((f, 11), np.int64)
        rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], rows[:, 4] = s, t, lanes, dl, base
        rows[:, 5], rows[:, 6], rows[:, 7], rows[:, 8], rows[:, 9] = ts, ls, op, w, stp
        rows[:, 10] = np.arange(f)
        if mask is not None:
            rows[~mask, 1] = -1
        pats.append(rows)

    m0, n0, k0, mr, nc, kr = sched.m0, sched.n0, sched.k0, sched.mr, sched.nc, sched.kr
    a00 = L.a_base + m0 * L.a_rs + k0 * L.a_cs
    b00 = L.b_base + k0 * L.b_rs + n0 * L.b_cs
    c00 = L.c_base + m0 * L.c_rs + n0 * L.c_cs
    scale = sched.convention == "scalesim"
    if scale:
        step = 1
    if sched.dataflow == "os":
        # A[m0+r][k] enters row r at k + r; B[k][n0+c] enters column c at k + c
        add(start, T, mr, 1, a00, L.a_cs, L.a_rs, 0, 0, step)
        add(start, T, nc, 1, b00, L.b_rs, L.b_cs, 1, 0, step)
        # C[m0+r][n0+c] leaves at (T-1) + (R-1-r) + c (scalesim) or T + 2R - 2 - r + c (shifted out bottom row
        # first after the last product at T-1 + r + c); u = mr-1-r counts the used rows from the bottom
        lead = (T + R - 1 - mr) if scale else (T + 2 * R - 1 - mr)
        add(start + lead * step, mr, nc, 1, c00 + (mr - 1) * L.c_rs, -L.c_rs, L.c_cs, 2, 1, step)
    else:
        if sched.dataflow == "ws":  # stationary B (r: k, c: n), streamed A (t: m), out C (t: m, c: n)
            st_base, st_rs, st_cs, st_op, cols_used = b00, L.b_rs, L.b_cs, 1, nc
            sm_base, sm_ts, sm_ls, sm_op = a00, L.a_rs, L.a_cs, 0
            out_ts, out_ls = L.c_rs, L.c_cs
        else:  # is: stationary A (r: k, c: m), streamed B (t: n), out C (t: n, c: m)
            st_base, st_rs, st_cs, st_op, cols_used = a00, L.a_cs, L.a_rs, 0, mr
            sm_base, sm_ts, sm_ls, sm_op = b00, L.b_cs, L.b_rs, 1
            out_ts, out_ls = L.c_cs, L.c_rs
        # the stationary tile shifts in from the top, one row per cycle: row r is pushed at R-1-r (the first
        # pushed ends lowest); u = kr-1-r. SCALE-Sim pushes every column at once; the machine skews column c by
        # c cycles, so each PE's second register is written only after the current tile's wavefront passed it
        ld = start if scale else np.asarray(load, np.int64)
        add(ld + (R - kr), kr, cols_used, 0 if scale else 1, st_base + (kr - 1) * st_rs, -st_rs, st_cs, st_op, 0, 1)
        s = start + R if scale else start
        add(s, T, kr, 1, sm_base, sm_ts, sm_ls, sm_op, 0, step)
        out = s + (R - 1) * step
        if not scale:  # accumulate: read the partial sum the previous K fold left, in the cycle it is written
            add(out, T, cols_used, 1, c00, out_ts, out_ls, 2, 0, step, mask=~sched.first_k)
        add(out, T, cols_used, 1, c00, out_ts, out_ls, 2, 1, step)
    table = np.stack(pats, axis=1).reshape(-1, 11)
    return np.ascontiguousarray(table[table[:, 1] >= 0])


@njit(cache=True)
def _fill(table, p, d, cyc, addr, lane, op, w):
    """Emit patterns from row p, diagonal d on, into the buffers until they are full; return (pos, p, d)."""
    cap = cyc.shape[0]
    pos = 0
    npat = table.shape[0]
    while p < npat:
        s = table[p, 0]
        T = table[p, 1]
        nl = table[p, 2]
        dl = table[p, 3]
        base = table[p, 4]
        ts = table[p, 5]
        ls = table[p, 6]
        o = table[p, 7]
        wr = table[p, 8]
        step = table[p, 9]
        if dl == 0:
            ndiag = T
        else:
            ndiag = T + nl - 1
        while d < ndiag:
            if dl == 0:
                lo = 0
                hi = nl - 1
            else:
                lo = max(0, d - T + 1)
                hi = min(nl - 1, d)
            if pos + (hi - lo + 1) > cap:
                return pos, p, d
            for ln in range(lo, hi + 1):
                t = d - ln * dl
                cyc[pos] = s + d * step
                addr[pos] = base + t * ts + ln * ls
                lane[pos] = ln
                op[pos] = o
                w[pos] = wr
                pos += 1
            d += 1
        p += 1
        d = 0
    return pos, p, d


def trace_chunks(table: np.ndarray, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """Yield the accesses of a pattern table as chunks of ``SYSTOLIC_ACCESS`` (bounded memory)."""
    chunk = max(int(chunk), 1 << 12)
    table = np.ascontiguousarray(table, dtype=np.int64)
    p, d = 0, 0
    while p < table.shape[0]:
        cyc = np.empty(chunk, np.int64)
        addr = np.empty(chunk, np.int64)
        lane = np.empty(chunk, np.int64)
        op = np.empty(chunk, np.int64)
        w = np.empty(chunk, np.int64)
        n, p, d = _fill(table, p, d, cyc, addr, lane, op, w)
        out = np.empty(n, SYSTOLIC_ACCESS)
        out["cycle"], out["addr"], out["lane"] = cyc[:n], addr[:n], lane[:n]
        out["operand"], out["is_write"] = op[:n], w[:n]
        if n:
            yield out


def pattern_counts(table: np.ndarray) -> dict[str, np.ndarray]:
    """Accesses per (operand, read/write) of a pattern table, in closed form (T x lanes per pattern)."""
    n = table[:, 1] * table[:, 2]
    out = np.zeros((3, 2), np.int64)
    np.add.at(out, (table[:, 7], table[:, 8]), n)
    return {"reads": out[:, 0], "writes": out[:, 1]}
