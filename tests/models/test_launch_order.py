"""Launch order on the GPU: how far resident blocks drift apart, and what it does to the DRAM bytes (issue 11).

``simulate_memory`` starts the first resident blocks ``stagger`` of a block apart and keeps that spread: 0
(lockstep) for the naive kernel in row and column order, 1 otherwise (``start_stagger``, from the H200's
block-start traces). These tests check the rule, the traces it comes from, and the stored comparison of the model
with the H200's DRAM bytes.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from test_gpu_memory import small_machine

from gemmsim.kernels.gpu import KERNELS
from gemmsim.models.gpu_memory import DEFAULT_STAGGER, simulate_memory, start_stagger
from gemmsim.trace import Layout

ROOT = Path(__file__).resolve().parents[2]
ROUND3 = ROOT / "validation" / "h200" / "round3"

#: (kernel, N, order) the model misses by more than 1.5x, and (kernel, N, more, fewer) pairs of orders whose measured
#: bytes differ by more than 10 % that the model does not rank the same way (validation/h200/round3/README.md); a
#: change that fixes one or breaks another fails ``test_stored_launch_order_model_against_h200`` until they are updated.
KNOWN_MISSES: set = set()
KNOWN_RANK_MISSES: set = set()
#: (kernel, N) whose row/column gap reverses with where the operands lie (validation/h200/round24: the tiled kernel at
#: 3072 reads 1.12-1.18x in row order with A, B, C in three allocations, 0.90x with B placed before A in one buffer),
#: so the gap is not the order's; the ranking check leaves their row/column pair out
#: (``test_the_tiled_gap_follows_the_placement`` checks the reversal).
PLACEMENT_DEPENDENT = {("tiled_smem", 3072)}


def test_start_stagger_follows_the_kernel_and_its_order():
    for name in ("naive", "jki", "ijk"):
        for order in ("row", "column"):
            assert start_stagger(KERNELS[name].spec({"raster": order}, "fp32")) == 0.0, (name, order)
        assert start_stagger(KERNELS[name].spec({"raster": "grouped"}, "fp32")) == DEFAULT_STAGGER, name
    for name, dtype in (("tiled_smem", "fp32"), ("blocked", "fp32"), ("tensorcore", "fp16"), ("hopper_ws", "fp16")):
        for order in ("row", "column", "grouped"):
            assert start_stagger(KERNELS[name].spec({"raster": order}, dtype)) == DEFAULT_STAGGER, (name, order)


def test_default_stagger_is_the_kernels_own():
    """Leaving ``stagger`` out gives the kernel's ``start_stagger``; passing it still overrides."""
    m = small_machine()
    L = Layout.build(24, 40, 16, "fp32")
    for name, params in (("naive", {"BX": 8, "BY": 4}), ("tiled_smem", {"TILE": 8})):
        spec = KERNELS[name].spec(params, "fp32")
        default = simulate_memory(m, spec, L, 2, 1024).counters
        explicit = simulate_memory(m, spec, L, 2, 1024, stagger=start_stagger(spec)).counters
        assert default == explicit, name
    naive = KERNELS["naive"].spec({"BX": 8, "BY": 4}, "fp32")
    assert simulate_memory(m, naive, L, 2, 1024)["rounds"] < simulate_memory(m, naive, L, 2, 1024, stagger=1.0)["rounds"]


def test_stagger_group_starts_slots_in_groups():
    """``stagger_group``: consecutive slots share their group's first phase. One group is lockstep whatever the
    stagger; groups of one slot are the plain stagger; the groups' phases are the plain stagger's at each group's
    first slot (checked on the schedule the model runs); a group of no slots is refused."""
    import gemmsim.models.gpu_memory as gm
    from gemmsim.errors import KernelError

    m = small_machine()
    L = Layout.build(32, 64, 16, "fp32")
    spec = KERNELS["naive"].spec({"BX": 8, "BY": 4}, "fp32")
    slots = m.sms * 2
    lock = simulate_memory(m, spec, L, 2, 1024, stagger=0.0).counters
    assert simulate_memory(m, spec, L, 2, 1024, stagger=1.0, stagger_group=slots).counters == lock
    plain = simulate_memory(m, spec, L, 2, 1024, stagger=1.0).counters
    assert simulate_memory(m, spec, L, 2, 1024, stagger=1.0, stagger_group=1).counters == plain
    seen = []
    orig = gm._schedule
    gm._schedule = lambda blk_tpl, tpl_ninst, n_slots, first_round: (seen.append(first_round.copy()), orig(
        blk_tpl, tpl_ninst, n_slots, first_round))[1]
    try:
        simulate_memory(m, spec, L, 2, 1024, stagger=1.0)
        simulate_memory(m, spec, L, 2, 1024, stagger=1.0, stagger_group=3)
    finally:
        gm._schedule = orig
    even, grouped = seen
    assert len(even) == slots and (np.diff(even) >= 0).all() and even[-1] > 0
    assert (grouped == even[np.arange(slots) // 3 * 3]).all()
    with pytest.raises(KernelError, match="stagger_group"):
        simulate_memory(m, spec, L, 2, 1024, stagger_group=0)


def _spreads():
    rows = list(csv.DictReader((ROUND3 / "order_wave_spread.csv").open()))
    rows += list(csv.DictReader((ROUND3.parent / "round5" / "order_wave_spread5.csv").open()))
    out = {}
    for r in rows:
        out.setdefault((r["kernel"], int(r["N"]), r["order"]), []).append(float(r["start_spread_p5_p95_over_block"]))
    return out


def test_block_start_traces_behind_the_rule():
    """The measurements ``start_stagger`` rests on (median spread of a launch's waves, in blocks): the naive kernel
    stays in lockstep in row order at N = 3072, 4096, 6144 and in column order at 3072 and 4096 (<= 0.15), and
    drifts in grouped order (>= 0.8); the tiled kernel drifts in every order (>= 0.5). The one exception the rule
    does not follow -- naive, column order, N = 6144, lockstep for ~15 waves and then spread over a block -- is
    listed too: ``column_drift_offsets`` adds that drift on top of the lockstep start (test_column_drift.py)."""
    sp = {k: float(np.median(v)) for k, v in _spreads().items()}
    for n in (3072, 4096, 6144):
        assert sp[("naive16", n, "row")] <= 0.15, n
    for n in (3072, 4096):
        assert sp[("naive16", n, "column")] <= 0.15, n
        assert sp[("naive16", n, "grouped")] >= 0.8, n
    for key in [k for k in sp if k[0] == "tiled32" and k[1] >= 3072]:
        assert sp[key] >= 0.5, key
    assert sp[("naive16", 6144, "column")] >= 0.8


def _order_rows():
    path = ROUND3 / "model_order.csv"
    if not path.exists():
        pytest.skip(f"{path} not computed (python validation/h200/round3/model_order.py)")
    return list(csv.DictReader(path.open()))


def test_stored_launch_order_model_against_h200():
    """validation/h200/round3/model_order.csv, the model with its default stagger against ncu on the H200 (run 3):
    within 1.5x of the measured DRAM bytes in every simulated case except ``KNOWN_MISSES``, and every pair of orders
    ranked as measured except ``KNOWN_RANK_MISSES`` (row against column left out for ``PLACEMENT_DEPENDENT``). The
    rows are computed by model_order.py (minutes a case)."""
    rows = _order_rows()
    assert {(r["kernel"], int(r["N"])) for r in rows} >= {(k, n) for k in ("naive", "tiled_smem") for n in (2048, 3072, 4096)}
    miss = {(r["kernel"], int(r["N"]), r["order"]) for r in rows if not 1 / 1.5 <= float(r["ratio_model_measured"]) <= 1.5}
    assert miss == KNOWN_MISSES & {(r["kernel"], int(r["N"]), r["order"]) for r in rows}
    by = {(r["kernel"], int(r["N"]), r["order"]): r for r in rows}
    wrong = set()
    for (k, n, a), ra in by.items():
        for (k2, n2, b), rb in by.items():
            if (k2, n2) != (k, n) or a == b:
                continue
            if (k, n) in PLACEMENT_DEPENDENT and {a, b} == {"row", "column"}:
                continue
            if float(ra["measured_dram_bytes_read"]) > 1.1 * float(rb["measured_dram_bytes_read"]):
                if not float(ra["model_dram_bytes_read"]) > float(rb["model_dram_bytes_read"]):
                    wrong.add((k, n, a, b))
    assert wrong == KNOWN_RANK_MISSES


# --- the model fed the schedule the H200 ran (validation/h200/round5/model_measured_schedule.py)

ROUND5 = ROUND3.parent / "round5"


def _schedule_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_mms", ROUND5 / "model_measured_schedule.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_measured_schedule_is_a_schedule_the_model_can_run():
    """The replayed schedule of two drifted waves (naive, N = 6144, column, waves 60-61): every block on one of its
    SM's 8 slots, a slot's blocks in pid order one block length apart or more (the model runs a block in exactly
    ``ninst`` rounds and walks a slot's blocks in pid order), the SM's L2 partition the measured one, and the
    drift kept: the window's start rounds spread over most of a block, as the trace's are."""
    mms = _schedule_script()
    ninst, n_sm, bps = 1000, 132, 8
    lo, hi = 60 * 1056, 62 * 1056
    slot_of, start = mms.measured_schedule("naive", 6144, "column", lo, hi, n_sm, bps, ninst)
    assert slot_of.shape == start.shape == (hi - lo,)
    assert slot_of.min() >= 0 and slot_of.max() < n_sm * bps and start.min() == 0
    for s in np.unique(slot_of):
        st = start[slot_of == s]  # pid order
        assert (np.diff(st) >= ninst).all(), s
    part = mms.partition_of_sm()
    smid = mms.trace_frame("naive", 6144, "column")["smid"][lo:hi]
    near = (slot_of % n_sm) * 2 // n_sm  # the model's near partition of a slot's SM
    assert (near == np.array([part[int(s)] for s in smid])).all()
    first_wave = start[: 1056]
    assert np.percentile(first_wave, 95) - np.percentile(first_wave, 5) > 0.25 * ninst


def _measured_rows():
    path = ROUND5 / "model_measured_schedule.csv"
    return [r for r in csv.DictReader(path.open())]


def test_stored_measured_schedule_accounts_for_the_column_order_miss():
    """What the replay showed (model_measured_schedule.csv; minutes a window): the naive kernel at N = 6144 in
    column order, which a lockstep start misses at 0.66x, comes out within 1.5x of ncu's bytes (0.95x) when the
    model runs the blocks when and where the H200 ran them; in row order the replay equals lockstep. So the caches
    are right there and what was missing is the timing that breaks the launch into groups (since round 19 the
    model's own drift gives 0.98x, ``test_stored_launch_order_model_against_h200``). The estimate interpolates the
    per-block rate between the replayed windows over the launch's waves."""
    rows = _measured_rows()
    rate = {(r["order"], r["window_waves"], r["schedule"]): float(r["dram_read_bytes_per_block"])
            for r in rows if r["kernel"] == "naive" and r["N"] == "6144"}
    lock = rate[("column", "60-61", "lockstep")]
    assert rate[("row", "60-61", "measured")] == pytest.approx(lock, rel=0.01)
    assert rate[("column", "60-61", "spread")] > 2 * lock  # an even spread over a block shares far less
    assert sum(1 for (o, w, s) in rate if o == "column" and s == "measured") >= 10
    est = _schedule_script().launch_estimate(rows, "naive", 6144, "column", 147456, 1056)
    meas = {(r["kernel"], int(r["N"]), r["order"]): float(r["measured_dram_bytes_read"]) for r in _order_rows()}
    ratio = est / meas[("naive", 6144, "column")]
    assert 1 / 1.5 <= ratio <= 1.5 and ratio > 0.9
    assert lock * 147456 / meas[("naive", 6144, "column")] < 1 / 1.5  # lockstep: the miss the drift removes


def test_measured_schedule_ranks_tiled_3072_row_above_column():
    """The tiled kernel at N = 3072 (a known rank miss: the H200 reads 1.21x more in row order than column; the
    model's even spread gives 0.99x): replayed with the measured starts, the whole launch (9,216 blocks, seconds)
    reads more in row order, and the stored rows are what the model gives now."""
    mms = _schedule_script()
    rows = {(r["order"], r["schedule"]): r for r in _measured_rows() if r["kernel"] == "tiled_smem" and r["N"] == "3072"}
    got = {}
    for order in ("row", "column"):
        c = mms.window("tiled_smem", 3072, order, 0, 9216, "measured")
        got[order] = c["dram_bytes_read"] / 9216
        assert round(got[order]) == int(rows[(order, "measured")]["dram_read_bytes_per_block"]), order
    assert got["row"] > 1.05 * got["column"]
    spread = {o: float(rows[(o, "spread")]["dram_read_bytes_per_block"]) for o in ("row", "column")}
    assert spread["row"] < spread["column"]  # the model's own schedule ranks them the other way


def test_column_order_loses_lockstep_at_launch_to_launch_waves():
    """Round 7 (validation/h200/round7/drift7.csv): the naive kernel's row order holds lockstep from N = 5120 to 7168
    (no wave spread over more than half a block), its column order holds it at 5120 and loses it at every size from
    5632 on, at a wave that differs between two launches of one configuration (6144) -- the event ``start_stagger``
    does not model. The row-major layouts only; the transposed variants are other kernels (round 7's README)."""
    rows = list(csv.DictReader((ROUND3.parent / "round7" / "drift7.csv").open()))
    plain = [r for r in rows if r["a_col_major"] == r["b_col_major"] == "0"]
    row = {int(r["N"]): r for r in plain if r["order"] == "row"}
    col = [r for r in plain if r["order"] == "column"]
    assert sorted(row) == [4224, 5120, 5632, 6144, 6656, 7168, 8448]
    assert all(float(r["waves_spread_over_half"]) == 0 and float(r["median_spread"]) <= 0.15 for r in row.values())
    lost = {(int(r["N"]), r["launch"]): r["first_wave_spread_over_half"] for r in col}
    assert lost[(5120, "1")] == lost[(4608, "1")] == ""
    assert all(w != "" for (n, _), w in lost.items() if 5632 <= n <= 7168)
    assert lost[(6144, "1")] != lost[(6144, "2")]
    assert all(float(r["max_rel_err"]) < 1e-6 and 1900 <= float(r["sm_mhz"]) <= 2000 for r in rows)


#: (N, order) of rounds 7b/7c where the model is outside 1.5x of some measured launch (before round 14's drift of
#: block columns: 5632 and 8448 column, 0.37-0.51x).
KNOWN_MISSES_7: set = set()


def test_stored_model_against_repeated_launches():
    """Rounds 7b/7c (validation/h200/round7/model7.csv, ncu7.csv: ncu's DRAM bytes of 2-8 launches per
    configuration, cold L2 each): row order reads the same bytes in every launch (within 0.1 %) and the model
    matches it within 2 % at N = 4224-8448; column order reads 1.06-2.7x the row order's bytes at 4224 and from 5632
    on and varies up to 34 % from launch to launch; at 4608 (the control of 7c) it reads what row order reads. The
    model (block columns drifting at round 14's rate against the pull-back of a wave's shortfall, round 19): more in
    column order wherever the H200 reads more, the row order's bytes within 2 % at 4608, and within 1.5x of every
    launch except ``KNOWN_MISSES_7``."""
    meas: dict = {}
    for r in csv.DictReader((ROUND3.parent / "round7" / "ncu7.csv").open()):
        meas.setdefault((int(r["N"]), r["order"]), []).append(float(r["dram_bytes_read"]))
    model = {(int(r["N"]), r["order"]): float(r["model_dram_bytes_read"])
             for r in csv.DictReader((ROUND3.parent / "round7" / "model7.csv").open())}
    for n in (4224, 4608, 5632, 6144, 6656, 7168, 8448):
        row = meas[(n, "row")]
        assert max(row) / min(row) < 1.001
        assert model[(n, "row")] == pytest.approx(np.mean(row), rel=0.02)
        if n == 4608:
            assert meas[(n, "column")] == pytest.approx([np.mean(row)] * len(meas[(n, "column")]), rel=0.01)
            assert model[(n, "column")] == pytest.approx(model[(n, "row")], rel=0.02)  # held: the lockstep's bytes
        else:
            assert min(meas[(n, "column")]) > 1.05 * max(row)  # column reads more in every launch
            assert model[(n, "column")] > 1.05 * model[(n, "row")]  # ranked as measured
    assert max(meas[(6144, "column")]) / min(meas[(6144, "column")]) > 1.15
    miss = {k for k, v in meas.items() if k in model and not all(1 / 1.5 <= model[k] / x <= 1.5 for x in v)}
    assert miss == KNOWN_MISSES_7


def test_replay_at_5632_reads_what_the_column_launches_read():
    """Naive, N = 5632, column order (lockstep gives 15.0 GB, ncu 30.1-40.2 GB over four launches) replayed on round
    7's block-start trace of that configuration (eight windows, stored): 38 GB, inside the launches' range -- the
    caches give the bytes once the schedule is the measured one; lockstep (offset_bytes7.csv, offset 0) misses."""
    rows = _measured_rows()
    est = _schedule_script().launch_estimate(rows, "naive", 5632, "column", 123904, 1056)
    meas = [float(r["dram_bytes_read"]) for r in csv.DictReader((ROUND3.parent / "round7" / "ncu7.csv").open())
            if r["N"] == "5632" and r["order"] == "column"]
    assert len(meas) >= 4 and min(meas) <= est <= max(meas)
    lock = next(float(r["dram_bytes_read"]) for r in csv.DictReader((ROUND3.parent / "round7" / "offset_bytes7.csv").open())
                if r["part"] == "model" and float(r["delta"]) == 0)
    assert lock < min(meas) / 1.5  # lockstep: the miss the drift of round 14 removes


def _cohorts(a_l2: str = "0", b_l2: str = "0"):
    """cohorts7.csv's launches of one variant (round 7d: A's or B's rows wrapped, that operand L2-resident)."""
    return {(int(r["N"]), r["order"], r["launch"]): {k: float(v) for k, v in r.items() if k not in ("order", "launch")}
            for r in csv.DictReader((ROUND3.parent / "round7" / "cohorts7.csv").open())
            if r["a_l2_resident"] == a_l2 and r["b_l2_resident"] == b_l2}


def test_row_order_catches_up_and_column_order_does_not():
    """Round 7/7c's traces (validation/h200/round7/cohorts7.csv, from cohorts7.py): blocks that share an operand
    panel across block columns or rows (partners) start up to 0.09 of a block apart in both orders. In row order
    they end together in every launch (the trailing block catches up: block times spread 0.88-1.11); in column order
    they end exactly as far apart as they started. Where a wave holds a whole number of block columns, each block
    column starts as one group and every block takes nearly the same time (0.979-1.014 of the median)."""
    rows = _cohorts()
    assert len(rows) == 20
    for (n, order, _), r in rows.items():
        if order == "row":
            assert r["partner_end_offset"] <= 0.001 < r["partner_start_offset"], n
        else:
            assert abs(r["partner_end_offset"] - r["partner_start_offset"]) <= 0.005, n
            if r["cohorts_per_wave"] == round(r["cohorts_per_wave"]):
                assert r["within_cohort_spread"] <= 0.005, n
                assert r["block_time_p95"] - r["block_time_p5"] <= 0.04, n
    assert all(r["block_time_p95"] - r["block_time_p5"] >= 0.08 for (_, o, _), r in rows.items() if o == "row")
    assert all(rows[(8448, "column", launch)]["partner_start_offset"] > 0.08 for launch in ("1", "2"))
    assert rows[(5632, "column", "1")]["partners_apart"] > 0.7 > rows[(4608, "column", "1")]["partners_apart"] + 0.6


def test_round_7c_prediction_and_replay():
    """Round 7c tested the hypothesis that a column-order launch keeps one group per block column where a wave
    holds a whole number of them. Predicted before measuring (predictions7c.csv, predict7c.py): at N = 8448 (two a
    wave) the groups give 151.0 GB against the lockstep's 75.65; ncu measured 148.8-149.3 GB in all four launches
    (row order 76.25). The traces show the groups 0.09 of a block apart rather than the half a block assumed;
    replayed on them (model_measured_schedule.csv) the model gives 0.93x of what ncu measured. The control, 4608
    (3.67 a wave), reads the lockstep's bytes; 4224 (four a wave) drifts slowly and reads 1.06-1.42x."""
    pred = {(int(r["N"]), r["schedule"]): float(r["model_dram_bytes_read_gb"]) * 1e9
            for r in csv.DictReader((ROUND3.parent / "round7" / "predictions7c.csv").open())}
    meas: dict = {}
    for r in csv.DictReader((ROUND3.parent / "round7" / "ncu7.csv").open()):
        meas.setdefault((int(r["N"]), r["order"]), []).append(float(r["dram_bytes_read"]))
    col = meas[(8448, "column")]
    assert len(col) == 4 and all(x == pytest.approx(pred[(8448, "cohorts")], rel=0.03) for x in col)
    assert pred[(8448, "lockstep")] < min(col) / 1.5
    assert all(x == pytest.approx(pred[(4608, "lockstep")], rel=0.02) for x in meas[(4608, "column")])
    assert pred[(4224, "lockstep")] < min(meas[(4224, "column")]) < max(meas[(4224, "column")]) < pred[(4224, "cohorts")] / 2
    rows = _measured_rows()
    est = _schedule_script().launch_estimate(rows, "naive", 8448, "column", 278784, 1056)
    assert est == pytest.approx(np.mean(col), rel=0.1)


def test_the_shared_per_step_stream_is_what_holds_blocks_together():
    """Round 7d (cohorts7.csv, the variants): with B's rows wrapped every 64 -- B, the operand with a new line every
    k step, L2-resident -- row order no longer catches up and neither order keeps a block column together: both start
    and end spread evenly (partners 1/3 and 1/2 of a block apart at 5632 and 8448, block columns spread over 0.2-0.45
    of a block). With A's rows wrapped instead, column order still drifts apart by block columns (0.19-0.20 of a
    block): A's sharing is what the drift costs, not what drives it."""
    b = _cohorts(b_l2="1")
    a = _cohorts(a_l2="1")
    assert len(b) == 4 and len(a) == 2
    for (n, order, _), r in b.items():
        spacing = 1 / r["cohorts_per_wave"] if n == 8448 else 1 / 3
        assert r["partner_start_offset"] == pytest.approx(spacing, abs=0.04), (n, order)
        assert r["partner_end_offset"] == pytest.approx(r["partner_start_offset"], abs=0.005), (n, order)
        assert r["within_cohort_spread"] > 0.15, (n, order)
    for (n, order, _), r in a.items():
        assert order == "column" and r["within_cohort_spread"] <= 0.005 and r["partner_start_offset"] > 0.15, n


def test_what_a_drift_between_block_columns_costs():
    """validation/h200/round7/offset_bytes7.csv (offset_bytes7.py): at N = 5632 the model's DRAM bytes with block
    columns ``delta`` of a block apart stay at the lockstep's up to 0.05, then rise to 3x by 0.2 -- the reach of A's
    lines in L2; the two traced column-order launches' wave-by-wave offsets, put through that curve, give 38.3 and
    39.9 GB, inside the 30.1-40.2 GB ncu measured on four other launches (the whole-launch replay gave 38.3): what
    the model lacks is the drift, not the caches."""
    rows = list(csv.DictReader((ROUND3.parent / "round7" / "offset_bytes7.csv").open()))
    curve = [(float(r["delta"]), float(r["dram_bytes_read"])) for r in rows if r["part"] == "model"]
    b = [x for _, x in sorted(curve)]
    assert all(y >= x * 0.999 for x, y in zip(b, b[1:]))
    lock = b[0]
    assert all(x == pytest.approx(lock, rel=0.01) for d, x in curve if d <= 0.05)
    assert all(x > 2.8 * lock for d, x in curve if d >= 0.2)
    meas = [float(r["dram_bytes_read"]) for r in csv.DictReader((ROUND3.parent / "round7" / "ncu7.csv").open())
            if r["N"] == "5632" and r["order"] == "column"]
    traced = [float(r["dram_bytes_read"]) for r in rows if r["part"] == "traced launch"]
    assert len(traced) == 2 and all(min(meas) <= x <= max(meas) for x in traced)


def test_block_columns_attract_when_close_and_repel_when_apart():
    """validation/h200/round7/force7.csv (force7.py): at N = 5632, in both traced column-order launches, a block
    column less than 0.03 of a block behind its partner runs faster than the leading columns (catches up) and one
    more than 0.15 behind runs slower (falls further behind); at 4224 followers run slower at every offset."""
    rows = [r for r in csv.DictReader((ROUND3.parent / "round7" / "force7.csv").open())
            if r["a_l2_resident"] == r["b_l2_resident"] == "0"]
    f = {(int(r["N"]), r["launch"], float(r["offset_lo"])): float(r["follower_minus_leader"]) for r in rows}
    for launch in ("1", "2"):
        assert f[(5632, launch, 0.01)] < 0 < f[(5632, launch, 0.15)] < f[(5632, launch, 0.2)] + 0.001
        assert all(v > 0 for (n, la, _), v in f.items() if n == 4224 and la == launch)


def test_cp_async_gemm_blocks_read_dram_as_in_lockstep():
    """validation/h200/round7/tc_schedule7.csv (tc_schedule7.py): mma_pipe's blocks share a new A and B tile every k
    step, like the naive kernel's row order, and its DRAM bytes (ncu, round 8) are the memory model's in lockstep --
    within 11 % at 4096^3 for all three tiles and every S, and for the 128x128 tiles at 8192^3 with S <= 2 -- where
    the tensor-core default (blocks spread over a block) reads 1.48-3.8x as much. At 8192 with S >= 3 (128x128) and for
    the 64x64 tile (5-8 blocks per SM) the launch reads between the two or near the spread: drift, as in round 7."""
    rows = list(csv.DictReader((ROUND3.parent / "round7" / "tc_schedule7.csv").open()))
    assert len(rows) == 24
    for r in rows:
        ncu, lock, spread = (float(r[k]) for k in ("ncu_dram_bytes_read", "model_lockstep", "model_spread"))
        assert lock <= spread
        if r["N"] == "4096" or (r["kernel"].startswith("mma_128x128") and int(r["stages"]) <= 2):
            assert lock == pytest.approx(ncu, rel=0.11), (r["kernel"], r["stages"], r["N"])
            assert spread > 1.45 * ncu
        else:
            assert lock < 0.8 * ncu <= spread * 1.01 or r["kernel"] == "mma_128x128_w2x2"


def test_the_tiled_gap_follows_the_placement():
    """validation/h200/round24/asym24.csv (ncu, one launch each): the tiled kernel at N = 3072 reads more in row order
    than in column order with A, B and C in three allocations (round 3's placement, twice) and less with B before A in
    one buffer, and over eight random placements (round 24b) the ratio lies on both sides of 1 with a median near 1,
    so the measured ranking is the placement's, not the order's; at every size and placement gemmsim can express it
    is within 1.5x of each launch and keeps the orders within 3 % (it has no physical pages to place)."""
    rows = list(csv.DictReader((ROOT / "validation" / "h200" / "round24" / "asym24.csv").open()))
    ratio = {(int(r["N"]), r["placement"], int(r["repeat"])): float(r["row_over_column"]) for r in rows}
    assert ratio[(3072, "sep", 1)] > 1.1 and ratio[(3072, "sep", 2)] > 1.1
    assert ratio[(3072, "swap", 1)] < 1 / 1.05
    for r in rows:
        if r["gemmsim_gb"]:
            assert 1 / 1.5 <= float(r["gemmsim_gb"]) / float(r["dram_gb"]) <= 1.5, r
            assert abs(float(r["gemmsim_row_over_column"]) - 1) < 0.03, r
    rand = [v for k, v in ratio.items() if k[1].startswith("rand")]  # round 24b: eight random 2 MiB placements
    assert len(rand) == 8 and min(rand) < 0.97 and max(rand) > 1.03 and abs(float(np.median(rand)) - 1) < 0.08
    assert {(k[0], k[1]) for k in ratio if not k[1].startswith("rand")} == {
        (3072, "sep"), (3072, "swap"), (3072, "pad"), (3008, "sep"), (3136, "sep")}


def test_the_naive_gap_holds_at_every_placement():
    """validation/h200/round24/asym24c.csv: the naive kernel's column order reads 1.41-1.54x row order at N = 6144
    under six placements (its block columns drift apart; row order holds lockstep and reads 21.33 GB at every one),
    and the two orders read the same at 4096 under three: unlike the tiled kernel's gap at 3072, this one is the
    order's. gemmsim (its default layout) is within 1.5x of every launch and ranks column above row at 6144."""
    rows = list(csv.DictReader((ROOT / "validation" / "h200" / "round24" / "asym24c.csv").open()))
    by = {(int(r["N"]), r["placement"], r["order"]): r for r in rows}
    places = {p for n, p, _ in by if n == 6144}
    assert len(places) == 6
    for p in places:
        assert float(by[(6144, p, "column")]["column_over_row"]) > 1.2, p
    row = [float(by[(6144, p, "row")]["dram_gb"]) for p in places]
    assert max(row) / min(row) < 1.1
    for p in {p for n, p, _ in by if n == 4096}:
        assert abs(float(by[(4096, p, "row")]["column_over_row"]) - 1) < 0.05, p
    for r in rows:
        assert 1 / 1.5 <= float(r["gemmsim_gb"]) / float(r["dram_gb"]) <= 1.5, r
    assert float(by[(6144, "sep", "column")]["gemmsim_gb"]) > 1.2 * float(by[(6144, "sep", "row")]["gemmsim_gb"])
