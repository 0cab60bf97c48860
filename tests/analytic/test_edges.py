"""gemmsim.analytic.edges: the seed's edge-block arithmetic in closed form, the strategies' costs, and the packed kernel's
trace agreeing with the closed-form share of C in partial tiles."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.analytic.edges import STRATEGIES, edge_cost, edge_report, ghost_flops, padded_elements, partial_fraction, tile_classes
from gemmsim.errors import KernelError
from gemmsim.kernels.cpu_packed import KERNELS
from gemmsim.machine import load_machine
from gemmsim.trace import Layout, concat


def test_seed_1000_with_64_blocks():
    # Seed 000 section 4.2: 1000 = 15*64 + 40; 1 - 960^2/1000^2 = 7.84 % of C in partial blocks; a scalar tail
    # eight times slower: 0.9216 * 1 + 0.0784 * 8 = 1.5488, and that < 8 % of the work takes > 1/3 of the time.
    assert partial_fraction(1000, 1000, 64, 64) == pytest.approx(0.0784)
    c = edge_cost(1000, 1000, 1000, 64, 64, "scalar", lanes=8)
    assert c.time_ratio == pytest.approx(0.9216 + 0.0784 * 8)
    assert round(c.time_ratio, 2) == 1.55
    assert c.partial_time_share > 1 / 3


def test_tile_classes_by_hand():
    assert tile_classes(1000, 1000, 64, 64) == [(64, 64, 225), (64, 40, 15), (40, 64, 15), (40, 40, 1)]
    assert tile_classes(128, 100, 64, 50) == [(64, 50, 4)]
    assert tile_classes(10, 7, 64, 64) == [(10, 7, 1)]


def test_pad_costs_the_padded_area_and_ghost_flops():
    # With latency 0 every full tile runs at peak: pad's time is the padded area over the real one.
    c = edge_cost(1000, 1000, 1000, 6, 16, "pad", lanes=8)
    assert padded_elements(1000, 1000, 6, 16) == 1002 * 1008
    assert c.time_ratio == pytest.approx(1002 * 1008 / 1e6)
    assert c.ghost_flops == ghost_flops(1000, 1000, 1000, 6, 16) == 2 * 1000 * (1002 * 1008 - 10**6)
    # Ghost FLOPs are bounded by MR-1 rows and NR-1 columns per panel.
    assert c.ghost_flops <= 2 * 1000 * ((6 - 1) * 1008 + (16 - 1) * 1002)


def test_masked_and_special_by_hand():
    # 20 x 20 in 6 x 16 tiles, 8 lanes, 2 FMA units, no latency floor: cycles per k step per tile class.
    # full 6x16: 12 vectors / 2 = 6 (x3); right edge 6x4: masked still issues 2 vectors per row -> 6, special 1
    # vector per row -> 3 (x3); bottom 2x16: 2 (both); corner 2x4: masked 2, special 1. Ideal: 400/16 = 25.
    masked = edge_cost(20, 20, 1, 6, 16, "masked", lanes=8, fma_units=2)
    special = edge_cost(20, 20, 1, 6, 16, "special", lanes=8, fma_units=2)
    assert masked.time_ratio == pytest.approx((6 * 3 + 6 * 3 + 2 + 2) / 25)
    assert special.time_ratio == pytest.approx((6 * 3 + 3 * 3 + 2 + 1) / 25)
    slower = edge_cost(20, 20, 1, 6, 16, "masked", lanes=8, fma_units=2, mask_overhead=1.5)
    assert slower.time_ratio == pytest.approx((6 * 3 + 1.5 * (6 * 3 + 2 + 2)) / 25)


def test_latency_floor_makes_small_tiles_slow():
    # A 4x8 AVX2 tile has 4 accumulators: each k step waits the 5-cycle FMA latency instead of 2 cycles.
    assert edge_cost(64, 64, 1, 4, 8, "special", lanes=8, fma_units=2, fma_latency=5).time_ratio == pytest.approx(2.5)
    assert edge_cost(60, 64, 1, 6, 16, "special", lanes=8, fma_units=2, fma_latency=5).time_ratio == pytest.approx(1.0)


def test_bad_input():
    with pytest.raises(KernelError):
        edge_cost(10, 10, 10, 4, 4, "wishful")
    with pytest.raises(KernelError):
        partial_fraction(0, 10, 4, 4)


@settings(max_examples=80, deadline=None)
@given(M=st.integers(1, 300), N=st.integers(1, 300), TM=st.integers(1, 40), TN=st.integers(1, 64), lanes=st.sampled_from([1, 4, 8, 16]))
def test_strategy_properties(M, N, TM, TN, lanes):
    classes = tile_classes(M, N, TM, TN)
    assert sum(r * c * n for r, c, n in classes) == M * N
    frac = partial_fraction(M, N, TM, TN)
    assert (frac == 0) == (M % TM == 0 and N % TN == 0)
    rep = edge_report(M, N, 8, TM, TN, lanes=lanes, fma_units=2)
    # Exact kernels never cost more than masked full-width ones, which never cost more than padding.
    assert rep["edge_ratio_special"] <= rep["edge_ratio_masked"] + 1e-12 <= rep["edge_ratio_pad"] + 2e-12
    for s in STRATEGIES:
        assert rep[f"edge_ratio_{s}"] >= 1.0 - 1e-12  # no strategy beats every FMA slot useful
    if frac == 0:
        assert len({round(rep[f"edge_ratio_{s}"], 12) for s in STRATEGIES}) == 1


@pytest.mark.parametrize("M,N", [(50, 50), (37, 70)])
def test_trace_scalar_tail_covers_the_closed_form_share(M, N):
    # The packed kernel's scalar strategy touches exactly the partial-tile share of C element by element.
    machine = load_machine("haswell")
    k = KERNELS["packed_micro"]
    lay = Layout.build(M, N, 4, "fp32")
    t = concat(k.trace(lay, k.params(edge="scalar", MR=6, NR=16, KC=4), machine))
    c = t[(t["addr"] >= lay.c_base) & (t["addr"] < lay.end)]
    element_accesses = int((c["size"] == 4).sum())
    assert element_accesses == 2 * round(partial_fraction(M, N, 6, 16) * M * N)
