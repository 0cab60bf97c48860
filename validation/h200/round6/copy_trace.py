"""A warp's copy phase of one k-step as sm_pipeline.copy_phase() tokens, from a kernel's SASS and ncu's per-instruction
executed counts (ncu --page source --csv --print-source sass, raw/ncu_*_source.csv.gz).

The copy phase: in the k-loop (the longest backward branch around HMMA / LDGSTS), the instructions from the block
barrier before the LDGDEPBAR (cp.async.commit_group) up to it -- or, with -DCOPY_CLOCK, between the two clock reads --
of which the warp executes those with an executed count of at least half the barrier's (one per warp and k-step; the
copies of the last S-1 steps are skipped, so the counts are slightly below it). In address order that is the executed
path: every branch in it jumps forward, and a branch is taken when the next executed instruction is not the next
address.
"""
from __future__ import annotations

import csv
import gzip
import re

ALU = ("IADD3", "LOP3", "PLOP3", "R2UR", "ISETP", "UISETP", "LEA", "ISETP", "IMAD", "VIADD", "VIMNMX", "MOV", "SHF", "SGXT", "SEL", "PRMT", "UMOV", "UIADD3",
       "ULEA", "ULOP3", "UISETP", "USHF", "UIMAD", "FLO", "POPC", "IABS", "CS2R")
SLOT = ("BSSY", "LDGDEPBAR", "NOP", "DEPBAR", "WARPSYNC", "BREAK")
REG = re.compile(r"^(U?R\d+|U?P\d)$")


def kernels(path) -> dict:
    """{(BM, BN, BK, WM, WN, S, copy): [dict(addr, sass, executed, samples, stalls)]} from an ncu source-page CSV."""
    out, cur, hdr = {}, None, None
    with gzip.open(path, "rt") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "Kernel Name":
                m = re.search(r"mma_gemm<" + r", ".join([r"\(int\)(\d+)"] * 6) + r", \(bool\)(\d)>", row[1])
                cur = tuple(int(x) for x in m.groups()) if m else row[1]
                out[cur], hdr = [], None
                continue
            if row[0] == "Address":
                hdr = row
                continue
            if hdr is None:
                continue
            d = dict(zip(hdr, row))
            stalls = {h[6:]: float(d[h]) for h in hdr if h.startswith("stall_") and "(Not" not in h and d[h] not in ("", "-")}
            out[cur].append(dict(addr=int(d["Address"], 16), sass=d["Source"].strip(), executed=float(d["Instructions Executed"] or 0),
                                 samples=float(d["Warp Stall Sampling (All Samples)"] or 0), stalls=stalls))
    return out


def kloop(ins: list) -> list:
    index = {x["addr"]: k for k, x in enumerate(ins)}
    loops = []
    for k, x in enumerate(ins):
        b = re.search(r"BRA .*?(0x[0-9a-f]+)", x["sass"])
        if b and int(b.group(1), 16) < x["addr"] and int(b.group(1), 16) in index:
            i0 = index[int(b.group(1), 16)]
            if any("HMMA" in y["sass"] or "LDGSTS" in y["sass"] for y in ins[i0:k + 1]):
                loops.append((i0, k))
    i0, i1 = max(loops, key=lambda x: x[1] - x[0])
    return ins[i0:i1 + 1]


def copy_region(ins: list, clocked: bool = False) -> tuple[list, float]:
    """(the copy phase's instructions in address order, executions per warp and k-step of the loop's barrier)."""
    loop = kloop(ins)
    nstep = max(x["executed"] for x in loop if "BAR.SYNC" in x["sass"])
    if clocked:  # between the two clock reads around load_stage + commit
        ck = [k for k, x in enumerate(loop) if "SR_CLOCKLO" in x["sass"]]
        return loop[ck[0] + 1:ck[1]], nstep
    dep = max(k for k, x in enumerate(loop) if "LDGDEPBAR" in x["sass"])
    bars = [k for k, x in enumerate(loop[:dep]) if "BAR.SYNC" in x["sass"]]
    return loop[(bars[-1] + 1 if bars else 0):dep + 1], nstep


def _regs(op: str) -> list[str]:
    """Registers an operand names: R12.64 -> R12, R13; [R31+0x2800] -> R31; desc[UR6][R12.64] -> UR6, R12, R13."""
    out = []
    for m in re.finditer(r"(U?R|U?P)(\d+)(\.64)?", op):
        kind, n, wide = m.group(1), int(m.group(2)), m.group(3)
        out.append(f"{kind}{n}")
        if wide:
            out.append(f"{kind}{n + 1}")
    return out


def token(sass: str, taken: bool = False) -> str:
    """One SASS instruction as a copy_phase token."""
    guard = ""
    m = re.match(r"^@(!?)(U?P\w+)\s+(.*)$", sass)
    if m:
        if m.group(2) == "PT" and m.group(1) == "!":  # never executes: an issue slot
            return "slot"
        guard, sass = m.group(2), m.group(3)
    op, _, rest = sass.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest else []
    base = op.split(".")[0]
    if base == "BRA":
        return ("brat" if taken else "bra") + (f"<@{guard}" if guard and guard != "PT" else "")
    if base == "BSYNC":
        return "sync"
    if base in SLOT or base in ("BAR", "EXIT"):
        return "slot"
    if base == "LDGSTS":
        kind, dsts, srcs = "ldgsts", [], [r for o in ops for r in _regs(o)]
    else:
        kind = {"S2R": "s2r", "S2UR": "s2ur", "LDC": "ldc", "ULDC": "ldc"}.get(base)
        if kind is None:
            kind = "wide" if op.startswith("IMAD.WIDE") else "alu"
            if base not in ALU:
                raise ValueError(f"copy trace: no kind for {sass!r}")
        dsts = _regs(ops[0]) if ops else []
        if op.startswith("IMAD.WIDE") or op.startswith("LDC.64") or op.startswith("ULDC.64") or op.startswith("CS2R"):
            dsts = [dsts[0], f"{dsts[0][:-len(dsts[0].lstrip('URP'))]}{int(dsts[0].lstrip('URP')) + 1}"] if dsts else []
        k = 1
        # predicate results after the first destination: ISETP P0, PT, ...; LOP3 P0, RZ, ...; IADD3 R, P1, P2, ...; LEA R, P0, ...
        while k < len(ops) and (re.match(r"^U?P(\d|T)$", ops[k]) or (ops[0].startswith("P") and k == 1)) and not op.endswith(".X") \
                and ".X" not in op:
            dsts += _regs(ops[k])
            k += 1
        srcs = [r for o in ops[k:] for r in _regs(o)]
    dsts = [r for r in dsts if REG.match(r)]
    srcs = [r for r in srcs if REG.match(r)]
    if guard and guard != "PT":
        srcs.append("@" + guard)
    return kind + (f"/{','.join(dsts)}" if dsts else "") + (f"<{','.join(srcs)}" if srcs else "")


def trace(region: list, nstep: float) -> str:
    """The executed path of a copy region as tokens (module doc)."""
    run = [x for x in region if x["executed"] >= 0.5 * nstep]
    addrs = [x["addr"] for x in region]
    toks = []
    for k, x in enumerate(run):
        nxt = run[k + 1]["addr"] if k + 1 < len(run) else None
        seq = addrs[addrs.index(x["addr"]) + 1] if addrs.index(x["addr"]) + 1 < len(addrs) else None
        toks.append(token(x["sass"], taken=nxt is not None and nxt != seq))
    return " ".join(toks)
