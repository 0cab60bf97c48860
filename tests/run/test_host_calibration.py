"""Host rows as a calibration: spread columns, the BLAS baseline, model/measured and the verdicts on synthetic rows."""

from __future__ import annotations

import numpy as np
import pytest

from gemmsim.report.figures.host import _modelled_vs_measured, staircase_figure
from gemmsim.run.host import (
    HostResult,
    blas_time,
    host_columns,
    host_function,
    magnitude_notes,
    ranking_within_spread,
    run_host,
)
from gemmsim.sim.cpu import CPU_KERNELS


def _result(times) -> HostResult:
    return HostResult(median_s=float(np.median(times)), times_s=tuple(times), max_abs_err=0.0, max_rel_err=0.0, ok=True,
                      tolerance=1e-6, atol=0.0, rtol=0.0, gamma_k=0.0, note="")


def test_host_columns_spread_and_ratio():
    r = _result([2.0, 1.0, 4.0])  # median 2, min 1, max 4
    row = host_columns(r, 10, 10, 10, model_time_s=3.0, blas=(0.5, 0.4, 0.6), clock_ghz=3.2, kernel="packed_micro")
    assert (row["host_time_s"], row["host_time_min_s"], row["host_time_max_s"]) == (2.0, 1.0, 4.0)
    assert row["host_spread"] == pytest.approx(1.5) and row["host_repeats"] == 3
    assert row["model_over_measured"] == pytest.approx(3.0) and not row["model_within_2x"]  # against the fastest repeat
    assert row["model_over_median"] == pytest.approx(1.5)
    assert row["host_blas_time_s"] == 0.5 and row["host_over_blas"] == pytest.approx(4.0)
    assert row["host_gflops"] == pytest.approx(2000 / 2.0 / 1e9) and row["host_clock_ghz"] == 3.2
    assert row["host_impl"].startswith("simd")
    assert "model_over_measured" not in host_columns(r, 1, 1, 1, model_time_s=None)


def _row(label, t_model, t_min, t_med, t_max, bound="compute", N=64):
    return {"label": label, "kernel": label, "M": N, "N": N, "K": N, "dtype": "fp32", "time_s": t_model, "bound": bound,
            f"t_{bound}_s": t_model, "host_time_s": t_med, "host_time_min_s": t_min, "host_time_max_s": t_max,
            "model_over_measured": t_model / t_min}


def test_magnitude_notes_name_the_cases_outside_2x_and_their_roof():
    rows = [_row("a", 1.0, 1.1, 1.2, 1.3), _row("b", 10.0, 1.0, 1.1, 1.2, bound="latency"),
            _row("c", 1.0, 5.0, 5.0, 6.0, bound="issue"), _row("d", 3.0, 1.0, 1.0, 1.0, bound="dram")]
    notes = magnitude_notes(rows)
    assert notes[0].startswith("host magnitude: 1 of 4 cases") and "0.20 to 10.00" in notes[0]
    assert "b 64x64x64 fp32: the model is 10.0x too slow: its latency roof" in notes[1] and "prefetchers" in notes[1]
    assert "c 64x64x64 fp32: the model is 5.0x too fast: its highest roof (issue)" in notes[2]
    assert "d 64x64x64" in notes[3] and "already in cache" in notes[3]
    assert not any(n.startswith("host magnitude: a ") for n in notes)
    assert magnitude_notes([{"label": "x"}]) == []


def test_ranking_within_spread_ignores_overlapping_ranges():
    rows = [_row("fast", 1.0, 1.0, 1.1, 1.2), _row("slow", 2.0, 3.0, 3.1, 3.2),
            _row("tied", 3.0, 1.15, 1.3, 1.5),  # host range overlaps 'fast': a tie, whatever the model says
            _row("wrong", 0.5, 9.0, 9.5, 10.0)]  # model: fastest; host: clearly slowest
    g = ranking_within_spread(rows)[0]
    assert g["pairs"] == 6
    assert ("fast", "tied") in g["ties"]
    assert sorted(g["discordant"]) == [("fast", "wrong"), ("slow", "tied"), ("slow", "wrong"), ("tied", "wrong")]


def test_blas_baseline_is_timed_single_threaded_and_cached():
    t = blas_time(64, 48, 32, "fp32", repeats=3)
    assert t is not None and 0 < t[1] <= t[0] <= t[2]
    assert blas_time(64, 48, 32, "fp32", repeats=3) is t  # one timing per shape
    assert blas_time(8, 8, 8, "int8") is None  # numpy's integer matmul is not BLAS


def test_packed_micro_runs_the_simd_microkernel_on_the_host():
    k = CPU_KERNELS["packed_micro"]
    assert host_function(k) is not k.host and host_function(CPU_KERNELS["ijk"]) is CPU_KERNELS["ijk"].host
    params = {"MR": 6, "NR": 16, "KC": 7, "MC": 12, "NC": 40}  # the shape the microkernel tests compiled
    for dtype in ("fp32", "fp16", "int8"):
        r = run_host("packed_micro", 21, 37, 19, dtype, params, repeats=2)
        assert r.ok, (dtype, r.max_rel_err, r.tolerance)
        assert r.min_s <= r.median_s <= r.max_s and r.timer == "thread CPU time" and len(r.wall_times_s) == 2


def test_host_figures_draw():
    rows = [_row("ijk", 1e-3, 3e-3, 3.5e-3, 4e-3, bound="L2"), _row("packed_micro", 1e-4, 5e-5, 6e-5, 7e-5, bound="dram")]
    rows[0]["host_blas_time_s"] = 2e-5
    d = _modelled_vs_measured(rows)
    assert d is not None and d.fig is not None and "1 of 2 host cases are within 2x" in d.reading
    assert _modelled_vs_measured([{"time_s": 1.0}]) is None

    from gemmsim.machine import detect_host

    m = detect_host()
    s = staircase_figure([(4096, 1.2), (1 << 20, 4.0), (1 << 26, 80.0)], m, [(16384, 60.0, 30.0), (1 << 26, 2.0, 1.0)])
    assert s.fig is not None and "L1" in s.reading
