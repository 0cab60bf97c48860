"""Loaded memory latency in the SM pipeline model (StepCost.queues): M/D/1 waits solved with the step time."""

from dataclasses import replace

import pytest

from gemmsim.errors import KernelError
from gemmsim.models.sm_pipeline import LOAD_TOL_CLK, StepCost, pipeline_time

BASE = StepCost(steps=128, stages=1, warps=8, mma_clk=400.0, copy_latency_clk=300.0, copy_clk=100.0, barrier_clk=40.0)


def test_hand_values_of_the_wait():
    c = replace(BASE, queues=(("port", 100.0, 1.0),))
    # 2 blocks, one copy of 100 cycles each per 400-cycle step: rho = 0.5; an arriving copy sees the other block's
    # load, a = 0.25: W = 0.25 x 100 / (2 x 0.75) = 16.67
    w, rho = c.queue_wait_clk(2, 400.0)
    assert rho == (0.5,)
    assert w == pytest.approx(100.0 / 6.0)
    # a lone block never waits behind itself
    assert c.queue_wait_clk(1, 400.0)[0] == 0.0
    # a chip station: 132 SMs x 2 blocks share it, 1 cycle per copy, 400-cycle step: rho = 0.66, a = 0.6575
    chip = replace(BASE, queues=(("l2", 1.0, 132.0),))
    w, rho = chip.queue_wait_clk(2, 400.0)
    a = 0.66 * 263 / 264
    assert rho[0] == pytest.approx(0.66) and w == pytest.approx(a / (2 * (1 - a)))
    # past saturation the wait is held at RHO_MAX, finite
    assert 0 < c.queue_wait_clk(8, 100.0)[0] < 1e4


def test_the_latency_is_the_fixed_point_of_the_step_it_makes():
    c = replace(BASE, queues=(("port", 150.0, 1.0),))
    t = pipeline_time(c, 3)
    w, _ = c.queue_wait_clk(3, t.step_clk)
    assert t.queue_wait_clk > 0
    assert t.latency_clk == pytest.approx(c.copy_latency_clk + t.queue_wait_clk)
    assert abs(t.queue_wait_clk - w) <= 2 * LOAD_TOL_CLK


def test_load_slows_exposed_copies_and_not_hidden_ones():
    q = (("l2", 8.0, 132.0),)  # one block per SM on 132 SMs sharing a chip station: rho ~ 0.75
    # S = 1, one block: the whole copy is exposed, the wait shows in the step and in copy_wait
    one, one_q = pipeline_time(BASE, 1), pipeline_time(replace(BASE, queues=q), 1)
    assert one_q.queue_wait_clk > 5
    assert one_q.step_clk == pytest.approx(one.step_clk + one_q.queue_wait_clk, rel=1e-6)
    assert one_q.parts["copy_wait"] > one.parts["copy_wait"]
    # three blocks keep the tensor pipes busy: their loaded copies hide behind each other's MMAs
    q3 = (("port", 150.0, 1.0),)
    assert pipeline_time(replace(BASE, queues=q3), 3).step_clk == pytest.approx(pipeline_time(BASE, 3).step_clk, rel=1e-6)
    # four stages hide a few hundred cycles more latency: the step does not move
    deep = replace(BASE, stages=4)
    assert pipeline_time(replace(deep, queues=q), 1).step_clk == pytest.approx(pipeline_time(deep, 1).step_clk, rel=1e-6)


def test_no_queues_is_the_fixed_latency_model():
    t = pipeline_time(BASE, 2)
    assert t.latency_clk == BASE.copy_latency_clk and t.queue_wait_clk == 0.0 and t.rho == ()


@pytest.mark.parametrize("bad", [(("port", -1.0, 1.0),), (("port", 1.0),), (("port", float("inf"), 1.0),)])
def test_bad_queues_are_kernel_errors(bad):
    with pytest.raises(KernelError):
        replace(BASE, queues=bad)
