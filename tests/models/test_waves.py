"""Waves and tile quantization: the NVIDIA guide's A100 example by hand, and the two time regimes against
kernel times measured on an H200 (validation/h200/waves.csv)."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from gemmsim.errors import KernelError
from gemmsim.machine import load_machine
from gemmsim.models.waves import tile_quantization, wave_time, waves

VALIDATION = Path(__file__).resolve().parents[2] / "validation" / "h200"


@pytest.fixture(scope="module")
def a100():
    return load_machine("a100")


@pytest.fixture(scope="module")
def h200():
    return load_machine("h200")


@pytest.mark.parametrize("N, tiles, n_waves, eff", [(1536, 108, 1, 1.0), (1664, 117, 2, 117 / 216), (3072, 216, 2, 1.0)])
def test_guide_example_a100(a100, N, tiles, n_waves, eff):
    # M = 2304, 256x128 tiles, one block per SM: a wave is 108 tiles
    tq = tile_quantization(2304, N, 256, 128)
    assert tq.tiles == tiles and tq.efficiency == 1.0
    w = waves(a100, tq.tiles, 1)
    assert (w.wave_size, w.waves, w.wave_efficiency) == (108, n_waves, pytest.approx(eff))
    assert round(100 * w.wave_efficiency) == {1: 100, 2: 54 if N == 1664 else 100}[n_waves]


def test_tile_quantization_example():
    # the guide: a 256x256 output needs 4 128x128 tiles, 257x256 needs 6
    assert tile_quantization(256, 256, 128, 128).tiles == 4
    tq = tile_quantization(257, 256, 128, 128)
    assert tq.tiles == 6 and tq.efficiency == pytest.approx(257 * 256 / (384 * 256))


def test_seed_001_110_tiles_on_100_sms(a100):
    w = waves(a100.model_copy(update={"sms": 100}), 110, 1)
    assert (w.waves, w.tail_blocks, w.full_waves) == (2, 10, 1)


def test_bad_input(h200):
    with pytest.raises(KernelError):
        waves(h200, 0, 1)
    with pytest.raises(KernelError, match="regime"):
        wave_time(h200, 10, 1, 1e-6, regime="both")


def _measured():
    rows = list(csv.DictReader((VALIDATION / "waves.csv").open()))
    overhead_s = float(rows[0]["time_ms"]) * 1e-3  # empty 1-block kernel
    series = defaultdict(dict)
    for r in rows[1:]:
        series[(r["kernel"], int(r["blocks_per_sm"]))][int(r["grid"])] = float(r["time_ms"]) * 1e-3
    return overhead_s, series, rows


def test_latency_regime_staircase(h200):
    """Sleeping blocks (50 us each): time = waves x 50 us + launch overhead, within 5 %, for 1, 2, 4 and 8
    blocks per SM; the steps sit exactly at multiples of SMs x blocks_per_SM."""
    overhead, series, rows = _measured()
    block_s = 50e-6
    checked = 0
    for (kernel, bps), pts in series.items():
        if kernel != "sleep":
            continue
        for grid, t in pts.items():
            model = wave_time(h200, grid, bps, block_s, "latency") + overhead
            assert t == pytest.approx(model, rel=0.05), (bps, grid)
            checked += 1
        size = h200.sms * bps
        for k in (1, 2, 3):
            assert pts[k * size + 1] - pts[k * size] > 0.8 * block_s  # a new wave starts one block later
            assert pts[k * size] - pts[k * size - 1] < 0.1 * block_s  # nothing changes inside a wave
    assert checked >= 150


def test_throughput_regime_staircase(h200):
    """FMA-saturated blocks: time = ceil(grid / SMs) x one block's pipe time + launch overhead, within 6 %,
    whatever the occupancy (1, 2, 4, 8 blocks per SM); the block's pipe time comes from the machine's fp32
    rate, not from the measurement: 256 threads x 200 x 16 x 8 FMA x 2 / (256 FLOP/clk x 1980 MHz)."""
    overhead, series, rows = _measured()
    fma = [r for r in rows if r["kernel"] == "fma"]
    iters = int(fma[0]["block_param"])
    flops = 256 * iters * 16 * 8 * 2
    block_s = flops / (h200.flops_per_clk("fp32", tensor=False) * h200.clock_mhz_max * 1e6)
    assert block_s == pytest.approx(25.9e-6, rel=0.01)
    checked = 0
    for (kernel, bps), pts in series.items():
        if kernel != "fma":
            continue
        for grid, t in pts.items():
            model = wave_time(h200, grid, bps, block_s, "throughput") + overhead
            assert t == pytest.approx(model, rel=0.06), (bps, grid)
            checked += 1
        for k in (1, 2, 3):  # steps every SMs blocks, even when 8 blocks per SM are resident
            g = k * h200.sms
            assert pts[g + 1] - pts[g] > 0.8 * block_s and pts[g] - pts[g - 1] < 0.1 * block_s
    assert checked >= 400
    # beyond saturation occupancy does not matter: same grid, 1 vs 8 resident blocks per SM, within 3 %
    for g in (133, 529, 925):
        assert series[("fma", 1)][g] == pytest.approx(series[("fma", 8)][g], rel=0.03)
