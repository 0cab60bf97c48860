"""The GPU memory model's fast paths (issue 17) against its exact ones and the naive reference.

1. The L1 no-hit check (``_l1_rounds`` with ``fifo``): every access taken as a miss, stopped at the first access
   that would hit. On random single-SM streams it must stop exactly where the exact LRU first hits, and where it
   does not stop, give the LRU's masks and counters.
2. The short prefix of a sampled run shares the long run's first rounds (``_run`` with ``n1``): a sampled launch
   must give what the naive reference gives for the first ``n_sim`` and the first ``n1`` blocks, each run alone,
   extrapolated by the model's rule -- with SMs taking the no-hit path and SMs falling back to the LRU.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import gemmsim.models.gpu_memory as gm
from gemmsim.kernels.gpu import KERNELS
from gemmsim.models.gpu_memory import _N_COUNTERS, _l1_rounds, _l1_state, _set_of, simulate_memory
from gemmsim.trace import Layout

_spec = importlib.util.spec_from_file_location("_tgm", Path(__file__).with_name("test_gpu_memory.py"))
_tgm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tgm)
small_machine = _tgm.small_machine


# ---- 1. the no-hit check on single-SM streams --------------------------------------------------------------------

def _stream_args(lines, masks):
    """``_l1_rounds`` arguments (up to the round range) for one SM running one block whose loads are the given line
    accesses (line, sector mask), one instruction each."""
    n = len(lines)
    return (1, 1, np.array([0, 1], np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64),
            np.zeros((1, 3), np.int64), np.zeros(1, np.int64), np.array([n], np.int64), np.arange(n + 1, dtype=np.int64),
            np.zeros(n, np.uint8), np.zeros(n, np.int64), np.array(lines, np.int64), np.array(masks, np.int64)), n


def _lines_of_sets(sets, per_set, rng):
    """Distinct lines grouped by their L1 set: per_set of each."""
    by = {c: [] for c in range(sets)}
    x = int(rng.integers(0, 1 << 30))
    while min(len(v) for v in by.values()) < per_set:
        x += 1
        c = _set_of(x, sets)
        if len(by[c]) < per_set:
            by[c].append(x)
    return by


def _run_both(lines, masks, sets, ways, hsize):
    args, n = _stream_args(lines, masks)
    st = _l1_state(sets, ways)
    out = np.zeros(n, np.uint8)
    c = np.zeros(_N_COUNTERS, np.int64)
    ring = np.zeros((sets, ways), np.int64)
    recent = np.full((sets, hsize), -(ways + 2), np.int32)
    nc = np.zeros(2 * sets, np.int64)
    end = _l1_rounds(0, *args, 0, n, 1, np.zeros(1, np.int64), *st, out, 0, c, False, recent, ring, nc)
    assert end == n
    fout = np.zeros(n, np.uint8)
    fc = np.zeros(_N_COUNTERS, np.int64)
    ring[:] = np.iinfo(np.int64).min
    no = _l1_state(1, 1)
    fend = _l1_rounds(0, *args, 0, n, 1, np.zeros(1, np.int64), *no, fout, 0, fc, True, recent, ring, nc)
    return out, c, fend, fout, fc


@pytest.mark.parametrize("hsize", [4, 1 << 12])  # a tiny hash: nearly every access searches the set's last W lines
def test_no_hit_check_stops_exactly_where_the_lru_first_hits(hsize):
    rng = np.random.default_rng(17)
    outcomes = {True: 0, False: 0}
    for trial in range(200):
        sets = int(rng.choice([1, 2, 4]))
        ways = int(rng.integers(1, 9))
        pool = _lines_of_sets(sets, int(rng.integers(2, 16)) * ways, rng)
        # a stream whose reuses sit around W accesses of their set apart (hit at <= W, miss beyond)
        lines = []
        for _ in range(int(rng.integers(5, 40))):
            c = int(rng.integers(0, sets))
            lines.append(pool[c][int(rng.integers(0, len(pool[c])))])
        masks = [int(rng.integers(1, 16)) for _ in lines]
        out, c, fend, fout, fc = _run_both(lines, masks, sets, ways, hsize)
        # the exact LRU's first access to a line it holds (a hit, though its sectors may still miss)
        first_hit, held = None, {}
        for i, line in enumerate(lines):
            od = held.setdefault(_set_of(line, sets), [])
            if line in od:
                first_hit = i
                break
            od.append(line)
            if len(od) > ways:
                od.pop(0)
        assert (fend < 0) == (first_hit is not None), (trial, first_hit, fend)
        if fend >= 0:  # no access hit: the check's masks and counters are the LRU's
            assert (fout == out).all() and (fc == c).all()
            assert c[gm._C_L1_HIT] == 0
        outcomes[fend >= 0] += 1
    assert outcomes[True] >= 30 and outcomes[False] >= 30, outcomes


@pytest.mark.parametrize("ways", [1, 3, 8])
def test_no_hit_check_boundary_is_w_accesses_of_the_set(ways):
    """Lines of one set round and round: W + 1 of them never hit (each comes back after W others), W of them do."""
    rng = np.random.default_rng(ways)
    for sets in (1, 4):
        pool = _lines_of_sets(sets, ways + 1, rng)[0]
        for k, hits in ((ways + 1, False), (ways, True)):
            lines = pool[:k] * 4
            out, c, fend, fout, fc = _run_both(lines, [15] * len(lines), sets, ways, 1 << 12)
            assert (c[gm._C_L1_HIT] > 0) == hits
            assert (fend < 0) == hits
            if not hits:
                assert (fout == out).all() and (fc == c).all()


# ---- 2. both prefixes of a sampled run in one, against the reference ---------------------------------------------

def _reference_prefix(machine, spec, L, bps, l1_bytes, stagger, nb):
    """``test_gpu_memory.reference`` for the first nb blocks in launch order (a launch of those blocks alone)."""
    return _tgm.reference(machine, spec, L, bps, l1_bytes, stagger, nb)


SAMPLED = [
    # (kernel, dtype, params, shape, bps, l1_bytes, stagger, max_blocks)
    ("tiled_smem", "fp32", {"TILE": 8, "raster": "row"}, (64, 64, 24), 2, 2048, 1.0, 48),
    ("tiled_smem", "fp32", {"TILE": 8, "raster": "grouped", "group_m": 2}, (48, 64, 16), 1, 16384, 0.5, 36),
    ("ijk", "fp32", {"BX": 8, "BY": 4}, (32, 24, 8), 2, 1024, 0.0, 16),  # two whole waves of 8
    ("tensorcore", "fp16", {"BM": 32, "BN": 32, "BK": 32, "WM": 16, "WN": 16, "stages": 2}, (128, 96, 64), 1, 2048, 1.0, 8),  # two whole waves of 4
]


def _check_sampled(name, dtype, params, shape, bps, l1_bytes, stagger, max_blocks, monkeypatch):
    """Compare a sampled run with the two reference prefixes; returns the L1 paths taken ((fifo, completed) per call)."""
    m = small_machine()
    L = Layout.build(*shape, dtype)
    spec = KERNELS[name].spec(params, dtype)
    paths = []
    real = gm._l1_rounds

    def counting(*a):
        pos = real(*a)
        paths.append((bool(a[-4]), pos >= 0))
        return pos

    monkeypatch.setattr(gm, "_l1_rounds", counting)
    got = simulate_memory(m, spec, L, bps, l1_bytes, max_blocks=max_blocks, stagger=stagger).counters
    n_sim, n1, n_total = got["blocks_simulated"], got["blocks_prefix_for_rate"], got["blocks"]
    assert got["sampled"] and 1 <= n1 < n_sim < n_total
    a = _reference_prefix(m, spec, L, bps, l1_bytes, stagger, n_sim)
    b = _reference_prefix(m, spec, L, bps, l1_bytes, stagger, n1)
    rest = (n_total - n_sim) / (n_sim - n1)

    def ext(x, y):
        return float(x) + (float(x) - y) * rest

    ca, cb = a.c, b.c
    assert got["l1_sectors_hit"] == ext(ca["l1_hit"], cb["l1_hit"])
    assert got["l1_sectors_missed"] == ext(ca["l1_miss"], cb["l1_miss"])
    assert got["l2_lookups"] == ext(ca["lookups"], cb["lookups"])
    assert got["l2_read_hits"] == ext(ca["rd_hit"], cb["rd_hit"])
    assert got["l2_read_misses"] == ext(ca["rd_miss"], cb["rd_miss"])
    assert got["l2_sectors_written"] == ext(ca["wr"], cb["wr"])
    for k, op in enumerate("ABC"):
        assert got[f"dram_bytes_read_{op}"] == ext(ca["miss_op"][k], cb["miss_op"][k]) * 32
    assert got["l2_dirty_at_end_bytes"] == ext(a.dirty(), b.dirty()) * 32
    assert got["dram_bytes_written"] == (ext(ca["wb"], cb["wb"]) + ext(a.dirty(), b.dirty())) * 32
    return paths


@pytest.mark.parametrize("name,dtype,params,shape,bps,l1_bytes,stagger,max_blocks", SAMPLED)
def test_sampled_run_matches_two_reference_prefixes(name, dtype, params, shape, bps, l1_bytes, stagger, max_blocks,
                                                    monkeypatch):
    _check_sampled(name, dtype, params, shape, bps, l1_bytes, stagger, max_blocks, monkeypatch)


def test_sampled_cases_take_both_l1_paths(monkeypatch):
    """The cases above exercise the no-hit path where it holds and the LRU where an access hits."""
    seen = set()
    for case in SAMPLED:
        seen |= set(_check_sampled(*case, monkeypatch=monkeypatch))
        monkeypatch.undo()
    assert (True, True) in seen and (True, False) in seen and (False, True) in seen, seen


# ---- 3. random launches: the shared-prefix run and the no-hit path against separate LRU runs --------------------

def _random_launch(rng):
    """Templates of random line accesses (loads through L1, stores, L1-bypassing loads) and blocks shifted by whole
    lines: the arrays ``_run`` takes."""
    n_tpl = int(rng.integers(1, 4))
    pool = int(rng.integers(8, 200))
    ninst, ptr, secs, flags, ops = [], [0], [], [], []
    for _ in range(n_tpl):
        n = int(rng.integers(3, 40))
        ninst.append(n)
        for _ in range(n):
            line = int(rng.integers(0, pool))
            for k in sorted(set(rng.integers(0, 4, int(rng.integers(1, 5))).tolist())):
                secs.append(4 * line + k)
            ptr.append(len(secs))
            flags.append(int(rng.choice([0, 0, 0, 0, 1, 2])))
            ops.append(int(rng.integers(0, 3)))
    nb = int(rng.integers(6, 40))
    blk_tpl = rng.integers(0, n_tpl, nb).astype(np.int64)
    blk_off = 4 * rng.integers(0, pool // 2 + 1, (nb, 3)).astype(np.int64)
    tpl_ninst = np.array(ninst, np.int64)
    tpl_inst0 = np.concatenate([[0], np.cumsum(tpl_ninst)[:-1]]).astype(np.int64)
    inst_ptr = np.array(ptr, np.int64)
    inst_flags = np.array(flags, np.uint8)
    inst_op = np.array(ops, np.int64)
    req_sec = np.array(secs, np.int64)
    lines = []
    for t in range(n_tpl):
        cnt = 0
        for gi in range(tpl_inst0[t], tpl_inst0[t] + ninst[t]):
            if inst_flags[gi] == 0:
                cnt += len({int(x) // 4 for x in req_sec[inst_ptr[gi]:inst_ptr[gi + 1]]})
        lines.append(cnt)
    return blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr, inst_flags, inst_op, req_sec, np.array(lines, np.int64)


def test_shared_prefix_and_no_hit_path_match_separate_lru_runs(monkeypatch):
    rng = np.random.default_rng(11)
    real = gm._l1_rounds

    def lru_only(*a):
        return -1 if a[-4] else real(*a)

    paths = set()

    def counting(*a):
        pos = real(*a)
        paths.add((bool(a[-4]), pos >= 0))
        return pos

    for trial in range(60):
        blk_tpl, blk_off, tpl_inst0, tpl_ninst, inst_ptr, inst_flags, inst_op, req_sec, l1_lines = _random_launch(rng)
        n_sm = int(rng.integers(1, 4))
        n_slots = n_sm * int(rng.integers(1, 4))
        l1_sets = int(rng.choice([1, 2, 4]))
        l1_ways = int(rng.integers(0, 12))
        l2_shape = (int(rng.integers(1, 3)), int(rng.choice([2, 4, 8])), int(rng.integers(1, 5)))
        first_round = (float(rng.random()) * np.arange(n_slots) / n_slots * int(tpl_ninst[blk_tpl[0]])).astype(np.int64)
        nb = blk_tpl.shape[0]
        n1 = int(rng.integers(1, nb))

        def run(k, n1_):
            return gm._run(blk_tpl[:k], blk_off[:k], tpl_inst0, tpl_ninst, inst_ptr, inst_flags, inst_op, req_sec,
                           n_slots, n_sm, l1_sets, l1_ways, l2_shape, 2, l1_lines, first_round, n1_)

        monkeypatch.setattr(gm, "_l1_rounds", counting)
        both = run(nb, n1)
        monkeypatch.setattr(gm, "_l1_rounds", lru_only)
        alone = [run(nb, 0)[0], run(n1, 0)[0]]
        assert len(both) == 2
        for (c, l2), (c_ref, l2_ref) in zip(both, alone):
            assert (c == c_ref).all(), (trial, c, c_ref)
            assert (l2 == l2_ref).all(), trial
    assert {(True, True), (True, False), (False, True)} <= paths, paths


def test_short_run_checks_hits_of_its_own(monkeypatch):
    """One SM, two slots, one set of 2 ways. Block 0 loads line 1, stores W + 2 times, loads line 1 again; block 1
    (second slot, from round 1) loads lines 2-7, four of them in between. With both blocks line 1 is evicted before
    it comes back (no hit: the no-hit path holds); block 0 alone (the short run, n1 = 1) hits it. The short run must
    go on from the check's state at round 1, not from the long run's end (where line 1 is no longer among the last
    W)."""
    W = 2
    secs = [4] + [400 + 4 * k for k in range(W + 2)] + [4] + [8, 12, 16, 20, 24, 28]
    ptr = np.arange(len(secs) + 1, dtype=np.int64)
    flags = np.array([0] + [1] * (W + 2) + [0] + [0] * 6, np.uint8)
    tpl_ninst = np.array([W + 4, 6], np.int64)
    args = (np.array([0, 1], np.int64), np.zeros((2, 3), np.int64), np.array([0, W + 4], np.int64), tpl_ninst, ptr,
            flags, np.zeros(len(secs), np.int64), np.array(secs, np.int64))
    rest = (2, 1, 1, W, (1, 4, 2), 2, np.array([2, 6], np.int64), np.array([0, 1], np.int64))
    real = gm._l1_rounds
    paths = []

    def counting(*a):
        pos = real(*a)
        paths.append((bool(a[-4]), pos >= 0))
        return pos

    monkeypatch.setattr(gm, "_l1_rounds", counting)
    long_run, short_run = gm._run(*args, *rest, 1)
    # the long run passes the check; the short one stops at its hit and the SM runs the LRU
    assert paths[:3] == [(True, True), (True, True), (True, False)] and set(paths[3:]) == {(False, True)}
    assert long_run[0][gm._C_L1_HIT] == 0 and short_run[0][gm._C_L1_HIT] == 1
    monkeypatch.setattr(gm, "_l1_rounds", lambda *a: -1 if a[-4] else real(*a))
    for (c, l2), k in zip((long_run, short_run), (2, 1)):
        c_ref, l2_ref = gm._run(args[0][:k], args[1][:k], *args[2:], *rest, 0)[0]
        assert (c == c_ref).all() and (l2 == l2_ref).all()


def test_an_explicit_sample_is_rounded_up_to_whole_waves(monkeypatch):
    """max_blocks is raised to whole waves of resident blocks, at least ``MIN_SAMPLE_WAVES`` (2): a sample of part of a
    wave leaves out blocks that share the L2 with it. 4 SMs x 2 blocks = 8 a wave, 64 tiles; 0 keeps max_blocks."""
    m = small_machine()
    L = Layout.build(64, 64, 24, "fp32")
    spec = KERNELS["tiled_smem"].spec({"TILE": 8, "raster": "row"}, "fp32")

    def simulated(max_blocks):
        got = simulate_memory(m, spec, L, 2, 2048, max_blocks=max_blocks, stagger=1.0).counters
        return got["blocks_simulated"], got["sampled"]

    assert gm.MIN_SAMPLE_WAVES == 2
    assert simulated(5) == (16, True) and simulated(17) == (24, True) and simulated(60) == (64, False)
    monkeypatch.setattr(gm, "MIN_SAMPLE_WAVES", 1)
    assert simulated(5) == (8, True)
    monkeypatch.setattr(gm, "MIN_SAMPLE_WAVES", 0)
    assert simulated(5) == (5, True)
