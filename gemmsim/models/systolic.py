"""Systolic-array model: fold timing, fill and drain, stalls on DRAM, SRAM and DRAM traffic of each operand.

``simulate_systolic(machine, M=, N=, K=, dataflow=, convention=, **overrides)`` is the public entry point. It
builds the fold schedule (``gemmsim.kernels.systolic``), times the folds, and counts every operand's traffic:

- ``convention="machine"``: the machine file's hardware. The stationary tile of the next fold is fetched from
  DRAM into a weight FIFO (``weight_fifo_tiles`` deep) and shifted into the PEs' second registers (R cycles,
  column c c cycles late, so a register is written only after the current wavefront has passed it) while the
  current fold streams (``double_buffered_stationary``); the next fold's vectors follow the current one's at once
  (the PEs switch tiles as the new wavefront reaches them, Jouppi et al. 2017), so fold i+1 starts max(T_i, R)
  cycles after fold i (os: max(T_i, R) too, the finished sums shifting out of second registers).
  Partial sums stay in the accumulators across the K folds of one output tile (the streamed dimension is cut
  into chunks of ``accumulator_entries`` (/2 when double buffered) vectors). The streamed operand is read from
  the unified buffer: a whole panel when it fits (fetched from DRAM once and reused by every output tile of the
  chunk), else one tile per fold, double buffered. One DRAM channel serves every transfer in order of issue
  (reads as soon as there is room for them, result write-backs as tiles complete); stalls are the cycles the
  array waits for it (total minus the same schedule with unlimited bandwidth).
- ``convention="scalesim"``: SCALE-Sim v3's numbers (its compute and memory modules, ``CALC`` interface-bandwidth
  mode): folds one after the other with full fill, drain and tile load each (L = 2R + C + T - 2 cycles; os:
  T + R + C - 2), partial sums written out once per K fold, no stalls (CALC sizes the bandwidth so there are
  none), DRAM reads as its estimate-bandwidth read buffer makes them (a buffer refilled in sets of 1% of its
  size; an address hits while it is in the sets added since the last 50-set boundary), and the total reported
  as the index of the last cycle (count - 1). Utilization divides by the count (total + 1), so it stays <= 1;
  SCALE-Sim's own 'Overall Util', which divides by the index, is ``extras['scalesim_overall_util']``.

Counters: total/compute/stall cycles, folds, MACs (= M*N*K), utilization (MACs / (PEs x peak rate x total
cycles), <= 1), mapping efficiency (mean over folds of the PEs a fold maps work to / all PEs), SRAM reads and
writes per operand ("A", "B", "C", in elements), DRAM bytes. Every count has a closed form here and is also
obtained by running the SRAM trace through ``SRAMCounter`` (and ``ScaleSimBuffers``): ``SystolicResult.
trace_counters()``; the tests hold the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from pydantic import ValidationError

from gemmsim import guards
from gemmsim.errors import KernelError, MachineFileError
from gemmsim.kernels.systolic import (
    OPERANDS,
    FoldSchedule,
    fold_patterns,
    fold_schedule,
    pattern_counts,
    scalesim_fold_cycles,
    trace_chunks,
)
from gemmsim.machine import validation_problems
from gemmsim.machine.systolic import DATAFLOWS, SystolicMachine
from gemmsim.trace import CHUNK, Layout
from gemmsim.units import dtype_bytes, parse_bytes

#: SCALE-Sim's read buffers split into 100 sets, 50 of them active (read_buffer_estimate_bw.py, active_buf_frac 0.5)
SCALESIM_SETS = 100
SCALESIM_ACTIVE_SETS = 50

#: overrides that are not machine fields: SCALE-Sim's three SRAM sizes (bytes), for convention="scalesim"
SCALESIM_SRAMS = ("ifmap_sram", "filter_sram", "ofmap_sram")


@dataclass(frozen=True)
class SystolicResult:
    """The counters of one GEMM on a systolic array (cycles are array clock cycles; traffic in elements/bytes)."""

    machine: str
    dataflow: str
    convention: str
    dtype: str
    M: int
    N: int
    K: int
    rows: int
    cols: int
    clock_ghz: float
    folds: int
    fold_grid: tuple
    macs: int
    total_cycles: int
    compute_cycles: int
    stall_cycles: int
    utilization: float
    mapping_efficiency: float
    sram_reads: dict
    sram_writes: dict
    dram_bytes: int
    dram_bytes_by_operand: dict
    native_dataflow: bool
    extras: dict = field(default_factory=dict)
    schedule: FoldSchedule | None = field(default=None, repr=False, compare=False)
    _table: np.ndarray | None = field(default=None, repr=False, compare=False)
    fold_start: np.ndarray | None = field(default=None, repr=False, compare=False)
    fold_load: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def time_s(self) -> float:
        """Modelled time: total cycles / clock."""
        return self.total_cycles / (self.clock_ghz * 1e9)

    def trace(self, chunk: int = CHUNK) -> Iterator[np.ndarray]:
        """The SRAM access trace of every operand (chunks of ``SYSTOLIC_ACCESS``), fold by fold."""
        return trace_chunks(self._table, chunk)

    def trace_counters(self, chunk: int = CHUNK) -> dict:
        """Counters recomputed from the trace (the trace-driven path): SRAM reads/writes, last cycle; scalesim also
        DRAM words per operand and stall cycles through SCALE-Sim's buffers."""
        models = [SRAMCounter()]
        if self.convention == "scalesim":
            models.append(ScaleSimBuffers(_layout(self), self.extras["sram_bytes"], dtype_bytes(self.dtype)))
            models.append(ScaleSimOfmap(self.cols, self.extras["sram_bytes"][2], self.sram_writes["C"]))
        for c in self.trace(chunk):
            for m in models:
                m.feed(c)
        out = models[0].counters()
        if self.convention == "scalesim":
            words = models[1].counters()
            oc = models[2].counters()
            words["C"] = oc["dram_words"]
            out["dram_words"] = words
            out["stall_cycles"] = oc["stall_cycles"]
        return out

    def to_dict(self) -> dict:
        """Plain, JSON-able counters (per-operand dicts kept as dicts)."""
        keys = ("machine", "dataflow", "convention", "dtype", "M", "N", "K", "rows", "cols", "folds", "macs", "total_cycles",
                "compute_cycles", "stall_cycles", "utilization", "mapping_efficiency", "sram_reads", "sram_writes", "dram_bytes",
                "dram_bytes_by_operand", "native_dataflow")
        d = {k: getattr(self, k) for k in keys}
        d["fold_grid"] = list(self.fold_grid)
        d["time_s"] = self.time_s
        d["extras"] = {k: v for k, v in self.extras.items() if k != "sram_bytes"}
        return d


# ---- trace consumers (the trace-driven path) -------------------------------------------------------------------
class SRAMCounter:
    """Counts SRAM reads and writes per operand in a systolic trace, and the last cycle anything moved."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything counted."""
        self._counts = np.zeros(6, np.int64)
        self._last = -1

    def feed(self, chunk: np.ndarray) -> None:
        """Count one chunk of ``SYSTOLIC_ACCESS`` records."""
        if len(chunk):
            idx = chunk["operand"].astype(np.int64) * 2 + chunk["is_write"]
            self._counts += np.bincount(idx, minlength=6)[:6]
            self._last = max(self._last, int(chunk["cycle"].max()))

    def counters(self) -> dict:
        """{'sram_reads': {A, B, C}, 'sram_writes': {A, B, C}, 'last_cycle': int}."""
        c = self._counts.reshape(3, 2)
        return {
            "sram_reads": {op: int(c[i, 0]) for i, op in enumerate(OPERANDS)},
            "sram_writes": {op: int(c[i, 1]) for i, op in enumerate(OPERANDS)},
            "last_cycle": self._last,
        }


@njit(cache=True)
def _epoch_buffer(idx, last_set, state):
    """SCALE-Sim's estimate-bandwidth read buffer over one operand's reads, in order (state mutated).

    state = [current set id, elements in the current set, elements per set, misses]. An element hits when it
    was added in the current set or in a set at or after the last multiple of 50 (the active window SCALE-Sim
    keeps); a miss adds it to the current set, which closes after ``elements per set`` misses.
    """
    cur = state[0]
    n_in = state[1]
    per = state[2]
    misses = state[3]
    for i in range(idx.shape[0]):
        e = idx[i]
        window = (cur // 50) * 50
        if last_set[e] >= window:
            continue
        last_set[e] = cur
        misses += 1
        n_in += 1
        if n_in == per:
            n_in = 0
            cur += 1
    state[0] = cur
    state[1] = n_in
    state[3] = misses


@njit(cache=True)
def _ofmap_buffer(lines, state, pads, C, total, drain):
    """SCALE-Sim's ofmap write buffer (write_buffer.py) over the C writes, in order (state mutated).

    ``lines[i]`` is the demand line (no-stall cycle) of the i-th write. The buffer fills lines of C words;
    once more than ``drain`` words wait it forces the partial line out (padded with idle slots) and drains
    ceil(drain / C) lines to DRAM, one per cycle, counting every slot of the block but the idle ones of its
    last line; a write that finds no free word while a drain is on waits for it (a stall of the whole array).
    state = [words in the current line, free words, drain end cycle, stall cycles, lines, first undrained
    line, DRAM words, current demand line, stall of the current line].
    """
    line_idx, free, drain_end, stall = state[0], state[1], state[2], state[3]
    nlines, dstart, access, cur, offset = state[4], state[5], state[6], state[7], state[8]
    thresh = total - drain
    ltf = (drain + C - 1) // C
    for i in range(lines.shape[0]):
        ln = lines[i]
        if ln != cur:
            stall += offset
            offset = 0
            cur = ln
        cc = ln + stall + offset
        line_idx += 1
        free -= 1
        if line_idx == C:
            pads[nlines] = 0
            nlines += 1
            line_idx = 0
        if cc < drain_end:
            if free <= 0:
                offset += drain_end - cc
        elif free < thresh:
            if line_idx != 0:
                pads[nlines] = C - line_idx
                nlines += 1
                line_idx = 0
            end = min(dstart + ltf, nlines)
            if end > dstart:
                data = (end - dstart) * C - pads[end - 1]
                access += data
                free += data
                drain_end = cc + (end - dstart) - 1
                dstart = end
    state[0], state[1], state[2], state[3] = line_idx, free, drain_end, stall
    state[4], state[5], state[6], state[7], state[8] = nlines, dstart, access, cur, offset


@njit(cache=True)
def _ofmap_flush(state, pads, C, drain):
    """Drain what is left at the end (empty_all_buffers): returns the DRAM words written in all."""
    line_idx, nlines, dstart, access = state[0], state[4], state[5], state[6]
    if line_idx != 0:
        pads[nlines] = C - line_idx
        nlines += 1
    ltf = (drain + C - 1) // C
    while dstart < nlines:
        end = min(dstart + ltf, nlines)
        access += (end - dstart) * C - pads[end - 1]
        dstart = end
    return access


class ScaleSimOfmap:
    """SCALE-Sim's ofmap (C) SRAM in CALC mode (write port bandwidth = array columns): DRAM words and stalls."""

    def __init__(self, cols: int, sram_bytes: int, max_writes: int) -> None:
        self.C = int(cols)
        self.total = int(sram_bytes)
        self.drain = self.total - int(math.ceil(self.total * 0.5))
        self.pads = np.zeros(max_writes + 2, np.int64)
        self.state = np.array([0, self.total, 0, 0, 0, 0, 0, -1, 0], np.int64)

    def feed(self, chunk: np.ndarray) -> None:
        """Run one chunk's C writes (cycle = demand line) through the buffer."""
        w = chunk["cycle"][(chunk["operand"] == 2) & (chunk["is_write"] == 1)]
        if len(w):
            _ofmap_buffer(np.ascontiguousarray(w, np.int64), self.state, self.pads, self.C, self.total, self.drain)

    def counters(self) -> dict:
        """{'dram_words': words written to DRAM, 'stall_cycles': cycles the array waited for the buffer}."""
        st = self.state.copy()
        return {"dram_words": int(_ofmap_flush(st, self.pads.copy(), self.C, self.drain)), "stall_cycles": int(st[3] + st[8])}


class ScaleSimBuffers:
    """SCALE-Sim's ifmap (A) and filter (B) read buffers in CALC mode: DRAM reads per operand.

    ``sram_bytes`` = (ifmap, filter, ofmap) sizes in bytes; SCALE-Sim's word is one byte, so a buffer of S
    bytes holds S elements, in 100 sets of floor(S / 100).
    """

    def __init__(self, layout: Layout, sram_bytes: tuple, elem: int = 1) -> None:
        self.layout = layout
        self.elem = elem
        self.sizes = (layout.M * layout.K, layout.K * layout.N)
        self.per_set = tuple(int(b) // SCALESIM_SETS for b in sram_bytes[:2])
        self.reset()

    def reset(self) -> None:
        """Empty both buffers."""
        self._last = [np.full(n, -1, np.int64) for n in self.sizes]
        self._state = [np.array([0, 0, p, 0], np.int64) for p in self.per_set]

    def feed(self, chunk: np.ndarray) -> None:
        """Run one chunk's A and B reads through the buffers (in trace order)."""
        reads = chunk["is_write"] == 0
        bases = (self.layout.a_base, self.layout.b_base)
        for op in (0, 1):
            sel = chunk["addr"][reads & (chunk["operand"] == op)].astype(np.int64)
            if len(sel):
                _epoch_buffer((sel - bases[op]) // self.elem, self._last[op], self._state[op])

    def counters(self) -> dict:
        """DRAM words read per operand: {'A': ..., 'B': ...}."""
        return {"A": int(self._state[0][3]), "B": int(self._state[1][3])}


# ---- timing of the machine convention --------------------------------------------------------------------------
@njit(cache=True)
def _machine_timing(os_flow, T, ucols, f1_bytes, f1_free, f2_bytes, f2_free, out_bytes, first_k, R, C, step, bpc,
                    fifo, dbl_stat, dbl_acc, start, load, end):
    """Start, load and end cycle of every fold; returns the total cycles (the last write-back included).

    ws/is (os_flow False): fetch 1 is the stationary tile (issued when a FIFO slot frees: when tile i-fifo moved
    into the array), fetch 2 the streamed tile. os: both fetches are streamed panels. A fetch marked free is
    prefetched as early as the channel allows (its panel stays in the buffer); otherwise it waits for the
    buffer slot of fold i-2 (double buffering). The DRAM channel serves requests in order of issue, at bpc
    bytes per cycle (<= 0: unlimited); write-backs issue when an output tile completes.
    """
    F = T.shape[0]
    wq_t = np.empty(F, np.int64)
    wq_b = np.empty(F, np.int64)
    head = 0
    tail = 0
    dram = 0.0
    total = 0
    for i in range(F):
        # issue times of this fold's reads
        if os_flow:
            i1 = 0 if (f1_free[i] or i < 2) else start[i - 2] + T[i - 2] * step
        else:
            i1 = 0 if i < fifo else load[i - fifo]
        i2 = 0 if (f2_free[i] or i < 2) else start[i - 2] + T[i - 2] * step
        first = min(i1, i2) if f2_bytes[i] > 0 else i1
        # write-backs issued before these reads go first
        while head < tail and wq_t[head] <= first:
            dram = max(dram, wq_t[head]) + _xfer(wq_b[head], bpc)
            head += 1
        r1 = 0.0
        r2 = 0.0
        if f2_bytes[i] > 0 and i2 < i1:
            dram = max(dram, i2) + _xfer(f2_bytes[i], bpc)
            r2 = dram
        if f1_bytes[i] > 0:
            dram = max(dram, i1) + _xfer(f1_bytes[i], bpc)
            r1 = dram
        if f2_bytes[i] > 0 and not i2 < i1:
            dram = max(dram, i2) + _xfer(f2_bytes[i], bpc)
            r2 = dram
        ready1 = int(math.ceil(r1))
        ready2 = int(math.ceil(r2))
        if os_flow:
            s = max(ready1, ready2)
            if i > 0:
                if dbl_stat:
                    s = max(s, start[i - 1] + max(T[i - 1] * step, R))
                else:
                    s = max(s, end[i - 1])
            load[i] = s
        else:
            if i == 0:
                shadow = 0
            elif dbl_stat:
                shadow = start[i - 1]
            else:
                shadow = start[i - 1] + (T[i - 1] + R + C - 2) * step
            load[i] = max(ready1, shadow)
            s = max(load[i] + R, ready2)
            if i > 0:
                s = max(s, start[i - 1] + T[i - 1] * step)
                if first_k[i] and not dbl_acc:
                    s = max(s, end[i - 1])
        start[i] = s
        if os_flow:
            end[i] = s + (T[i] + 2 * R + ucols[i] - 2) * step
        else:
            end[i] = s + (T[i] + R + ucols[i] - 2) * step
        total = max(total, end[i])
        if out_bytes[i] > 0:
            wq_t[tail] = end[i]
            wq_b[tail] = out_bytes[i]
            tail += 1
    while head < tail:
        dram = max(dram, wq_t[head]) + _xfer(wq_b[head], bpc)
        head += 1
    return max(total, int(math.ceil(dram)))


@njit(cache=True)
def _xfer(nbytes, bpc):
    if bpc <= 0:
        return 0.0
    return nbytes / bpc


# ---- the public function ---------------------------------------------------------------------------------------
def _apply_overrides(machine: SystolicMachine, overrides: dict) -> tuple[SystolicMachine, dict]:
    fixed = {"schema_version", "kind", "name"}
    allowed = (set(SystolicMachine.model_fields) - fixed) | set(SCALESIM_SRAMS)
    bad = sorted(set(overrides) - allowed)
    if bad:
        raise KernelError(f"unknown override(s) {', '.join(bad)}; allowed: {', '.join(sorted(allowed))}")
    srams = {}
    for k in SCALESIM_SRAMS:
        if overrides.get(k) is not None:
            try:
                srams[k] = parse_bytes(overrides[k])
            except ValueError as exc:
                raise KernelError(f"{k}: {exc}") from None
    upd = {k: v for k, v in overrides.items() if k not in SCALESIM_SRAMS and v is not None}
    if not upd:
        return machine, srams
    if "cols" in upd and "accumulator_width" not in upd:
        upd["accumulator_width"] = upd["cols"]
    data = machine.model_dump()
    data.update(upd)
    try:
        return SystolicMachine.model_validate(data), srams
    except ValidationError as err:
        raise MachineFileError(f"invalid override of machine {machine.name}", problems=validation_problems(err)) from None


def _layout(res) -> Layout:
    return Layout.build(res.M, res.N, res.K, res.dtype)


def simulate_systolic(machine: SystolicMachine, M: int, N: int, K: int, dataflow: str = "ws", convention: str = "machine",
                      dtype: str | None = None, **overrides) -> SystolicResult:
    """Simulate C (M x N) = A (M x K) @ B (K x N) on a systolic array; see the module docstring.

    ``machine`` is what ``gemmsim.load_machine`` returns for a ``kind: systolic`` file. ``dataflow`` is ws, os or
    is (any of them can be simulated; ``native_dataflow`` says whether the machine lists it). ``convention`` is
    "machine" or "scalesim". ``dtype`` is the operands' dtype (default: the array's native one; a dtype the
    MACs do not take is computed in the native one, see ``extras['compute_dtype_note']``). Overrides: any machine
    field (rows, cols, unified_buffer, weight_fifo_tiles, accumulator_entries, dram_bandwidth_gbps,
    double_buffered_stationary, ...) and, for the scalesim convention, SCALE-Sim's SRAM sizes ifmap_sram,
    filter_sram, ofmap_sram in bytes (defaults: half the unified buffer for ifmap and ofmap, the weight FIFO for
    filter).
    """
    if not isinstance(machine, SystolicMachine):
        raise KernelError(f"simulate_systolic needs a systolic machine, got {getattr(machine, 'kind', type(machine).__name__)}")
    if dataflow not in DATAFLOWS:
        raise KernelError(f"unknown dataflow {dataflow!r}; expected one of {', '.join(DATAFLOWS)}")
    if convention not in ("machine", "scalesim"):
        raise KernelError(f"unknown convention {convention!r}; expected machine or scalesim")
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise KernelError(f"{name} must be a positive integer, got {v!r}")
    M, N, K = int(M), int(N), int(K)
    machine, srams = _apply_overrides(machine, overrides)
    asked = dtype or machine.native_dtype
    try:
        dtype_bytes(asked)
    except ValueError as exc:
        raise KernelError(str(exc)) from None
    cdtype = machine.compute_dtype(asked)
    extras: dict = {}
    if cdtype != asked:
        extras["compute_dtype_note"] = f"{machine.name} has no {asked} MACs; computed in {cdtype}"
    R, C = machine.rows, machine.cols
    acc_rows = machine.accumulator_entries // (2 if machine.double_buffered_accumulators else 1)
    guards.check_systolic(dataflow, M, N, K, R, C, None if convention == "scalesim" else acc_rows,
                          f"systolic {dataflow} M={M} N={N} K={K} on {machine.name}")
    if convention == "scalesim":
        return _simulate_scalesim(machine, M, N, K, dataflow, cdtype, srams, extras)
    return _simulate_machine(machine, M, N, K, dataflow, cdtype, extras, R, C)


def _counts_dict(arr) -> dict:
    return {op: int(arr[i]) for i, op in enumerate(OPERANDS)}


def _result(machine, sched, dtype, total, compute, counts, dram_by_op, extras, table, step, start, load) -> SystolicResult:
    R, C = sched.rows, sched.cols
    macs = sched.macs()
    used = sched.used_rows * sched.used_cols
    fold_grid = tuple(int(x) for x in _fold_grid(sched))
    return SystolicResult(
        machine=machine.name, dataflow=sched.dataflow, convention=sched.convention, dtype=dtype, M=sched.M, N=sched.N,
        K=sched.K, rows=R, cols=C, clock_ghz=machine.clock_ghz, folds=sched.folds, fold_grid=fold_grid, macs=macs,
        total_cycles=int(total), compute_cycles=int(compute), stall_cycles=int(total - compute),
        utilization=macs * step / (R * C * (total + (1 if sched.convention == "scalesim" else 0))),
        mapping_efficiency=float(np.mean(used)) / (R * C),
        sram_reads=_counts_dict(counts["reads"]), sram_writes=_counts_dict(counts["writes"]),
        dram_bytes=int(sum(dram_by_op.values())), dram_bytes_by_operand=dram_by_op,
        native_dataflow=sched.dataflow in machine.dataflows, extras=extras, schedule=sched, _table=table,
        fold_start=start, fold_load=load,
    )


def _fold_grid(sched: FoldSchedule) -> tuple:
    """Folds per dimension, outer to inner (their product is the number of folds)."""
    R, C = sched.rows, sched.cols
    if sched.dataflow == "os":
        return (-(-sched.N // C), -(-sched.M // R))
    chunks = len(np.unique(sched.m0 if sched.dataflow == "ws" else sched.n0))
    col = -(-(sched.N if sched.dataflow == "ws" else sched.M) // C)
    return (chunks, col, -(-sched.K // R))


def _simulate_scalesim(machine, M, N, K, dataflow, dtype, srams, extras) -> SystolicResult:
    R, C = machine.rows, machine.cols
    elem = dtype_bytes(dtype)
    sched = fold_schedule(dataflow, M, N, K, R, C, "scalesim")
    L = scalesim_fold_cycles(dataflow, R, C, sched.stream)
    start = np.concatenate([[0], np.cumsum(L)[:-1]]).astype(np.int64)
    layout = Layout.build(M, N, K, dtype)
    table = fold_patterns(sched, layout, start)
    counts = pattern_counts(table)
    # SCALE-Sim's report: the last cycle index; CALC bandwidth mode never stalls the reads (only a full ofmap
    # buffer can stall the array)
    total = int(L.sum()) - 1
    sram_bytes = (
        srams.get("ifmap_sram", machine.unified_buffer // 2),
        srams.get("filter_sram", machine.weight_fifo_tiles * machine.pes * elem),
        srams.get("ofmap_sram", machine.unified_buffer // 2),
    )
    # DRAM reads: when every element of an operand fits before the buffer's first 50-set boundary each is read
    # once (closed form); otherwise the trace runs through SCALE-Sim's buffer
    words = {}
    need_trace = []
    for op, unique, size in (("A", M * K, sram_bytes[0]), ("B", K * N, sram_bytes[1])):
        per = size // SCALESIM_SETS
        if per == 0 or unique < SCALESIM_ACTIVE_SETS * per:
            words[op] = unique
        else:
            need_trace.append(op)
    if need_trace:
        bufs = ScaleSimBuffers(layout, sram_bytes, elem)
        ops = [OPERANDS.index(o) for o in need_trace]
        sub = table[np.isin(table[:, 7], ops) & (table[:, 8] == 0)]
        for c in trace_chunks(sub):
            bufs.feed(c)
        traced = bufs.counters()
        words.update({o: traced[o] for o in need_trace})
    # C: the write buffer drains only when more than half of it waits; below that every word goes out once
    c_writes = int(counts["writes"][2])
    ofmap = ScaleSimOfmap(C, sram_bytes[2], c_writes)
    if c_writes > ofmap.drain:
        sub = table[(table[:, 7] == 2) & (table[:, 8] == 1)]
        for c in trace_chunks(sub):
            ofmap.feed(c)
        oc = ofmap.counters()
        words["C"], stall = oc["dram_words"], oc["stall_cycles"]
        need_trace.append("C")
    else:
        words["C"], stall = c_writes, 0
    extras.update(
        sram_bytes=sram_bytes,
        dram_words=dict(words),
        dram_words_closed_form=[o for o in OPERANDS if o not in need_trace],
        fold_cycles=int(L[0]) if len(L) else 0,
        scalesim_compute_util=_scalesim_compute_util(sched),
        scalesim_overall_util=sched.macs() / (R * C * (total + stall)) if total + stall else float("inf"),
        scalesim_ofmap_writes_reported=int(counts["writes"][2]) + (sched.folds * (R + C) if dataflow == "os" else 0),
    )
    dram = {op: words[op] * elem for op in OPERANDS}
    return _result(machine, sched, dtype, total + stall, total, counts, dram, extras, table, 1, start, start)


def _scalesim_compute_util(sched: FoldSchedule) -> float:
    """SCALE-Sim's 'Compute Util': mean over folds of MACs / (PEs x its fold length incl. C - 1 extra for ws/is)."""
    R, C, T = sched.rows, sched.cols, sched.stream
    cyc = T + R + C - 2 if sched.dataflow == "os" else 2 * R + 2 * C + T - 3
    return float(np.mean(sched.used_rows * sched.used_cols * T / (R * C * cyc)))


def _simulate_machine(machine, M, N, K, dataflow, dtype, extras, R, C) -> SystolicResult:
    ib = dtype_bytes(dtype)
    ob = dtype_bytes(machine.output_dtype)
    ub = machine.unified_buffer
    step = int(round(1 / machine.mac_dtypes[dtype]))
    acc_rows = machine.accumulator_entries // (2 if machine.double_buffered_accumulators else 1)
    if dataflow == "os":
        sched = fold_schedule("os", M, N, K, R, C, "machine")
        b_panel_fits = bool(2 * K * C * ib + 2 * R * C * ob <= ub)
        a_whole_fits = bool(M * K * ib + 2 * K * C * ib + 2 * R * C * ob <= ub)
        new_n = np.r_[True, sched.n0[1:] != sched.n0[:-1]]
        first_n = sched.n0 == 0
        a_bytes = np.where(first_n | (not a_whole_fits), sched.mr * K * ib, 0)
        b_bytes = np.where(new_n | (not b_panel_fits), K * sched.nc * ib, 0)
        f1, f1_free = b_bytes, np.zeros(sched.folds, bool)
        f2, f2_free = a_bytes, np.full(sched.folds, a_whole_fits)
        by_op = {"A": int(a_bytes.sum()), "B": int(b_bytes.sum())}
        extras.update(a_resident=bool(a_whole_fits), b_panel_resident=bool(b_panel_fits))
    else:
        stream_dim, col_dim = (M, N) if dataflow == "ws" else (N, M)
        chunk = min(stream_dim, acc_rows)
        panel_fits = bool(chunk * K * ib + 2 * chunk * C * ob <= ub)
        if not panel_fits:
            fit = ub // (2 * R * ib + 2 * C * ob)
            if fit < 1:
                raise MachineFileError(
                    f"{machine.name}: unified_buffer of {ub} B cannot hold two {R}-wide streamed vectors and two outputs"
                )
            chunk = min(chunk, fit)
        sched = fold_schedule(dataflow, M, N, K, R, C, "machine", chunk=chunk)
        T = sched.stream
        stat = sched.kr * sched.used_cols * ib
        first_col = (sched.n0 if dataflow == "ws" else sched.m0) == 0
        stream_b = np.where(first_col | (not panel_fits), T * sched.kr * ib, 0)
        f1, f1_free = stat, np.zeros(sched.folds, bool)
        f2, f2_free = stream_b, np.full(sched.folds, panel_fits)
        st_op, sm_op = ("B", "A") if dataflow == "ws" else ("A", "B")
        by_op = {st_op: int(stat.sum()), sm_op: int(stream_b.sum())}
        extras.update(chunk=int(chunk), streamed_panel_resident=bool(panel_fits))
    out = np.where(sched.last_k, sched.mr * sched.nc * ob, 0)
    by_op["C"] = int(out.sum())
    by_op = {op: by_op[op] for op in OPERANDS}
    T = np.ascontiguousarray(sched.stream, np.int64)
    ucols = np.ascontiguousarray(sched.used_cols, np.int64)
    args = (dataflow == "os", T, ucols, np.asarray(f1, np.int64), np.asarray(f1_free, np.bool_), np.asarray(f2, np.int64),
            np.asarray(f2_free, np.bool_), np.asarray(out, np.int64), np.asarray(sched.first_k, np.bool_), R, C, step)
    flags = (machine.weight_fifo_tiles, machine.double_buffered_stationary, machine.double_buffered_accumulators)
    f = sched.folds
    s0, l0, e0 = np.zeros(f, np.int64), np.zeros(f, np.int64), np.zeros(f, np.int64)
    compute = _machine_timing(*args, -1.0, *flags, s0, l0, e0)
    start, load, end = np.zeros(f, np.int64), np.zeros(f, np.int64), np.zeros(f, np.int64)
    total = _machine_timing(*args, float(machine.dram_bytes_per_cycle), *flags, start, load, end)
    table = fold_patterns(sched, Layout.build(M, N, K, dtype), start, load, step)
    counts = pattern_counts(table)
    extras.update(cycles_per_step=step, last_write_cycle=int(end.max()) - 1 if f else 0,
                  dram_time_cycles=int(math.ceil(sum(by_op.values()) / machine.dram_bytes_per_cycle)))
    return _result(machine, sched, dtype, total, compute, counts, by_op, extras, table, step, start, load)




# ---- what each PE holds, cycle by cycle (for explanations) -----------------------------------------------------
def stream_starts(res: SystolicResult) -> np.ndarray:
    """The cycle each fold's first streamed vector enters row 0, column 0 (scalesim: after its R-cycle tile load)."""
    if res.convention == "scalesim" and res.dataflow != "os":
        return res.fold_start + res.rows
    return res.fold_start


def array_state(res: SystolicResult, cycle: int) -> dict:
    """What every PE of the array holds at ``cycle`` (vectorised over the PEs, no loop per PE).

    Returns numpy arrays of shape (rows, cols) unless noted, -1 where nothing:
    ``fold`` (the fold whose operands pass the PE), ``stat_i``/``stat_j`` (indices of the stationary value the PE
    multiplies with: B[k][n] for ws, A[m][k] for is, the C[m][n] it accumulates for os), ``mov_i``/``mov_j``
    (the streamed value passing: A[m][k] for ws and os, B[k][n] for is), ``out_i``/``out_j`` (the C[m][n] whose
    partial sum the PE adds to) and ``depth`` (how many products that partial sum holds after this PE);
    ``shadow_i``/``shadow_j`` (ws/is: the next stationary value shifting in or waiting in the second registers;
    os, machine convention: a finished C[m][n] in the second registers on its way out of the bottom);
    ``phase``: a list of (fold, phase) for the folds active at ``cycle``, phase one of load (its stationary
    tile shifting in), fill (the wavefront entering), steady (every mapped PE busy), drain (the stream has
    entered, the last sums are leaving); (next fold, wait) when the array waits for memory, idle after the end.
    """
    sched = res.schedule
    R, C = res.rows, res.cols
    step = res.extras.get("cycles_per_step", 1)
    r = np.arange(R)[:, None]
    c = np.arange(C)[None, :]
    neg = np.full((R, C), -1, np.int64)
    out = {k: neg.copy() for k in ("fold", "stat_i", "stat_j", "mov_i", "mov_j", "out_i", "out_j", "depth", "shadow_i", "shadow_j")}
    phases = []
    s_all = stream_starts(res)
    T_all = sched.stream
    for f in range(sched.folds):
        s, T = int(s_all[f]), int(T_all[f])
        ur, uc = int(sched.used_rows[f]), int(sched.used_cols[f])
        used = (r < ur) & (c < uc)
        m0, n0, k0 = int(sched.m0[f]), int(sched.n0[f]), int(sched.k0[f])
        # the stationary tile is in place from the cycle this fold's wavefront reaches the PE until the next
        # fold's does (ws/is), or, for os, while the PE accumulates this fold's outputs
        arrive = s + (r + c) * step
        nxt = (int(s_all[f + 1]) + (r + c) * step) if f + 1 < sched.folds else np.full((R, C), np.iinfo(np.int64).max)
        if sched.dataflow == "os":
            held = used & (cycle >= arrive) & (cycle <= s + (T - 1 + r + c) * step)
        else:
            held = used & (cycle >= arrive) & (cycle < nxt)
        d, rem = divmod(cycle - s, step)
        t = d - r - c
        moving = used & (rem == 0) & (t >= 0) & (t < T)
        if sched.dataflow == "ws":
            si, sj = k0 + r, n0 + c
            mi, mj = m0 + t, k0 + r
            oi, oj = m0 + t, n0 + c
            depth = r + 1
        elif sched.dataflow == "is":
            si, sj = m0 + c, k0 + r
            mi, mj = k0 + r, n0 + t
            oi, oj = m0 + c, n0 + t
            depth = r + 1
        else:
            si, sj = m0 + r, n0 + c
            mi, mj = m0 + r, t
            oi, oj = m0 + r, n0 + c
            depth = t + 1
        for key, val, mask in (("stat_i", si, held), ("stat_j", sj, held), ("mov_i", mi, moving), ("mov_j", mj, moving),
                               ("out_i", oi, moving), ("out_j", oj, moving), ("depth", depth, moving), ("fold", f, held | moving)):
            out[key] = np.where(mask, val, out[key])
        busy = int(moving.sum())
        load0 = int(res.fold_load[f]) if res.fold_load is not None else s
        last = s + (T - 1 + ur - 1 + uc - 1 + (R if sched.dataflow == "os" else R - ur)) * step
        if sched.dataflow != "os" and load0 <= cycle:
            # the tile shifts in from the top, one row per cycle after R - kr pushes of padding, each row moving
            # down until it reaches its own PE row; it waits there (shadow registers) until this fold's
            # wavefront reaches the PE and makes it the one in use
            cols = np.arange(C)
            skew = 0 if res.convention == "scalesim" else 1
            for rr in range(ur):
                pushed = load0 + (R - ur) + (ur - 1 - rr) + skew * cols
                there = (cols < uc) & (cycle >= pushed)
                pos = np.where(there, np.minimum(cycle - pushed, rr), 0)
                waiting = there & (cycle < arrive[pos, cols])
                vi, vj = (k0 + rr, n0 + cols) if sched.dataflow == "ws" else (m0 + cols, k0 + rr)
                out["shadow_i"][pos[waiting], cols[waiting]] = np.broadcast_to(vi, cols.shape)[waiting]
                out["shadow_j"][pos[waiting], cols[waiting]] = np.broadcast_to(vj, cols.shape)[waiting]
        if sched.dataflow == "os" and res.convention == "machine":
            # a finished sum moves to the PE's second register, then shifts down its column and out of the
            # bottom, bottom row first: row r leaves at T + 2R - 2 - r + c, one PE row per step before that
            cols = np.arange(C)
            for rr in range(ur):
                done = s + (T - 1 + rr + cols) * step
                leave = s + (T + 2 * R - 2 - rr + cols) * step
                there = (cols < uc) & (cycle > done) & (cycle < leave)
                pos = np.where(there, np.maximum(rr, R - 1 - (leave - 1 - cycle) // step), 0)
                out["shadow_i"][pos[there], cols[there]] = m0 + rr
                out["shadow_j"][pos[there], cols[there]] = (n0 + cols)[there]
        if sched.dataflow != "os" and load0 <= cycle < load0 + R + (0 if res.convention == "scalesim" else uc - 1):
            phases.append((f, "load"))
        if s <= cycle <= last:
            if busy == ur * uc:
                phases.append((f, "steady"))
            elif d < T and busy:
                phases.append((f, "fill"))
            else:
                phases.append((f, "drain"))
    if not phases:
        later = np.nonzero(s_all > cycle)[0]
        if len(later):
            phases.append((int(later[0]), "wait"))
        else:
            phases.append((sched.folds - 1, "write-back" if cycle < res.total_cycles else "idle"))
    out["phase"] = phases
    return out
