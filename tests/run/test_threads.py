"""Threaded packed kernels (seed 000 section 7): per-core streams interleaved round-robin, each core writing only
its part of C, private L1/L2 beside a shared L3, and false sharing where thread borders cut cache lines."""

from __future__ import annotations

import numpy as np
import pytest

from gemmsim.kernels.cpu_packed import INTERLEAVE, KERNELS, buffers, resolve
from gemmsim.machine import load_machine
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.trace import Layout, concat

K_ = KERNELS["packed_micro"]


@pytest.fixture(scope="module")
def haswell():
    return load_machine("haswell")


def run(machine, M, N, K, **params):
    lay = Layout.build(M, N, K, "fp32")
    p = K_.params(**params)
    h = Hierarchy.from_machine(machine, cores=p.threads)
    t = concat(K_.trace(lay, p, machine))
    h.feed(t)
    return t, h.counters(), K_.extra(lay, p, machine), lay


def test_each_core_writes_only_its_rows_of_c(haswell):
    t, _, _, lay = run(haswell, 40, 32, 16, threads=3, KC=8)
    c_stores = t[(t["is_write"] == 1) & (t["addr"] >= lay.c_base) & (t["addr"] < lay.end)]
    rows = (c_stores["addr"].astype(np.int64) - lay.c_base) // lay.c_rs
    # 40 rows = 7 micro-panels of 6 (the last has 4) dealt 2, 2, 3: rows [0, 12), [12, 24), [24, 40).
    for core, (lo, hi) in enumerate([(0, 12), (12, 24), (24, 40)]):
        mine = rows[c_stores["core"] == core]
        assert mine.min() == lo and mine.max() == hi - 1
    assert set(np.unique(t["core"])) == {0, 1, 2}


def test_streams_interleave_round_robin(haswell):
    t, _, _, lay = run(haswell, 48, 64, 64, threads=2, KC=32)
    r = resolve(lay, K_.params(threads=2, KC=32), haswell, True)
    change = np.flatnonzero(np.diff(t["core"].astype(np.int64))) + 1
    runs = np.diff(np.concatenate(([0], change, [len(t)])))
    maxu = max(2 * r.NR, 2 * r.MR, r.MR * r.NR, r.MR + r.NR) + 8
    # Whole units (a packing row, a C tile, k steps) until INTERLEAVE accesses are reached, then the next core.
    assert np.all(runs[:-2] >= INTERLEAVE) and np.all(runs <= INTERLEAVE + maxu)
    assert len(runs) > 100


def test_private_buffers_shared_b_panel(haswell):
    lay = Layout.build(48, 64, 64, "fp32")
    r = resolve(lay, K_.params(threads=2), haswell, True)
    b = buffers(lay, r)
    assert len(b["B"]) == 1 and len(b["A"]) == 2 and b["A"][0] != b["A"][1]
    rn = resolve(lay, K_.params(threads=2, split="n"), haswell, True)
    assert len(buffers(lay, rn)["B"]) == 2


def test_work_splits_evenly_over_private_l1s(haswell):
    _, cn, _, _ = run(haswell, 96, 64, 64, threads=4, KC=32)
    l1 = cn["levels"][0]
    per_core = [c["loads"] + c["stores"] for c in l1["per_core"]]
    assert len(per_core) == 4 and max(per_core) <= 1.1 * min(per_core)
    assert sum(per_core) == l1["loads"] + l1["stores"]
    assert "per_core" not in cn["levels"][-1]  # the L3 is one shared copy


def test_false_sharing_only_where_borders_cut_lines(haswell):
    # split n: two threads own column ranges of C. NR = 16 fp32 = 64 B: every border is a line border, no line of
    # C is written by both cores. NR = 12 (48 B): the border at column 24 (byte 96) cuts a line in every row.
    _, aligned, ex_a, _ = run(haswell, 48, 64, 32, threads=2, split="n", MR=6, NR=16, KC=16)
    _, cut, ex_c, _ = run(haswell, 48, 48, 32, threads=2, split="n", MR=6, NR=12, KC=16)
    assert ex_a["c_lines_shared_by_threads"] == 0 and aligned["levels"][0]["invalidations"] == 0
    assert ex_c["c_lines_shared_by_threads"] == 48
    # Each shared line is taken from the other core at least once per KC panel that stores it (K/KC = 2 panels).
    assert cut["levels"][0]["invalidations"] >= 2 * 48


def test_round_robin_micro_panels_false_share(haswell):
    # split jr (BLIS loop 2): cores 0 and 1 own alternate B micro-panels, so the tile borders between them are
    # written by both at about the same time. NR = 12 fp32: every other border cuts a line (48 B tiles), 96 rows.
    _, cut, ex, _ = run(haswell, 96, 96, 96, threads=2, split="jr", NR=12)
    _, whole, ex16, _ = run(haswell, 96, 96, 96, threads=2, split="jr", NR=16)
    assert ex["c_lines_shared_by_threads"] == 96 * 6  # 7 borders at columns 12, 24, ..., 84: 6 are not line borders
    assert cut["levels"][0]["invalidations"] >= ex["c_lines_shared_by_threads"]
    assert ex16["c_lines_shared_by_threads"] == 0 and whole["levels"][0]["invalidations"] == 0


def test_simulate_cpu_with_threads(haswell):
    from gemmsim.sim.cpu import simulate_cpu

    one = simulate_cpu(haswell, "packed_micro", 96, 96, 96, "fp32")
    four = simulate_cpu(haswell, "packed_micro", 96, 96, 96, "fp32", threads=4)
    assert four["threads"] == 4 and "L1_invalidations" in four
    assert four["flops"] == one["flops"]
    assert four["time_s"] < one["time_s"]
