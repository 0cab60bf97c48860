"""The ldmatrix -> mma wait in the SM pipeline model: fragment groups from a warp's instruction order
(sm_pipeline.fragment_groups) and the warp-level compute phase they drive (StepCost.groups)."""

import pytest

import gemmsim.models.sm_pipeline as sp
from gemmsim.errors import KernelError


def test_a_reused_fragment_register_waits_for_its_last_reader_then_the_latency():
    # worked by hand (L = 30, WAR = 10, mma every 6): ldmatrix a @0 (ready 30), b @1 (ready 31); mma @31 (stall 31 from
    # 0, waits for both: 6 wavefronts), mma @37; ldmatrix a again only 10 after its last reader: @47 (ready 77);
    # mma @77: 34 beyond its slot (43), reading the new a (ldmatrix 2)
    tr = "L4:0+4 L2:8+2 H:0+4,8+2 H:0+4,8+2 L4:0+4 H:0+4,8+2"
    assert sp.fragment_groups(tr, 30.0, 10.0, 6.0) == (((4.0, 2.0), 2.0, 31.0, (0, 1)), ((4.0,), 1.0, 34.0, (2,)))


def test_fragments_loaded_ahead_are_not_waited_for():
    # by hand (L = 30, WAR = 10, mma every 6): a @0, b @1; mma 1 @31 (stall 31, reads a and b: 6 wavefronts); c @32
    # (ready 62) while a's mma 2-7 issue @37..67; a is reloaded only 10 after its last reader: @77, in order, so the
    # mma on c (ready since 62) issues @78, 5 beyond its slot (73), without waiting for data: c and the new a leave
    # with that group, which reads c (ldmatrix 2)
    tr = "L4:0+4 L2:8+2 H:0+4,8+2 L4:4+4 " + "H:0+4,8+2 " * 6 + "L4:0+4 H:4+4,8+2"
    assert sp.fragment_groups(tr, 30.0, 10.0, 6.0) == (((4.0, 2.0), 7.0, 31.0, (0, 1)), ((4.0, 4.0), 1.0, 5.0, (2,)))


def test_bad_tokens_are_refused():
    with pytest.raises(KernelError):
        sp.fragment_groups("X:1+2", 30.0, 10.0, 6.0)
    with pytest.raises(KernelError):
        sp.StepCost(steps=4, stages=2, warps=4, mma_clk=100.0, copy_latency_clk=0.0, groups=(((4.0,), 0.0, 1.0, ()),))
    with pytest.raises(KernelError):  # needs an ldmatrix not issued yet
        sp.StepCost(steps=4, stages=2, warps=4, mma_clk=100.0, copy_latency_clk=0.0, groups=(((4.0,), 4.0, 1.0, (1,)),))


def _step(warps, groups, t_one=6.0, ldsm=0.0):
    n = sum(g[1] for g in groups)
    cost = sp.StepCost(steps=24, stages=2, warps=warps, mma_clk=t_one * n * warps / 4, copy_latency_clk=0.0,
                       issue_with_mma=True, groups=groups, ldsm_latency_clk=ldsm)
    return sp.pipeline_time(cost, 1).step_clk


def test_one_warp_per_sub_partition_exposes_every_wait():
    groups = (((), 4.0, 30.0, ()),) * 8  # each group: 30 cycles for its fragment, then 4 mma of 6 cycles
    assert _step(4, groups) == pytest.approx(8 * (30 + 24), rel=1e-6)


def test_other_warps_on_the_sub_partition_hide_the_waits():
    groups = (((), 4.0, 30.0, ()),) * 8
    busy = 4 * 8 * 24  # four warps per SMSP: 768 cycles of mma on each
    t = _step(16, groups)
    assert busy <= t <= busy + 30 + 1e-6  # only the first group's wait after the step's start is not covered
    assert t < 4 * _step(4, groups)  # four times the warps, far less than four times the time


def test_without_groups_the_compute_phase_is_unchanged():
    cost = sp.StepCost(steps=24, stages=2, warps=8, mma_clk=400.0, copy_latency_clk=0.0, issue_clk=20.0,
                       issue_with_mma=True, smem_clk=300.0)
    # 8 warps, 2 per SMSP: each its MMAs (400 x 4 / 8 = 200) and 20 of other issue; the SMSP holds 440 per step
    assert sp.pipeline_time(cost, 1).step_clk == pytest.approx(440.0, rel=1e-6)


def test_waited_ldmatrix_queue_on_the_shared_pipe():
    # 16 warps whose groups each wait for a 16-wavefront ldmatrix: 16 x 8 x 16 = 2048 wavefronts per step on the one
    # shared-memory pipe, more than the 768 cycles of mma on each SMSP: the pipe sets the step
    groups = tuple(((16.0,), 4.0, 30.0, (i,)) for i in range(8))
    assert _step(16, groups, ldsm=30.0) >= 2048
