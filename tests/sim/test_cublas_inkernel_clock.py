"""cuBLAS on the H200 at the clock its kernels ran at (issue 12; validation/h200/round13).

Round 13 read the SM clock inside each spaced cuBLAS launch of round 3's sweep (ncu's sm__cycles_elapsed per
second, --clock-control none): 1527-1710 MHz, where probes just before and after read 1880-1980 and the machine
file's sustained clock (back-to-back products) is 1430. These tests check that measurement against the kernels'
own clock reading, and ``hopper_ws`` at each launch's measured clock against the same launches' durations.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import numpy as np
import pytest

from gemmsim.machine import load_machine
from gemmsim.sim.gpu import simulate_gpu

ROUND13 = Path(__file__).resolve().parents[2] / "validation" / "h200" / "round13"


def _rows(name: str) -> list[dict]:
    return list(csv.DictReader((ROUND13 / name).open()))


def test_ncu_reads_the_clock_the_kernels_read_themselves():
    """mma_pipe's kernels read their own clock (clock64 against %globaltimer); ncu's reading of the same launches is
    within 0-5 % above it for all 24 configurations (median 2.7 %) -- the tolerance the cuBLAS clocks carry."""
    rows = _rows("clock13_mma.csv")
    assert len(rows) == 24
    ratios = [float(r["ncu_mhz"]) / float(r["own_mhz"]) for r in rows]
    assert all(1.0 <= x <= 1.05 for x in ratios), ratios
    assert 1.01 <= statistics.median(ratios) <= 1.04


def test_spaced_cublas_kernels_run_well_below_the_boost_clock():
    """Every size's three spaced launches ran at 1500-1750 MHz inside the kernel (within 2 % of each other), and
    the durations are round 3's within 6 % (so the profiler did not change how the kernels ran)."""
    rows = _rows("clock13_cublas.csv")
    assert len(rows) == 88
    for r in rows:
        assert 1500 <= float(r["sm_mhz"]) <= 1750, r
        assert float(r["mhz_max"]) / float(r["mhz_min"]) <= 1.02, r
        assert abs(float(r["kernel_us"]) / float(r["round3_kernel_us"]) - 1) <= 0.06, r
        assert r["kernel"] == r["round3_kernel"].strip('"'), r
        assert float(r["rel_err"]) < 5e-3, r


def _pearson(x, y) -> float:
    return float(np.corrcoef(np.asarray(x, float), np.asarray(y, float))[0, 1])


@pytest.fixture(scope="module")
def fp16_at_measured_clock():
    h = load_machine("h200")
    out = []
    for r in _rows("clock13_cublas.csv"):
        if r["dtype"] != "fp16":
            continue
        M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
        at = simulate_gpu(h.model_copy(update={"clock_mhz_tensor_sustained": float(r["sm_mhz"])}), "hopper_ws",
                          M=N, N=M, K=K, dtype="fp16", kernel_name=r["kernel"], max_blocks=264,
                          ctas=int(r["grid"]))
        out.append((r["sweep"], at["tflops"], float(r["tflops"])))
    return out


def test_hopper_ws_at_the_measured_clock_meets_the_issues_targets(fp16_at_measured_clock):
    """fp16, simulated here at each launch's measured clock: Pearson >= 0.8 and median predicted/measured in 0.8-1.25
    on the coarse and the fine sweep (issue 12's targets); on the fine sweep, where the tile and the waves decide,
    every size within 10 %."""
    for sweep in ("coarse", "fine"):
        g = [(m, t) for s, m, t in fp16_at_measured_clock if s == sweep]
        assert len(g) == {"coarse": 15, "fine": 29}[sweep]
        assert _pearson([m for m, _ in g], [t for _, t in g]) >= 0.8, sweep
        assert 0.8 <= statistics.median(m / t for m, t in g) <= 1.25, sweep
    assert all(0.9 <= m / t <= 1.1 for s, m, t in fp16_at_measured_clock if s == "fine")


def test_stored_bf16_rows_meet_the_targets_too():
    """bf16, from process13.py's stored run of the same model: the same targets."""
    rows = [r for r in _rows("model13_cublas.csv") if r["dtype"] == "bf16"]
    for sweep in ("coarse", "fine"):
        g = [r for r in rows if r["sweep"] == sweep]
        assert _pearson([float(r["model_tflops"]) for r in g], [float(r["tflops"]) for r in g]) >= 0.8
        assert 0.8 <= statistics.median(float(r["ratio"]) for r in g) <= 1.25
