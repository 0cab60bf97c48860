"""Block columns of a lockstep kernel drifting apart in column order (issue 11; validation/h200/round14).

``column_drift_offsets`` gives, wave by wave, how far apart neighbouring block columns start: the machine's measured
rate (``column_drift``) until they are evenly spaced, where the resident blocks are a whole number of block columns
or a little less (the hold criterion); ``simulate_memory_drifting`` averages the memory model over the launch's parts
at those offsets.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from test_gpu_memory import small_machine

from gemmsim.kernels.gpu import KERNELS
from gemmsim.machine import load_machine
from gemmsim.machine.gpu import ColumnDrift
from gemmsim.models.gpu_memory import column_drift_offsets, simulate_memory, simulate_memory_drifting
from gemmsim.trace import Layout

ROUND14 = Path(__file__).resolve().parents[2] / "validation" / "h200" / "round14"


def _naive(order: str):
    return KERNELS["naive"].spec({"BX": 16, "BY": 16, "raster": order}, "fp32")


def test_offsets_grow_at_the_machines_rate_until_evenly_spaced():
    """H200, N = 5632: 352 tiles a column, three columns a wave (8 blocks per SM), 118 waves; 0.0048 a wave (the
    rate at 352 tiles) until 1/3 of a block; at 8448 the rate scales by (528 / 352) ** 3."""
    h = load_machine("h200")
    off = column_drift_offsets(h, _naive("column"), Layout.build(5632, 5632, 64, "fp32"), 8)
    assert len(off) == 118
    assert off[:10] == pytest.approx(0.0048 * (np.arange(10) + 0.5))
    assert off[-1] == pytest.approx(1 / 3) and (np.diff(off) >= 0).all()
    big = column_drift_offsets(h, _naive("column"), Layout.build(8448, 8448, 64, "fp32"), 8)
    assert big[0] == pytest.approx(0.5 * 0.0048 * 1.5 ** 3) and big[-1] == pytest.approx(0.5)


def test_a_wave_a_little_short_of_whole_columns_drifts_as_if_whole():
    """5696: 2.966 block columns a wave, 0.034 short of three; round 14's rate (0.0050) over the shortfall is 0.15,
    above the hold offset, so the columns drift at that rate up to a third of a block apart."""
    h = load_machine("h200")
    off = column_drift_offsets(h, _naive("column"), Layout.build(5696, 5696, 64, "fp32"), 8)
    rate = 0.0048 * (356 / 352) ** 3
    assert off[:5] == pytest.approx(rate * (np.arange(5) + 0.5))
    assert off[-1] == pytest.approx(1 / 3)


@pytest.mark.parametrize("why,machine,name,order,m,n", [
    ("row order: every block of a wave reads the same line of B", "h200", "naive", "row", 5632, 5632),
    ("2.75 block columns a wave: the shortfall pulls back faster (r / d = 0.025)", "h200", "naive", "column", 6144, 6144),
    ("3.02 block columns a wave: a little more than whole", "h200", "naive", "column", 5600, 5600),
    ("one block column a wave: no partner", "h200", "naive", "column", 16896, 16896),
    ("one wave: nothing to drift over", "h200", "naive", "column", 4224, 64),
    ("not a lockstep kernel", "h200", "tiled_smem", "column", 4224, 4224),
    ("no measured rate", "a100", "naive", "column", 3456, 3456),
])
def test_lockstep_where_the_columns_cannot_drift(why, machine, name, order, m, n):
    spec = KERNELS[name].spec({"raster": order, **({"BX": 16, "BY": 16} if name == "naive" else {})}, "fp32")
    assert column_drift_offsets(load_machine(machine), spec, Layout.build(m, n, 64, "fp32"), 8) is None, why


def test_a_drifting_launch_is_the_mean_of_its_parts():
    """A 4-SM machine, 2 blocks per SM, 4 tiles a column (2 a wave), 4 waves, a drift of 0.05 a wave: the counters
    are the mean of simulate_memory at the offsets of the parts' middle waves, and the lockstep run where there is
    no drift."""
    m = small_machine().model_copy(update={"column_drift": ColumnDrift(per_wave=0.05, reference_tiles=4, exponent=1)})
    spec = KERNELS["naive"].spec({"BX": 8, "BY": 4, "raster": "column"}, "fp32")
    L = Layout.build(16, 64, 64, "fp32")
    off = column_drift_offsets(m, spec, L, 2)
    assert off == pytest.approx([0.025, 0.075, 0.125, 0.175])
    got = simulate_memory_drifting(m, spec, L, 2, 1024, bins=4).counters
    parts = [simulate_memory(m, spec, L, 2, 1024, stagger=d * 2, stagger_group=4).counters for d in off]
    for key in ("dram_bytes_read", "l2_read_hits", "l2_lookups", "l1_sectors_hit", "rounds"):
        assert got[key] == pytest.approx(np.mean([p[key] for p in parts])), key
    assert got["column_drift_runs"] == 4 and got["column_drift_offset_end"] == pytest.approx(0.175)
    assert got["blocks"] == 32 and got["waves"] == 4
    still = m.model_copy(update={"column_drift": None})
    assert simulate_memory_drifting(still, spec, L, 2, 1024).counters == simulate_memory(still, spec, L, 2, 1024).counters


def _rows(name: str) -> list[dict]:
    return list(csv.DictReader((ROUND14 / name).open()))


def test_the_rate_grows_with_the_load_and_the_size():
    """Round 14's traces (drift_rates14.csv, offset per wave before 0.1): at 4224 and 5632 the rate grows with the
    extra FMAs per k step (ex = 0 < 4 < 8 < 16, which spreads within three waves), and at each ex 5632 drifts faster
    than 4224; the machine file's rate is the law fitted there; 8448, held out, is within the spread of its launches."""
    rows = _rows("drift_rates14.csv")
    med = {}
    for r in rows:
        med.setdefault((int(r["N"]), int(r["ex"])), []).append(float(r["rate"]))
    med = {k: float(np.median(v)) for k, v in med.items()}
    for n in (4224, 5632):
        assert med[(n, 0)] < med[(n, 4)] < med[(n, 8)] < med[(n, 16)] == float("inf")
    for ex in (0, 4, 8):
        assert med[(4224, ex)] < med[(5632, ex)]
    law = {(int(r["N"]), int(r["ex"])): float(r["law_rate"]) for r in rows}
    h = load_machine("h200").column_drift
    assert law[(5632, 0)] == pytest.approx(h.per_wave, rel=0.02)
    assert law[(8448, 0)] == pytest.approx(h.per_wave * (528 / 352) ** h.exponent, rel=0.05)
    held = [float(r["rate"]) for r in rows if r["N"] == "8448" and r["ex"] == "0"]
    assert len(held) == 4 and min(held) <= law[(8448, 0)] <= max(held) * 1.1


def test_the_law_gives_ncus_bytes():
    """drift_law14.csv: the law's offsets through the memory model's bytes-against-offset curve give ncu's DRAM bytes
    (other launches than the traced ones) within 1.5x at every size and load measured, 8448 held out."""
    rows = [r for r in _rows("drift_law14.csv") if r["ncu_launches"] != "0"]
    assert len(rows) >= 9
    for r in rows:
        lo, hi, law = (float(r[k]) for k in ("ncu_min_gb", "ncu_max_gb", "model_law_gb"))
        assert hi / 1.5 <= law <= lo * 1.5, r
        assert r["law_within_1_5x"] == "True"


H200 = Path(__file__).resolve().parents[2] / "validation" / "h200"

#: Sizes (rounds 15-18) where gemmsim's column-order bytes are outside 1.5x of ncu's: 6080, where round 14's rate over
#: the wave's shortfall (0.027) is just under the hold offset and the columns drifted anyway (1.75x the lockstep).
KNOWN_MISSES_15 = {6080}
#: Sizes whose traced block columns drifted (mean partner offset > 0.08) where the model holds them in step: the
#: hold offset's edge (r / d = 0.027 and 0.022), where the H200 drifts in episodes.
KNOWN_EDGE_15 = {6080, 6272}


def _near_whole(kind: str) -> list[dict]:
    rows = []
    for rnd in (15, 16, 17, 18):
        rows += [dict(r, round=rnd) for r in csv.DictReader((H200 / f"round{rnd}" / f"{kind}{rnd}.csv").open())]
    return rows


def test_near_whole_numbers_of_block_columns_against_the_h200():
    """Rounds 15-18: 21 sizes where a wave holds a little more or less than a whole number of block columns (C from
    1.57 to 3.02). gemmsim (``column_drift_offsets`` -> ``simulate_memory_drifting``, read off the memory model's
    bytes-against-offset curve; ``model{15..18}.csv``) is within 1.5x of ncu's DRAM bytes at every size but
    ``KNOWN_MISSES_15``, and drifts exactly where the traces drifted but ``KNOWN_EDGE_15``; given each launch's
    traced offsets the memory model is within 1.5x everywhere (the caches are right, the schedule is the question)."""
    rows = _near_whole("model")
    assert len(rows) == 21
    h = load_machine("h200")
    miss = {int(r["N"]) for r in rows if not 1 / 1.5 <= float(r["ratio_model"]) <= 1.5}
    assert miss == KNOWN_MISSES_15
    for r in rows:
        for g in r["model_given_drift_gb"].split(";"):
            assert 1 / 1.5 <= float(g) / float(r["ncu_gb"]) <= 1.5, r
    drifted = {}
    for r in _near_whole("drift"):
        drifted[int(r["N"])] = max(drifted.get(int(r["N"]), 0.0), float(r["offset_mean"]))
    assert len(drifted) == 21
    spec = _naive("column")
    wrong = {n for n, o in drifted.items()
             if (column_drift_offsets(h, spec, Layout.build(n, n, 64, "fp32"), 8) is not None) != (o > 0.08)}
    assert wrong == KNOWN_EDGE_15
