"""Speed of light: each unit's busy fraction over the modelled time, worked by hand, and the binding unit at its peak
but for the
idle SMs of the last blocks."""

from __future__ import annotations

import math

import pytest

from gemmsim import load_machine, simulate_gpu
from gemmsim.timing.sol import NCU_METRICS, sol_columns, sol_summary


def test_worked_by_hand():
    a100 = load_machine("a100")  # 108 SMs
    clock = 1410.0
    row = {"time_s": 1e-3, "time_compute_s": 0.25e-3, "t_l2_s": 0.5e-3, "t_dram_s": 0.1e-3, "clock_mhz": clock,
           "smem_wavefronts": 108 * clock * 1e6 * 1e-3 * 0.8,  # 80 % of one wavefront per SM per cycle
           "l1_data_cycles": 108 * clock * 1e6 * 1e-3 * 0.2}  # fmt: skip
    s = sol_columns(row, a100)
    assert s["sol_compute_pct"] == pytest.approx(25.0)
    assert s["sol_l2_pct"] == pytest.approx(50.0)
    assert s["sol_dram_pct"] == pytest.approx(10.0)
    assert s["sol_smem_pct"] == pytest.approx(80.0)
    assert s["sol_l1_pct"] == pytest.approx(20.0)
    assert s["sol_memory_pct"] == pytest.approx(80.0)
    missing = sol_columns({**row, "smem_wavefronts": None}, a100)  # a row without the counter: NaN, not an error
    assert math.isnan(missing["sol_smem_pct"]) and missing["sol_memory_pct"] == pytest.approx(50.0)
    assert sol_columns({"time_s": 0}, a100) == {}


@pytest.mark.parametrize("kernel, unit", [("tiled_smem", "sol_smem_pct"), ("naive", "sol_l1_pct")])
def test_the_unit_that_binds_the_modelled_time_is_at_its_peak(kernel, unit):
    r = simulate_gpu(load_machine("a100"), kernel, M=768, N=768, K=768, dtype="fp32")
    assert r["bound"] in ("smem", "L1")
    sols = {k: v for k, v in r.items() if k.startswith("sol_") and k != "sol_memory_pct"}
    assert max(sols, key=sols.get) == unit
    # below 100 % only by the SMs the last blocks leave idle: the busiest SM sets the time, the others average
    # blocks / SMs blocks of work
    assert r[unit] == pytest.approx(100 * r["blocks"] / 108 / r["blocks_on_busiest_sm"], rel=0.03)
    assert all(0.0 <= v <= 100.5 for v in sols.values())


def test_summary_names_the_ncu_metrics():
    r = simulate_gpu(load_machine("a100"), "tiled_smem", M=512, N=512, K=512, dtype="fp32")
    text = sol_summary(r)
    for _, metric in NCU_METRICS.values():
        assert metric in text
