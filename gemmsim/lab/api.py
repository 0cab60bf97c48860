"""The labs' JSON API: ``answer(lab, params)`` turns a request's query parameters into the models' numbers.

Every number the page shows comes from here, and every number here comes from a gemmsim model called with the
request's inputs; nothing is recomputed in JavaScript:

* ``cache``    -- ``gemmsim.report.explain.explain_case`` walks a GEMM access by access through one cache level
  built from the request (the seed preset: 8x8 fp32, 8 lines of 4 elements, fully associative, LRU);
* ``blocking`` -- ``gemmsim.sim.cpu.simulate_cpu`` runs the ``blocked`` kernel on a shipped CPU machine, for the
  chosen block size and for a sweep of block sizes (working set against each level, traffic, modelled time);
* ``roofline`` -- peaks and bandwidths from the machine files (``gemmsim.machine``), the Transformer layer's GEMMs
  (``gemmsim.analytic.workload.TransformerLayer``) placed by ``gemmsim.timing.gpu.roofline``;
* ``bank``     -- ``gemmsim.models.banks.smem_wavefronts`` for one warp's shared-memory access to a 2-D array;
* ``wave``     -- ``gemmsim.models.waves.tile_quantization`` and ``waves`` for a GEMM's grid, and the staircase.

Requests outside the lab's sizes are refused with a ``LabError`` (a GemmsimError) that says why; the server
answers them with HTTP 400 and the message.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from gemmsim.errors import GemmsimError

#: Largest N of the cache lab (the walk is access by access).
CACHE_MAX_N = 32
#: Most accesses the cache lab walks one by one (the totals always cover the whole case); the default walk is
#: shorter, so that a large cache or N answers in about a second (the seed's 8x8 cases are walked whole).
CACHE_MAX_WALK = 6000
CACHE_DEFAULT_WALK = 2000
#: Most lines a cache-lab cache may have.
CACHE_MAX_LINES = 1024
#: Largest N of the blocking lab, and the most accesses (estimated) its sweep may simulate.
BLOCKING_MAX_N = 160
BLOCKING_MAX_ACCESSES = 1.2e8
#: Most points of the wave lab's staircase.
WAVE_MAX_POINTS = 512

LOOP_ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")
CACHE_ORDERS = LOOP_ORDERS + ("blocked",)
POLICIES = ("lru", "fifo", "random")
BANK_PATTERNS = ("column", "row", "strided")
BANK_WIDTHS = (4, 8, 16)


class LabError(GemmsimError):
    """A lab request the labs refuse: a bad value, or a case too large to answer quickly (the message says which)."""


# ------------------------------------------------------------------------------------------------------
# Parameters


def _int(params: dict, name: str, default: int, lo: int, hi: int, what: str = "") -> int:
    raw = params.get(name, default)
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise LabError(f"{name} must be an integer, got {raw!r}") from None
    if v < lo or v > hi:
        raise LabError(f"{name}={v} is outside {lo}..{hi}" + (f" ({what})" if what else ""))
    return v


def _float(params: dict, name: str, default: float, lo: float, hi: float) -> float:
    raw = params.get(name, default)
    try:
        v = float(str(raw).strip())
    except ValueError:
        raise LabError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(v) or v < lo or v > hi:
        raise LabError(f"{name}={raw} is outside {lo:g}..{hi:g}")
    return v


def _choice(params: dict, name: str, default: str, choices) -> str:
    v = str(params.get(name, default))
    if v not in choices:
        raise LabError(f"{name} must be one of {', '.join(map(str, choices))}; got {v!r}")
    return v


def _machine(name: str, kinds: tuple[str, ...]):
    from gemmsim.machine import load_machine, machine_files

    names = machine_names(kinds)
    if name not in names:
        raise LabError(f"machine must be one of {', '.join(names)} (the shipped {'/'.join(kinds)} machines); got {name!r}")
    return load_machine(machine_files()[name])


def machine_names(kinds: tuple[str, ...]) -> list[str]:
    """Shipped machines of the given kinds, by name (files that do not load are left out)."""
    from gemmsim.machine import load_machine, machine_files

    out = []
    for n, p in machine_files().items():
        try:
            key = (str(p), p.stat().st_mtime_ns)
        except OSError:
            continue
        if key not in _KINDS:
            try:
                _KINDS[key] = load_machine(p).kind
            except GemmsimError:
                _KINDS[key] = None
        if _KINDS[key] in kinds:
            out.append(n)
    return out


_KINDS: dict = {}  # (machine file, mtime) -> kind, or None for a file that does not load


# ------------------------------------------------------------------------------------------------------
# 1. Cache lab


def cache_machine(line_elems: int, lines: int, ways: int, policy: str):
    """The toy machine (seed 000's lab cache) with its one level replaced by ``lines`` lines of ``line_elems`` fp32
    elements, ``ways``-way set associative, ``policy`` replacement."""
    from gemmsim.machine import load_machine, machine_from_dict

    base = load_machine("toy").model_dump(mode="json")
    level = dict(base["caches"][0])
    level.update(size=lines * line_elems * 4, ways=ways, line_bytes=line_elems * 4, replacement=policy)
    base.update(caches=[level], name="lab", description=f"lab cache: {lines} lines of {line_elems} fp32, {ways}-way, {policy}")
    return machine_from_dict(base, source="lab request")


def cache_lab(params: dict) -> dict:
    """Walk an N x N x N fp32 GEMM through one cache level, access by access (``explain_case``)."""
    from gemmsim.report.explain import element_of, explain_case, line_label

    n = _int(params, "N", 8, 1, CACHE_MAX_N, "the cache lab walks small GEMMs")
    order = _choice(params, "order", "ijk", CACHE_ORDERS)
    line = _choice(params, "line", "4", ("1", "2", "4", "8", "16"))
    line = int(line)
    lines = _int(params, "lines", 8, 1, CACHE_MAX_LINES)
    ways = _int(params, "ways", 0, 0, lines, "0 means fully associative")
    ways = ways or lines
    if lines % ways:
        raise LabError(f"ways={ways} does not divide lines={lines}: sets = lines / ways must be whole")
    policy = _choice(params, "policy", "lru", POLICIES)
    block = _int(params, "block", 4, 1, CACHE_MAX_N)
    walk = _int(params, "walk", CACHE_DEFAULT_WALK, 1, CACHE_MAX_WALK, "accesses shown one by one")
    kp = {"BM": block, "BN": block, "BK": block} if order == "blocked" else {}
    machine = cache_machine(line, lines, ways, policy)
    e = explain_case(machine, order, n, n, n, "fp32", kp, None, limit=walk)
    lay = e.layout
    lb = line * 4
    ids: dict[int, int] = {}
    table: list[dict] = []

    def lid(addr: int) -> int:
        if addr not in ids:
            ids[addr] = len(table)
            cells = []
            for off in range(0, lb, lay.elem):
                el = element_of(lay, addr + off)
                if el is not None:
                    cells.append([el[0], el[1], el[2]])
            table.append({"addr": addr, "label": line_label(lay, addr, lb), "cells": cells})
        return ids[addr]

    steps, cum_h, cum_m = [], [], []
    h = m = 0
    for s in e.steps:
        el = element_of(lay, s.addr)
        h += s.hits
        m += s.misses
        cum_h.append(h)
        cum_m.append(m)
        outcome = {"hit": 0, "miss": 1}.get(s.outcome, 2)
        after = {str(k): [[lid(a), int(d)] for a, _, d in v] for k, v in s.set_after.items()}
        line_of = lid((s.addr // lb) * lb)
        steps.append([s.op, el[0] if el else "-", el[1] if el else -1, el[2] if el else -1, outcome, line_of,
                      [[lid(a), int(d)] for a, _, d in s.evicted], after])
    totals = e.totals()
    l1 = totals["levels"][0]
    return {
        "lab": "cache",
        "params": {"N": n, "order": order, "line": line, "lines": lines, "ways": ways, "policy": policy, "block": block, "walk": walk},
        "kernel": order,
        "M": e.M, "N": e.N, "K": e.K,
        "cache": {"sets": e.levels[0]["sets"], "ways": e.levels[0]["ways"], "line_bytes": lb, "line_elements": line,
                  "lines": lines, "policy": policy},
        "total_accesses": e.total_accesses,
        "shown": len(e.steps),
        "lines": table,
        "steps": steps,
        "cum_hits": cum_h,
        "cum_misses": cum_m,
        "totals": {"accesses": l1["accesses"], "hits": l1["hits"], "misses": l1["misses"], "hit_rate": l1["hit_rate"],
                   "evictions": l1["evictions"], "writebacks": l1["writebacks"],
                   "memory_line_reads": totals["memory"]["line_reads"], "memory_line_writes": totals["memory"]["line_writes"]},
    }


# ------------------------------------------------------------------------------------------------------
# 2. Blocking lab

BLOCK_SWEEP = (2, 4, 8, 16, 32, 64, 128, 256)


def _blocking_row(machine, n: int, b: int, dtype: str) -> dict:
    key = (machine.model_dump_json(), n, b, dtype)
    if key not in _BLOCKING_MEMO:
        if len(_BLOCKING_MEMO) > 256:
            _BLOCKING_MEMO.clear()
        _BLOCKING_MEMO[key] = _simulate_blocked(machine, n, b, dtype)
    return _BLOCKING_MEMO[key]


_BLOCKING_MEMO: dict = {}  # (machine, N, b, dtype) -> row: the sweep repeats the same cases as the block changes


def _simulate_blocked(machine, n: int, b: int, dtype: str) -> dict:
    from gemmsim.sim.cpu import simulate_cpu

    r = simulate_cpu(machine, "blocked", n, n, n, dtype, BM=b, BN=b, BK=b)
    levels = []
    for c in machine.caches:
        levels.append({
            "name": c.name, "size": c.size, "working_set_fraction": r[f"working_set_fraction_{c.name}"],
            "hit_rate": r[f"{c.name}_hit_rate"], "misses": r[f"{c.name}_misses"], "traffic_bytes": r[f"{c.name}_traffic_bytes"],
        })
    return {"block": b, "working_set_bytes": r["working_set_bytes"], "levels": levels, "dram_bytes": r["dram_bytes"],
            "time_s": r["time_s"], "gflops": r["gflops"], "peak_fraction": r["peak_fraction"], "bound": r["bound"],
            "intensity": r["intensity_flop_per_byte"]}


def blocking_lab(params: dict) -> dict:
    """The ``blocked`` kernel (square blocks) on a shipped CPU: the chosen block and a sweep of block sizes."""
    from gemmsim.units import dtype_bytes

    machine = _machine(str(params.get("machine", "haswell")), ("cpu",))
    n = _int(params, "N", 128, 4, BLOCKING_MAX_N, "the blocking lab simulates every access")
    b = _int(params, "block", 32, 1, n, "a block is at most the matrix")
    dtype = _choice(params, "dtype", "fp32", ("fp64", "fp32"))
    sweep = sorted({x for x in BLOCK_SWEEP if x <= n} | {b})
    from gemmsim.guards import cpu_accesses

    est = cpu_accesses(n, n, n) * len(sweep)  # the size guards' estimate of one case, times the sweep
    if est > BLOCKING_MAX_ACCESSES:
        raise LabError(f"N={n} with {len(sweep)} block sizes needs about {est:.3g} simulated accesses, over the lab's "
                       f"{BLOCKING_MAX_ACCESSES:.3g} (a few seconds); use a smaller N, or `gemmsim run` for large cases")
    rows = [_blocking_row(machine, n, x, dtype) for x in sweep]
    s = dtype_bytes(dtype)
    # the block size whose working set s (3 b^2) equals each level's capacity: where the sweep crosses the level
    crossings = [{"name": c.name, "size": c.size, "block": math.sqrt(c.size / (3 * s))} for c in machine.caches]
    return {
        "lab": "blocking",
        "params": {"machine": machine.name, "N": n, "block": b, "dtype": dtype},
        "case": next(r for r in rows if r["block"] == b),
        "sweep": rows,
        "crossings": crossings,
        "flops": 2.0 * n**3,
        "peak_gflops": machine.peak_gflops(dtype, cores=1),
    }


# ------------------------------------------------------------------------------------------------------
# 3. Roofline lab


def machine_roof(machine, dtype: str) -> tuple[float, float]:
    """(peak GFLOP/s, DRAM GB/s) of a machine for a dtype, from its file: all cores of a CPU, tensor cores of a GPU,
    the array of a systolic machine."""
    kind = machine.kind
    try:
        if kind == "cpu":
            peak = machine.peak_gflops(dtype, cores=machine.cores)
            bw = machine.dram.bandwidth_gbps
        elif kind == "gpu":
            peak = machine.peak_tflops(dtype) * 1e3
            bw = machine.dram.bandwidth_gbps
        else:
            peak = machine.peak_tops(dtype) * 1e3
            bw = machine.dram_bandwidth_gbps
    except (KeyError, ValueError) as err:
        raise LabError(f"{machine.name} has no {dtype} peak: {err}") from None
    return float(peak), float(bw)


def roofline_lab(params: dict) -> dict:
    """A machine's roofline (peak and bandwidth from its file, or the sliders' values) and a Transformer layer's
    GEMMs, prefill and decode, at their ideal intensity (each operand read once, C written once)."""
    from pydantic import ValidationError

    from gemmsim.analytic.workload import TransformerLayer
    from gemmsim.timing.gpu import roofline

    machine = _machine(str(params.get("machine", "h200")), ("cpu", "gpu", "systolic"))
    dtype = _choice(params, "dtype", "bf16", ("fp64", "fp32", "fp16", "bf16", "int8"))
    peak0, bw0 = machine_roof(machine, dtype)
    peak = _float(params, "peak", peak0, 1e-3, 1e8) if params.get("peak") not in (None, "") else peak0
    bw = _float(params, "bw", bw0, 1e-3, 1e7) if params.get("bw") not in (None, "") else bw0
    d = _int(params, "d_model", 4096, 64, 65536)
    heads = _int(params, "heads", 32, 1, 512)
    seq = _int(params, "seq_len", 2048, 1, 1 << 20)
    batch = _int(params, "batch", 1, 1, 4096)
    kv = _int(params, "kv_len", seq, 1, 1 << 20)
    pts = []
    for phase in ("prefill", "decode"):
        try:
            layer = TransformerLayer(d_model=d, heads=heads, seq_len=seq, batch=batch, phase=phase, kv_len=kv, dtype=dtype)
        except ValidationError as err:
            raise LabError("; ".join(e["msg"] for e in err.errors())) from None
        for op in layer.ops():
            inten = op.ideal_intensity(dtype)
            r = roofline(SimpleNamespace(dram=SimpleNamespace(bandwidth_gbps=bw)), op.flops, op.min_bytes(dtype), peak / 1e3)
            pts.append({"phase": phase, "op": op.name, "M": op.M, "N": op.N, "K": op.K, "count": op.count,
                        "flops": op.flops, "bytes": op.min_bytes(dtype), "intensity": inten,
                        "attainable_gflops": r["roofline_tflops"] * 1e3, "bound": r["roofline_bound"],
                        "time_s": op.flops / (r["roofline_tflops"] * 1e12)})
    return {
        "lab": "roofline",
        "params": {"machine": machine.name, "dtype": dtype, "peak": peak, "bw": bw, "d_model": d, "heads": heads,
                   "seq_len": seq, "batch": batch, "kv_len": kv},
        "kind": machine.kind,
        "file_peak_gflops": peak0,
        "file_bw_gbps": bw0,
        "peak_gflops": peak,
        "bw_gbps": bw,
        "ridge": peak / bw,
        "ops": pts,
    }


# ------------------------------------------------------------------------------------------------------
# 4. Bank lab


def bank_addresses(pattern: str, rows: int, cols: int, pad: int, width: int, stride: int, col: int) -> list[int]:
    """Byte addresses of the 32 lanes reading a [rows][cols + pad] array of ``width``-byte elements:
    ``column``: lane t reads element [t mod rows][col + t div rows] (a column, as a transposed tile read does);
    ``row``: lane t reads [t div cols][t mod cols]; ``strided``: lane t reads flat element t x stride."""
    ld = cols + pad
    out = []
    for t in range(32):
        if pattern == "column":
            r, c = t % rows, (col + t // rows) % cols
            e = r * ld + c
        elif pattern == "row":
            r, c = (t // cols) % rows, t % cols
            e = r * ld + c
        else:
            e = t * stride
        out.append(e * width)
    return out


def bank_lab(params: dict) -> dict:
    """One warp's shared-memory load from a 2-D array: wavefronts and conflicts (``smem_wavefronts``), the lanes'
    banks for the diagram, and the wavefronts for paddings 0..8 of the same access."""
    from gemmsim.models.banks import ideal_wavefronts, smem_wavefronts

    machine = _machine(str(params.get("machine", "h200")), ("gpu",))
    pattern = _choice(params, "pattern", "column", BANK_PATTERNS)
    width = int(_choice(params, "width", "4", tuple(map(str, BANK_WIDTHS))))
    rows = _int(params, "rows", 32, 1, 1024)
    cols = _int(params, "cols", 32, 1, 1024)
    pad = _int(params, "pad", 0, 0, 64)
    stride = _int(params, "stride", 1, 0, 4096)
    col = _int(params, "col", 0, 0, cols - 1)
    if (rows * (cols + pad) * width > machine.smem.per_block_optin) or (pattern == "strided" and 31 * stride * width >= machine.smem.per_block_optin):
        raise LabError(f"the array does not fit in {machine.name}'s {machine.smem.per_block_optin} B of shared memory per block")
    sm = machine.smem

    def one(p: int) -> dict:
        addrs = bank_addresses(pattern, rows, cols, p, width, stride, col)
        wf = smem_wavefronts(machine, addrs, width)
        return {"pad": p, "addresses": addrs, "wavefronts": wf}

    cur = one(pad)
    ideal = ideal_wavefronts(width)
    words = [[a // sm.bank_bytes + w for w in range(max(1, width // sm.bank_bytes))] for a in cur["addresses"]]
    return {
        "lab": "bank",
        "params": {"machine": machine.name, "pattern": pattern, "width": width, "rows": rows, "cols": cols, "pad": pad,
                   "stride": stride, "col": col},
        "banks": sm.banks,
        "bank_bytes": sm.bank_bytes,
        "addresses": cur["addresses"],
        "lane_words": words,
        "lane_banks": [[w % sm.banks for w in ws] for ws in words],
        "wavefronts": cur["wavefronts"],
        "ideal": ideal,
        "conflicts": max(0, cur["wavefronts"] - ideal),
        "pads": [{"pad": p, "wavefronts": one(p)["wavefronts"]} for p in range(0, 9)],
    }


# ------------------------------------------------------------------------------------------------------
# 5. Wave lab


def wave_lab(params: dict) -> dict:
    """Tiles, waves and wave efficiency of an M x N output in BM x BN tiles on a GPU, and the staircase of waves
    against N (M fixed) with the current point on it."""
    from gemmsim.models.waves import tile_quantization, waves

    machine = _machine(str(params.get("machine", "a100")), ("gpu",))
    M = _int(params, "M", 2304, 1, 1 << 20)
    N = _int(params, "N", 1664, 1, 1 << 20)
    bm = _int(params, "BM", 256, 8, 1024)
    bn = _int(params, "BN", 128, 8, 1024)
    bps = _int(params, "blocks_per_sm", 1, 1, machine.limits.max_blocks_per_sm)
    tq = tile_quantization(M, N, bm, bn)
    if tq.tiles > 1 << 22:
        raise LabError(f"{tq.tiles} tiles is over the lab's {1 << 22}; use larger tiles or a smaller M x N")
    w = waves(machine, tq.tiles, bps)
    tn = tq.tiles_n
    # the staircase: N from one tile column to past the current point and at least three waves
    tiles_per_col = tq.tiles_m
    need = max(2 * tn, -(-3 * w.wave_size // tiles_per_col) + 1, 8)
    step = max(1, -(-need // WAVE_MAX_POINTS))
    stairs = []
    for k in range(1, need + 1, step):
        nn = k * bn
        q = tile_quantization(M, nn, bm, bn)
        ww = waves(machine, q.tiles, bps)
        stairs.append({"N": nn, "tiles": q.tiles, "waves": ww.waves, "wave_efficiency": ww.wave_efficiency,
                       "waves_fractional": ww.waves_fractional})
    return {
        "lab": "wave",
        "params": {"machine": machine.name, "M": M, "N": N, "BM": bm, "BN": bn, "blocks_per_sm": bps},
        "sms": machine.sms,
        "tiles_m": tq.tiles_m, "tiles_n": tq.tiles_n, "tiles": tq.tiles, "tile_efficiency": tq.efficiency,
        "wave_size": w.wave_size, "waves": w.waves, "waves_fractional": w.waves_fractional, "full_waves": w.full_waves,
        "tail_blocks": w.tail_blocks, "wave_efficiency": w.wave_efficiency,
        "stairs": stairs,
    }


# ------------------------------------------------------------------------------------------------------

LABS = {"cache": cache_lab, "blocking": blocking_lab, "roofline": roofline_lab, "bank": bank_lab, "wave": wave_lab}


def presets() -> dict:
    """What the page's menus offer: machines per lab, loop orders, dtypes, and the labs' limits."""
    return {
        "cpu_machines": [n for n in machine_names(("cpu",)) if n != "toy"],
        "gpu_machines": machine_names(("gpu",)),
        "all_machines": machine_names(("cpu", "gpu", "systolic")),
        "orders": list(CACHE_ORDERS),
        "policies": list(POLICIES),
        "limits": {"cache_max_n": CACHE_MAX_N, "cache_max_walk": CACHE_MAX_WALK, "blocking_max_n": BLOCKING_MAX_N},
    }


def answer(lab: str, params: dict | None = None) -> dict:
    """The JSON answer of one lab for query ``params`` (strings or numbers); LabError / GemmsimError when refused."""
    if lab == "presets":
        return presets()
    if lab not in LABS:
        raise LabError(f"unknown lab {lab!r}; known: {', '.join(LABS)}")
    return LABS[lab](dict(params or {}))
