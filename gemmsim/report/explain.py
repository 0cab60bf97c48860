"""Explanations of tiny CPU cases: a walk access by access, and where the misses fall.

``explain_case`` replays a case through the machine's real hierarchy (``gemmsim.models.hierarchy.Hierarchy``,
built exactly as ``gemmsim.sim.cpu.simulate_cpu`` builds it), one access at a time for the accesses it shows,
and reports for each: which matrix element it reads or writes, its address, the L1 set, hit or miss, the line
it evicted (and whether that line was dirty, i.e. written back), and the set's contents afterwards in
recency order, as seed 000 section 3 (the 8x8 lab) asks the reader to do by hand. Accesses past the shown
ones are fed in one chunk, which gives the same counters (see ``gemmsim.models.hierarchy``), so the totals
equal those of ``simulate_cpu`` on the same case.

``miss_map`` counts, for every element of A, B and C, how many L1 misses the accesses to it caused (the data
of the miss heatmaps in ``gemmsim.report.figures``). It feeds the real L1 (``gemmsim.models.cache.Cache``) chunks of at
most 256 accesses whose ``core`` field carries the access's position in the chunk: a single-copy cache does
not route on ``core``, and every record it sends on keeps the ``core`` of the access that caused it, so each
line fill (one per allocating miss) names the access that missed. Exact for write-back, write-allocate L1s.

The walk reads the cache only through its public face: ``Cache.lines(copy)`` (which lines a copy holds) and
the counters (``writebacks`` and ``dirty_at_end`` say which evicted line was dirty and which stored line became
dirty). The order shown within a set (most recently used first for LRU, newest first for FIFO, by address for
random) is the order of the walk's own accesses to those lines: ``Cache`` has no accessor for one set's lines in
recency order, nor for a line's dirty bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import ValidationError

from gemmsim.errors import GemmsimError, KernelError
from gemmsim.trace import ACCESS, Layout, LayoutSpec

#: Largest trace ``explain_case`` accepts (accesses); larger cases are refused with a GemmsimError.
MAX_ACCESSES = 1 << 20
#: Most accesses ``explain_case`` walks one by one (``limit=0`` means all, up to this).
MAX_SHOWN = 20_000
#: Largest trace ``miss_map`` maps (accesses); the heatmaps skip larger cases.
MAX_MAP_ACCESSES = 1 << 23
_TAG_CHUNK = 256  # accesses per chunk in miss_map: the core field (u8) numbers them


# ------------------------------------------------------------------------------------------------------
# Addresses -> matrix elements


def element_of(layout: Layout, addr: int) -> tuple[str, int, int] | None:
    """(matrix, row, column) of the element at byte ``addr``, or None outside A, B and C (or in padding)."""
    m = layout.matrix_of(int(addr))
    if m == "-":
        return None
    base, rs, cs, rows, cols = _geometry(layout, m)
    off = int(addr) - base
    if rs >= cs:  # row-major: the row stride is the larger one
        r, rem = divmod(off, rs)
        c = rem // cs
    else:
        c, rem = divmod(off, cs)
        r = rem // rs
    if r >= rows or c >= cols:
        return None
    return m, r, c


def _geometry(layout: Layout, m: str) -> tuple[int, int, int, int, int]:
    if m == "A":
        return layout.a_base, layout.a_rs, layout.a_cs, layout.M, layout.K
    if m == "B":
        return layout.b_base, layout.b_rs, layout.b_cs, layout.K, layout.N
    return layout.c_base, layout.c_rs, layout.c_cs, layout.M, layout.N


def element_label(layout: Layout, addr: int) -> str:
    """``A[i][k]`` for the element at ``addr`` (``?0x..`` outside the matrices: packing buffers, padding)."""
    e = element_of(layout, addr)
    return f"{e[0]}[{e[1]}][{e[2]}]" if e else f"?{int(addr):#x}"


def line_label(layout: Layout, line_addr: int, line_bytes: int) -> str:
    """The elements a cache line holds: ``A[0][0..3]``, ``B[1][6]..B[2][1]`` or ``?0x..``."""
    first = element_of(layout, line_addr)
    elem = layout.elem
    lo = line_addr
    while first is None and lo + elem < line_addr + line_bytes:
        lo += elem
        first = element_of(layout, lo)
    if first is None:
        return f"?{int(line_addr):#x}"
    hi = line_addr + line_bytes - elem
    last = element_of(layout, hi)
    while (last is None or last[0] != first[0]) and hi > lo:
        hi -= elem
        last = element_of(layout, hi)
    m, r0, c0 = first
    _, r1, c1 = last
    if (r0, c0) == (r1, c1):
        return f"{m}[{r0}][{c0}]"
    if r0 == r1:
        return f"{m}[{r0}][{c0}..{c1}]"
    if c0 == c1:
        return f"{m}[{r0}..{r1}][{c0}]"
    return f"{m}[{r0}][{c0}]..{m}[{r1}][{c1}]"


# ------------------------------------------------------------------------------------------------------
# Building a case


def _resolve(machine, kernel: str, M: int, N: int | None, K: int | None, dtype: str, params: dict | None, layout) -> tuple:
    from gemmsim.machine import load_machine, validation_problems
    from gemmsim.sim.cpu import CPU_KERNELS

    if isinstance(machine, str):
        machine = load_machine(machine)
    if getattr(machine, "kind", None) != "cpu":
        raise GemmsimError(f"explain walks CPU caches; machine {getattr(machine, 'name', machine)!r} is a {getattr(machine, 'kind', '?')} machine")
    if kernel not in CPU_KERNELS:
        raise KernelError(f"unknown CPU kernel {kernel!r}; known: {', '.join(sorted(CPU_KERNELS))}")
    N = M if N is None else N
    K = M if K is None else K
    for label, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise GemmsimError(f"{label} must be a positive integer, got {v!r}")
    k = CPU_KERNELS[kernel]
    try:
        p = k.params(**(params or {}))
        spec = layout if isinstance(layout, LayoutSpec) else LayoutSpec(**(layout or {}))
        lay = Layout.build(M, N, K, dtype, spec)
    except ValidationError as err:
        raise KernelError(f"invalid parameters for kernel {kernel!r}", problems=validation_problems(err)) from None
    except (KeyError, ValueError) as err:
        raise KernelError(f"invalid case: {err}") from None
    return machine, k, p, lay


def _collect(chunks, limit: int, what: str) -> np.ndarray:
    parts, n = [], 0
    for c in chunks:
        n += len(c)
        if n > limit:
            raise GemmsimError(
                f"{what} has more than {limit:,} accesses; explain walks tiny cases access by access "
                "(use M, N, K of a few tens, or `gemmsim run` / `gemmsim simulate` for large ones)"
            )
        parts.append(np.array(c, copy=True))
    return np.concatenate(parts) if parts else np.empty(0, dtype=ACCESS)


# ------------------------------------------------------------------------------------------------------
# The walk


@dataclass
class Step:
    """One access of the walk: what it touched and what the L1 did."""

    index: int
    op: str  # "R" or "W"
    addr: int
    size: int
    core: int
    element: str
    sets: list[int]
    hits: int  # L1 lines hit by this access
    misses: int  # L1 lines missed
    served_by: str  # "L1", the level that had the line, or "DRAM"
    evicted: list[tuple[int, str, bool]]  # (line address, elements, dirty) replaced in L1
    set_after: dict[int, list[tuple[int, str, bool]]]  # set -> lines (address, elements, dirty), most recent first
    tlb_misses: int = 0

    @property
    def outcome(self) -> str:
        """'hit', 'miss', or 'hit+miss' for an access that spans lines with different fates."""
        if self.misses and self.hits:
            return "hit+miss"
        return "miss" if self.misses else "hit"

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "index": self.index,
            "op": self.op,
            "element": self.element,
            "addr": self.addr,
            "size": self.size,
            "core": self.core,
            "sets": self.sets,
            "l1": self.outcome,
            "served_by": self.served_by,
            "evicted": [{"addr": a, "line": lab, "dirty": d} for a, lab, d in self.evicted],
            "set_after": {str(s): [{"addr": a, "line": lab, "dirty": d} for a, lab, d in v] for s, v in self.set_after.items()},
            "tlb_misses": self.tlb_misses,
        }


@dataclass
class Explanation:
    """The result of ``explain_case``: the case, the L1 geometry, the shown steps and the totals of the whole case."""

    machine: str
    kernel: str
    M: int
    N: int
    K: int
    dtype: str
    params: dict
    layout: Layout
    levels: list[dict]
    total_accesses: int
    steps: list[Step] = field(default_factory=list)
    counters: dict = field(default_factory=dict)

    def totals(self) -> dict:
        """Per level: accesses, hits, misses, hit rate, write-backs, evictions, dirty at end; memory lines."""
        out = []
        for lv in self.counters["levels"]:
            acc = lv["loads"] + lv["stores"]
            hits = lv["load_hits"] + lv["store_hits"]
            out.append(
                {
                    "name": lv["name"],
                    "accesses": acc,
                    "hits": hits,
                    "misses": acc - hits,
                    "hit_rate": hits / acc if acc else None,
                    "writebacks": lv["writebacks"],
                    "evictions": lv["evictions"],
                    "dirty_at_end": lv["dirty_at_end"],
                }
            )
        return {"levels": out, "memory": self.counters["memory"], "tlbs": self.counters.get("tlbs", [])}

    def to_dict(self) -> dict:
        """One JSON-able object (what ``explain --json`` prints)."""
        L = self.layout
        return {
            "machine": self.machine,
            "kernel": self.kernel,
            "M": self.M,
            "N": self.N,
            "K": self.K,
            "dtype": self.dtype,
            "params": self.params,
            "layout": {"A": L.a_base, "B": L.b_base, "C": L.c_base, "end": L.end, "element_bytes": L.elem},
            "levels": self.levels,
            "total_accesses": self.total_accesses,
            "shown": len(self.steps),
            "accesses": [s.to_dict() for s in self.steps],
            "totals": self.totals(),
        }

    def render(self) -> str:
        """The walk as text: a header, one line per shown access, then the totals."""
        L, l1 = self.layout, self.levels[0]
        pol = f"{l1['policy'].upper()}, {'write-back' if l1['write_back'] else 'write-through'}, {'write-allocate' if l1['write_allocate'] else 'no-write-allocate'}"
        head = [
            f"{self.kernel} on {self.machine}: M={self.M} N={self.N} K={self.K} {self.dtype}"
            + "".join(f", {k}={v}" for k, v in self.params.items()),
            f"{l1['name']}: {l1['sets']} set(s) x {l1['ways']} ways x {l1['line_bytes']} B lines ({pol});"
            f" A at {L.a_base:#x}, B at {L.b_base:#x}, C at {L.c_base:#x}, {L.elem} B per element",
            "set contents after each access, most recently used first (* = dirty)" if l1["policy"] == "lru" else
            "set contents after each access, newest first (* = dirty)",
            "",
        ]
        w_el = max([len(s.element) for s in self.steps] + [7])
        w_ad = max([len(f"{s.addr:#x}") for s in self.steps] + [7])
        w_ev = max([len(_lines(s.evicted)) for s in self.steps] + [7])
        tlb = bool(self.counters.get("tlbs"))
        rows = [f"{'#':>6}  op  {'element':<{w_el}}  {'address':>{w_ad}}  {'set':>4}  {'L1':<8}  {'from':<5}  "
                + ("TLB   " if tlb else "") + f"{'evicted':<{w_ev}}  set after"]
        for s in self.steps:
            sets = ",".join(str(x) for x in s.sets)
            after = " | ".join(_lines(v) for v in s.set_after.values())
            rows.append(
                f"{s.index:>6}  {s.op:<2}  {s.element:<{w_el}}  {s.addr:>#{w_ad}x}  {sets:>4}  {s.outcome:<8}  {s.served_by:<5}  "
                + (f"{'miss' if s.tlb_misses else 'hit':<4}  " if tlb else "")
                + f"{_lines(s.evicted) or '-':<{w_ev}}  {after}"
            )
        tail = [""]
        if len(self.steps) < self.total_accesses:
            tail.append(f"(shown {len(self.steps)} of {self.total_accesses} accesses; --limit 0 shows all; totals are for the whole case)")
        t = self.totals()
        for lv in t["levels"]:
            rate = f"{100 * lv['hit_rate']:.1f}%" if lv["hit_rate"] is not None else "-"
            tail.append(
                f"{lv['name']}: {lv['accesses']} accesses, {lv['hits']} hits, {lv['misses']} misses ({rate} hits), "
                f"{lv['evictions']} evictions, {lv['writebacks']} write-backs, {lv['dirty_at_end']} dirty at the end"
            )
        for tl in t["tlbs"]:
            tail.append(f"{tl['name']}: {tl['accesses']} lookups, {tl['misses']} misses")
        tail.append(f"memory: {t['memory']['line_reads']} line reads, {t['memory']['line_writes']} line writes")
        return "\n".join(head + rows + tail)


def _lines(items: list[tuple[int, str, bool]]) -> str:
    return " ".join(lab + ("*" if d else "") for _, lab, d in items)


class _Contents:
    """What one copy of a cache level holds after each access, from ``Cache.lines`` and the counters."""

    def __init__(self, cache, copy: int, layout: Layout):
        self.cache, self.copy, self.layout = cache, copy, layout
        self.shift = cache.line_bytes.bit_length() - 1
        self.used: dict[int, int] = {}  # line address -> index of the last access that touched it
        self.inserted: dict[int, int] = {}  # line address -> index of the access that brought it in
        self.dirty: set[int] = set()
        self.held = set(int(x) for x in cache.lines(copy))

    def _counters(self) -> dict:
        return self.cache.core_counters()[self.copy] if self.cache.copies > 1 else self.cache.counters()

    def before(self) -> dict:
        """Counters of the copy before an access (pass them to ``after``)."""
        return self._counters()

    def after(self, i: int, addr: int, size: int, store: bool, c0: dict) -> list[tuple[int, str, bool]]:
        """Update after access ``i``; return the lines it evicted as (address, elements, dirty)."""
        c1 = self._counters()
        now = set(int(x) for x in self.cache.lines(self.copy))
        gone = sorted(self.held - now)
        evicted = [(a, line_label(self.layout, a, self.cache.line_bytes), a in self.dirty) for a in gone]
        self.dirty -= set(gone)
        for a in now - self.held:
            self.inserted[a] = i
        touched = [ln << self.shift for ln in range(addr >> self.shift, ((addr + size - 1) >> self.shift) + 1)]
        for a in touched:
            if a in now:
                self.used[a] = i
        # lines that became dirty: the change of dirty_at_end plus the dirty lines that just left
        newly = c1["dirty_at_end"] - c0["dirty_at_end"] + (c1["writebacks"] - c0["writebacks"])
        if store and newly > 0:
            self.dirty |= set([a for a in touched if a in now and a not in self.dirty][:newly])
        self.held = now
        return evicted

    def set_lines(self, s: int) -> list[tuple[int, str, bool]]:
        """Lines of set ``s``: most recently used first (LRU), newest first (FIFO), or by address (random)."""
        lines = [a for a in self.held if (a >> self.shift) % self.cache.sets == s]
        if self.cache.policy == "lru":
            lines.sort(key=lambda a: -self.used.get(a, -1))
        elif self.cache.policy == "fifo":
            lines.sort(key=lambda a: -self.inserted.get(a, -1))
        else:
            lines.sort()
        return [(a, line_label(self.layout, a, self.cache.line_bytes), a in self.dirty) for a in lines]


def _misses(counters: dict) -> int:
    return counters["load_misses"] + counters["store_misses"]


def explain_case(
    machine,
    kernel: str,
    M: int,
    N: int | None = None,
    K: int | None = None,
    dtype: str = "fp32",
    params: dict | None = None,
    layout: LayoutSpec | dict | None = None,
    limit: int = 200,
) -> Explanation:
    """Walk a tiny CPU case access by access through the machine's real hierarchy (see the module docstring).

    ``machine`` is a CPU machine or its name; N and K default to M. The first ``limit`` accesses are walked one
    at a time (``limit=0``: all of them, at most MAX_SHOWN); the rest are fed in one chunk. Raises GemmsimError
    for a non-CPU machine or a case of more than MAX_ACCESSES accesses, KernelError for a bad kernel or parameters.
    """
    from gemmsim.models.hierarchy import Hierarchy

    machine, k, p, lay = _resolve(machine, kernel, M, N, K, dtype, params, layout)
    if not isinstance(limit, int) or limit < 0:
        raise GemmsimError(f"limit must be a non-negative integer, got {limit!r}")
    trace = _collect(k.trace(lay, p, machine), MAX_ACCESSES, f"{kernel} {lay.M}x{lay.N}x{lay.K}")
    n = len(trace)
    shown = n if limit == 0 else min(limit, n)
    if shown > MAX_SHOWN:
        raise GemmsimError(
            f"{kernel} {lay.M}x{lay.N}x{lay.K} has {n:,} accesses; explain prints at most {MAX_SHOWN:,} "
            "(pass --limit N to show the first N and still get the totals of the whole case)"
        )
    h = Hierarchy.from_machine(machine, cores=k.threads(p))
    l1 = h.levels[0]
    shift = l1.line_bytes.bit_length() - 1
    contents: dict[int, _Contents] = {}
    steps = []
    for i in range(shown):
        a = trace[i : i + 1]
        addr, size, core = int(a["addr"][0]), max(1, int(a["size"][0])), int(a["core"][0])
        store = bool(a["is_write"][0])
        copy = core if l1.copies > 1 else 0
        view = contents.setdefault(copy, _Contents(l1, copy, lay))
        sets = sorted({ln % l1.sets for ln in range(addr >> shift, ((addr + size - 1) >> shift) + 1)})
        c0, v0 = h.counters(), view.before()
        h.feed(a)
        c1 = h.counters()
        evicted = view.after(i, addr, size, store, v0)
        lv0, lv1 = c0["levels"], c1["levels"]
        miss = _misses(lv1[0]) - _misses(lv0[0])
        hits = (lv1[0]["load_hits"] + lv1[0]["store_hits"]) - (lv0[0]["load_hits"] + lv0[0]["store_hits"])
        served = lv1[0]["name"]
        if miss:
            served = "DRAM"
            # the line fill is a load at the next level (a dirty victim's write-back is a store there)
            for j in range(1, len(lv1)):
                if lv1[j]["load_hits"] > lv0[j]["load_hits"] and lv1[j]["load_misses"] == lv0[j]["load_misses"]:
                    served = lv1[j]["name"]
                    break
        after = {s: view.set_lines(s) for s in sets}
        tlb_miss = sum(t["misses"] for t in c1.get("tlbs", [])[:1]) - sum(t["misses"] for t in c0.get("tlbs", [])[:1])
        steps.append(
            Step(i, "W" if store else "R", addr, size, core, element_label(lay, addr), sets, hits, miss, served, evicted, after, tlb_miss)
        )
    if shown < n:
        h.feed(trace[shown:])
    levels = [
        {"name": c.name, "sets": c.sets, "ways": c.ways, "line_bytes": c.line_bytes, "policy": c.policy, "write_back": c.write_back, "write_allocate": c.write_allocate}
        for c in h.levels
    ]
    return Explanation(
        machine=machine.name,
        kernel=kernel,
        M=lay.M,
        N=lay.N,
        K=lay.K,
        dtype=dtype,
        params=p.model_dump(mode="json"),
        layout=lay,
        levels=levels,
        total_accesses=n,
        steps=steps,
        counters=h.counters(),
    )


# ------------------------------------------------------------------------------------------------------
# Where the misses fall


@dataclass
class MissMap:
    """L1 misses caused by the accesses to each element: ``A`` (M x K), ``B`` (K x N), ``C`` (M x N) int arrays;
    ``other``: misses of accesses outside the three matrices (packing buffers); ``total``: all L1 misses;
    ``accesses``: accesses replayed."""

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    other: int
    total: int
    accesses: int

    def by_matrix(self) -> dict[str, int]:
        """Misses per matrix (and 'other')."""
        return {"A": int(self.A.sum()), "B": int(self.B.sum()), "C": int(self.C.sum()), "other": int(self.other)}


def miss_map(
    machine,
    kernel: str,
    M: int,
    N: int | None = None,
    K: int | None = None,
    dtype: str = "fp32",
    params: dict | None = None,
    layout: LayoutSpec | dict | None = None,
) -> MissMap:
    """Count the L1 misses of a CPU case per element of A, B and C (see the module docstring for the method).

    Only single-threaded kernels on a write-back, write-allocate L1 (every shipped CPU) can be mapped exactly;
    others raise GemmsimError, as does a trace of more than MAX_MAP_ACCESSES accesses.
    """
    from gemmsim.models.cache import Cache

    machine, k, p, lay = _resolve(machine, kernel, M, N, K, dtype, params, layout)
    if k.threads(p) != 1:
        raise GemmsimError(f"miss_map maps single-threaded kernels; {kernel} runs on {k.threads(p)} cores")
    level = machine.caches[0]
    if not (level.write_back and level.write_allocate):
        raise GemmsimError(f"miss_map needs a write-back, write-allocate L1; {machine.name}'s {level.name} is not")
    cache = Cache.from_level(level)
    maps = {"A": np.zeros((lay.M, lay.K), np.int64), "B": np.zeros((lay.K, lay.N), np.int64), "C": np.zeros((lay.M, lay.N), np.int64)}
    other, n = 0, 0
    tags = np.arange(_TAG_CHUNK, dtype=np.uint8)
    for chunk in k.trace(lay, p, machine):
        n += len(chunk)
        if n > MAX_MAP_ACCESSES:
            raise GemmsimError(f"{kernel} {lay.M}x{lay.N}x{lay.K} has more than {MAX_MAP_ACCESSES:,} accesses; too large to map")
        for s in range(0, len(chunk), _TAG_CHUNK):
            part = np.array(chunk[s : s + _TAG_CHUNK], copy=True)
            part["core"] = tags[: len(part)]
            out = cache.feed(part)
            fills = out[out["is_write"] == 0]  # one line fill per allocating miss, tagged with the access that missed
            if not len(fills):
                continue
            who = fills["core"].astype(np.int64)
            addr = part["addr"][who].astype(np.int64)
            # every line an access misses (several when it spans lines) is charged to the element it addresses
            other += _scatter(lay, addr, maps)
    total = _misses(cache.counters())
    mm = MissMap(maps["A"], maps["B"], maps["C"], other, total, n)
    if sum(mm.by_matrix().values()) != total:
        raise GemmsimError(f"miss_map: mapped {sum(mm.by_matrix().values())} misses but the cache counted {total}")
    return mm


def _scatter(lay: Layout, addr: np.ndarray, maps: dict[str, np.ndarray]) -> int:
    """Add one miss per address to the element it falls on; return how many fell outside A, B and C."""
    other = 0
    for m, base, end in (("A", lay.a_base, lay.b_base), ("B", lay.b_base, lay.c_base), ("C", lay.c_base, lay.end)):
        sel = addr[(addr >= base) & (addr < end)]
        if not len(sel):
            continue
        _, rs, cs, rows, cols = _geometry(lay, m)
        off = sel - base
        if rs >= cs:
            r, c = off // rs, (off % rs) // cs
        else:
            c, r = off // cs, (off % cs) // rs
        ok = (r < rows) & (c < cols)
        np.add.at(maps[m], (r[ok], c[ok]), 1)
        other += int((~ok).sum())
    inside = (addr >= lay.a_base) & (addr < lay.end)
    return other + int((~inside).sum())
