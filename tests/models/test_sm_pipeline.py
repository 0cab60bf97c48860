"""The SM pipeline model (gemmsim.models.sm_pipeline) against step times worked by hand."""

from dataclasses import replace

import pytest

from gemmsim.errors import KernelError
from gemmsim.models.sm_pipeline import StepCost, grid_cycles, persistent_cycles, pipeline_time

BASE = StepCost(steps=128, stages=2, warps=8, mma_clk=400.0, copy_latency_clk=800.0, copy_clk=120.0, smem_clk=250.0,
                barrier_clk=40.0)


@pytest.mark.parametrize("kind", ["multistage", "warp_specialized"])
@pytest.mark.parametrize("stages", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("latency", [100.0, 800.0, 3000.0])
def test_one_block_matches_the_hand_worked_step(kind, stages, latency):
    c = replace(BASE, kind=kind, stages=stages, copy_latency_clk=latency)
    t = pipeline_time(c, 1)
    assert t.step_clk == pytest.approx(c.closed_form_step_clk(), rel=1e-6)


def test_hand_values_of_the_closed_form():
    # S=1: 920 copy + 2 x 40 barriers + 400 MMAs
    assert replace(BASE, stages=1).closed_form_step_clk() == 1400.0
    # S=2: the copy leaves after the barrier: 40 + 920
    assert BASE.closed_form_step_clk() == 960.0
    # S=3: (40 + 920) / 2 = 480 > 40 + 400
    assert replace(BASE, stages=3).closed_form_step_clk() == 480.0
    # S=4: compute bound, 440
    assert replace(BASE, stages=4).closed_form_step_clk() == 440.0
    # warp-specialised S=2: (40 + 400 + 920) / 2 = 680
    assert replace(BASE, kind="warp_specialized").closed_form_step_clk() == 680.0


def test_one_stage_exposes_the_whole_latency_and_more_stages_hide_it():
    times = [pipeline_time(replace(BASE, stages=s), 1) for s in (1, 2, 3, 4, 5)]
    steps = [t.step_clk for t in times]
    assert all(a >= b - 1e-9 for a, b in zip(steps, steps[1:]))
    assert times[0].parts["copy_wait"] == pytest.approx(920.0, rel=1e-6)
    assert times[-1].parts["copy_wait"] == pytest.approx(0.0, abs=1e-6)
    assert times[-1].bound == "mma"


def test_a_second_resident_block_hides_the_latency_of_the_first():
    c = replace(BASE, stages=1)
    one, two = pipeline_time(c, 1), pipeline_time(c, 2)
    # two blocks finish their work in less than twice one block's time: the SM overlaps one's copy with the other's MMAs
    assert two.cycles < 1.7 * one.cycles
    assert two.tensor_busy > 1.6 * one.tensor_busy


def test_few_warps_leave_tensor_pipes_idle_unless_blocks_share_the_sm():
    c = replace(BASE, warps=2, stages=4, copy_latency_clk=0.0, copy_clk=0.0, smem_clk=0.0, barrier_clk=0.0)
    one = pipeline_time(c, 1)
    assert one.step_clk == pytest.approx(800.0)  # 2 of 4 sub-partitions: half the rate
    two = pipeline_time(c, 2)
    assert two.step_clk == pytest.approx(800.0)  # the second block takes the other two sub-partitions
    assert two.tensor_busy == pytest.approx(1.0)
    four = pipeline_time(c, 4)
    assert four.step_clk == pytest.approx(1600.0)  # now they queue
    assert four.parts["contention"] == pytest.approx(800.0)


def test_shared_memory_slower_than_mma_is_contention():
    c = replace(BASE, stages=4, smem_clk=700.0)
    t = pipeline_time(c, 1)
    assert t.step_clk == pytest.approx(740.0)
    assert t.parts["contention"] == pytest.approx(300.0)


def test_port_bandwidth_bounds_deep_pipelines():
    c = replace(BASE, stages=8, copy_clk=600.0, copy_latency_clk=100.0)
    assert pipeline_time(c, 1).step_clk == pytest.approx(600.0)


def test_grid_rounds_on_the_busiest_sm():
    c = replace(BASE, stages=4, steps=8)
    one = pipeline_time(c, 1).cycles
    s = grid_cycles(c, grid=2 * 10 + 1, sms=10, blocks_per_sm=1)
    assert s.tiles_on_sm == 3 and s.rounds == 3
    assert s.cycles == pytest.approx(3 * one)


def test_persistent_pays_the_startup_once():
    c = replace(BASE, kind="warp_specialized", stages=4, steps=16, epilogue_clk=300.0)
    loop = pipeline_time(replace(c, steps=48, epilogue_clk=0.0), 1)  # three tiles' k-loops back to back
    one = pipeline_time(c, 1)
    p = persistent_cycles(c, tiles=30, ctas=10)
    assert p.tiles_on_sm == 3
    assert p.cycles == pytest.approx(loop.cycles + 3 * 300.0)
    assert p.cycles < 3 * one.cycles  # a new block per tile would pay the start-up each time
    pp = persistent_cycles(c, tiles=30, ctas=10, epilogue_overlap=True)
    assert pp.cycles == pytest.approx(loop.cycles + 300.0)


def test_long_loops_extrapolate_to_the_same_step():
    short = pipeline_time(replace(BASE, stages=3, steps=40), 1)
    long = pipeline_time(replace(BASE, stages=3, steps=4000), 1)
    assert long.step_clk == pytest.approx(short.step_clk, rel=1e-6)
    assert long.cycles == pytest.approx(short.cycles + 3960 * short.step_clk, rel=1e-6)


@pytest.mark.parametrize("bad", [dict(stages=0), dict(warps=0), dict(mma_clk=-1.0), dict(copy_latency_clk=float("nan")),
                                 dict(kind="tma")])
def test_bad_costs_are_kernel_errors(bad):
    with pytest.raises(KernelError):
        replace(BASE, **bad)


def test_bad_grids_are_kernel_errors():
    with pytest.raises(KernelError):
        grid_cycles(BASE, 0, 10, 1)
    with pytest.raises(KernelError):
        pipeline_time(BASE, 0)


def test_instruction_issue_longer_than_the_mmas_sets_the_step():
    c = replace(BASE, stages=4, warps=8, mma_clk=400.0, issue_clk=500.0, smem_clk=0.0)
    # 2 warps per sub-partition, each holding it for max(400 * 4 / 8, 500) = 500 cycles
    assert c.compute_clk == 1000.0
    assert pipeline_time(c, 1).step_clk == pytest.approx(max(40 + 1000.0, (40 + 920) / 3, 120))


def test_a_lone_block_waits_for_its_warps_chain_and_a_second_block_fills_the_gaps():
    c = replace(BASE, stages=4, warps=8, mma_clk=0.0, issue_clk=100.0, warp_latency_clk=800.0, smem_clk=0.0,
                copy_latency_clk=0.0, copy_clk=0.0, barrier_clk=0.0)
    assert pipeline_time(c, 1).step_clk == pytest.approx(800.0)  # 2 warps x 100 issue slots, but 800 of chain
    four = pipeline_time(c, 4)  # 4 blocks: 8 warps per sub-partition x 100 slots = 800: the chain is hidden
    assert four.step_clk == pytest.approx(800.0)
    eight = pipeline_time(c, 8)
    assert eight.step_clk == pytest.approx(1600.0)  # now the issue port binds
