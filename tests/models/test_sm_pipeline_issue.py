"""The SM pipeline model's issue terms: MMAs and other instructions on one sub-partition, copy issue (issue 12)."""

from dataclasses import replace

import pytest

from gemmsim.errors import KernelError
from gemmsim.models.sm_pipeline import StepCost, pipeline_time

# 8 warps, 2 per sub-partition; no copy, no barrier: the compute phase alone
C = StepCost(steps=64, stages=2, warps=8, mma_clk=400.0, copy_latency_clk=0.0, barrier_clk=0.0)


def test_mma_and_other_issue_add_on_a_sub_partition():
    c = replace(C, issue_clk=30.0, copy_issue_clk=100.0, issue_with_mma=True)
    # a warp holds its sub-partition 400 x 4 / 8 = 200 cycles for its MMAs, then 30 + 100 for the rest
    assert c.warp_clk == pytest.approx(330.0)
    assert c.compute_clk == pytest.approx(660.0)
    assert pipeline_time(c, 1).step_clk == pytest.approx(660.0)
    assert pipeline_time(c, 2).step_clk == pytest.approx(1320.0)  # a second block's warps queue for the same slots


def test_without_issue_with_mma_the_longer_one_counts():
    c = replace(C, issue_clk=30.0, copy_issue_clk=100.0)
    assert c.warp_clk == pytest.approx(200.0)  # max(200, 130)
    assert replace(c, copy_issue_clk=300.0).warp_clk == pytest.approx(330.0)


def test_copy_issue_hides_behind_nothing_at_any_stage_count():
    # the copy's issue is part of the warp's step, so more stages do not hide it (they hide the copy's flight)
    for S in (2, 3, 4):
        a = pipeline_time(replace(C, stages=S, issue_with_mma=True), 1).step_clk
        b = pipeline_time(replace(C, stages=S, issue_with_mma=True, copy_issue_clk=50.0), 1).step_clk
        assert b - a == pytest.approx(100.0)  # 2 warps per sub-partition x 50


def test_a_negative_copy_issue_is_an_error():
    with pytest.raises(KernelError):
        replace(C, copy_issue_clk=-1.0)
