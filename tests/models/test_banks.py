"""Shared-memory wavefronts: closed forms, a naive reference on random instructions, and exact agreement
with Nsight Compute on an H200 (validation/h200/smem_wavefronts.csv, 83 patterns)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.errors import KernelError
from gemmsim.machine import load_machine
from gemmsim.models.banks import bank_conflicts, smem_wavefronts, smem_fewest_wavefronts_batch, smem_wavefronts_batch

VALIDATION = Path(__file__).resolve().parents[2] / "validation" / "h200"
LANE = np.arange(32)


@pytest.fixture(scope="module")
def h():
    return load_machine("h200")


def naive_wavefronts(addrs, width, op="ld", active=None):
    """Reference written from the rules, with sets and dicts: phases of 32/16/8 lanes by width (halved for
    uniform-pair loads), distinct 4-byte words per bank, the worst bank per phase."""
    addrs = [int(a) for a in addrs]
    active = [True] * 32 if active is None else list(active)
    phases = max(1, width // 4)
    pairs_uniform = all(
        active[j] == active[j + 1] and (not active[j] or addrs[j] == addrs[j + 1]) for j in range(0, 32, 2)
    )
    if op == "ld" and phases > 1 and pairs_uniform:
        phases //= 2
    per = 32 // phases
    total = 0
    for p in range(phases):
        banks: dict[int, set] = {}
        for lane in range(p * per, (p + 1) * per):
            if active[lane]:
                for k in range(max(1, width // 4)):
                    word = addrs[lane] // 4 + k
                    banks.setdefault(word % 32, set()).add(word)
        total += max((len(s) for s in banks.values()), default=0)
    return total


@pytest.mark.parametrize(
    "stride, expected",
    [(1, 1), (2, 2), (3, 1), (4, 4), (8, 8), (16, 16), (32, 32), (33, 1), (64, 32)],
)
def test_fp32_strides(h, stride, expected):
    # a stride of s words puts lanes in gcd(s, 32)-way conflict: 32 / (32 / gcd) ... = gcd(s, 32)
    assert smem_wavefronts(h, LANE * 4 * stride, 4) == expected == np.gcd(stride, 32)


def test_padding_fix_of_the_transposed_tile(h):
    # reading a column of float tile[32][32]: every lane in bank c -> 32 wavefronts; tile[32][33]: 1
    for c in (0, 7):
        assert smem_wavefronts(h, (LANE * 32 + c) * 4, 4) == 32
        assert smem_wavefronts(h, (LANE * 33 + c) * 4, 4) == 1
    assert bank_conflicts(h, LANE * 32 * 4, 4) == 31


def test_broadcast_and_wide_accesses(h):
    assert smem_wavefronts(h, np.zeros(32, int), 4) == 1
    assert smem_wavefronts(h, LANE * 8, 8) == 2  # two half-warp phases of 128 B
    assert smem_wavefronts(h, LANE * 16, 16) == 4  # four quarter-warp phases
    assert smem_wavefronts(h, LANE * 16, 8) == 4  # 8-byte stride-2: 2-way conflict in each half
    assert bank_conflicts(h, LANE * 16, 16) == 0
    # measured rule: loads whose lane pairs share an address need half the phases; stores never merge
    assert smem_wavefronts(h, np.zeros(32, int), 8) == 1
    assert smem_wavefronts(h, np.zeros(32, int), 16) == 2
    assert smem_wavefronts(h, (LANE // 2) * 16, 16, op="ld") == 2
    assert smem_wavefronts(h, (LANE // 2) * 16, 16, op="st") == 4
    assert smem_wavefronts(h, LANE, 1) == 1 and smem_wavefronts(h, LANE * 2, 2) == 1


def test_inactive_lanes(h):
    active = LANE < 16
    assert smem_wavefronts(h, LANE * 32 * 4, 4, active=active) == 16
    assert smem_wavefronts(h, LANE * 16, 16, active=active) == 2
    assert bank_conflicts(h, LANE * 16, 16, active=active) == 0
    assert smem_wavefronts(h, LANE * 4, 4, active=np.zeros(32, bool)) == 0


def test_bad_input(h):
    with pytest.raises(KernelError, match="aligned"):
        smem_wavefronts(h, LANE * 4 + 2, 4)
    with pytest.raises(KernelError, match="32 lane addresses"):
        smem_wavefronts(h, np.arange(16) * 4, 4)
    with pytest.raises(KernelError, match="width"):
        smem_wavefronts(h, LANE * 4, 3)
    with pytest.raises(KernelError, match="op"):
        smem_wavefronts(h, LANE * 4, 4, op="rd")


@settings(max_examples=200, deadline=None)
@given(
    width=st.sampled_from([1, 2, 4, 8, 16]),
    span=st.sampled_from([4, 64, 1024]),
    op=st.sampled_from(["ld", "st"]),
    pairs=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_matches_naive_reference(h, width, span, op, pairs, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, span, 32) * width
    if pairs:
        a[1::2] = a[0::2]
    active = rng.random(32) < 0.9
    assert smem_wavefronts(h, a, width, active=active, op=op) == naive_wavefronts(a, width, op, active)


def test_batch_equals_single(h):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (500, 32)) * 8
    a[::3, 1::2] = a[::3, 0::2]  # some instructions with uniform pairs
    batch = smem_wavefronts_batch(h, a, 8)
    assert [smem_wavefronts(h, row, 8) for row in a] == list(batch)


def test_exact_agreement_with_ncu_on_h200(h):
    rows = list(csv.DictReader((VALIDATION / "smem_wavefronts.csv").open()))
    assert len(rows) == 83
    for r in rows:
        addrs = np.array([int(x) for x in r["addresses"].split()])
        assert int(r["instructions"]) == 1
        measured = int(r["wavefronts"])
        assert smem_wavefronts(h, addrs, int(r["width"]), op=r["op"]) == measured, r["pattern"]
        assert naive_wavefronts(addrs, int(r["width"]), r["op"]) == measured, r["pattern"]


@settings(max_examples=200, deadline=None)
@given(width=st.sampled_from([1, 2, 4, 8, 16]), span=st.sampled_from([1, 4, 64, 1024]), seed=st.integers(0, 2**32 - 1))
def test_fewest_wavefronts_bound_the_conflicts_from_below(h, width, span, seed):
    """The conflict-free count of the words an instruction touches never exceeds its wavefronts (so the conflict
    count of a kernel is never negative), and equals them where no two distinct words of a phase share a bank."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, span, (64, 32)) * width
    active = rng.random((64, 32)) < 0.9
    wf = smem_wavefronts_batch(h, a, width, active)
    fewest = smem_fewest_wavefronts_batch(h, a, width, active)
    assert (fewest <= wf).all()
    assert ((fewest >= 1) == active.any(axis=1)).all()


def test_fewest_wavefronts_by_hand(h):
    lanes = np.arange(32)
    assert list(smem_fewest_wavefronts_batch(h, np.zeros((1, 32), np.int64), 4)) == [1]  # broadcast
    assert list(smem_fewest_wavefronts_batch(h, (lanes * 4)[None], 4)) == [1]  # stride 1
    assert list(smem_fewest_wavefronts_batch(h, (lanes * 128)[None], 4)) == [1]  # stride 32: 32 wavefronts, 1 without conflicts
    assert list(smem_wavefronts_batch(h, (lanes * 128)[None], 4)) == [32]
    assert list(smem_fewest_wavefronts_batch(h, (lanes * 16)[None], 16)) == [4]  # 512 distinct bytes: 4 phases of 128 B
