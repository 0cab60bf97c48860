"""Global-memory coalescing: sectors and lines per warp request by closed form, and exact agreement with
Nsight Compute on an H200 (validation/h200/global_sectors.csv)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.machine import load_machine
from gemmsim.models.coalesce import coalescing, global_lines, global_lines_batch, global_sectors, global_sectors_batch

VALIDATION = Path(__file__).resolve().parents[2] / "validation" / "h200"
LANE = np.arange(32)


@pytest.fixture(scope="module")
def h():
    return load_machine("h200")


@pytest.mark.parametrize("stride, sectors, lines", [(1, 4, 1), (2, 8, 2), (4, 16, 4), (8, 32, 8), (32, 32, 32)])
def test_fp32_strides(h, stride, sectors, lines):
    # 32 lanes x 4 B x stride spread over 128*stride bytes: min(32, 4*stride) sectors, min(32, stride) lines
    a = LANE * 4 * stride
    assert global_sectors(h, a, 4) == sectors and global_lines(h, a, 4) == lines


def test_offsets_widths_broadcast(h):
    assert global_sectors(h, LANE * 4 + 4, 4) == 5 and global_lines(h, LANE * 4 + 4, 4) == 2
    assert global_sectors(h, LANE * 4 + 32, 4) == 4 and global_lines(h, LANE * 4 + 32, 4) == 2
    assert global_sectors(h, LANE * 16, 16) == 16 and global_lines(h, LANE * 16, 16) == 4
    assert global_sectors(h, LANE, 1) == 1
    assert global_sectors(h, np.zeros(32, int), 4) == 1
    c = coalescing(h, LANE * 4 * 8, 4)
    assert (c.sectors, c.bytes_requested, c.bytes_moved) == (32, 128, 1024) and c.efficiency == 0.125
    assert global_sectors(h, LANE * 128, 4, active=LANE < 8) == 8


def test_batch_matches_a_set_count(h):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4096, (1000, 32)) * 4
    active = rng.random((1000, 32)) < 0.8
    want_s = [len({int(x) // 32 for x, on in zip(row, act) if on}) for row, act in zip(a, active)]
    want_l = [len({int(x) // 128 for x, on in zip(row, act) if on}) for row, act in zip(a, active)]
    assert list(global_sectors_batch(h, a, 4, active)) == want_s
    assert list(global_lines_batch(h, a, 4, active)) == want_l


def test_misaligned_is_refused(h):
    with pytest.raises(KernelError, match="aligned"):
        global_sectors(h, LANE * 8 + 4, 8)


def test_exact_agreement_with_ncu_on_h200(h):
    rows = list(csv.DictReader((VALIDATION / "global_sectors.csv").open()))
    assert len(rows) == 29
    for r in rows:
        addrs = np.array([int(x) for x in r["addresses"].split()])
        assert int(r["requests"]) == int(r["instructions"]) == 1
        assert global_sectors(h, addrs, int(r["width"])) == int(r["sectors"]), r["pattern"]
