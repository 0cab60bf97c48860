"""The dispatch model of a launch (sm_pipeline.dispatch_cycles, fluid_dispatch, water_fill) against hand-worked cases."""

from dataclasses import replace

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.models import sm_pipeline as sp
from gemmsim.models.sm_pipeline import StepCost, dispatch_cycles, fluid_dispatch, pipeline_time, water_fill

BASE = StepCost(steps=32, stages=3, warps=4, mma_clk=200.0, copy_latency_clk=600.0, copy_clk=60.0, barrier_clk=30.0)


def test_water_fill_shares_by_weight_below_the_caps():
    # rate 3 over 2 + 2 + 1 blocks weighted 1, 2, 1: level 3 / 7, no cap reached
    r = water_fill(np.array([2.0, 2.0, 1.0]), np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 1.0]), 3.0)
    assert r == pytest.approx([3 / 7, 6 / 7, 3 / 7])


def test_water_fill_gives_what_a_capped_sm_leaves_to_the_others():
    # SM 1 (weight 2) reaches its cap 0.6 at level 0.3; the others share 3 - 1.2 over weight 3: 0.6 each
    r = water_fill(np.array([2.0, 2.0, 1.0]), np.array([1.0, 0.6, 1.0]), np.array([1.0, 2.0, 1.0]), 3.0)
    assert r == pytest.approx([0.6, 0.6, 0.6])
    # caps below the chip's rate: every block at its cap; empty SMs get nothing
    r = water_fill(np.array([1.0, 0.0, 1.0]), np.array([0.5, 9.0, 0.7]), np.ones(3), 5.0)
    assert r == pytest.approx([0.5, 0.0, 0.7])


def test_fluid_dispatch_by_hand():
    # two SMs of one slot, three blocks, the chip 1 block a cycle, SM 0 weighted 2: it runs at 2/3, SM 1 at 1/3.
    # SM 0 ends at 1.5 and takes block 2; SM 1 ends at 3.0, when SM 0 has also done its second: the chip's pace.
    t, ran = fluid_dispatch(3, 2, 1, 1, lambda j: 10.0, 1.0, np.array([2.0, 1.0]))
    assert t == pytest.approx(3.0) and list(ran) == [2, 1]
    # a cap of 0.5 a block: both at 0.5 (ending at 2), then the third alone at its cap: 4
    t, ran = fluid_dispatch(3, 2, 1, 1, lambda j: 0.5, 1.0, np.array([2.0, 1.0]))
    assert t == pytest.approx(4.0) and ran.sum() == 3


def test_fluid_dispatch_prologue_is_a_wait_the_others_fill():
    # one SM, two slots, the first filled at the start: each block waits 1 then works 1 at rate 1. By hand: b0 waits
    # 0-1 and runs 1-2; b1 takes the empty slot at the first event (t = 1), waits 1-2, runs 2-3; b2 takes b0's slot at
    # t = 2, waits 2-3, runs 3-4. Serial it would be 6; lockstep pairs 4 as well, but with each pair's wait exposed
    t, ran = fluid_dispatch(3, 1, 2, 1, lambda j: 1.0, 1.0, np.ones(1), prologue=1.0)
    assert t == pytest.approx(4.0) and ran.tolist() == [3]
    # blocks that start together wait together: two at once share the chip's rate 1 after their common wait
    t, _ = fluid_dispatch(2, 1, 2, 2, lambda j: 1.0, 1.0, np.ones(1), prologue=1.0)
    assert t == pytest.approx(3.0)
    # a block that starts into an idle chip waits prologue_idle: the first case's b1 starts with 2 of 2 slots taken
    # (waits 1), b2 with 2 of 2 as well; with one SM of two slots, b2 alone after b1 ends: grid 2, one slot
    t, _ = fluid_dispatch(2, 1, 1, 1, lambda j: 1.0, 1.0, np.ones(1), prologue=1.0, prologue_idle=0.5)
    assert t == pytest.approx(1.0 + 1.0 + 1.0 + 1.0)  # one slot of one: the refill takes every slot, the full wait
    t, _ = fluid_dispatch(3, 2, 1, 1, lambda j: 1.0, 2.0, np.ones(2), prologue=1.0, prologue_idle=0.5)
    assert t == pytest.approx(2.0 + 0.75 + 1.0)  # b2 starts into 1 of 2 slots taken: 0.5 + 0.5 x 1/2


def test_dispatch_with_the_fill_as_a_wait(monkeypatch):
    # DISPATCH_PROLOGUE (round 37's variant, off by default): a block's fill and drain -- the pipeline's time for k
    # blocks less their steady steps -- is a wait that takes none of the chip's rate
    c = _chip_bound(2)
    p = pipeline_time(c, 2)
    full, main = p.cycles, c.steps * p.step_clk
    off = {g: dispatch_cycles(c, g, 100, 2, spread=0.2).cycles for g in (250, 4000)}
    monkeypatch.setattr(sp, "DISPATCH_PROLOGUE", True)
    # blocks in step wait together: whole waves of equal blocks take what they took
    assert dispatch_cycles(c, 400, 100, 2).cycles == pytest.approx(2 * full, rel=1e-6)
    for g in (201, 250, 300, 399):
        # nothing runs before the first wave's fill, then no faster than the chip's steady pace; no later than the
        # lockstep rounds but for their cheaper fill (their last part-wave fills at its own lighter load, a dispatched
        # block at the load it starts into, up to the full wave's)
        d = dispatch_cycles(c, g, 100, 2).cycles
        monkeypatch.setattr(sp, "DISPATCH", False)
        rounds = sp.grid_cycles(c, g, 100, 2).cycles
        monkeypatch.setattr(sp, "DISPATCH", True)
        assert (full - main) + g * main / 200 <= d * (1 + 1e-9) and d <= rounds + (full - main)
    for g, d_off in off.items():
        d = dispatch_cycles(c, g, 100, 2, spread=0.2).cycles
        assert d <= d_off * (1 + 1e-9)  # out-of-step blocks fill each other's waits: never later
    # 20 waves of spread blocks: the first fill, the chip's steady pace, and at most a block's drain
    assert (full - main) + 20 * main <= d <= (full - main) + 20 * main + full


def test_fluid_dispatch_fills_an_sms_slots_before_the_next():
    # two SMs of two slots, all four blocks end together; the next two go to SM 0 (depth first), not one each
    t, ran = fluid_dispatch(6, 2, 2, 2, lambda j: 1.0, 100.0, np.ones(2))
    assert list(ran) == [4, 2] and t == pytest.approx(2.0)


def test_sm_bound_launch_is_lockstep_rounds():
    # no chip stations: every block runs at its SM's pace, so dispatch gives whole rounds as the lockstep model does
    c = replace(BASE, steps=8)
    one = pipeline_time(c, 1).cycles
    s = dispatch_cycles(c, grid=21, sms=10, blocks_per_sm=1, favoured=3, share=1.5)
    assert s.cycles == pytest.approx(3 * one) and s.tiles_on_sm == 3


def _chip_bound(blocks_per_sm: int) -> StepCost:
    # an L2 station shared by 100 SMs that the full launch saturates (Little's law holds the copies back)
    full = replace(BASE, queues=(("l2", 10.0, 100.0),), little=True)
    assert pipeline_time(full, blocks_per_sm).cycles > 1.1 * pipeline_time(sp.unloaded(full), blocks_per_sm).cycles
    return full


def test_chip_bound_ends_speed_up_and_never_beat_the_pace():
    c = _chip_bound(2)
    full = pipeline_time(c, 2).cycles
    for grid in (201, 250, 300, 399):
        pace = grid * full / (100 * 2)
        d = dispatch_cycles(c, grid, 100, 2).cycles
        sp.DISPATCH = False
        try:
            rounds = sp.grid_cycles(c, grid, 100, 2).cycles
        finally:
            sp.DISPATCH = True
        assert pace * (1 - 1e-9) <= d <= rounds * (1 + 1e-9)
    # a whole number of waves: nothing to drain, the pace exactly
    assert dispatch_cycles(c, 400, 100, 2).cycles == pytest.approx(2 * full, rel=1e-6)


def test_favoured_sms_take_more_blocks_only_where_the_chip_is_shared():
    c = _chip_bound(2)
    fav = dispatch_cycles(c, 1000, 100, 2, favoured=20, share=1.4)
    alike = dispatch_cycles(c, 1000, 100, 2)
    assert fav.tiles_on_sm > alike.tiles_on_sm
    s = replace(BASE, steps=8)  # SM-bound: a favoured share changes nothing
    assert dispatch_cycles(s, 1000, 100, 2, 20, 1.4).cycles == pytest.approx(dispatch_cycles(s, 1000, 100, 2).cycles)


def test_spread_work_keeps_the_total():
    c = _chip_bound(2)
    full = pipeline_time(c, 2).cycles
    d = dispatch_cycles(c, 4000, 100, 2, spread=0.3).cycles
    assert 20 * full <= d <= 21 * full  # the chip's pace, plus at most a block's drain


@pytest.mark.parametrize("bad", [dict(grid=0), dict(favoured=101), dict(share=0.0), dict(share=float("inf")),
                                 dict(spread=2.0), dict(spread=-0.1)])
def test_bad_dispatch_arguments_are_kernel_errors(bad):
    args = dict(cost=BASE, grid=10, sms=100, blocks_per_sm=1) | bad
    with pytest.raises(KernelError):
        dispatch_cycles(**args)


def test_a_favoured_sm_gains_on_its_copies_wait_only():
    q = (("l2", 300.0, 4.0),)
    for stages, mma in ((1, 200.0), (3, 20.0), (3, 2000.0)):
        c = replace(BASE, stages=stages, mma_clk=mma, queues=q)
        p = pipeline_time(c, 1)
        W = p.queue_wait_clk
        assert W > 20

        def hand(latency):  # one block alone: the closed form (S = 1: copy + 2b + c; S = 3: max(b + c, (b + copy) / 2))
            return replace(c, queues=(), copy_latency_clk=latency).closed_form_step_clk()

        got = sp.favoured_step_ratio(c, 1, 1.5)
        assert got == pytest.approx(hand(600.0 + W / 1.5) / hand(600.0 + W), rel=2e-3), stages
    # S = 1 gains only on the wait: less than the share; S = 3 bound by its copies gains more; bound by its MMAs, none
    r1 = sp.favoured_step_ratio(replace(BASE, stages=1, queues=q), 1, 1.5)
    r3 = sp.favoured_step_ratio(replace(BASE, stages=3, mma_clk=20.0, queues=q), 1, 1.5)
    assert 1 / 1.5 < r3 < r1 < 1
    assert sp.favoured_step_ratio(replace(BASE, stages=3, mma_clk=2000.0, queues=q), 1, 1.5) == pytest.approx(1.0)
    assert sp.favoured_step_ratio(BASE, 1, 1.5) == 1.0  # nothing queues: no favour


def test_favoured_sms_draw_what_their_step_gains_at_load(monkeypatch):
    c = replace(BASE, stages=1, queues=(("l2", 150.0, 4.0),), little=False)
    seen = {}
    orig = sp.fluid_dispatch

    def grab(grid, sms, bps, first, cap, rate, weight, *a, **k):
        seen["weight"] = weight.copy()
        return orig(grid, sms, bps, first, cap, rate, weight, *a, **k)

    monkeypatch.setattr(sp, "fluid_dispatch", grab)
    dispatch_cycles(c, 40, 10, 2, favoured=5, share=1.5)
    assert sorted(set(seen["weight"])) == pytest.approx([1.0, 1 / sp.favoured_step_ratio(c, 2, 1.5)])
    assert 1.0 < seen["weight"].max() < 1.5
    monkeypatch.setattr(sp, "FAVOURED_AT_LOAD", False)
    dispatch_cycles(c, 40, 10, 2, favoured=5, share=1.5)
    assert seen["weight"].max() == 1.5


def test_cohorts_end_together_and_refill_an_sm_whole():
    # two SMs of two slots, every block at its cap 1 (the chip's rate 100 never binds). Work by block id:
    work = np.array([1.0, 2.0, 1.5, 0.5, 3.0, 1.0])
    # each block its own: SM 0 runs b0 (1.0), b2 (1.5), SM 1 b1 (2.0), b3 (0.5). b3 ends at 0.5 and SM 1 takes b4
    # (ends 3.5); b0 at 1.0, SM 0 takes b5 (ends 2.0): the end 3.5, three blocks each
    t, ran = fluid_dispatch(6, 2, 2, 2, lambda j: 1.0, 100.0, np.ones(2), work)
    assert t == pytest.approx(3.5) and ran.tolist() == [3, 3]
    # cohorts: SM 0's first two share b0's work (1.0), SM 1's b1's (2.0); SM 0 frees both at 1.0 and takes b4 and b5
    # together with b4's work (3.0): the end 4.0, the last blocks on one full SM
    t, ran = fluid_dispatch(6, 2, 2, 2, lambda j: 1.0, 100.0, np.ones(2), work, cohort=True)
    assert t == pytest.approx(4.0) and ran.tolist() == [4, 2]
    # equal work: cohorts change nothing
    same = [fluid_dispatch(6, 2, 2, 2, lambda j: 1.0, 100.0, np.ones(2), np.ones(6), cohort=co)[0] for co in (0, 1)]
    assert same[0] == pytest.approx(same[1])


def test_copy_groups_in_flight_choose_cohorts():
    assert sp.copy_groups_in_flight(replace(BASE, stages=1), 7) == 7  # S = 1 waits for its one group
    assert sp.copy_groups_in_flight(replace(BASE, stages=3), 6) == 12  # S - 1 after the commit
    assert sp.copy_groups_in_flight(replace(BASE, stages=4, kind="warp_specialized"), 1) == 4
    c = _chip_bound(2)  # S = 3, 2 blocks per SM: 4 groups in flight
    each = dispatch_cycles(c, 250, 100, 2, spread=0.2).cycles
    assert dispatch_cycles(c, 250, 100, 2, spread=0.2, even_groups=3).cycles == each  # above the limit: each its own
    assert dispatch_cycles(c, 250, 100, 2, spread=0.2, even_groups=4).cycles != pytest.approx(each, rel=1e-4)
    # no spread: nothing to keep together
    assert dispatch_cycles(c, 250, 100, 2, even_groups=4).cycles == pytest.approx(dispatch_cycles(c, 250, 100, 2).cycles)


def test_copy_groups_outstanding_count_the_wait():
    q = (("l2", 300.0, 4.0),)
    one = replace(BASE, stages=1, queues=q)
    p = pipeline_time(one, 3)
    waiting = p.parts["copy_wait"] / p.step_clk
    assert 0.2 < waiting < 1
    assert sp.copy_groups_outstanding(one, 3) == pytest.approx(3 * waiting)  # one group, while it waits
    three = replace(BASE, stages=3, queues=q)
    p3 = pipeline_time(three, 2)
    assert sp.copy_groups_outstanding(three, 2) == pytest.approx(2 * (2 + p3.parts["copy_wait"] / p3.step_clk))
    assert sp.copy_groups_outstanding(replace(BASE, stages=4, kind="warp_specialized"), 2) == 8.0


def test_the_favoured_share_grows_with_the_copies_outstanding(monkeypatch):
    c = replace(BASE, stages=1, queues=(("l2", 150.0, 4.0),), little=False)
    ramp = ((2.0, 0.0), (4.0, 0.5), (6.0, 1.0))
    assert sp.favoured_share_at_load(c, 2, 1.4, None) == 1.4
    for groups, want in ((1.0, 1.0), (3.0, 1.1), (5.0, 1.3), (9.0, 1.4)):  # held at the ends, linear between
        monkeypatch.setattr(sp, "copy_groups_outstanding", lambda cost, blocks, g=groups: g)
        assert sp.favoured_share_at_load(c, 2, 1.4, ramp) == pytest.approx(want)
    monkeypatch.undo()
    # a ramp that gives no favour at this load is a launch with no favoured SM, through grid_cycles too
    none = ((50.0, 0.0), (60.0, 1.0))
    assert sp.copy_groups_outstanding(c, 2) < 50
    seen = []
    orig = sp.fluid_dispatch

    def grab(grid, sms, bps, first, cap, rate, weight, *a, **k):
        seen.append(weight.max())
        return orig(grid, sms, bps, first, cap, rate, weight, *a, **k)

    monkeypatch.setattr(sp, "fluid_dispatch", grab)
    plain = dispatch_cycles(c, 400, 10, 2, spread=0.2).cycles
    assert dispatch_cycles(c, 400, 10, 2, favoured=5, share=1.5, spread=0.2, ramp=none).cycles == pytest.approx(plain)
    assert sp.grid_cycles(c, 400, 10, 2, 5, 1.5, 0.2, None, none).cycles == pytest.approx(plain)
    dispatch_cycles(c, 400, 10, 2, favoured=5, share=1.5, spread=0.2)
    assert seen[:3] == [1.0, 1.0, 1.0] and seen[3] > 1.1
