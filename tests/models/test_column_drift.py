"""Block columns of a lockstep kernel drifting apart in column order (issue 11; validation/h200/round14-round23).

``column_drift_offsets`` gives, wave by wave, how far apart neighbouring block columns start: the machine's measured
rate (``column_drift``) against a pull-back of d / g of the offset a wave where a wave holds less than a whole number
of them, until they are evenly spaced; none where C = p / q columns a wave with q in ``TIED_PERIODS``.
``column_drift_weights`` spreads each wave's offset exponentially over grid offsets and ``simulate_memory_drifting``
weights the memory model's runs there.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from test_gpu_memory import small_machine

from gemmsim.kernels.gpu import KERNELS
from gemmsim.machine import load_machine
from gemmsim.machine.gpu import ColumnDrift
from gemmsim.models.gpu_memory import (
    DRIFT_GRID,
    DRIFT_QUANTILES,
    column_drift_offsets,
    column_drift_weights,
    simulate_memory,
    simulate_memory_drifting,
)
from gemmsim.trace import Layout

ROUND14 = Path(__file__).resolve().parents[2] / "validation" / "h200" / "round14"


def _naive(order: str):
    return KERNELS["naive"].spec({"BX": 16, "BY": 16, "raster": order}, "fp32")


def test_offsets_grow_at_the_machines_rate_until_evenly_spaced():
    """H200, N = 5632: 352 tiles a column, three columns a wave (8 blocks per SM), 118 waves, nothing pulls back
    (d = 0): 0.0048 a wave (the rate at 352 tiles) until 1/3 of a block; at 8448 the rate scales by (528 / 352) ** 3."""
    h = load_machine("h200")
    off = column_drift_offsets(h, _naive("column"), Layout.build(5632, 5632, 64, "fp32"), 8)
    assert len(off) == 118
    assert off[:10] == pytest.approx(0.0048 * (np.arange(10) + 0.5))
    assert off[-1] == pytest.approx(1 / 3) and (np.diff(off) >= 0).all()
    big = column_drift_offsets(h, _naive("column"), Layout.build(8448, 8448, 64, "fp32"), 8)
    assert big[0] == pytest.approx(0.5 * 0.0048 * 1.5 ** 3) and big[-1] == pytest.approx(0.5)


def _pulled_back(rate: float, pull: float, cap: float, waves: int) -> np.ndarray:
    """The recurrence written out by hand: o(w+1) = min(cap, o(w) + rate - pull o(w)), the mean of each wave's ends."""
    o, out = 0.0, []
    for _ in range(waves):
        nxt = min(cap, o + rate - pull * o)
        out.append((o + nxt) / 2)
        o = nxt
    return np.array(out)


@pytest.mark.parametrize("n", [6528, 5600, 11392])
def test_a_shortfall_pulls_the_offset_back_to_g_r_over_d(n):
    """Where a wave holds d = g - C of a column less than g = ceil(C) block columns, and d is past the runaway's end
    (0.40), the offset is pulled back by d / g of itself a wave and settles at g r / d, below the even spacing: 6528
    (2.59 columns a wave, g = 3, d = 0.41) at 0.054 of a block; 5600 (3.017: g = 4, d = 0.983) at 0.019; 11392
    (1.48: g = 2, d = 0.52) at 0.154."""
    h = load_machine("h200")
    T = n // 16
    g = -(-1056 // T)
    d = g - 1056 / T
    r = 0.0048 * (T / 352) ** 3
    off = column_drift_offsets(h, _naive("column"), Layout.build(n, n, 64, "fp32"), 8)
    assert off == pytest.approx(_pulled_back(r, d / g, 1 / g, -(-T * T // 1056)))
    assert off[-1] == pytest.approx(g * r / d, rel=0.01) and off[-1] < 1 / g
    assert off[-1] == pytest.approx({6528: 0.0545, 5600: 0.0192, 11392: 0.1537}[n], abs=5e-4)


def _run_away(rate: float, grow: float, plateau: float, waves: int) -> np.ndarray:
    """u(w+1) = min(plateau, u(w) + rate + grow u(w)) written out by hand, the mean of each wave's ends."""
    u, out = 0.0, []
    for _ in range(waves):
        nxt = min(plateau, u + rate + grow * u)
        out.append((u + nxt) / 2)
        u = nxt
    return np.array(out)


@pytest.mark.parametrize("n", [4288, 3440, 6144, 9392])
def test_just_short_the_offsets_run_away_to_a_plateau(n):
    """Just short of a whole number of columns a wave (0 < d < 0.40) the offset runs away at 0.1 of itself a wave
    and levels off at 0.70 (1 - d / 0.40) of even spacing (machines/h200.yaml, from block-start traces:
    validation/h200/round27/runaway27.py), or follows the pull-back where that lies higher: 4288 (3.94 columns, g = 4,
    d = 0.06) levels off at 0.149 of a block, where the pull-back alone gave a mean of 0.054; 3440 (4.91, g = 5) at
    0.109; 6144 (2.75, d = 0.25) at 0.088; 9392 (1.80, g = 2), whose rate is 4x 4288's, at the pull-back's 0.22."""
    h = load_machine("h200")
    T = n // 16
    g = -(-1056 // T)
    d = g - 1056 / T
    r = 0.0048 * (T / 352) ** 3
    waves = -(-T * T // 1056)
    plateau = 0.70 * (1 - d / 0.40) / g
    off = column_drift_offsets(h, _naive("column"), Layout.build(n, n, 64, "fp32"), 8)
    pulled = _pulled_back(r, d / g, 1 / g, waves)
    assert off == pytest.approx(np.maximum(pulled, _run_away(r, 0.1, plateau, waves)))
    assert off[-1] == pytest.approx({4288: 0.1488, 3440: 0.1091, 6144: 0.0875, 9392: 0.2216}[n], abs=5e-4)
    if n == 4288:
        assert off.mean() > 2 * pulled.mean() and pulled.mean() == pytest.approx(0.054, abs=5e-4)
    if n == 9392:
        assert off[-1] == pytest.approx(pulled[-1])
    over = column_drift_offsets(h, _naive("column"), Layout.build(4160, 4160, 64, "fp32"), 8)  # 4.06: d = 0.94
    assert over.max() < 0.011


@pytest.mark.parametrize("why,machine,name,order,m,n", [
    ("row order: every block of a wave reads the same line of B", "h200", "naive", "row", 5632, 5632),
    ("one block column a wave: no partner", "h200", "naive", "column", 16896, 16896),
    ("3/2 block columns a wave: the same slot groups every two waves", "h200", "naive", "column", 11264, 11264),
    ("4/3 block columns a wave: every three waves", "h200", "naive", "column", 12672, 12672),
    ("8/3 block columns a wave: every three waves", "h200", "naive", "column", 6336, 6336),
    ("one wave: nothing to drift over", "h200", "naive", "column", 4224, 64),
    ("not a lockstep kernel", "h200", "tiled_smem", "column", 4224, 4224),
    ("no measured rate", "a100", "naive", "column", 3456, 3456),
])
def test_no_offsets_where_the_columns_cannot_drift(why, machine, name, order, m, n):
    spec = KERNELS[name].spec({"raster": order, **({"BX": 16, "BY": 16} if name == "naive" else {})}, "fp32")
    assert column_drift_offsets(load_machine(machine), spec, Layout.build(m, n, 64, "fp32"), 8) is None, why


def test_weights_spread_each_wave_exponentially_over_the_grid():
    """Each wave's mean offset is spread over the midpoint quantiles of an exponential of that mean (capped at the
    even spacing) and shared linearly between grid offsets: the weights sum to 1, their mean offset is the spread's
    mean, every weight sits on ``DRIFT_GRID`` or the cap, and an offset on a grid point weighs only there."""
    u = (np.arange(DRIFT_QUANTILES) + 0.5) / DRIFT_QUANTILES
    e = -np.log(1 - u)
    e /= e.mean()
    for offsets, cap in (([0.02, 0.05, 0.08], 1 / 3), ([0.3, 0.4, 0.5], 0.5), ([0.0, 0.01], 0.25)):
        w = column_drift_weights(np.array(offsets), cap)
        x = np.minimum(np.array(offsets)[:, None] * e[None, :], cap)
        assert sum(w.values()) == pytest.approx(1.0)
        assert sum(d * v for d, v in w.items()) == pytest.approx(x.mean())
        assert set(w) <= set(DRIFT_GRID) | {cap} and max(w) <= cap
    assert column_drift_weights(np.zeros(5), 1 / 3) == {0.0: pytest.approx(1.0)}
    one = column_drift_weights(np.array([0.1]), 0.5, quantiles=1)  # one quantile: the mean itself, a grid point
    assert one == {0.1: pytest.approx(1.0)}


def test_a_drifting_launch_is_the_weighted_mean_of_its_runs():
    """A 4-SM machine, 2 blocks per SM, 4 tiles a column (2 a wave), 4 waves, a drift of 0.05 a wave: the counters
    are the weighted mean of simulate_memory at the weights' offsets, and the lockstep run where there is no drift."""
    m = small_machine().model_copy(update={"column_drift": ColumnDrift(per_wave=0.05, reference_tiles=4, exponent=1)})
    spec = KERNELS["naive"].spec({"BX": 8, "BY": 4, "raster": "column"}, "fp32")
    L = Layout.build(16, 64, 64, "fp32")
    off = column_drift_offsets(m, spec, L, 2)
    assert off == pytest.approx([0.025, 0.075, 0.125, 0.175])
    weights = column_drift_weights(off, 0.5)
    got = simulate_memory_drifting(m, spec, L, 2, 1024).counters
    parts = {d: simulate_memory(m, spec, L, 2, 1024, stagger=d * 2, stagger_group=4).counters for d in weights}
    for key in ("dram_bytes_read", "l2_read_hits", "l2_lookups", "l1_sectors_hit", "rounds"):
        assert got[key] == pytest.approx(sum(w * parts[d][key] for d, w in weights.items())), key
    assert got["column_drift_runs"] == len(weights) > 3
    assert got["column_drift_offset_end"] == pytest.approx(0.175) and got["column_drift_offset_mean"] == pytest.approx(0.1)
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

#: Sizes (rounds 15-21) where gemmsim's column-order bytes are outside 1.5x of ncu's: 4352, round 19's launch
#: (5.55 GB, 1.60x), which drifted least of its three (round 24's read 8.65 and 7.08 GB: gemmsim 1.03x and 1.26x).
KNOWN_MISSES_15 = {4352}
#: Sizes whose traced mean partner offset is more than a factor 2 from gemmsim's drifting offset: 6400 (0.115
#: traced, 0.056 modelled), 10240 and 10752 (0.38 and 0.31 against 0.16 and 0.15: near 1.6 columns a wave the
#: pull-back holds the columns closer than the H200 does; the bytes are saturated there, 0.89-0.91x), and 4416 (0.084
#: against round 20's 0.024 and 0.057; round 24's two launches ran at 0.087 and 0.054).
KNOWN_OFFSET_MISSES_15 = {6400, 10240, 10752, 4416}
#: Sizes whose columns held (traced mean offset below 0.035 in every launch) where gemmsim drifts them 0.05 or more.
KNOWN_HELD_MISSES_15: set = set()
#: Sizes where a traced launch's own partner offsets through the memory model are outside 1.5x of ncu's bytes: 4288,
#: whose ncu launch (round 20, 10.9 GB) drifted more than the traced launch with a mean offset of 0.074 (6.9 GB).
KNOWN_GIVEN_MISSES_15 = {4288}


def _near_whole(kind: str) -> list[dict]:
    rows = []
    for rnd in (15, 16, 17, 18, 19, 20, 21):
        rows += [dict(r, round=rnd) for r in csv.DictReader((H200 / f"round{rnd}" / f"{kind}{rnd}.csv").open())]
    return rows


def test_near_whole_numbers_of_block_columns_against_the_h200():
    """Rounds 15-21: 33 sizes from 1.48 to 3.94 block columns a wave (4288 measured twice), 21 of them a little more
    or less than a whole number. gemmsim (``column_drift_offsets`` -> ``simulate_memory_drifting``, the weighted mean
    of the memory model's runs stored in round19/grid15_18.json and roundR/gridR.json; ``model{15..21}.csv``) is
    within 1.5x of ncu's DRAM bytes at every size but ``KNOWN_MISSES_15``, its mean partner offset within a factor 2
    of the traced one but ``KNOWN_OFFSET_MISSES_15``, and below 0.05 of a block where the traced columns held (mean
    offset below 0.035) but ``KNOWN_HELD_MISSES_15``. Given each launch's traced partner offsets the memory model is
    within 1.5x of ncu's bytes of another launch but ``KNOWN_GIVEN_MISSES_15`` (the caches are right)."""
    rows = _near_whole("model")
    assert len(rows) == 34
    miss = {int(r["N"]) for r in rows if not 1 / 1.5 <= float(r["ratio_model"]) <= 1.5}
    assert miss == KNOWN_MISSES_15
    given = {int(r["N"]) for r in rows for g in r["model_given_pairs_gb"].split(";")
             if not 1 / 1.5 <= float(g) / float(r["ncu_gb"]) <= 1.5}
    assert given == KNOWN_GIVEN_MISSES_15
    model = {int(r["N"]): r for r in rows}
    traced: dict = {}
    for r in _near_whole("drift"):
        traced.setdefault(int(r["N"]), []).append(float(r["offset_pair_mean"]))
    assert set(traced) == set(model) and len(model) == 33
    still = {n for n in model if float(model[n]["model_offset_mean"]) == 0}  # the model holds them in step
    assert still == {11264}  # 3/2 block columns a wave (``TIED_PERIODS``)
    far = {n for n, o in traced.items()
           if n not in still and not 0.5 <= float(model[n]["model_offset_mean"]) / np.mean(o) <= 2}
    assert far == KNOWN_OFFSET_MISSES_15
    held = {n for n, o in traced.items() if max(o) < 0.035}
    assert held >= still | {5600, 8320, 8384, 5248, 7936}
    assert {n for n in held if float(model[n]["model_offset_mean"]) >= 0.05} == KNOWN_HELD_MISSES_15
    assert min(traced[11136]) > 0.08 and min(traced[11392]) > 0.08  # round 21: 11264's neighbours drift


def test_waves_of_two_and_three_slot_group_periods_hold():
    """Rounds 22-23 (drift22.csv, drift23.csv: traced offsets and ncu against the memory model's lockstep bytes): 4/3
    block columns a wave (12672) and 8/3 (6336, predicted before measuring) hold in step -- mean partner offset below
    0.06, within 1.06x of the lockstep's bytes -- where 12800 (33/25, next to 12672) and 8/5, 11/6 (10560, 9216)
    drift; gemmsim gives no offsets at q = 2 or 3 and drifts the others."""
    rows = []
    for rnd in (22, 23):
        rows += list(csv.DictReader((H200 / f"round{rnd}" / f"drift{rnd}.csv").open()))
    h, spec = load_machine("h200"), _naive("column")
    for r in rows:
        n, q = int(r["N"]), int(r["fraction"].split("/")[1])
        tied = q in (2, 3)
        assert (float(r["offset_pair_mean"]) < 0.06 and float(r["ncu_over_lockstep"]) < 1.06) == tied, r
        assert (column_drift_offsets(h, spec, Layout.build(n, n, 64, "fp32"), 8) is None) == tied, r
    assert {int(r["N"]) for r in rows} == {9216, 10560, 12672, 12800, 6336}


def test_the_spread_of_partner_offsets_is_exponential_at_the_edge():
    """round19/spread19.csv: partner offsets over their wave's mean, pooled over the launches of rounds 15-21 whose
    mean offset is 0.05-0.13 of a block, have the exponential's quantiles (10-90 %) within 0.3; where the columns hold
    or are spread out ("rest") the distribution is narrower (the 90 % quantile below 1.8)."""
    rows = {r["launch"]: r for r in csv.DictReader((H200 / "round19" / "spread19.csv").open())}
    q = ("q10", "q25", "q50", "q75", "q90")
    edge, expo, rest = rows["pooled edge"], rows["exponential"], rows["pooled rest"]
    assert int(edge["pairs"]) > 500_000
    for k in q:
        assert abs(float(edge[k]) - float(expo[k])) < 0.3, k
    assert float(rest["q90"]) < 1.8 < float(edge["q90"])


def test_one_launch_traced_and_profiled_near_four_columns():
    """Round 24 (drift24.csv): ten naive launches at 4224-4416, each traced and profiled by ncu in the same launch.
    Given its own partner offsets the memory model reads that launch's bytes within 1.25x at 9 of 10 (the caches are
    right). With the pull-back alone gemmsim read 0.62-0.70x of the four 4288 launches (offsets 0.054 against the
    launches' 0.13-0.14); with the runaway it reads every launch within 1.5x (0.82-1.26x)."""
    rows = list(csv.DictReader((H200 / "round24" / "drift24.csv").open()))
    assert len(rows) == 10
    given = [float(r["given_over_ncu"]) for r in rows]
    assert sum(1 / 1.25 <= g <= 1.25 for g in given) == 9 and all(1 / 1.5 <= g <= 1.5 for g in given)
    assert all(1 / 1.5 <= float(r["gemmsim_over_ncu"]) <= 1.5 for r in rows)
    h, spec = load_machine("h200"), _naive("column")
    pulled = _without_runaway(h)
    off = column_drift_offsets(h, spec, Layout.build(4288, 4288, 64, "fp32"), 8).mean()
    old = column_drift_offsets(pulled, spec, Layout.build(4288, 4288, 64, "fp32"), 8).mean()
    assert old == pytest.approx(0.054, abs=5e-4)
    for r in rows:
        if r["N"] == "4288":
            assert float(r["offset_pair_mean"]) > 2 * old and 0.8 <= off / float(r["offset_pair_mean"]) <= 1.0


def _without_runaway(h):
    return h.model_copy(update={"column_drift": h.column_drift.model_copy(update={"runaway_rate": None})})


def test_just_short_of_four_columns_the_columns_run_away():
    """Round 26 (drift26.csv, traced and profiled in the same launch), held out of the runaway's constants: a little
    over four block columns a wave (4160) the columns hold and gemmsim reads ncu's bytes; just short of four (4256,
    4320) they run away to near even spacing (0.24-0.26 in a tenth) at 1.7-3.1x the pull-back's mean offset, where
    the pull-back alone read 0.58x at 4320. With the runaway gemmsim reads all six launches within 1.5x (0.84-1.14x),
    and the memory model given each launch's own offsets within 1.25x."""
    rows = list(csv.DictReader((H200 / "round26" / "drift26.csv").open()))
    assert len(rows) == 6
    h, spec = load_machine("h200"), _naive("column")
    pulled = _without_runaway(h)
    for r in rows:
        n = int(r["N"])
        assert 1 / 1.25 <= float(r["given_over_ncu"]) <= 1.25, r
        assert 1 / 1.5 <= float(r["gemmsim_over_ncu"]) <= 1.5, r
        off = column_drift_offsets(pulled, spec, Layout.build(n, n, 64, "fp32"), 8)
        if n == 4160:
            assert float(r["offset_pair_mean"]) < 0.035 and abs(float(r["gemmsim_over_ncu"]) - 1) < 0.05
        else:
            assert float(r["offset_pair_mean"]) > 1.5 * off.mean()
            assert max(float(x) for x in r["offset_pair_tenths"].split()) > 0.2


def _grid_runs() -> dict:
    """{N: {offset: DRAM bytes read}}: the memory model's stored runs (round19/model_grid19.py) of rounds 15-27."""
    runs: dict = {}
    for path in sorted(H200.glob("round*/grid*.json")):
        for n, v in json.loads(path.read_text()).items():
            runs.setdefault(int(n), {}).update({float(k): b for k, b in v.items()})
    return runs


def _launches() -> dict:
    """{N: [(source, ncu GB)]}: ncu's DRAM bytes read of the naive kernel in column order, rounds 15-27."""
    out: dict = {}
    for rnd in range(15, 22):
        for r in csv.DictReader((H200 / f"round{rnd}" / f"model{rnd}.csv").open()):
            out.setdefault(int(r["N"]), []).append((f"round {rnd}", float(r["ncu_gb"])))
    for rnd in (24, 26, 27):
        for r in csv.DictReader((H200 / f"round{rnd}" / f"drift{rnd}.csv").open()):
            out.setdefault(int(r["N"]), []).append((f"round {rnd} launch {r['launch']}", float(r["ncu_gb"])))
    return out


def _model_gb(h, runs: dict, n: int) -> float:
    spec = _naive("column")
    off = column_drift_offsets(h, spec, Layout.build(n, n, 64, "fp32"), 8)
    if off is None:
        return runs[n][0.0] / 1e9
    w = column_drift_weights(off, 1 / -(-1056 // (n // 16)))
    return sum(v * runs[n][d] for d, v in w.items()) / 1e9


def test_every_measured_launch_from_the_stored_runs():
    """gemmsim's bytes recomputed from the current law (``column_drift_offsets`` with the machine file's constants)
    and the memory model's stored runs, against every ncu launch of rounds 15-27 (41 sizes, 1.48-5.93 columns a wave):
    within 1.5x of every size's median launch; of every launch but round 19's at 4352 (1.60x; the three 4352 launches
    themselves span 1.56x) and round 27's second at 2848 (1.63x: the memory model's own lockstep bytes, 0.70 GB, over
    launches of 0.42-0.60 GB); median error 1.07x. With the pull-back alone (no runaway): 4288 and 4320 outside 1.5x
    (0.57x, 0.58x) besides 2848 (4352's launch comes inside, 1.09x), 3440 and 4384 at 0.69-0.78x; median error 1.16x."""
    h = load_machine("h200")
    runs, launches = _grid_runs(), _launches()
    assert len(launches) == 41 and set(launches) <= set(runs)

    def ratios(machine):
        return {n: [(src, _model_gb(machine, runs, n) / gb) for src, gb in v] for n, v in launches.items()}

    got, old = ratios(h), ratios(_without_runaway(h))
    for n, v in got.items():
        med = np.median([gb for _, gb in launches[n]])
        assert 1 / 1.5 <= _model_gb(h, runs, n) / med <= 1.5, n
    outside = {(n, src) for n, v in got.items() for src, x in v if not 1 / 1.5 <= x <= 1.5}
    assert outside == {(4352, "round 19"), (2848, "round 27 launch 2")}
    err = float(np.exp(np.median([abs(np.log(x)) for v in got.values() for _, x in v])))
    old_err = float(np.exp(np.median([abs(np.log(x)) for v in old.values() for _, x in v])))
    assert err < 1.08 < 1.15 < old_err
    assert {n for n, v in old.items() for _, x in v if not 1 / 1.5 <= x <= 1.5} == {4288, 4320, 2848}


def test_four_sizes_predicted_before_measuring():
    """Round 27 (drift27.csv; predictions27.csv committed before the device call): just short of six, five, four and
    three block columns a wave (2848, 3440, 4384, 5920), three launches each, traced and profiled in the same launch.
    The columns ran away where the pull-back held them: mean partner offsets 2.2-6.6x the pull-back's at 2848-4384
    (1.48x at 5920) and within a factor 2 of the runaway's at every size (3440 levelled off at even spacing, 0.19-0.20). gemmsim read 0.90-1.15x
    of every launch at 3440-5920, where the pull-back alone read 0.69-0.92x, and 1.15-1.63x at 2848, where the bytes
    barely move with the offset: the memory model's lockstep run reads 0.70 GB against launches of 0.42-0.60 GB. Given
    each launch's own offsets the memory model is within 1.25x at 7 of 12: at 2848 and 3440 it reads 1.16-1.65x (the
    small sizes' curve lies high)."""
    rows = list(csv.DictReader((H200 / "round27" / "drift27.csv").open()))
    pred = {int(r["N"]): r for r in csv.DictReader((H200 / "round27" / "predictions27.csv").open())}
    assert len(rows) == 12 and set(pred) == {2848, 3440, 4384, 5920}
    h, spec = load_machine("h200"), _naive("column")
    for n, p in pred.items():
        off = column_drift_offsets(h, spec, Layout.build(n, n, 64, "fp32"), 8).mean()
        assert off == pytest.approx(float(p["offset_mean"]), abs=1e-4)  # the law as predicted
        measured = np.median([float(r["offset_pair_mean"]) for r in rows if int(r["N"]) == n])
        assert 0.5 <= off / measured <= 2, n
        assert measured >= (1.4 if n == 5920 else 2) * float(p["pullback_offset_mean"]), n  # 5920: 1.48x
    for r in rows:
        now, old = float(r["gemmsim_over_ncu"]), float(r["pullback_over_ncu"])
        if r["N"] == "2848":
            assert 1.1 < now < 1.7 and abs(now - old) < 0.02
        else:
            assert 1 / 1.5 <= now <= 1.5 and abs(np.log(now)) < abs(np.log(old)), r
    assert sum(1 / 1.25 <= float(r["given_over_ncu"]) <= 1.25 for r in rows) == 7
