"""Tensor-core GEMMs through the SM pipeline model (sim.gpu + models.sm_pipeline + kernels.hopper)."""

import pytest

from gemmsim.errors import KernelError
from gemmsim.machine import load_machine
from gemmsim.sim.gpu import simulate_gpu

SMALL = dict(M=1024, N=1024, K=1024, dtype="fp16", max_blocks=64)
# the H200 without its measured copy-path limits: these tests look at latency hiding and clocks alone
H200 = load_machine("h200").model_copy(update={"async_copy_bytes_per_clk": None, "async_copy_bytes_per_clk_block": None,
                                                "async_copy_bytes_per_clk_warp": None, "async_copy_latency_cycles": None})


def tc(machine, **kw):
    return simulate_gpu(machine, "tensorcore", **{**SMALL, **kw})


def test_one_stage_exposes_the_copy_latency_and_more_stages_hide_it():
    r = {S: tc(H200, stages=S) for S in (1, 2, 3, 4)}
    assert r[1]["tflops"] < r[2]["tflops"] <= r[3]["tflops"] * 1.0001
    assert r[1]["pipe_copy_wait_clk"] > 0.5 * r[1]["pipe_copy_clk"]
    assert r[4]["pipe_copy_wait_clk"] < 0.2 * r[1]["pipe_copy_wait_clk"]


def test_one_resident_block_runs_at_the_hand_worked_step():
    # 128x128x32, 4 warps of 64x64: 224 registers x 128 threads, 1 block/SM at 4 stages? no: registers allow 2;
    # force one block per SM through shared memory (> half of the SM) and compare with the closed form
    r = tc("h200", stages=2, smem=120 * 1024)
    assert r["blocks_per_sm"] == 1
    assert r["pipe_step_clk"] == pytest.approx(r["pipe_closed_form_step_clk"], rel=1e-6)


def test_one_block_per_sm_copies_at_the_per_warp_rate():
    # rates small enough to bind (the H200's measured ones, 18.25 B/clk per warp since round 4d, do not: the L2 share does)
    h = load_machine("h200").model_copy(update={"async_copy_bytes_per_clk_warp": 2.0, "async_copy_bytes_per_clk_block": 10.0})
    r = tc(h, stages=2, smem=150 * 1024)  # one 4-warp block per SM: 16 KiB per k-step at 4 x 2.0 B/clk
    assert r["blocks_per_sm"] == 1
    extra = h.async_copy_latency_cycles - h.l2.hit_latency_cycles  # cp.async's measured round trip beyond the chase's
    assert r["pipe_copy_clk"] - r["latency_clk_per_step"] - extra == pytest.approx(16384 / (4 * 2.0), rel=0.01)
    # without the per-warp rate, the per-block one applies
    b = tc(h.model_copy(update={"async_copy_bytes_per_clk_warp": None}), stages=2, smem=150 * 1024)
    assert b["pipe_copy_clk"] - b["latency_clk_per_step"] - extra == pytest.approx(16384 / 10.0, rel=0.01)


def test_shared_memory_override_sets_occupancy():
    assert tc("h200", stages=2)["blocks_per_sm"] == 2
    assert tc("h200", stages=2, smem=150 * 1024)["blocks_per_sm"] == 1


def test_sustained_clock_scales_a_compute_bound_time():
    h = H200.model_copy(update={"clock_mhz_tensor_sustained": None})
    slow = h.model_copy(update={"clock_mhz_tensor_sustained": h.clock_mhz_tensor / 2})
    a, b = tc(h, stages=4), tc(slow, stages=4)
    assert a["bound"] == "compute"
    assert b["time_s"] / a["time_s"] == pytest.approx(2.0, rel=0.1)
    assert b["peak_tflops"] == a["peak_tflops"]  # the datasheet peak stays


def test_hopper_persistent_tiles_step_at_the_wave_boundary():
    kw = dict(N=4096, K=2048, dtype="fp16", kernel_name="nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT", max_blocks=132)
    a = simulate_gpu("h200", "hopper_ws", M=4096, **kw)  # 16 x 32 = 512 tiles: 4 per SM
    b = simulate_gpu("h200", "hopper_ws", M=4096 + 256, **kw)  # 17 x 32 = 544 tiles: 5 per SM
    assert (a["blocks_on_busiest_sm"], b["blocks_on_busiest_sm"]) == (4, 5)
    assert b["time_s"] / a["time_s"] == pytest.approx(5 / 4, rel=0.05)
    assert a["pipeline"] == "warp_specialized" and a["pipe_barrier_clk"] == 0


def test_wgmma_runs_at_the_full_rate_and_mma_sync_does_not():
    h = load_machine("h200")
    hop = simulate_gpu(h, "hopper_ws", M=2048, N=2048, K=2048, dtype="fp16", BM=128, BN=256, max_blocks=64)
    mma = tc(h, M=2048, N=2048, K=2048, BM=128, BN=256, WM=64, WN=64, stages=4)
    assert hop["pipe_mma_clk"] == pytest.approx(2 * 128 * 256 * 64 / 4096)
    # mma.sync: the MMAs at the mma.sync fraction of the rate, plus the other instructions the same 2 warps per
    # sub-partition issue (the MMAs and the other issue do not overlap on one sub-partition)
    other = (8 // 4) * (mma["pipe_issue_clk"] + mma["pipe_copy_issue_clk"])
    assert mma["pipe_issue_clk"] > 0 and mma["pipe_copy_issue_clk"] > 0
    assert mma["pipe_mma_clk"] == pytest.approx(2 * 128 * 256 * 32 / (4096 * h.mma_sync_fraction) + other)


def test_hopper_kernels_need_sm90():
    with pytest.raises(KernelError):
        simulate_gpu("a100", "hopper_ws", M=1024, N=1024, K=1024, dtype="fp16")


def test_measured_reference_only_for_the_measured_configuration():
    from gemmsim.kernels.gpu import KERNELS
    from gemmsim.sim.reference_tc import reference_columns

    spec = KERNELS["tensorcore"].spec({"BM": 128, "BN": 128, "WM": 64, "WN": 32, "stages": 3, "pad": 8}, "fp16")
    got = reference_columns("h200", "tensorcore", {"pad": 8}, spec, 8192, 8192, 8192, "fp16", 1702 / 2)
    assert got["measured_tflops"] == 262.3 and got["measured_tflops_at_model_clock"] == pytest.approx(262.3 / 2)
    assert reference_columns("h200", "tensorcore", {}, spec, 8192, 8192, 8192, "fp16", 1430) == {}  # unpadded: not it
    assert reference_columns("a100", "tensorcore", {"pad": 8}, spec, 8192, 8192, 8192, "fp16", 1430) == {}


def _round28_wmma_measured() -> dict:
    """validation/h200/round28/wmma_pipeline28.csv's WMMA copy kernels at 8192, read here independently of gemmsim."""
    import csv
    from pathlib import Path

    warp_tile = {"mma_128x128_w2x4": (64, 32), "mma_128x128_w2x2": (64, 64), "mma_64x64_w2x2": (32, 32)}
    path = Path(__file__).resolve().parents[2] / "validation/h200/round28/wmma_pipeline28.csv"
    return {(int(r["BM"]), int(r["BN"]), *warp_tile[r["kernel"]], int(r["stages"])): (float(r["tflops"]), int(r["sm_mhz"]))
            for r in csv.DictReader(path.open())
            if r["api"] == "wmma" and r["copy"] == "1" and (r["M"], r["N"], r["K"]) == ("8192", "8192", "8192")}


def test_the_wmma_reference_is_round_28s_measurement():
    from gemmsim.sim.reference_tc import H200_MMA_PIPE, H200_WMMA_PIPE

    want = _round28_wmma_measured()
    assert len(want) == 12 and H200_WMMA_PIPE == want
    assert set(H200_WMMA_PIPE) == set(H200_MMA_PIPE)  # the same tiles and stages as round 3's mma.sync kernels


def test_the_api_picks_the_measured_reference():
    """A wmma row gets round 28's WMMA measurement; a row without ``api`` (mma.sync) keeps round 3's."""
    import dataclasses

    from gemmsim.kernels.gpu import KERNELS
    from gemmsim.sim.reference_tc import reference_columns

    tile = {"BM": 128, "BN": 128, "WM": 64, "WN": 32, "stages": 3, "pad": 8}
    wmma = KERNELS["tensorcore"].spec({**tile, "api": "wmma"}, "fp16")
    plain = KERNELS["tensorcore"].spec(tile, "fp16")
    got = reference_columns("h200", "tensorcore", {"pad": 8, "api": "wmma"}, wmma, 8192, 8192, 8192, "fp16", 1697 / 2)
    assert got["measured_tflops"] == 270.4 and got["measured_sm_mhz"] == 1697
    assert got["measured_tflops_at_model_clock"] == pytest.approx(270.4 / 2)
    assert reference_columns("h200", "tensorcore", {"pad": 8}, plain, 8192, 8192, 8192, "fp16", 1430)["measured_tflops"] == 262.3
    # the raw params dict alone (a spec without extra) decides too; missing api is mma.sync
    bare = dataclasses.replace(plain, extra={})
    assert reference_columns("h200", "tensorcore", {"pad": 8, "api": "wmma"}, bare, 8192, 8192, 8192, "fp16", 1430)[
        "measured_tflops"] == 270.4
    assert reference_columns("h200", "tensorcore", {"pad": 8}, bare, 8192, 8192, 8192, "fp16", 1430)["measured_tflops"] == 262.3


def test_an_unknown_api_is_refused_by_name():
    with pytest.raises(KernelError) as err:
        tc("h200", stages=2, api="wgmma")
    assert any(p.startswith("api:") and "'mma.sync' or 'wmma'" in p for p in err.value.problems)


# the mma_pipe 128x128/8-warp kernel of validation/h200/round3, with round 4's executed instruction counts
MMA_PIPE = dict(M=4096, N=4096, K=4096, dtype="fp16", BM=128, BN=128, BK=32, WM=64, WN=32, pad=8, regs=126, max_blocks=264)


def test_executed_counts_split_into_compute_issue_and_copy_issue():
    r = simulate_gpu("h200", "tensorcore", stages=3, warp_instructions_per_step=60.0, warp_copy_instructions_per_step=135.0,
                     **MMA_PIPE)
    # the warp's 32 HMMAs (64x32 warp tile: 4 x 4 x 2 m16n8k16) hold its sub-partition at the tensor rate; the other 28
    # compute instructions and the 135 copy instructions one clock each
    assert r["pipe_issue_clk"] == pytest.approx(60.0 - 32)
    assert r["pipe_copy_issue_clk"] == pytest.approx(135.0)
    h = load_machine("h200")
    mma_warp = 2 * 128 * 128 * 32 / (4096 * h.mma_sync_fraction) * 4 / 8
    # one block alone: 2 warps per sub-partition, or the warp's 195 instructions as one dependent chain, the longer
    assert r["pipe_compute_clk"] == pytest.approx(max(2 * (mma_warp + 28 + 135), 195 * h.fma_latency_cycles))


def test_copy_issue_adds_to_a_compute_bound_step():
    base = dict(stages=4, warp_instructions_per_step=60.0, **MMA_PIPE)
    # without the measured copy-path limit the copies keep up (from 150 copy instructions on: with fewer, the steps of
    # the launch's memory, sampled in two whole waves, outrun them) and the step is the compute phase
    a = simulate_gpu(H200, "tensorcore", warp_copy_instructions_per_step=200.0, **base)
    b = simulate_gpu(H200, "tensorcore", warp_copy_instructions_per_step=300.0, **base)
    assert a["blocks_per_sm"] == b["blocks_per_sm"] == 2 and a["pipe_copy_wait_clk"] == b["pipe_copy_wait_clk"] == 0
    # 2 blocks x 2 warps per sub-partition issue 100 more instructions each per step: 400 cycles more per step (both
    # above the shared pipe's 2 x 512 wavefronts, which binds with no copy issue at all)
    assert a["pipe_step_clk"] > 2 * 512 + 40
    assert b["pipe_step_clk"] - a["pipe_step_clk"] == pytest.approx(400.0, rel=0.02)
    assert b["time_s"] > a["time_s"]


def test_default_counts_are_the_kernels_own_instructions():
    from gemmsim.kernels.gpu import KERNELS

    k = KERNELS["tensorcore"]
    spec = k.spec(k.params(BM=128, BN=128, BK=32, WM=64, WN=32), "fp16", load_machine("h200"))
    # ldmatrix.x4: 2 k16 x (64/16 + 32/16) = 12; HMMA 32; cp.async: (128 x 4 + 32 x 16) / 256 threads = 4
    assert spec.warp_compute_instructions_per_step() == 12 + 32
    assert spec.warp_copy_instructions_per_step() == 4
    assert spec.warp_instructions_per_step() == 48


def _reuse_trace(mi: int, ni: int, k16: int) -> str:
    """A warp's k-step that reloads one A fragment register before every group of ``ni`` mma (the copy-less twins'
    SASS, validation/h200/round4): per k16 the B fragments (ni / 2 ldmatrix.x4) and A, then per A row its ni mma."""
    toks = []
    for _ in range(k16):
        toks += ["L4:0+4"] + [f"L4:{8 + 4 * j}+4" for j in range(ni // 2)]
        for a in range(mi):
            if a:
                toks.append("L4:0+4")
            toks += [f"H:0+4,{8 + 2 * j}+2" for j in range(ni)]
    return " ".join(toks)


def test_a_reused_fragment_register_slows_the_compute_phase_only_with_the_measured_latencies():
    kw = dict(stages=1, WM=64, WN=64, warp_instructions_per_step=100.0, warp_copy_instructions_per_step=0.0)
    trace = _reuse_trace(4, 8, 2)  # 64 mma per warp and k-step
    plain, waits = tc("h200", **kw), tc("h200", **kw, fragment_trace=trace)
    assert waits["pipe_step_clk"] > plain["pipe_step_clk"]  # 8 exposed ldmatrix waits per warp, few warps to hide them
    off = load_machine("h200").model_copy(update={"ldmatrix_latency_cycles": None})
    assert tc(off, **kw, fragment_trace=trace)["pipe_step_clk"] == pytest.approx(plain["pipe_step_clk"], rel=1e-9)


def test_a_fragment_trace_with_the_wrong_mma_count_is_refused():
    with pytest.raises(KernelError):
        tc("h200", stages=3, WM=64, WN=64, fragment_trace=_reuse_trace(4, 4, 2))


def test_a_copy_trace_per_stage_count_is_the_stage_counts_own():
    """``copy_trace`` as a mapping stages -> trace (what a sweep over stages needs, since each stage count compiles
    to its own copy code): each S runs with its own trace, exactly as if that trace had been given alone; a stage
    count without a trace is refused by name."""
    kw = dict(BM=128, BN=128, BK=32, WM=64, WN=32, pad=8, regs=126, warp_instructions_per_step=62,
              warp_copy_instructions_per_step=133)
    short = "alu/R1<R0 ldgsts<R1"
    long_ = " ".join(["alu/R1<R0 s2r/R2 alu/R3<R1,R2 ldc/R4 wide/R5,R6<R3,R4 ldgsts<R5,R6"] * 20)
    per = {1: short, 2: long_}
    for S, tr in per.items():
        a, b = tc("h200", stages=S, copy_trace=per, **kw), tc("h200", stages=S, copy_trace=tr, **kw)
        same = {k for k in a if k != "p_copy_trace" and (a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]))}
        assert same == set(a) - {"p_copy_trace"}, S
    assert tc("h200", stages=2, copy_trace=per, **kw)["tflops"] < 0.9 * tc("h200", stages=2, copy_trace=short, **kw)["tflops"]
    with pytest.raises(Exception, match="none for stages=3"):
        tc("h200", stages=3, copy_trace=per, **kw)


def test_pipeline_depth_experiment_gives_the_measured_kernel_its_copy_code_per_stage():
    """experiments/pipeline_depth.yaml's H200 kernel (round 3's mma_pipe 128x128, 8 warps) carries, for each S, the
    copy trace round 6 read from that kernel's SASS and ncu counts (validation/h200/round6/copy_traces6.csv)."""
    import csv
    from pathlib import Path

    from gemmsim.run.experiment import load_experiment

    root = Path(__file__).resolve().parents[2]
    exp = load_experiment(root / "experiments" / "pipeline_depth.yaml")
    entry = next(k for k in exp.kernels if k.label == "mma_pipe_128x128")
    want = {int(r["stages"]): r["copy_trace"] for r in csv.DictReader((root / "validation/h200/round6/copy_traces6.csv").open())
            if r["kernel"] == "mma_128x128_w2x4"}
    assert {int(k): v for k, v in entry.params["copy_trace"].items()} == want
    assert sorted(want) == exp.sweep["stages"]


def test_pipeline_depth_experiment_gives_the_wmma_kernel_round_28s_inputs():
    """experiments/pipeline_depth.yaml's WMMA kernel (round 28's wmma variant of the 128x128 8-warp kernel) carries
    validation/h200/round28/inputs28.csv's copy trace per S, the fragment trace of S = 2-4, 128 registers and the means
    over S of the executed instruction counts; its api selects the WMMA measurements."""
    import csv
    import statistics
    from pathlib import Path

    from gemmsim.run.experiment import load_experiment

    root = Path(__file__).resolve().parents[2]
    exp = load_experiment(root / "experiments" / "pipeline_depth.yaml")
    entry = next(k for k in exp.kernels if k.label == "wmma_pipe_128x128")
    rows = {int(r["S"]): r for r in csv.DictReader((root / "validation/h200/round28/inputs28.csv").open())
            if r["kernel"] == "mma_128x128_w2x4"}
    p = entry.params
    assert entry.name == "tensorcore" and p["api"] == "wmma"
    assert (p["BM"], p["BN"], p["BK"], p["WM"], p["WN"], p["pad"], p["max_blocks"]) == (128, 128, 32, 64, 32, 8, 264)
    assert {int(k): v for k, v in p["copy_trace"].items()} == {S: r["copy_trace"] for S, r in rows.items()}
    assert sorted(rows) == exp.sweep["stages"]
    assert p["fragment_trace"] == rows[2]["fragment_trace"] == rows[3]["fragment_trace"] == rows[4]["fragment_trace"]
    assert p["regs"] == int(rows[2]["regs"]) == 128
    assert p["warp_instructions_per_step"] == round(statistics.mean(float(r["compute_instructions"]) for r in rows.values()), 1)
    assert p["warp_copy_instructions_per_step"] == round(statistics.mean(float(r["copy_instructions"]) for r in rows.values()), 1)


def test_cp_async_into_padded_rows_takes_the_measured_chip_throughput_where_it_is_lower():
    # async_copy_l2_gbps_padded_rows (round 8: 64-byte rows into 80-byte-pitched shared rows from all SMs) replaces
    # l2.bandwidth_gbps for cp.async kernels whose shared row pitch is off 32 bytes; aligned (swizzled) rows keep it
    h = load_machine("h200")
    assert 0 < h.async_copy_l2_gbps_padded_rows < h.l2.bandwidth_gbps
    h = h.model_copy(update={"async_copy_l2_lookups_per_request_padded_rows": None, "async_copy_bytes_per_clk_padded_rows": None})
    none, high, low = (h.model_copy(update={"async_copy_l2_gbps_padded_rows": v}) for v in (None, 2 * h.l2.bandwidth_gbps, 1000.0))
    kw = dict(M=4096, N=4096, K=1024, stages=3, max_blocks=64, pad=8)  # BK 32 + 8 halves: 80-byte rows
    base = tc(none, **kw)
    assert tc(high, **kw)["time_s"] == base["time_s"]  # above the L2's byte rate: no effect
    slow = tc(low, **kw)
    assert slow["time_s"] > 1.5 * base["time_s"]  # 1 TB/s for 2 x 128 x 32 x 2 bytes per block step binds
    assert slow["pipe_rho_l2"] > base["pipe_rho_l2"]
    aligned = dict(kw, pad=0)  # 64-byte rows: 32-byte aligned
    assert tc(low, **aligned)["time_s"] == tc(none, **aligned)["time_s"]
    assert tc(low, **dict(kw, pad=16))["time_s"] == tc(none, **dict(kw, pad=16))["time_s"]  # 96-byte rows: aligned
    # TMA copies (hopper_ws) are not cp.async: unchanged
    hk = dict(M=4096, N=4096, K=4096, dtype="fp16", max_blocks=64)
    assert simulate_gpu(low, "hopper_ws", **hk)["time_s"] == simulate_gpu(none, "hopper_ws", **hk)["time_s"]


def test_the_padded_ceiling_is_a_lookup_rate_where_its_lookups_are_given():
    # round 9: the padded shape's ceiling falls in proportion to the L2 tag lookups per request (a read that misses its
    # near partition is looked up again in its home one); the memory model's lookups per sector read carry that
    from gemmsim.sim.gpu import padded_copy_ceiling_gbps

    h = load_machine("h200").model_copy(update={"async_copy_l2_gbps_padded_rows": 5000.0,
                                                 "async_copy_l2_lookups_per_request_padded_rows": 1.05})
    assert padded_copy_ceiling_gbps(h, {"l2_lookups": 1.25e6, "l2_sectors_read": 1e6}) == pytest.approx(5000.0 * 1.05 / 1.25)
    assert padded_copy_ceiling_gbps(h, {"l2_lookups": 0.9e6, "l2_sectors_read": 1e6}) == pytest.approx(5000.0 * 1.05)  # >= 1
    assert padded_copy_ceiling_gbps(h, {}) == 5000.0  # no lookups counted: as measured
    plain = h.model_copy(update={"async_copy_l2_lookups_per_request_padded_rows": None})
    assert padded_copy_ceiling_gbps(plain, {"l2_lookups": 1.25e6, "l2_sectors_read": 1e6}) == 5000.0


def test_padded_copies_at_the_sms_own_path_are_held_back_by_the_chip():
    # with async_copy_bytes_per_clk_padded_rows the port holds a copy at the SM's own path rate (not its average share
    # of the chip) and the chip's L2 holds the copies back through their round trip (Little's law): a saturating tile
    # (64x64, 4 warps, several blocks per SM) runs no faster than the chip's ceiling and waits longer for its copies
    h = load_machine("h200").model_copy(update={"async_copy_l2_lookups_per_request_padded_rows": None,
                                                 "clock_mhz_tensor_sustained": 1980.0})
    share = h.model_copy(update={"async_copy_bytes_per_clk_padded_rows": None})
    kw = dict(M=4096, N=4096, K=1024, BM=64, BN=64, WM=32, WN=32, stages=3, max_blocks=264, pad=8)
    a, b = tc(share, **kw), tc(h, **kw)
    assert a["pipe_rho_l2"] > 0.9  # L2-bound at the SM's share
    # the port: 8 KiB a step at 27 B/clk instead of the SM's share of the ceiling at 1980 MHz (~20 B/clk)
    lat = b["pipe_copy_clk"] - 8192 / h.async_copy_bytes_per_clk_padded_rows
    assert a["pipe_copy_clk"] - lat == pytest.approx(8192 / (h.async_copy_l2_gbps_padded_rows * 1e3 / 132 / 1980), rel=0.01)
    assert b["pipe_latency_clk"] > a["pipe_latency_clk"] + 200  # Little: the round trip grows at the chip's ceiling
    assert b["time_s"] == pytest.approx(a["time_s"], rel=0.1)  # the same ceiling either way


def test_tma_copies_are_held_to_the_sms_measured_path_where_few_sms_copy():
    """tma_bytes_per_clk (round 25: 108 B/clk into one SM): with 4 tiles on 132 SMs the L2 share alone would let each
    copying SM take a quarter of the chip's L2, so a stage's copy takes the path's time (four stages still hide it
    behind the wgmma); with every SM copying the share binds first and the path changes nothing."""
    h = load_machine("h200")
    assert h.tma_bytes_per_clk == 108.0
    free = h.model_copy(update={"tma_bytes_per_clk": None})
    kw = dict(K=8192, dtype="fp16", kernel_name="nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT")
    few = dict(M=512, N=256, **kw)  # 2 x 2 tiles of 256 x 128
    a, b = simulate_gpu(h, "hopper_ws", **few), simulate_gpu(free, "hopper_ws", **few)
    tile = (256 + 128) * 64 * 2  # bytes a stage lands in the CTA (multicast or not)
    assert a["pipe_copy_clk"] - a["latency_clk_per_step"] == pytest.approx(tile / 108.0, rel=0.02)
    assert b["pipe_copy_clk"] < a["pipe_copy_clk"]
    many = dict(M=4096, N=4096, max_blocks=132, **kw)
    assert simulate_gpu(h, "hopper_ws", **many)["time_s"] == simulate_gpu(free, "hopper_ws", **many)["time_s"]
