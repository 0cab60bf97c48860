"""gemmsim.analytic.blis: microkernel shapes from registers, the analytical KC/MC/NC of Low et al. (2016), panel shares of
each cache, against the seed's Haswell numbers, what BLIS ships, and the paper's own table."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmsim.analytic.blis import (
    BLIS_SHIPPED,
    analytic_blocking,
    blis_report,
    candidate_shapes,
    isa_traits,
    microkernel_shape,
    panel_footprints,
    register_budget,
)
from gemmsim.errors import KernelError
from gemmsim.machine import CacheLevel, load_machine


@pytest.fixture(scope="module")
def machines():
    return {n: load_machine(n) for n in ("haswell", "skylake_avx512", "neoverse_n1")}


def caches(*levels):
    """A stand-in machine with only the cache geometry the blocking model reads."""
    out = []
    for i, (size, ways, line, shared) in enumerate(levels):
        out.append(CacheLevel(name=f"L{i + 1}", size=size, ways=ways, line_bytes=line, latency_cycles=1,
                              bandwidth_bytes_per_cycle=1, shared=shared))
    return SimpleNamespace(name="paper", caches=out)


# ---------------------------------------------------------------------------------------------------------
# Shapes.


def test_haswell_shapes_are_the_seeds(machines):
    # Seed 000 section 4.1: AVX2 SGEMM 6x16 with 12 of 16 ymm registers as accumulators, DGEMM 6x8.
    s = microkernel_shape(machines["haswell"], "fp32")
    assert (s.MR, s.NR, s.accumulators, s.registers_available, s.spilled) == (6, 16, 12, 16, 0)
    d = microkernel_shape(machines["haswell"], "fp64")
    assert (d.MR, d.NR, d.accumulators) == (6, 8, 12)
    assert (s.MR, s.NR) == BLIS_SHIPPED["haswell"]["fp32"].row_major_shape()
    assert (d.MR, d.NR) == BLIS_SHIPPED["haswell"]["fp64"].row_major_shape()


def test_other_isas_match_blis_where_blis_agrees(machines):
    # AVX-512 fp64: BLIS skx ships 16x14 column-oriented = 14x16 with vectors along N.
    d = microkernel_shape(machines["skylake_avx512"], "fp64")
    assert (d.MR, d.NR) == BLIS_SHIPPED["skylake_avx512"]["fp64"].row_major_shape() == (14, 16)
    # NEON: BLIS armv8a (altra) 8x12 fp32 and 6x8 fp64, column-oriented, FMLA by element (A in whole vectors).
    n32 = microkernel_shape(machines["neoverse_n1"], "fp32")
    n64 = microkernel_shape(machines["neoverse_n1"], "fp64")
    assert (n32.MR, n32.NR) == BLIS_SHIPPED["neoverse_n1"]["fp32"].row_major_shape() == (12, 8)
    assert (n64.MR, n64.NR) == BLIS_SHIPPED["neoverse_n1"]["fp64"].row_major_shape() == (8, 6)
    assert n32.a_registers == 3 and n32.registers_used == 29
    # AVX-512 fp32: the rule picks 14x32 where BLIS ships 12x32 (two registers kept free): not claimed equal.
    s = microkernel_shape(machines["skylake_avx512"], "fp32")
    assert (s.NR, s.vectors_per_row) == (32, 2) and s.MR == 14


def test_register_budget_counts_by_hand(machines):
    t = isa_traits(machines["haswell"], "fp32")
    big = register_budget(8, 24, t)
    assert (big.accumulators, big.b_registers, big.a_registers, big.registers_used, big.spilled) == (24, 3, 1, 28, 12)
    assert big.bytes_per_flop == pytest.approx(4 * (8 + 24) / (2 * 8 * 24))
    small = register_budget(4, 8, t)
    assert not small.latency_hidden  # 4 accumulators < 5 cycles x 2 FMA units
    scalar = microkernel_shape(machines["haswell"], "fp32", simd=False)
    assert (scalar.MR, scalar.NR, scalar.registers_used) == (4, 3, 16)
    with pytest.raises(KernelError):
        register_budget(0, 8, t)


def test_candidates_never_spill_and_best_is_first(machines):
    t = isa_traits(machines["haswell"], "fp32")
    shapes = candidate_shapes(t)
    assert all(s.spilled == 0 for s in shapes)
    best = shapes[0]
    rivals = [s for s in shapes if s.latency_hidden and s.loads_per_k * t.fma_units <= t.loads_per_cycle * s.fmas_per_k]
    assert best.bytes_per_flop == min(s.bytes_per_flop for s in rivals)


# ---------------------------------------------------------------------------------------------------------
# Blocking.


def test_seed_haswell_panel_shares(machines):
    # Seed 000 section 4.1 on BLIS's Haswell SGEMM parameters: the B micro-panel 256 x 16 x 4 B = 16 KiB is half of
    # L1; the A block 144 x 256 x 4 B = 144 KiB a little over half of the 256 KiB L2; the B panel ~4 MiB in L3.
    b = BLIS_SHIPPED["haswell"]["fp32"]
    assert (b.MR, b.NR, b.MC, b.KC, b.NC) == (6, 16, 144, 256, 4080)
    f = panel_footprints(machines["haswell"], "fp32", b.MR, b.NR, b.KC, b.MC, b.NC)
    assert f["B_r_bytes"] == 16 * 1024 and f["B_r_frac_L1"] == 0.5
    assert f["A_c_bytes"] == 144 * 1024 and f["A_c_frac_L2"] == pytest.approx(0.5625)
    assert f["B_c_bytes"] == 4080 * 256 * 4 and 3.9 * 2**20 < f["B_c_bytes"] < 4 * 2**20
    assert f["B_r_ways_L1"] == 4.0  # 4 of 8 ways in every L1 set
    rep = blis_report(machines["haswell"])
    assert rep["shipped_footprints"]["A_c_frac_L2"] == pytest.approx(0.5625)


def test_low2016_table3_rows():
    # Low et al. (2016) Table III, analytical kc and mc, double precision.
    sandy = caches((32 * 1024, 8, 64, False), (256 * 1024, 8, 64, False))
    b = analytic_blocking(sandy, "fp64", 8, 4)
    assert (b.KC, b.MC) == (256, 96)
    kaveri = caches((16 * 1024, 4, 64, False), (2 * 1024 * 1024, 16, 64, False))
    assert analytic_blocking(kaveri, "fp64", 4, 6).MC == 1792
    c6678 = caches((32 * 1024, 4, 128, False), (512 * 1024, 4, 64, False))
    b = analytic_blocking(c6678, "fp64", 4, 4)
    assert (b.KC, b.MC) == (256, 128)


def test_haswell_dgemm_kc_agrees_with_blis(machines):
    b = analytic_blocking(machines["haswell"], "fp64", 6, 8)
    assert b.KC == BLIS_SHIPPED["haswell"]["fp64"].KC == 256
    # Eq. 4 for SGEMM 6x16: C_Ar = floor(7 / (1 + 16/6)) = 1 way, KC = 64 sets x 64 B / (6 x 4 B) = 170.
    assert analytic_blocking(machines["haswell"], "fp32", 6, 16).KC == 170


def test_two_way_l1_falls_back_to_eq6():
    tiny = caches((8 * 1024, 2, 64, False))
    b = analytic_blocking(tiny, "fp64", 4, 8)  # C_Ar = floor(1 / 3) = 0
    assert b.KC == 64 * 64 // (2 * 4 * 8) and b.MC is None and b.NC is None


def test_shared_l3_is_charged_per_thread(machines):
    one = analytic_blocking(machines["haswell"], "fp32", 6, 16, threads=1)
    many = analytic_blocking(machines["haswell"], "fp32", 6, 16, threads=16)
    assert many.NC < one.NC and many.MC == one.MC and many.KC == one.KC


@settings(max_examples=60, deadline=None)
@given(
    sets1=st.sampled_from([32, 64, 128]),
    ways1=st.integers(3, 16),
    sets2=st.sampled_from([256, 512, 1024, 2048]),
    ways2=st.integers(4, 20),
    mr=st.integers(1, 16),
    nr=st.integers(1, 32),
    elem=st.sampled_from(["fp32", "fp64"]),
)
def test_analytic_panels_fit_their_ways(sets1, ways1, sets2, ways2, mr, nr, elem):
    line = 64
    m = caches((sets1 * ways1 * line, ways1, line, False), (sets2 * ways2 * line, ways2, line, False))
    b = analytic_blocking(m, elem, mr, nr)
    f = panel_footprints(m, elem, mr, nr, b.KC, b.MC, 1)
    if b.ways["L1"]["A_r"] >= 1:
        # Eq. 4-5: A_r in at most C_Ar whole ways, B_r in proportion beside it, one way left for C.
        assert f["A_r_ways_L1"] <= b.ways["L1"]["A_r"]
        assert f["A_r_ways_L1"] + f["B_r_ways_L1"] <= ways1 - 1 + 1e-9
    else:
        assert f["A_r_ways_L1"] <= 0.5  # eq. 6
    assert b.MC % mr == 0
    if b.MC > mr:
        assert f["A_c_ways_L2"] <= max(1, ways2 - 1 - b.ways["L2"]["B_r"]) + 1e-9
