"""H200 round 30 (validation/h200/round30): where and when every block of the S sweep's launches ran, and the model's
caches replayed on that schedule."""

import pytest
from reference.rounds import H200, script, table

ROUND30 = H200 / "round30"


def test_the_stored_schedule_is_what_the_archive_gives():
    p = script(ROUND30, "process30")
    got = {(r["api"], r["kernel"], r["copy"], r["stages"], r["M"]): p.sitting(r) for r in p.launches()}
    stored = table(ROUND30, "schedule30.csv")
    assert len(stored) == len(got) == 96
    for s in stored:
        g = got[(s["api"], s["kernel"], s["copy"], s["stages"], s["M"])]
        assert g["blocks"] == int(s["blocks"]) == (int(s["M"]) // int(s["kernel"].split("_")[1].split("x")[0])) ** 2
        assert g["sms_used"] == 132
        for k in ("wave_spread", "sm_gaps_together", "median_block_us"):
            if s[k] == "":  # too few waves to measure a spread (the 128x128 twins at 4096, 3 blocks per SM)
                assert g[k] == ""
            else:
                assert g[k] == pytest.approx(float(s[k]), abs=1e-3), (s, k)


def test_how_the_blocks_sit():
    rows = {(r["api"], r["kernel"], int(r["stages"]), int(r["M"])): r for r in table(ROUND30, "schedule30.csv")
            if r["copy"] == "1"}
    for api in ("mma", "wmma"):
        for n in (4096, 8192):
            for k in ("mma_128x128_w2x4", "mma_128x128_w2x2"):  # lockstep at S = 1, 2: a wave starts within 0.05 block
                for S in (1, 2):
                    assert float(rows[(api, k, S, n)]["wave_spread"]) <= 0.06
            # the 64x64 waves spread more at 8192 than at 4096 (S = 1, 2), and an SM's blocks mostly start together
            for S in (1, 2):
                assert float(rows[(api, "mma_64x64_w2x2", S, 8192)]["wave_spread"]) > 0.85
                assert float(rows[(api, "mma_64x64_w2x2", S, 4096)]["wave_spread"]) < 0.6
                assert float(rows[(api, "mma_64x64_w2x2", S, 4096)]["sm_gaps_together"]) > 0.8


def test_on_the_measured_schedule_the_caches_read_what_ncu_read_at_4096():
    """The 64x64 tile at 4096: replayed on the H200's schedule the model's caches read 0.87-0.93x ncu's DRAM bytes,
    on its own even spread 1.5-2.1x; and the model's TFLOP/s come within 6 % (committed: 0.86-0.93)."""
    rows = [r for r in table(ROUND30, "replay30.csv") if r["M"] == "4096"]
    by = {(r["stages"], r["schedule"]): r for r in rows}
    assert len(by) == 12
    for S in "1234":
        m, s = by[(S, "measured")], by[(S, "spread")]
        assert 0.85 <= float(m["over_ncu"]) <= 0.95 and float(s["over_ncu"]) >= 1.45
        assert float(m["over_ncu"]) == pytest.approx(int(m["dram_bytes_read"]) / int(m["ncu_dram_bytes_read"]), abs=0.01)
        assert abs(float(m["model_tflops"]) / float(m["measured_tflops"]) - 1) <= 0.06
        assert float(s["model_tflops"]) / float(s["measured_tflops"]) <= 0.935


def test_one_replay_is_what_the_model_gives_now():
    """The lockstep row of S = 1 at 4096 (~2 s) rerun."""
    from gemmsim.kernels.gpu import KERNELS
    from gemmsim.machine import load_machine
    from gemmsim.models import gpu_memory as gm
    from gemmsim.models.occupancy import resident
    from gemmsim.sim.gpu import l1_carveout
    from gemmsim.trace import Layout

    r = next(x for x in table(ROUND30, "replay30.csv") if (x["M"], x["stages"], x["schedule"]) == ("4096", "1", "lockstep"))
    m = load_machine("h200")
    spec = KERNELS["tensorcore"].spec(KERNELS["tensorcore"].params(BM=64, BN=64, BK=32, WM=32, WN=32, stages=1, regs=72,
                                                                   pad=8), "fp16", m, M=4096)
    occ = resident(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
    assert occ.blocks_per_sm == int(r["blocks_per_sm"])
    c = gm.simulate_memory(m, spec, Layout.build(4096, 4096, 4096, "fp16"), occ.blocks_per_sm,
                           m.l1_size(l1_carveout(m, occ)), budget=None, stagger=0.0).counters
    assert c["dram_bytes_read"] == int(r["dram_bytes_read"])


def test_at_8192_the_replay_reads_between_lockstep_and_the_even_spread():
    rows = {(r["stages"], r["schedule"]): r for r in table(ROUND30, "replay30.csv") if r["M"] == "8192"}
    assert len(rows) == 12
    for S in "1234":
        lock, meas, spread = (float(rows[(S, k)]["over_ncu"]) for k in ("lockstep", "measured", "spread"))
        assert lock < 0.25 < 0.55 < meas < 0.75 < 1.05 < spread
        m = rows[(S, "measured")]
        assert abs(float(m["model_tflops"]) / float(m["measured_tflops"]) - 1) <= 0.05


def test_the_lockstep_diagnostic_as_the_readme_states_it():
    rows = table(ROUND30, "lockstep30.csv")
    assert len(rows) == 48
    within = {api: sum(abs(float(r["lockstep_ratio"]) - 1) <= 0.10 for r in rows if r["api"] == api) for api in ("wmma", "mma")}
    committed = {api: sum(abs(float(r["committed_ratio"]) - 1) <= 0.10 for r in rows if r["api"] == api)
                 for api in ("wmma", "mma")}
    assert within == {"wmma": 21, "mma": 21} and committed == {"wmma": 16, "mma": 17}
    fast = [float(r["lockstep_ratio"]) for r in rows if r["kernel"] == "mma_64x64_w2x2" and r["M"] == "8192"]
    assert min(fast) > 1.04 and max(fast) < 1.13
