"""Round 29 (validation/h200/round29): an explicit max_blocks sample against the same launch simulated whole, for the
64x64 tensor-core kernels of the S sweep (5-7 blocks per SM, so 264 blocks are a third of a wave or less)."""

import pytest
from reference.rounds import H200, script, table

ROUND29 = H200 / "round29"


def _rows():
    rows = table(ROUND29, "sampling29.csv")
    whole = {(r["api"], r["stages"], r["M"]): r for r in rows if r["sample"] == "every block"}
    return rows, whole


def test_two_whole_waves_are_the_whole_launch_and_part_of_a_wave_is_not():
    rows, whole = _rows()
    assert len(whole) == 8 and len(rows) == 32
    for r in rows:
        w = whole[(r["api"], r["stages"], r["M"])]
        speed = float(r["tflops"]) / float(w["tflops"])
        dram = int(r["dram_bytes"]) / int(w["dram_bytes"])
        if r["sample"] == "two waves":  # the default rule now (gpu_memory.MIN_SAMPLE_WAVES)
            assert abs(speed - 1) <= 0.005 and 0.8 <= dram <= 1.001, r
            assert int(r["blocks_simulated"]) == 2 * 132 * int(r["blocks_per_sm"])
        if r["sample"] == "264 exactly":  # the sweep's rule until round 29: 4-21 % fast, far too few DRAM bytes
            assert speed >= 1.04 and dram <= 0.75, r
    # the whole launch reads more from DRAM than ncu measured on the H200 (round 7): 1.6-2.3x at 4096, 1.1-1.4x at 8192
    ncu = [int(w["dram_bytes"]) / int(w["ncu_dram_bytes_read"]) for w in whole.values() if w["ncu_dram_bytes_read"]]
    assert len(ncu) == 6 and min(ncu) > 1.05


def test_one_stored_sample_is_what_the_model_gives_now(monkeypatch):
    """The 5-block kernel at 4096 in two waves (the default), rerun (~15 s) on the schedule round 29 studied the
    samples on: the even spread (``tc_schedule.APPLY = False``; round 31 gave these kernels their own)."""
    from gemmsim.machine import load_machine
    from gemmsim.models import gpu_memory, tc_schedule

    monkeypatch.setattr(tc_schedule, "APPLY", False)
    import gemmsim.sim.gpu as sim_gpu

    monkeypatch.setattr(sim_gpu, "LATENCY_AT_TIMING_CLOCK", False)  # round 34: DRAM latency at the kernel's clock
    from gemmsim.models import sm_pipeline

    monkeypatch.setattr(sm_pipeline, "DISPATCH", False)  # round 36: a launch's ends from the dispatch model
    from gemmsim.sim.gpu import simulate_gpu

    s = script(ROUND29, "sampling29")
    r = next(x for x in table(ROUND29, "sampling29.csv")
             if (x["api"], x["stages"], x["M"], x["sample"]) == ("mma", "4", "4096", "two waves"))
    assert gpu_memory.MIN_SAMPLE_WAVES == 2
    h = load_machine("h200").model_copy(update={"async_copy_l2_gbps_padded_rows": 5110.0})  # round 8's ceiling, as then
    got = simulate_gpu(s.p.mv.machine_at(h, s.MHZ), "tensorcore", M=4096, N=4096, K=4096,
                       dtype="fp16", **dict(s.p.mma_params(s.KERNEL, 4), max_blocks=264))
    assert got["blocks_simulated"] == int(r["blocks_simulated"])
    assert float(got["tflops"]) == pytest.approx(float(r["tflops"]), rel=1e-3)
    assert got["dram_bytes"] == pytest.approx(int(r["dram_bytes"]), rel=1e-6)
