"""The GPU memory system against a naive reference, closed-form bounds, the coalescing model and the H200.

The reference below is written for clarity, not speed: it materialises every block's trace (no shifted
templates), walks the schedule round by round over all slots (no separate L1 pass), coalesces lanes with
Python sets and keeps each cache set as an OrderedDict. It shares only the model's *definitions* with the
model (the set and home hashes, the SM-to-partition split, the staggered first rounds), so matching it exactly
checks the template shifting, the two-pass L1/L2 schedule, the LRU structures and the counters.
"""

from __future__ import annotations

import csv
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from gemmsim.kernels.gpu import KERNELS, SPACE_GLOBAL
from gemmsim.machine import load_machine
from gemmsim.models.coalesce import global_sectors_batch
from gemmsim.models.gpu_memory import coalesce, l2_partitions, simulate_memory
from gemmsim.trace import Layout

ROOT = Path(__file__).resolve().parents[2]
L2_RASTER = ROOT / "validation" / "h200" / "l2_raster.csv"

M64 = (1 << 64) - 1


def _wrap(x: int) -> int:
    x &= M64
    return x - (1 << 64) if x >= 1 << 63 else x


def set_of(line: int, sets: int) -> int:
    return ((_wrap(line * 0x5851F42D4C957F2D) >> 24) & 0xFFFFFFFFFF) % sets


def home_of(line: int, parts: int) -> int:
    return (_wrap(line * 0x61C8864680B583EB) >> 33) % parts


class RefGPU:
    """Dict-and-list model of the same memory system (see the module docstring)."""

    def __init__(self, machine, l1_bytes: int):
        self.m = machine
        self.n_sm = machine.sms
        self.l1_sets = machine.l1.sets
        self.l1_ways = l1_bytes // (self.l1_sets * 128)
        self.parts = l2_partitions(machine)
        self.l2_sets = machine.l2_sets // self.parts
        self.l2_ways = machine.l2.ways
        self.l1 = {}
        self.l2c = {}
        self.c = dict(l1_hit=0, l1_miss=0, lookups=0, rd_hit=0, rd_miss=0, wr=0, wb=0, miss_op=[0, 0, 0])

    def _l1(self, sm, line, mask):
        if self.l1_ways == 0:
            self.c["l1_miss"] += bin(mask).count("1")
            return mask
        od = self.l1.setdefault((sm, set_of(line, self.l1_sets)), OrderedDict())
        if line in od:
            v = od.pop(line)
            miss = mask & ~v
            od[line] = v | mask
        else:
            miss = mask
            if len(od) >= self.l1_ways:
                od.popitem(last=False)
            od[line] = mask
        self.c["l1_hit"] += bin(mask & ~miss).count("1")
        self.c["l1_miss"] += bin(miss).count("1")
        return miss

    def _part(self, p, line, mask, write):
        od = self.l2c.setdefault((p, set_of(line, self.l2_sets)), OrderedDict())
        if line in od:
            v, d = od.pop(line)
            found = mask & v
            od[line] = (v | mask, d | (mask if write else 0))
            return found
        if len(od) >= self.l2_ways:
            _, (v, d) = od.popitem(last=False)
            self.c["wb"] += bin(d).count("1")
        od[line] = (mask, mask if write else 0)
        return 0

    def access_l2(self, sm, line, mask, write, op):
        home = home_of(line, self.parts) if self.parts > 1 else 0
        if write:
            self.c["wr"] += bin(mask).count("1")
            self._part(home, line, mask, True)
            return
        near = sm * self.parts // self.n_sm
        self.c["lookups"] += bin(mask).count("1")
        found = self._part(near, line, mask, False)
        self.c["rd_hit"] += bin(found).count("1")
        rest = mask & ~found
        if rest and near != home:
            self.c["lookups"] += bin(rest).count("1")
            far = self._part(home, line, rest, False)
            self.c["rd_hit"] += bin(far).count("1")
            rest &= ~far
        self.c["rd_miss"] += bin(rest).count("1")
        self.c["miss_op"][op] += bin(rest).count("1")

    def dirty(self):
        return sum(bin(d).count("1") for od in self.l2c.values() for v, d in od.values())


def reference(machine, spec, L, bps, l1_bytes, stagger, nb=None):
    """The launch through ``RefGPU`` (all blocks, or the first ``nb`` in launch order as a launch of their own)."""
    ref = RefGPU(machine, l1_bytes)
    tm, tn = spec.order(L.M, L.N)
    traces = [spec.block_trace(L, int(a), int(b), spaces=[SPACE_GLOBAL]) for a, b in zip(tm[:nb], tn[:nb])]
    n_slots = machine.sms * bps
    free = [int(stagger * s / n_slots * len(traces[0])) for s in range(n_slots)]
    runs = {s: [] for s in range(n_slots)}
    for b, tr in enumerate(traces):
        s = min(range(n_slots), key=lambda i: (free[i], i))
        runs[s].append((free[s], b))
        free[s] += len(tr)
    end = max(free)
    for r in range(end):
        for s in range(n_slots):
            for start, b in runs[s]:
                tr = traces[b]
                i = r - start
                if 0 <= i < len(tr):
                    break
            else:
                continue
            sm = s % machine.sms
            w = int(tr.width[i])
            sectors = sorted({
                sec for lane in range(32) if (int(tr.mask[i]) >> lane) & 1
                for sec in range(int(tr.addr[i, lane]) // 32, (int(tr.addr[i, lane]) + w - 1) // 32 + 1)
            })
            lines = OrderedDict()
            for sec in sectors:
                lines[sec // 4] = lines.get(sec // 4, 0) | (1 << (sec % 4))
            op = int(tr.operand[i])
            for line, mask in lines.items():
                if tr.is_write[i] or tr.bypass_l1[i]:
                    ref.access_l2(sm, line, mask, bool(tr.is_write[i]), op)
                else:
                    miss = ref._l1(sm, line, mask)
                    if miss:
                        ref.access_l2(sm, line, miss, False, op)
    return ref


def small_machine(sms=4, l2_bytes=32 * 1024, ways=4):
    h = load_machine("h100")
    return h.model_copy(update={"sms": sms, "l2": h.l2.model_copy(update={"size": l2_bytes, "ways": ways})})


CASES = [
    ("tiled_smem", "fp32", {"TILE": 8, "raster": "row"}, (44, 44, 24), 2, 2048, 0.0),
    ("tiled_smem", "fp32", {"TILE": 8, "raster": "column"}, (40, 48, 16), 2, 2048, 1.0),
    ("tiled_smem", "fp32", {"TILE": 8, "raster": "grouped", "group_m": 2}, (48, 40, 16), 1, 4096, 0.5),
    ("jki", "fp32", {"BX": 8, "BY": 4}, (24, 16, 8), 3, 1024, 1.0),
    ("ijk", "fp32", {"BX": 16, "BY": 2}, (20, 36, 6), 2, 0, 0.0),
    ("tensorcore", "fp16", {"BM": 32, "BN": 32, "BK": 32, "WM": 16, "WN": 16, "stages": 2}, (80, 64, 64), 1, 2048, 1.0),
]


@pytest.mark.parametrize("name,dtype,params,shape,bps,l1_bytes,stagger", CASES)
def test_matches_naive_reference(name, dtype, params, shape, bps, l1_bytes, stagger):
    m = small_machine()
    assert l2_partitions(m) == 2  # cc 9.0: near and home partitions are both exercised
    L = Layout.build(*shape, dtype)
    spec = KERNELS[name].spec(params, dtype)
    got = simulate_memory(m, spec, L, bps, l1_bytes, stagger=stagger).counters
    ref = reference(m, spec, L, bps, l1_bytes, stagger)
    c = ref.c
    assert got["l1_sectors_hit"] == c["l1_hit"] and got["l1_sectors_missed"] == c["l1_miss"]
    assert got["l2_lookups"] == c["lookups"] and got["l2_read_hits"] == c["rd_hit"]
    assert got["l2_read_misses"] == c["rd_miss"] and got["l2_sectors_written"] == c["wr"]
    assert got["dram_bytes_read"] == 32 * c["rd_miss"]
    assert [got["dram_bytes_read_A"], got["dram_bytes_read_B"], got["dram_bytes_read_C"]] == [32 * x for x in c["miss_op"]]
    assert got["dram_bytes_written"] == 32 * (c["wb"] + ref.dirty())
    assert not got["sampled"]


def test_single_partition_gpu_matches_reference():
    h = small_machine()
    m = h.model_copy(update={"l2": h.l2.model_copy(update={"partitions": 1})})
    assert l2_partitions(m) == 1
    L = Layout.build(32, 48, 16, "fp32")
    spec = KERNELS["tiled_smem"].spec({"TILE": 8}, "fp32")
    got = simulate_memory(m, spec, L, 2, 1024, stagger=1.0).counters
    ref = reference(m, spec, L, 2, 1024, 1.0)
    assert got["dram_bytes_read"] == 32 * ref.c["rd_miss"] and got["l2_read_hits"] == ref.c["rd_hit"]


def test_coalesced_sectors_agree_with_the_coalescing_model():
    m = load_machine("h200")
    for name, params, dtype in (("jki", {}, "fp32"), ("tiled_smem", {"TILE": 16}, "fp32"), ("tensorcore", {}, "fp16")):
        tr = KERNELS[name].spec(params, dtype).block_trace(Layout.build(128, 128, 64, dtype), 0, 0, spaces=[SPACE_GLOBAL])
        req = coalesce(tr)
        for w in np.unique(tr.width):
            sel = tr.width == w
            ref = global_sectors_batch(m, tr.addr[sel].astype(np.int64), int(w), tr.select(sel).lanes_active())
            assert (req.sectors_per_instruction[sel] == ref).all()


@pytest.mark.parametrize("raster", ["row", "column", "grouped"])
def test_dram_bytes_between_perfect_reuse_and_no_reuse(raster):
    m = load_machine("h100")
    N = 512
    spec = KERNELS["tiled_smem"].spec({"raster": raster}, "fp32")
    got = simulate_memory(m, spec, Layout.build(N, N, N, "fp32"), 2, 224 * 1024).counters
    floor_read = 2 * N * N * 4  # A and B once
    no_reuse_read = 2 * N * N * N // 32 * 4  # every block reads its A and B panels
    assert floor_read <= got["dram_bytes_read"] <= no_reuse_read
    assert got["dram_bytes_read"] == floor_read  # 2 MiB fit in a 50 MB L2: compulsory misses only
    assert got["dram_bytes_written"] == N * N * 4  # C, written back once


def test_tiny_l2_approaches_no_reuse():
    """An L2 smaller than one block's panels gives (almost) no reuse between blocks: bytes near the crude bound."""
    m = small_machine(sms=2, l2_bytes=8 * 1024, ways=4)
    N = 64
    spec = KERNELS["tiled_smem"].spec({"TILE": 8}, "fp32")
    got = simulate_memory(m, spec, Layout.build(N, N, N, "fp32"), 1, 0, stagger=1.0).counters
    no_reuse = 2 * N * N * N // 8 * 4
    assert 0.5 * no_reuse <= got["dram_bytes_read"] <= no_reuse


def test_sampling_is_reported_and_scaled():
    m = load_machine("h100")
    spec = KERNELS["tiled_smem"].spec({}, "fp32")
    L = Layout.build(1024, 1024, 1024, "fp32")
    full = simulate_memory(m, spec, L, 2, 224 * 1024).counters
    part = simulate_memory(m, spec, L, 2, 224 * 1024, max_blocks=528).counters
    assert part["sampled"] and part["blocks_simulated"] == 528 and part["blocks"] == 1024
    assert part["global_requests"] == full["global_requests"]  # scaled by blocks (all blocks alike)
    auto = simulate_memory(m, spec, L, 2, 224 * 1024, budget=300_000).counters
    assert auto["sampled"] and auto["blocks_simulated"] % 264 == 0


# ---- the H200 measurements ------------------------------------------------------------------------------
#: DRAM bytes read must be within this factor of ncu's dram__bytes_read.sum (cold L2, see validation/h200).
DRAM_TOLERANCE = 0.35


def _measured():
    if not L2_RASTER.exists():
        pytest.skip(f"{L2_RASTER} not measured yet")
    with L2_RASTER.open() as f:
        return {(int(r["N"]), r["order"]): r for r in csv.DictReader(f)}


@pytest.mark.parametrize("N,max_blocks", [(1024, None), (3072, 1056)])
def test_dram_bytes_and_order_ranking_against_h200(N, max_blocks):
    """Model vs ncu on the H200 SGEMM of validation/h200/sgemm.cu (60 MiB L2, 2 partitions).

    N = 1024: everything fits, every order reads A + B once (model and measurement). N = 3072 (first 4 waves
    simulated, scaled): A + B = 72 MiB exceed what two 30 MiB partitions hold twice, so row and column orders
    re-read the other operand for every row of tiles and grouped reads far less. Orders whose measured bytes
    differ by less than DRAM_TOLERANCE count as tied (the measurement has row 26 % above column at N = 3072;
    the model, symmetric in A and B, has them within 2 %)."""
    meas = _measured()
    m = load_machine("h200")
    got = {}
    for order in ("row", "column", "grouped"):
        spec = KERNELS["tiled_smem"].spec({"raster": order}, "fp32")
        got[order] = simulate_memory(m, spec, Layout.build(N, N, N, "fp32"), 2, 224 * 1024, max_blocks=max_blocks)["dram_bytes_read"]
        want = float(meas[(N, order)]["dram_bytes_read"])
        assert abs(got[order] / want - 1) <= DRAM_TOLERANCE, (order, got[order], want)
    orders = list(got)
    for a in orders:
        for b in orders:
            ma, mb = float(meas[(N, a)]["dram_bytes_read"]), float(meas[(N, b)]["dram_bytes_read"])
            if ma > mb * (1 + DRAM_TOLERANCE):
                assert got[a] > got[b], (a, b)


# ---- sampling in steady state (issue 11) ------------------------------------------------------------------------
SAMPLING = ROOT / "validation" / "h200" / "round3" / "model_sampling_2048.csv"


def _sampling_rows():
    if not SAMPLING.exists():
        pytest.skip(f"{SAMPLING} not computed yet (python validation/h200/round3/model_sampling.py)")
    return list(csv.DictReader(SAMPLING.open()))


def test_sampled_runs_stored_agree_with_unsampled():
    """N = 2048 on the H200, every kernel and raster order: the default (budget-sampled) run, and in row and column
    order a run of only the first wave of blocks, both extrapolated in steady state, against every block simulated (stored by
    validation/h200/round3/model_sampling.py, ~minutes per case). Scaling the first waves up instead made the
    naive kernel's DRAM bytes ~3x too high (the cold misses of B counted once per wave)."""
    rows = _sampling_rows()
    assert {(r["kernel"], r["order"]) for r in rows} >= {(k, o) for k in ("naive", "tiled_smem", "tensorcore")
                                                         for o in ("row", "column", "grouped")}
    for r in rows:
        full = float(r["unsampled_dram_bytes_read"])
        assert abs(float(r["default_dram_bytes_read"]) / full - 1) <= 0.05, (r["kernel"], r["order"], r)
        # one wave reaches past the first reuse period (a row or column of tiles) in row and column order; in grouped
        # order it ends inside the first GROUP_M group, whose cold misses it cannot tell from the steady state
        if r["order"] != "grouped":
            assert abs(float(r["one_wave_dram_bytes_read"]) / full - 1) <= 0.05, (r["kernel"], r["order"], r)


@pytest.mark.parametrize("kernel,order", [("tiled_smem", "row"), ("tiled_smem", "column"), ("tiled_smem", "grouped"),
                                          ("tensorcore", "row")])
def test_sampling_reproduces_the_stored_run(kernel, order, monkeypatch):
    """The stored one-wave numbers are what the model gives now (fast cases rerun here; the naive kernel's runs
    take minutes and are checked by the script). An explicit sample is two waves by default: one is asked for."""
    from gemmsim.models import gpu_memory
    from gemmsim.sim.gpu import simulate_gpu

    monkeypatch.setattr(gpu_memory, "MIN_SAMPLE_WAVES", 1)

    row = next(r for r in _sampling_rows() if r["kernel"] == kernel and r["order"] == order)
    m = load_machine("h200")
    dtype = row["dtype"]
    got = simulate_gpu(m, kernel, M=2048, N=2048, K=2048, dtype=dtype, raster=order, max_blocks=int(row["wave"]))
    assert got["sampled"] == (int(row["wave"]) < int(row["blocks"]))
    assert got["dram_bytes_read"] == pytest.approx(float(row["one_wave_dram_bytes_read"]), rel=1e-6)  # stored as int
