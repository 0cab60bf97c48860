"""Little's law on the chip's stations in the SM pipeline model (issue 12, round 9): where the SM's port holds a copy
at the SM's own path rate (StepCost.little), the chip's L2 / DRAM pass no more than their capacity, and the copies'
round trip grows until the step meets it."""

from dataclasses import replace

import pytest

from gemmsim.models.sm_pipeline import LITTLE_TOL, StepCost, pipeline_time

# copies leave at the barrier (no copy code simulated): T = max(b + c, (b + x + L) / (S - 1), x), b = 0, c = 10, x = 10
BASE = StepCost(steps=200, stages=2, warps=4, mma_clk=10.0, copy_latency_clk=100.0, copy_clk=10.0)
CHIP = (("l2", 5.0, 100.0),)  # 100 SMs x 1 block share it, 5 cycles a copy: the chip passes one step per 500 cycles


def test_without_little_the_chip_station_only_adds_its_queue_wait():
    t = pipeline_time(replace(BASE, queues=CHIP), 1)
    # M/D/1 at RHO_MAX (0.95): a = 0.95 x 99 / 100, W = a x 5 / (2 (1 - a)); T = x + L0 + W, far below the chip's 500
    a = 0.95 * 99 / 100
    assert t.latency_clk == pytest.approx(100.0 + a * 5 / (2 * (1 - a)), abs=3.0)
    assert t.step_clk == pytest.approx(10.0 + t.latency_clk, rel=0.01)
    assert t.step_clk < 200


@pytest.mark.parametrize("stages", [2, 3])
def test_little_raises_the_round_trip_until_the_step_meets_the_chip(stages):
    c = replace(BASE, stages=stages, queues=CHIP, little=True)
    t = pipeline_time(c, 1)
    assert t.step_clk == pytest.approx(500.0, rel=2 * LITTLE_TOL)  # 100 blocks x 5 cycles: the chip's capacity
    # by hand: (x + L) / (S - 1) = 500 -> L = 500 (S - 1) - 10 (the copies in flight over the chip's rate)
    assert t.latency_clk == pytest.approx(500.0 * (stages - 1) - 10.0, rel=0.01)
    assert t.queue_wait_clk == pytest.approx(t.latency_clk - 100.0)


def test_little_changes_nothing_below_the_chips_capacity():
    light = (("l2", 1.0, 100.0),)  # 100 cycles of demand per step, the step is ~150 anyway
    a = pipeline_time(replace(BASE, queues=light), 1)
    b = pipeline_time(replace(BASE, queues=light, little=True), 1)
    assert b.step_clk == a.step_clk and b.latency_clk == a.latency_clk


def test_the_sms_own_stations_are_not_held_to_a_chip_capacity():
    port = (("port", 50.0, 1.0),)  # multiplicity 1: the SM's own path, simulated by the port
    a = pipeline_time(replace(BASE, queues=port), 2)
    b = pipeline_time(replace(BASE, queues=port, little=True), 2)
    assert b.step_clk == a.step_clk
