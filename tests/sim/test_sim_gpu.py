"""sim_gpu: every kernel kind through run_case, pattern kernels by hand, launch errors, the H200 SGEMM time,
and the five GPU experiments in quick mode through the in-process CLI."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import gemmsim
from gemmsim.cli.main import main
from gemmsim.errors import GemmsimError, LaunchError
from gemmsim.machine import load_machine
from gemmsim.sim.dispatch import COMMON_COLUMNS, Case, run_case
from gemmsim.sim.gpu import KERNELS, reference_traffic, simulate_gpu

ROOT = Path(__file__).resolve().parents[2]
L2_RASTER = ROOT / "validation" / "h200" / "l2_raster.csv"


@pytest.mark.parametrize("kernel,dtype,params,shape", [
    ("ijk", "fp32", {}, (64, 64, 64)),
    ("kji", "fp32", {}, (64, 64, 64)),
    ("blocked", "fp32", {"BM": 16, "BN": 16, "BK": 16}, (64, 64, 64)),
    ("tiled_smem", "fp32", {"TILE": 16, "pad": 1, "raster": "grouped"}, (96, 64, 48)),
    ("tensorcore", "bf16", {"stages": 4}, (256, 256, 128)),
    ("gemm", "fp16", {}, (256, 128, 64)),
    ("gemm", "fp32", {}, (64, 64, 64)),
    ("seed003_cutlass", "fp16", {}, (512, 256, 256)),
    ("smem_pattern", "fp32", {"stride": 2}, None),
    ("global_pattern", "fp32", {"stride": 8}, None),
    ("waves_sleep", "fp32", {"grid": 300}, None),
    ("waves_fma", "fp32", {}, (2304, 1664, 64)),
])
def test_run_case_returns_the_common_columns(kernel, dtype, params, shape):
    m = load_machine("h100")
    M, N, K = shape or (None, None, None)
    row = run_case(m, Case(experiment="t", machine="h100", kernel=kernel, params=params, M=M, N=N, K=K, dtype=dtype))
    assert set(COMMON_COLUMNS) <= set(row)
    assert row["time_s"] > 0 and isinstance(row["bound"], str)
    if shape and kernel not in ("waves_fma",):
        assert row["flops"] == 2 * M * N * K
        assert row["dram_bytes"] >= reference_traffic(M, N, K, dtype, 1 << 30, 1 << 30)["dram_bytes_perfect_reuse"]
        assert 0 < row["peak_fraction"] <= 1


def test_pattern_kernels_by_hand():
    m = load_machine("h200")
    assert simulate_gpu(m, "smem_pattern", stride=1)["wavefronts"] == 1
    assert simulate_gpu(m, "smem_pattern", stride=32)["wavefronts"] == 32
    assert simulate_gpu(m, "smem_pattern", stride=33)["wavefronts"] == 1
    assert simulate_gpu(m, "smem_pattern", stride=1, width=16)["wavefronts"] == 4
    t32 = simulate_gpu(m, "smem_pattern", transpose_tile=32, pad=0)
    t33 = simulate_gpu(m, "smem_pattern", transpose_tile=32, pad=1)
    assert (t32["wavefronts"], t32["bank_conflicts"], t33["wavefronts"], t33["bank_conflicts"]) == (32, 31, 1, 0)
    assert simulate_gpu(m, "smem_pattern", stride=0, width=8)["bank_conflicts"] == 0  # a broadcast never conflicts
    assert simulate_gpu(m, "global_pattern", stride=1)["sectors"] == 4
    assert simulate_gpu(m, "global_pattern", stride=1, offset=4)["sectors"] == 5
    assert simulate_gpu(m, "global_pattern", stride=8)["sectors"] == 32
    with pytest.raises(GemmsimError):
        simulate_gpu(m, "smem_pattern", stride=1, width=8, offset=4)


def test_impossible_launches_name_the_limit():
    m = load_machine("h100")
    with pytest.raises(LaunchError, match="threads per block"):
        simulate_gpu(m, "ijk", M=64, N=64, K=64, BX=64, BY=32)
    with pytest.raises(LaunchError, match="shared memory"):
        simulate_gpu(m, "tensorcore", M=256, N=256, K=64, dtype="fp16", BM=256, BN=256, WM=64, WN=64, stages=8)
    with pytest.raises(LaunchError, match="registers"):
        simulate_gpu(m, "tiled_smem", M=64, N=64, K=64, regs=128)  # 128 regs x 1024 threads > 65536


def test_public_api_is_exported():
    assert gemmsim.simulate_gpu is simulate_gpu
    assert {"naive", "ijk", "kji", "blocked", "tiled_smem", "tensorcore", "gemm", "smem_pattern", "global_pattern"} <= set(KERNELS)


def test_seed001_reference_traffic_for_8192_fp16_on_128_tiles():
    ref = reference_traffic(8192, 8192, 8192, "fp16", 128, 128)
    assert ref["dram_bytes_no_reuse"] == pytest.approx(17.3e9, rel=0.01)  # 2MNK/T x 2 B + C: "~17 GB"
    assert ref["dram_bytes_perfect_reuse"] == pytest.approx(402.7e6, rel=0.001)  # "~400 MB"
    assert ref["dram_bytes_no_reuse"] / (1935e9) == pytest.approx(8.9e-3, rel=0.01)  # "8.9 ms at 1.935 TB/s"


#: modelled time of the H200 SGEMM within this fraction of the CUDA-event median (validation/h200)
TIME_TOLERANCE = 0.25


def test_sgemm_time_against_h200():
    if not L2_RASTER.exists():
        pytest.skip(f"{L2_RASTER} not measured yet")
    with L2_RASTER.open() as f:
        meas = {(int(r["N"]), r["order"]): float(r["time_ms"]) * 1e-3 for r in csv.DictReader(f)}
    m = load_machine("h200")
    for order in ("row", "column", "grouped"):
        row = simulate_gpu(m, "tiled_smem", M=1024, N=1024, K=1024, raster=order)
        assert row["blocks_per_sm"] == 2 and row["bound"] == "smem"
        assert abs(row["time_s"] / meas[(1024, order)] - 1) <= TIME_TOLERANCE


# ---- the experiments, quick, through the CLI ------------------------------------------------------------
def _run(name, tmp_path):
    out = tmp_path / name
    assert main(["run", str(ROOT / "experiments" / f"{name}.yaml"), "--quick", "--out", str(out), "--jobs", "1",
                 "--quiet", "--no-cache"]) == 0
    with (out / "results.csv").open() as f:
        return list(csv.DictReader(f))


def test_bank_conflicts_experiment(tmp_path):
    rows = {r["label"]: r for r in _run("bank_conflicts", tmp_path)}
    assert rows["transposed [32][32]"]["wavefronts"] == "32" and rows["transposed [32][33]"]["wavefronts"] == "1"
    assert rows["4B stride 2"]["wavefronts"] == "2" and rows["16B stride 1"]["wavefronts"] == "4"


def test_coalescing_experiment(tmp_path):
    rows = {r["label"]: r for r in _run("coalescing", tmp_path)}
    assert rows["4B stride 1"]["sectors"] == "4" and rows["4B stride 1 +4B"]["sectors"] == "5"
    assert rows["4B stride 8"]["sectors"] == "32" and float(rows["4B stride 8"]["coalescing_efficiency"]) == 0.125


def test_wave_quantization_experiment(tmp_path):
    rows = _run("wave_quantization", tmp_path)
    gemm = {int(r["N"]): r for r in rows if r["kernel"] == "tensorcore"}
    # the guide's A100 example: 108 tiles = 1 full wave, 117 tiles = 2 waves at 54 %, about twice the time
    assert (int(gemm[1536]["tiles"]), int(gemm[1536]["waves"])) == (108, 1)
    assert (int(gemm[1664]["tiles"]), int(gemm[1664]["waves"])) == (117, 2)
    assert float(gemm[1664]["wave_efficiency"]) == pytest.approx(117 / 216)
    assert float(gemm[1664]["time_s"]) / float(gemm[1536]["time_s"]) == pytest.approx(2.0, rel=0.15)
    sleep = {int(r["N"]): r for r in rows if r["kernel"] == "waves_sleep"}
    assert sleep[1664]["bound"] == "latency" and float(sleep[1664]["time_s"]) == float(sleep[1536]["time_s"])


def test_l2_raster_experiment(tmp_path):
    rows = _run("l2_raster", tmp_path)
    assert sorted({r["p_raster"] for r in rows}) == ["column", "grouped", "row"]
    assert len(rows) == 3 * len({r["N"] for r in rows})  # every order at every quick size
    for r in rows:
        assert float(r["dram_bytes_perfect_reuse"]) <= float(r["dram_bytes"]) <= float(r["dram_bytes_no_reuse"])
        assert 0 <= float(r["l2_hit_rate"]) <= 1


def test_pipeline_depth_experiment(tmp_path):
    rows = [r for r in _run("pipeline_depth", tmp_path) if r["machine"] == "rtx4060" and r["kernel"] == "seed003_cutlass"]
    by_s = {int(r["p_stages"]): r for r in rows}
    assert {s: int(r["smem_per_block"]) for s, r in by_s.items()} == {1: 24576, 2: 49152, 3: 73728, 4: 98304}
    assert all(r["blocks_per_sm"] == "1" for r in rows)
    assert by_s[3]["claim_blocks_hold"] == "False" and "cannot hold" in by_s[3]["claim_check"]
    assert float(by_s[3]["peak_tflops"]) == pytest.approx(30.23, abs=0.01)  # fp16 with fp32 accumulate, half rate
    assert float(by_s[3]["seed_fraction_of_fp32_acc_peak"]) > 1  # 31.9 TFLOP/s is above it at 2460 MHz


def test_gemm_picks_a_skinny_tile_for_decode_and_is_not_compute_bound():
    """Decode (M = batch = 1) on a 128-row tile would compute 127 rows of padding; gemm takes 16 rows, and at
    ~1 FLOP/B the time is set by memory (DRAM or its latency), not by the tensor cores (seed 000 section 14)."""
    from gemmsim.kernels.gpu import KERNELS as GPU
    from gemmsim.machine import load_machine
    from gemmsim.sim.gpu import simulate_gpu

    a100 = load_machine("a100")
    assert GPU["gemm"].spec({}, "bf16", a100, M=1).BM == 16
    assert GPU["gemm"].spec({}, "bf16", a100, M=4096).BM == 128
    row = simulate_gpu(a100, "gemm", M=1, N=4096, K=4096, dtype="bf16")
    assert row["bound"] != "compute"
    assert row["intensity_flop_per_byte"] == pytest.approx(1.0, rel=0.05)


def test_smem_conflicts_count_only_conflicts():
    """The tiled SGEMM's As[ty][k] loads are broadcasts and its Bs[k][tx] loads consecutive words: no conflicts (the
    count was negative when the ideal assumed 32 distinct words per instruction). An unpadded, unswizzled
    tensor-core tile conflicts."""
    m = load_machine("a100")
    r = simulate_gpu(m, "tiled_smem", M=256, N=256, K=256, dtype="fp32")
    assert r["smem_conflicts"] == 0 and r["smem_wavefronts"] == r["smem_wavefronts_ideal"] > 0
    r = simulate_gpu(m, "tensorcore", M=256, N=256, K=256, dtype="fp16", pad=0, swizzle=False)
    assert r["smem_conflicts"] > 0 and r["smem_wavefronts"] == r["smem_wavefronts_ideal"] + r["smem_conflicts"]


def test_seed003_block_claim_in_words():
    """The claim check says which way a machine differs from the paper's blocks per SM, not just that it does."""
    from gemmsim.sim.gpu import _blocks_claim

    assert _blocks_claim(2, 2) == "the paper's 2 block(s)/SM can hold"
    assert _blocks_claim(2, 1) == "the paper's 2 block(s)/SM cannot hold"
    assert _blocks_claim(2, 4) == "more than the paper's 2 block(s)/SM fit"
    assert "no block count" in _blocks_claim(None, 3)
