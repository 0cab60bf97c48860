"""The speed-of-light figure: one panel per GPU, at most MAX_CASES cases, a reading that names the binding unit or
says the GPU is underused."""

from __future__ import annotations

from gemmsim.report.figures.sol import MAX_CASES, _sol


def _row(label, M, compute, smem, dram):
    return {"machine": "a100", "kernel": "gemm", "label": label, "M": M, "N": M, "K": M, "dtype": "fp32",
            "sol_compute_pct": compute, "sol_smem_pct": smem, "sol_l1_pct": 5.0, "sol_l2_pct": 10.0, "sol_dram_pct": dram}


def test_reading_names_the_binding_unit_or_underuse():
    (d,) = _sol([_row("big", 4096, 40.0, 97.0, 3.0), _row("small", 128, 10.0, 20.0, 1.0)], {})
    assert d.fig is not None and d.name == "speed_of_light_a100"
    assert "big 4096x4096x4096: shared memory at 97 %" in d.reading
    assert "small 128x128x128: no unit above 20 % (shared memory): the GPU is underused" in d.reading


def test_at_most_max_cases_per_panel_the_largest_of_each_kernel():
    rows = [_row(f"k{i % 10}", 64 * (i + 1), 50.0, 90.0, 5.0) for i in range(30)]
    (d,) = _sol(rows, {})
    shown = d.fig.axes[0].get_yticklabels()
    assert len(shown) == MAX_CASES
    assert not _sol([{"machine": "haswell", "kernel": "ijk", "L1_hit_rate": 0.5}], {})
