"""The SM pipeline model's copy phase (issue 12, round 6): a warp's copy code issued in order at measured latencies
(sm_pipeline.copy_phase), the step's copy_chain_clk, the machine field and the kernel parameter that carry them."""

from dataclasses import replace

import pytest

from gemmsim.errors import GemmsimError, KernelError
from gemmsim.machine import load_machine
from gemmsim.models import sm_pipeline as sp
from gemmsim.sim.gpu import simulate_gpu

LAT = dict(alu=4.0, wide=8.0, s2r=23.0, s2ur=34.0, ldc=31.0, pred=14.0, bra=17.0, brat=11.0, sync=21.0, ldgsts=4.0)


def test_a_dependent_chain_waits_and_independent_instructions_issue_one_a_cycle():
    assert sp.copy_phase("alu/R1<R0 alu/R2<R1 alu/R3<R2", LAT) == (3.0, 9.0)  # issues at 0, 4, 8
    assert sp.copy_phase("alu/R1<R0 alu/R2<R0 alu/R3<R0", LAT) == (3.0, 3.0)
    assert sp.copy_phase("wide/R2,R3<R0 alu/R4<R3", LAT) == (2.0, 9.0)  # both halves of a wide result at 8
    assert sp.copy_phase("s2r/R1 ldc/R2 alu/R3<R1,R2", LAT) == (3.0, 33.0)  # the later of the two: ldc at 1 + 31, +1


def test_a_guard_predicate_arrives_later_than_a_carry():
    assert sp.copy_phase("alu/P0<R1 alu/R2<R3,@P0", LAT)[1] == pytest.approx(15.0)  # guarded: 14 after the compare
    assert sp.copy_phase("alu/R2,P0<R1 alu/R3<R4,P0", LAT)[1] == pytest.approx(5.0)  # carry-in: the ALU's 4
    no_pred = {k: v for k, v in LAT.items() if k != "pred"}
    assert sp.copy_phase("alu/P0<R1 alu/R2<R3,@P0", no_pred)[1] == pytest.approx(5.0)  # without 'pred': the ALU's


def test_branches_sync_and_copies_hold_the_warp():
    # compare at 0, branch when its guard is ready (14), the next instruction 17 later
    assert sp.copy_phase("alu/P0<R1 bra<@P0 alu/R2", LAT)[1] == pytest.approx(14.0 + 17.0 + 1.0)
    assert sp.copy_phase("alu/P0<R1 brat<@P0 sync alu/R2", LAT)[1] == pytest.approx(14.0 + 11.0 + 21.0 + 1.0)
    assert sp.copy_phase("slot slot slot ldgsts<R1 ldgsts<R2", LAT) == (5.0, 3.0 + 4.0 + 4.0)


def test_bad_traces_are_errors():
    with pytest.raises(KernelError):
        sp.copy_phase("fma/R1<R0", LAT)
    with pytest.raises(KernelError):
        sp.copy_phase("wide/R1<R0", {"alu": 4.0})  # no latency for a kind it uses


def _copy_step(warps, copy_issue, copy_chain):
    groups = (((), 4.0, 0.0, ()),) * 2  # per warp: 8 mma of 6 cycles, no fragment wait
    cost = sp.StepCost(steps=24, stages=2, warps=warps, mma_clk=6.0 * 8 * warps / 4, copy_latency_clk=0.0,
                       issue_with_mma=True, groups=groups, copy_issue_clk=copy_issue, copy_chain_clk=copy_chain)
    return sp.pipeline_time(cost, 1).step_clk


def test_a_lone_warp_waits_out_its_copy_chain():
    # one warp per SMSP: its copy phase lasts its chain (100), of which 10 hold the SMSP, then its 48 cycles of mma
    assert _copy_step(4, 10.0, 100.0) == pytest.approx(148.0, rel=1e-6)
    assert _copy_step(4, 10.0, 0.0) == pytest.approx(58.0, rel=1e-6)  # no chain: the issue slots alone
    assert _copy_step(4, 10.0, 5.0) == pytest.approx(58.0, rel=1e-6)  # a chain shorter than its issue changes nothing


def test_other_warps_fill_a_copy_chain():
    # four warps per SMSP: 4 x (10 + 48) = 232 cycles of issue each step; the chains run while other warps issue
    t = _copy_step(16, 10.0, 100.0)
    assert 232.0 - 1e-6 <= t <= 232.0 + 100.0 + 1e-6
    assert t < 4 * _copy_step(4, 10.0, 100.0)


def test_a_negative_copy_chain_is_an_error():
    with pytest.raises(KernelError):
        sp.StepCost(steps=4, stages=2, warps=4, mma_clk=100.0, copy_latency_clk=0.0, copy_chain_clk=-1.0)


def test_the_h200_carries_measured_copy_code_latencies():
    h = load_machine("h200")
    lat = h.copy_code_latency_cycles
    assert set(lat) == {"alu", "wide", "ldc", "s2r", "s2ur", "pred", "bra", "sync", "brat", "ldgsts"}
    assert 3.5 < lat["alu"] < 4.5 and lat["pred"] > lat["alu"]  # round 6: 4.03 and 13.9
    with pytest.raises(ValueError, match="copy_code_latency_cycles"):
        h.model_validate({**h.model_dump(), "copy_code_latency_cycles": {"fma": 4.0}})
    with pytest.raises(ValueError, match="copy_code_latency_cycles"):
        h.model_validate({**h.model_dump(), "copy_code_latency_cycles": {"alu": -1.0}})


# a copy phase of the 128x128 / 8-warp shape: a branchy chain much longer than its 40 issue slots
TRACE = " ".join(["s2r/R1", "alu/P0<R1", "bra<@P0"] + ["ldc/R2", "wide/R4,R5<R1,R2", "alu/R6,P1<R4", "alu/R7<R5,P1",
                                                        "slot", "slot", "slot", "ldgsts<R6,R7", "alu/P0<R1", "brat<@P0",
                                                        "sync"] * 4)
SLOTS = len(TRACE.split())  # the copy instructions the trace holds, as ncu would count them
KW = dict(M=4096, N=4096, K=4096, dtype="fp16", BM=128, BN=128, BK=32, WM=64, WN=32, regs=128, pad=8,
          warp_instructions_per_step=66.0, warp_copy_instructions_per_step=float(SLOTS), max_blocks=264)


def test_a_copy_trace_slows_the_step_by_its_chain_where_nothing_fills_it():
    h = load_machine("h200")
    slots, chain = sp.copy_phase(TRACE, h.copy_code_latency_cycles)
    assert slots == SLOTS and chain > h.fma_latency_cycles * slots  # longer than the FMA-latency chain it replaces
    for S in (1, 2):
        base = simulate_gpu(h, "tensorcore", stages=S, **KW)
        traced = simulate_gpu(h, "tensorcore", stages=S, copy_trace=TRACE, **KW)
        # S = 1 exposes the copy phase; at S = 2 the step may be held by something else (the copies' flight)
        assert traced["pipe_step_clk"] > base["pipe_step_clk"] if S == 1 else traced["pipe_step_clk"] >= base["pipe_step_clk"] - 1e-6
        assert traced["pipe_step_clk"] <= base["pipe_step_clk"] + 2 * chain  # two warps per SMSP at most wait it out
    # without the machine's latencies the trace changes nothing
    bare = h.model_copy(update={"copy_code_latency_cycles": None})
    assert simulate_gpu(bare, "tensorcore", stages=2, copy_trace=TRACE, **KW)["pipe_step_clk"] == pytest.approx(
        simulate_gpu(bare, "tensorcore", stages=2, **KW)["pipe_step_clk"])


def test_a_copy_trace_of_unknown_tokens_is_refused():
    with pytest.raises(GemmsimError):
        simulate_gpu(load_machine("h200"), "tensorcore", stages=2, copy_trace="fma/R1<R0", **KW)
    with pytest.raises(GemmsimError):
        simulate_gpu(load_machine("h200"), "tensorcore", stages=2, copy_trace="alu/R1;rm", **KW)


def test_replace_keeps_the_chain():
    c = sp.StepCost(steps=4, stages=2, warps=4, mma_clk=100.0, copy_latency_clk=0.0, copy_chain_clk=50.0)
    assert replace(c, stages=3).copy_chain_clk == 50.0


def test_copy_segments_are_the_runs_of_issue_and_the_waits_between_them():
    segs = sp.copy_segments("alu/P0<R1 brat<@P0 sync alu/R2<R9", LAT)
    # compare (1 slot), wait 13 for its guard; the taken branch (1), 10 more; BSYNC (1), 20 more; the add (1)
    assert segs == ((1.0, 13.0), (1.0, 10.0), (1.0, 20.0), (1.0, 0.0))
    assert sp.copy_phase("alu/P0<R1 brat<@P0 sync alu/R2<R9", LAT) == (4.0, 47.0)
    assert sp.copy_segments("alu/R1 alu/R2 alu/R3", LAT) == ((3.0, 0.0),)  # no wait: one run
    for trace in (TRACE, "s2r/R1 ldc/R2 alu/R3<R1,R2 bra<@P0 alu/R4<R3"):
        segs = sp.copy_segments(trace, LAT)
        assert sum(n for n, _ in segs) == len(trace.split())
        assert all(n > 0 for n, _ in segs)  # waits with no issue between them are one wait


def _segment_step(warps, segments):
    groups = (((), 4.0, 0.0, ()),) * 2  # per warp: 8 mma of 6 cycles, no fragment wait
    cost = sp.StepCost(steps=24, stages=2, warps=warps, mma_clk=6.0 * 8 * warps / 4, copy_latency_clk=0.0,
                       issue_with_mma=True, groups=groups, copy_segments=segments)
    return sp.pipeline_time(cost, 1).step_clk


def test_other_warps_issue_during_a_copy_phases_waits():
    segs = ((5.0, 100.0), (5.0, 0.0))
    assert _segment_step(4, segs) == pytest.approx(110.0 + 48.0, rel=1e-6)  # alone on its SMSP: the whole chain
    # four warps per SMSP: 4 x (10 + 48) = 232 cycles of issue; the waits overlap other warps' issue
    t = _segment_step(16, segs)
    assert 232.0 - 1e-6 <= t < 4 * (110.0 + 48.0)
    with pytest.raises(KernelError):
        sp.StepCost(steps=4, stages=2, warps=4, mma_clk=100.0, copy_latency_clk=0.0, copy_segments=((1.0, -1.0),))


def test_the_copy_phase_under_load_is_reported():
    groups = (((), 4.0, 0.0, ()),) * 2
    for warps in (4, 16):
        cost = sp.StepCost(steps=24, stages=2, warps=warps, mma_clk=6.0 * 8 * warps / 4, copy_latency_clk=0.0,
                           issue_with_mma=True, groups=groups, copy_segments=((5.0, 100.0), (5.0, 0.0)))
        got = sp.pipeline_time(cost, 1).copy_phase_clk
        if warps == 4:
            assert got == pytest.approx(110.0, rel=1e-6)  # alone on its SMSP: its chain
        else:
            assert 110.0 < got < 110.0 + 3 * 58.0 + 1e-6  # behind at most the three other warps' issue
    assert sp.pipeline_time(replace(cost, copy_segments=()), 1).copy_phase_clk == 0.0


def _staged(S, copy_clk=0.0, latency=300.0, blocks=1):
    """One 4-warp block, one warp per SMSP: copy code of 110 cycles (5 issue, 100 wait, 5 issue), 8 mma of 6 cycles."""
    return sp.pipeline_time(_staged_cost(S, copy_clk, latency), blocks)


def test_a_stage_is_copied_when_the_warps_copy_code_issues_it():
    # the copy of step i+S-1 leaves as the warps' copy code issues it (its last cp.async at the end of the copy phase,
    # 110 cycles into step i) and lands a latency later: (S - 1) T >= 110 + 300, and T >= 110 + 48 (the step alone)
    assert _staged(2).step_clk == pytest.approx(410.0)
    assert _staged(3).step_clk == pytest.approx(205.0)
    assert _staged(4).step_clk == pytest.approx(158.0)
    assert _staged(2).parts["copy_wait"] == pytest.approx(410.0 - 158.0)
    assert _staged(4).parts["copy_wait"] == pytest.approx(0.0, abs=1e-9)
    # the bytes stream through the port from the start of the copy phase: a port hold longer than the copy code
    # (200) sets the start of the latency instead; S = 4: one block's port passes one copy per 200 cycles
    assert _staged(2, copy_clk=200.0).step_clk == pytest.approx(500.0)
    assert _staged(3, copy_clk=200.0).step_clk == pytest.approx(250.0)
    assert _staged(4, copy_clk=200.0).step_clk == pytest.approx(200.0)


def test_one_stage_runs_copy_code_latency_compute_in_order():
    # S = 1: copy code (110), the last copy's latency (300), the MMAs (48): nothing overlaps in one block
    assert _staged(1).step_clk == pytest.approx(458.0)
    assert _staged(1).parts["copy_wait"] == pytest.approx(300.0)
    # the port (200) overlaps the copy code (110), not the latency
    assert _staged(1, copy_clk=200.0).step_clk == pytest.approx(548.0)
    # a second block on the SM fills the first one's latency with its own copy code and MMAs
    assert _staged(1, blocks=2).step_clk < 2 * 458.0 - 100.0


def test_without_a_simulated_copy_phase_the_copy_leaves_at_the_barrier():
    groups = (((), 4.0, 0.0, ()),) * 2
    cost = sp.StepCost(steps=48, stages=2, warps=4, mma_clk=48.0, copy_latency_clk=300.0, issue_with_mma=True,
                       groups=groups, copy_chain_clk=110.0)  # the chain as one wait: no per-warp copy code
    assert sp.pipeline_time(cost, 1).step_clk == pytest.approx(300.0)


def test_step_phases_split_a_one_stage_step_where_the_kernel_reads_its_clock():
    # PHASES: S = 1 copy code (110), its last copy's latency + barrier (300), the MMAs + barrier (48), the loop's rest
    p = _staged(1).phases
    assert list(p) == list(sp.PHASES[1])
    assert [p[k] for k in sp.PHASES[1]] == pytest.approx([110.0, 300.0, 48.0, 0.0])


def test_step_phases_of_a_multistage_step_add_up_to_the_step():
    # S = 2: the wait for the stage (410 - 158), the copy code (110), the MMAs (48); nothing after
    r = _staged(2)
    assert [r.phases[k] for k in sp.PHASES[2]] == pytest.approx([252.0, 110.0, 48.0, 0.0])
    for S, blocks in ((1, 2), (3, 1), (2, 3)):
        r = _staged(S, blocks=blocks)
        assert sum(r.phases.values()) == pytest.approx(r.step_clk, rel=0.02), (S, blocks)


def test_step_phases_take_medians_over_whole_marked_steps():
    marks = [(0, 0, j, 10.0 * j) for j in range(4)] + [(0, 1, j, 100.0 + 20.0 * j) for j in range(4)] + [(0, 2, 0, 200.0)]
    marks += [(1, 0, j, 999.0) for j in range(4)]  # another block's marks do not count
    assert sp.step_phases(marks, 0, 2, 2) == {"wait_barrier": 15.0, "copy": 15.0, "mma": 15.0, "rest": 55.0}
    assert sp.step_phases(marks, 2, 3, 1) == {}  # step 2 has one mark only


def test_block_arrangement_tells_blocks_in_step_from_blocks_half_a_step_apart():
    step = 100.0
    a = [(0, i, 0, i * step) for i in range(8)]
    assert sp.block_arrangement(a + [(1, i, 0, i * step) for i in range(8)], 2, 6) == {"together": 1.0, "alternating": 0.0}
    assert sp.block_arrangement(a + [(1, i, 0, i * step + 50.0) for i in range(8)], 2, 6) == {"together": 0.0,
                                                                                            "alternating": 1.0}
    assert sp.block_arrangement(a, 2, 6) == {}  # one block


def test_identical_blocks_started_together_stay_in_step_at_one_stage_in_the_simulation():
    # nothing in the toy step breaks the symmetry of two identical blocks in the simpy run itself (the H200's blocks
    # alternate at S = 1: validation/h200/round10/README.md); the arrangement is reported for every multistage run
    assert sp._simulated_time(_staged_cost(1), 2).arrangement == {"together": 1.0, "alternating": 0.0}
    assert _staged(1).arrangement == {}


def test_one_stage_blocks_fill_each_others_copy_waits():
    # S = 1, two blocks: each takes its step alone (458: copy code 110, latency 300, MMAs 48) while the SM's pipes
    # have room, the blocks half a step apart -- round 32's lone and shared blocks (validation/h200/round33/alone33.csv:
    # 0.94-1.01x) -- not the in-step simulation's
    two = _staged(1, blocks=2)
    assert two.step_clk == pytest.approx(_staged(1).step_clk) == pytest.approx(458.0)
    assert two.arrangement == {"together": 0.0, "alternating": 1.0}
    assert two.tensor_busy == pytest.approx(2 * 48.0 / 458.0)
    # with nothing to wait for, eight blocks' issue binds the sub-partitions: a step longer than one block's 158 alone;
    # with the latency back, the step stays the pipes' and the first copy's latency is paid once
    packed = _staged(1, latency=0.0, blocks=8)
    assert packed.step_clk > _staged(1, latency=0.0).step_clk
    many = _staged(1, latency=300.0, blocks=8)
    assert many.step_clk == pytest.approx(packed.step_clk)
    assert many.cycles == pytest.approx(packed.cycles + 300.0)
    # S >= 2 is the simulation's own
    assert _staged(2, blocks=2).step_clk == pytest.approx(sp._simulated_time(_staged_cost(2), 2).step_clk)


def _staged_cost(S, copy_clk=0.0, latency=300.0):
    return sp.StepCost(steps=48, stages=S, warps=4, mma_clk=6.0 * 8, copy_latency_clk=latency, copy_clk=copy_clk,
                       issue_with_mma=True, groups=(((), 4.0, 0.0, ()),) * 2, copy_segments=((5.0, 100.0), (5.0, 0.0)))
