"""What ``gemmsim simulate`` shows: per level accesses, misses, miss rate, write-backs and the 3C split, and with
``--by-array`` the same per operand (A, B, C, other).

Operands are address ranges. ``gemmsim trace`` writes them beside the trace as ``TRACE.operands.json``; ``simulate``
reads that file when it exists, or takes ``--operand NAME=START:END`` (hexadecimal with ``0x`` or decimal, END
exclusive, repeatable) for a trace from elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

from gemmsim.errors import GemmsimError

SIDECAR_SUFFIX = ".operands.json"


def sidecar_path(trace_path: str | Path) -> Path:
    """Where the operand ranges of a trace file live: ``TRACE.operands.json`` beside it."""
    return Path(str(trace_path) + SIDECAR_SUFFIX)


def write_sidecar(trace_path: str | Path, layout) -> Path:
    """Write the A, B, C address ranges of a ``gemmsim.trace.Layout`` beside its trace file."""
    from gemmsim.models.missclass import ranges_of_layout

    p = sidecar_path(trace_path)
    data = {
        "about": "address ranges of the operands of the trace beside this file (END exclusive), written by gemmsim trace",
        "operands": [{"name": n, "start": lo, "end": hi} for n, lo, hi in ranges_of_layout(layout)],
        "shape": {"M": layout.M, "N": layout.N, "K": layout.K, "dtype": layout.dtype},
    }
    p.write_text(json.dumps(data, indent=1))
    return p


def _int(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise GemmsimError(f"--operand {what}: {text!r} is not an integer (decimal, or hexadecimal with 0x)") from None


def operand_ranges(trace_path: str, specs: list[str]) -> list[tuple[str, int, int]]:
    """Ranges from ``--operand`` flags, else from the trace's sidecar file; [] when there are neither."""
    if specs:
        out = []
        for s in specs:
            name, eq, rng = s.partition("=")
            start, colon, end = rng.partition(":")
            if not eq or not colon or not name.strip():
                raise GemmsimError(f"--operand {s!r}: expected NAME=START:END, e.g. A=0x0:0x40000")
            lo, hi = _int(start, s), _int(end, s)
            if not 0 <= lo < hi:
                raise GemmsimError(f"--operand {s!r}: need 0 <= START < END")
            out.append((name.strip(), lo, hi))
        return out
    p = sidecar_path(trace_path)
    if not p.is_file():
        return []
    try:
        data = json.loads(p.read_text())
        return [(str(o["name"]), int(o["start"]), int(o["end"])) for o in data["operands"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GemmsimError(f"{p}: not an operand-ranges file written by gemmsim trace ({exc})") from None


def classify(levels, trace_chunks, ranges) -> list[dict] | str:
    """The 3C/operand counters of fresh copies of ``levels`` over the trace, or a sentence saying why not."""
    from gemmsim.models.cache import Cache
    from gemmsim.models.missclass import classify_hierarchy

    fresh = []
    for c in levels:
        if c.policy != "lru" or not c.write_allocate or c.copies != 1:
            return f"miss classes need LRU write-allocate levels ({c.name} is {c.policy}{'' if c.write_allocate else ', no-write-allocate'})"
        fresh.append(Cache(name=c.name, sets=c.sets, ways=c.ways, line_bytes=c.line_bytes, policy="lru",
                           write_back=c.write_back, write_allocate=True))  # fmt: skip
    return classify_hierarchy(fresh, trace_chunks, ranges)


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def summary_lines(counters: dict, classes: list[dict] | str | None, by_array: bool) -> list[str]:
    """The readable summary: one row per level (and per operand with ``by_array``), then TLBs and memory."""
    head = ("level", "accesses", "misses", "miss rate", "write-backs", "compulsory", "capacity", "conflict")
    rows = []
    cls = classes if isinstance(classes, list) else None
    for i, lv in enumerate(counters["levels"]):
        acc = lv["loads"] + lv["stores"]
        miss = lv["load_misses"] + lv["store_misses"]
        c3 = cls[i]["total"] if cls else None
        rows.append((lv["name"], f"{acc:,}", f"{miss:,}", _pct(miss / acc) if acc else "-", f"{lv['writebacks']:,}",
                     *((f"{c3['compulsory']:,}", f"{c3['capacity']:,}", f"{c3['conflict']:,}") if c3 else ("-", "-", "-"))))  # fmt: skip
        if by_array and cls:
            for op, c in cls[i]["by_operand"].items():
                if c["accesses"] == 0:
                    continue
                rows.append((f"  {op}", f"{c['accesses']:,}", f"{c['misses']:,}", _pct(c["misses"] / c["accesses"]), "",
                             f"{c['compulsory']:,}", f"{c['capacity']:,}", f"{c['conflict']:,}"))  # fmt: skip
    widths = [max(len(r[j]) for r in [head, *rows]) for j in range(len(head))]
    out = ["  ".join(h.ljust(w) if j == 0 else h.rjust(w) for j, (h, w) in enumerate(zip(head, widths)))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(v.ljust(w) if j == 0 else v.rjust(w) for j, (v, w) in enumerate(zip(r, widths))) for r in rows]
    for tl in counters.get("tlbs", []):
        out.append(f"{tl['name']}: {tl['accesses']:,} lookups, {tl['misses']:,} misses")
    out.append(f"memory: {counters['memory']['line_reads']:,} line reads, {counters['memory']['line_writes']:,} line writes")
    for lv in counters["levels"]:
        if lv["dirty_at_end"]:
            out.append(f"{lv['name']}: {lv['dirty_at_end']:,} lines still dirty at the end (not yet written back)")
    if isinstance(classes, str):
        out.append(f"(no 3C split: {classes})")
    elif cls:
        out.append("compulsory: first touch of the line; capacity: would miss in a fully associative LRU cache of the same "
                   "size too; conflict: the rest (Hill's 3C)")  # fmt: skip
    return out
