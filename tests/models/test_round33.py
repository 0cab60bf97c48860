"""Round 33 (validation/h200/round33): the S sweep with one block per SM, predicted before the run, and the two
changes to the model it led to -- single-stage blocks that fill each other's copy waits
(``sm_pipeline.ONE_STAGE_INTERLEAVE``) and held launches whose copies wait for DRAM
(``tc_schedule.HELD_DRAM_ROUND_TRIP``)."""
import csv
from pathlib import Path

import pytest

H200 = Path(__file__).resolve().parents[2] / "validation" / "h200"
ROUND33 = H200 / "round33"


def _rows(name, folder=ROUND33):
    with (folder / name).open() as f:
        return list(csv.DictReader(f))


def test_every_launch_ran_one_block_per_sm_and_checked():
    rows = _rows("compare33.csv")
    assert len(rows) == 96  # 2 APIs x 2 sizes x 12 kernels x (copy, copy-less twin)
    assert {r["blocks_per_sm"] for r in rows} == {"1"}
    import io
    import tarfile
    with tarfile.open(ROUND33 / "raw" / "round33.tar.gz") as tar:
        for api in ("mma", "wmma"):
            for n in (4096, 8192):
                summary = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"raw33/{api}_{n}.csv"))))
                assert len(summary) == 24
                for r in summary:
                    assert r["smem_bytes"] == "120000" and r["blocks_per_sm"] == "1"
                    if r["copy"] == "1":  # the twins compute nothing meaningful and are not checked
                        assert float(r["rel_err"]) < 1e-4 and r["nan_count"] == "0"
                    assert 1700 < float(r["sm_mhz"]) < 1850


def test_predictions_before_the_run_against_the_h200():
    rows = [r for r in _rows("compare33.csv") if r["copy"] == "1"]
    assert len(rows) == 48
    pred = {(r["kernel"], r["stages"], r["M"]): r for r in _rows("predictions33_mma.csv")}
    for r in rows:  # the comparison reads the committed predictions unchanged
        if r["api"] == "mma":
            assert float(r["predicted_at_1980"]) == float(pred[(r["kernel"], r["stages"], r["M"])]["tflops_at_1980"])
        assert float(r["ratio"]) == pytest.approx(float(r["predicted_at_1980"]) / float(r["measured_at_1980"]), abs=2e-3)
    within = {api: sum(abs(float(r["ratio"]) - 1) <= 0.10 for r in rows if r["api"] == api) for api in ("mma", "wmma")}
    assert within == {"mma": 13, "wmma": 17}
    # the miss: S = 2 on the 128x128 tiles, a single copy in flight -- the H200's step is 1.26-1.39x the model's
    s2 = [float(r["ratio"]) for r in rows if "128x128" in r["kernel"] and r["stages"] == "2"]
    assert len(s2) == 8 and 1.25 < min(s2) and max(s2) < 1.40
    # the H200 held those launches in step, as the model predicted
    assert all(r["measured_held"] == r["model_holds"] == "1" for r in rows if "128x128" in r["kernel"] and r["stages"] == "2")


def test_the_model_now_on_round_33():
    rows = [r for r in _rows("compare33.csv") if r["copy"] == "1"]
    within = {api: sum(abs(float(r["now_ratio"]) - 1) <= 0.10 for r in rows if r["api"] == api) for api in ("mma", "wmma")}
    assert within == {"mma": 15, "wmma": 18}
    # S = 1 on the 128x128 tiles: 1.05-1.16 as predicted, 1.00-1.07 now (the held copies wait for DRAM)
    s1 = [(float(r["ratio"]), float(r["now_ratio"])) for r in rows if "128x128" in r["kernel"] and r["stages"] == "1"]
    assert len(s1) == 8
    assert 1.04 < min(a for a, _ in s1) and max(b for _, b in s1) <= 1.07
    # S = 2 stays a miss (1.18-1.29): one block per SM sends every SM's copy at the same moment, which the model's
    # random-arrival queues do not see
    s2 = [float(r["now_ratio"]) for r in rows if "128x128" in r["kernel"] and r["stages"] == "2"]
    assert 1.15 < min(s2) and max(s2) < 1.30


def test_lone_and_shared_blocks_at_2048():
    rows = {(r["api"], r["kernel"], r["stages"]): r for r in _rows("alone33.csv")}
    assert len(rows) == 16
    for tile in ("mma_128x128_w2x4", "mma_128x128_w2x2"):
        s1 = rows[("mma", tile, "1")]
        # the H200's two S = 1 blocks take no longer than one alone; the simulation's, in step, 1.34-1.43x
        assert float(s1["h200_ratio"]) <= 1.01 and float(s1["model_ratio"]) >= 1.34
        # with the blocks filling each other's waits the model's shared step is the SM's pipes' (its serial
        # sub-partitions: 1.07-1.14x alone), within 5 % of the H200's
        assert 1.05 < float(s1["model_ratio_now"]) < 1.15
        assert float(s1["model_shared_now"]) == pytest.approx(float(s1["h200_shared"]), rel=0.05)
        for S in ("2", "3", "4"):  # deeper pipelines: the model right alone and shared (within 10 %), unchanged now
            r = rows[("mma", tile, S)]
            assert float(r["model_alone"]) == pytest.approx(float(r["h200_alone"]), rel=0.10)
            assert float(r["model_shared"]) == pytest.approx(float(r["h200_shared"]), rel=0.14)
            assert r["model_shared_now"] == r["model_shared"]


def test_a_held_launch_too_big_for_the_l2_waits_for_dram():
    """The 8-warp 128x128 tile at S = 2 (~15 s): held in step at 4096 and 2048; at 4096 (A and B 64 MiB, the L2 60)
    every copy takes a DRAM access's latency, at 2048 (16 MiB, warm from the launch before) the latency by hit rate."""
    import sys
    sys.path.insert(0, str(H200 / "round28"))
    import predict28
    from gemmsim.machine import load_machine
    from gemmsim.models import tc_schedule
    from gemmsim.sim.gpu import simulate_gpu

    h = load_machine("h200")
    dram = h.dram.latency_ns * h.clock_mhz_tensor_timing / 1e3  # the DRAM latency at the clock the kernel runs at
    extra = h.async_copy_latency_cycles - h.l2.hit_latency_cycles
    big = simulate_gpu(h, "tensorcore", M=4096, N=4096, K=4096, dtype="fp16", **predict28.mma_params("mma_128x128_w2x4", 2))
    small = simulate_gpu(h, "tensorcore", M=2048, N=2048, K=2048, dtype="fp16", **predict28.mma_params("mma_128x128_w2x4", 2))
    assert big["tc_holds"] == small["tc_holds"] == 1
    assert big["tc_dram_round_trip"] == 1 and small["tc_dram_round_trip"] == 0
    assert big["pipe_latency_clk"] - big["pipe_queue_wait_clk"] == pytest.approx(dram + extra, rel=1e-6)
    assert small["pipe_latency_clk"] - small["pipe_queue_wait_clk"] < dram + extra
    tc_schedule.HELD_DRAM_ROUND_TRIP = False
    try:
        off = simulate_gpu(h, "tensorcore", M=4096, N=4096, K=4096, dtype="fp16", **predict28.mma_params("mma_128x128_w2x4", 2))
    finally:
        tc_schedule.HELD_DRAM_ROUND_TRIP = True
    assert off["tc_dram_round_trip"] == 0 and off["pipe_latency_clk"] < big["pipe_latency_clk"]


def test_the_s_sweep_of_round_3_with_the_model_now():
    """model_tc_stages.csv (round 3's mma.sync S sweep, `model_vs_measured_tc.py`): all 24 within 10 %."""
    rows = _rows("model_tc_stages.csv", H200 / "round3")
    assert len(rows) == 24
    for r in rows:
        assert float(r["ratio"]) == pytest.approx(float(r["model_tflops"]) / float(r["measured_tflops"]), rel=2e-3)
    err = [abs(float(r["ratio"]) - 1) for r in rows]
    assert sum(e <= 0.10 for e in err) == 24 and max(err) < 0.095
    # the S = 1 128x128 launches, 0.86-0.95 before round 33, 1.04-1.06 after it, 1.07-1.09 since round 34 (the DRAM
    # latency in cycles of the launch's own clock, not 1980 MHz)
    s1 = [float(r["ratio"]) for r in rows if r["kernel"].startswith("mma_128") and r["stages"] == "1"]
    assert len(s1) == 4 and 1.06 < min(s1) and max(s1) < 1.10


def test_the_figures_lesson_holds_in_the_measurements():
    """figure33.py's series: with two blocks per SM two stages nearly reach the plateau (the other block hides the
    copy); a lone block needs three."""
    import sys
    sys.path.insert(0, str(ROUND33))
    import figure33

    data = figure33.series()
    for tile, _ in figure33.TILES:
        for bps in (1, 2):
            S, meas, model = data[(tile, bps)]
            assert S == [1, 2, 3, 4] and len(meas) == len(model) == 4
        two, one = data[(tile, 2)][1], data[(tile, 1)][1]
        assert two[1] / two[2] > 0.9 and one[1] / one[2] < 0.8
        assert one[0] / one[2] < 0.6 and two[0] / two[2] < 0.8
