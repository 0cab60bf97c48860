"""Round 36: the dispatch model of a launch's ends (sm_pipeline.dispatch_cycles) -- the machine file's favoured SMs
against round 35's copy benchmark they come from, and the stored check against round 34's launch ends
(validation/h200/round36/dispatch36.py, dispatch36.csv), which nothing in the model was fitted to."""
import statistics
from dataclasses import replace

import numpy as np
import pytest
from reference.rounds import H200, table

from gemmsim.machine import load_machine
from gemmsim.models import sm_pipeline as sp
from gemmsim.models import tc_schedule as tcs


def _saturated_copies(folder: str, name: str) -> list[dict]:
    return [r for r in table(H200 / folder, name) if r["launch"].startswith("copy") and r["fast_sms"] != "0"
            and not ("k=2" in r["launch"] and "S=1" in r["launch"])]


def test_the_machine_files_favoured_sms_are_the_copy_benchmarks_measurement():
    h = load_machine("h200")
    r35, r38 = _saturated_copies("round35", "fast35.csv"), _saturated_copies("round38", "fast38.csv")
    assert {int(r["fast_sms"]) for r in r38} == {h.l2_favoured_sms} == {24}  # round 38b's device (round 35's had 12)
    assert {int(r["fast_sms"]) for r in r35} == {12}
    assert h.l2_favoured_share == pytest.approx(1 / statistics.median(float(r["fast_over_other"]) for r in r35), abs=0.01)
    assert h.l2_favoured_share == pytest.approx(1 / statistics.median(float(r["fast_over_other"]) for r in r38), abs=0.04)


def test_dispatch_follows_round_34s_launch_ends_better_than_lockstep_rounds():
    rows = table(H200 / "round36", "dispatch36.csv")
    assert len(rows) == 40
    y = np.array([float(r["measured"]) for r in rows])

    def score(col):
        x = np.array([float(r[col]) for r in rows])
        return np.corrcoef(x, y)[0, 1], float(np.mean(abs(x - y)))

    rounds, model = score("rounds"), score("fav12_sp")  # the model as the machine file sets it: 12 SMs, spread blocks
    assert rounds[0] < 0.4 and rounds[1] > 0.03
    assert model[0] > 0.5 and model[1] < 0.02
    # without unequal block times the dispatch alone is no better than the rounds
    assert score("alike")[1] > 0.04
    # the launches' spreads are the drift rule's: every 64x64 launch drifts
    for r in rows:
        assert float(r["spread"]) == pytest.approx(tcs.work_spread(False, int(r["blocks_per_sm"])), abs=1e-4)


def test_spread_blocks_smooth_the_cost_of_a_part_wave():
    # a chip-bound launch of 100 SMs x 4 slots (a full SM 1.27x faster with the chip otherwise idle, as the H200's 64x64
    # tiles: dispatch36.csv's cap_over_loaded 1.17-1.32): lockstep rounds charge a part-wave its whole round, so the end cost jumps
    # with the wave fraction; blocks of unequal times drain a part-wave over the others' ends, and the cost is smoother
    c = replace(sp.StepCost(steps=32, stages=3, warps=4, mma_clk=200.0, copy_latency_clk=600.0, copy_clk=60.0,
                            barrier_clk=30.0), queues=(("l2", 2.5, 100.0),), little=True)
    full = sp.pipeline_time(c, 4).cycles
    assert full / sp.pipeline_time(sp.unloaded(c), 4).cycles == pytest.approx(1.27, abs=0.02)
    excess = {}
    for spread in (0.0, 0.5):
        excess[spread] = [sp.dispatch_cycles(c, g, 100, 4, spread=spread).cycles / (g * full / 400) - 1
                          for g in (1650, 1700, 1800, 1900, 2000)]
    assert max(excess[0.0]) > 0.15 and min(excess[0.0]) < 0.01  # whole waves cost nothing, a thin part-wave 16 %
    assert max(excess[0.5]) < 0.4 * max(excess[0.0])
    assert max(excess[0.5]) - min(excess[0.5]) < 0.2 * (max(excess[0.0]) - min(excess[0.0]))
    assert min(excess[0.5]) >= -1e-9
