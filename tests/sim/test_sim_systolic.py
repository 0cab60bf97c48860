"""Systolic cases through run_case, the experiment files, and the systolic command in-process."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from gemmsim import load_machine
from gemmsim.cli.systolic import register
from gemmsim.errors import GemmsimError, KernelError
from gemmsim.run.experiment import load_experiment, plan
from gemmsim.sim.dispatch import COMMON_COLUMNS, Case, kernels_for, run_case
from gemmsim.sim.systolic import COLUMNS, KERNELS

ROOT = Path(__file__).resolve().parents[2]
TPU = load_machine("tpu_v1")


def _case(kernel="gemm", M=64, N=64, K=64, dtype="int8", **params):
    model = KERNELS[kernel]
    return Case(experiment="t", machine="tpu_v1", kernel=kernel, params=model(**params).model_dump(mode="json"), M=M, N=N, K=K, dtype=dtype)


def test_kernels_registered():
    assert set(kernels_for("systolic")) == {"gemm", "ws", "os", "is"}
    assert KERNELS["gemm"]().dataflow == "ws"


def test_run_case_columns():
    row = run_case(TPU, _case())
    assert set(COMMON_COLUMNS) <= set(row) and set(COLUMNS) <= set(row)
    assert row["flops"] == 2 * 64**3 == 2 * row["macs"]
    assert row["time_s"] == pytest.approx(row["total_cycles"] / 0.7e9)
    assert row["gflops"] == pytest.approx(row["flops"] / row["time_s"] / 1e9)
    assert row["peak_fraction"] == pytest.approx(row["gflops"] / (2 * 65536 * 0.7))
    assert row["dram_bytes"] == row["dram_bytes_A"] + row["dram_bytes_B"] + row["dram_bytes_C"]
    assert row["fold_grid"] == "1x1x1" and row["dtype_note"] == "" and row["array_dtype"] == "int8"
    # 12 KiB at 48.6 B/cycle (253 cycles) is less than the fold's 256 + 64 + 256 + 64 - 2 = 638 cycles of tile
    # load, stream, fill and drain: the array's own cycles bound it, though it waited for the first tiles
    assert row["bound"] == "compute" and row["compute_cycles"] == 638 and row["stall_cycles"] > 0
    decode = run_case(TPU, _case(M=1, N=1024, K=1024))
    assert decode["bound"] == "dram"
    fast = run_case(TPU, _case(M=1, N=1024, K=1024, dram_bandwidth_gbps=1e6))
    assert fast["bound"] == "compute" and fast["compute_cycles"] == decode["compute_cycles"]


def test_aliases_params_and_dtype_column():
    ws, alias = run_case(TPU, _case("gemm", dataflow="os")), run_case(TPU, _case("os"))
    assert ws["dataflow"] == alias["dataflow"] == "os" and ws["total_cycles"] == alias["total_cycles"]
    assert not ws["native_dataflow"]
    row = run_case(TPU, _case(dtype="fp32", array=16, convention="scalesim"))
    assert (row["array_rows"], row["array_cols"], row["array_dtype"], row["convention"]) == (16, 16, "int8", "scalesim")
    assert "fp32" in row["dtype_note"]
    # bytes are counted in the dtype the array computed in: one byte per element
    assert row["dram_bytes_A"] == 64 * 64
    with pytest.raises(KernelError):
        run_case(TPU, Case(experiment="t", machine="tpu_v1", kernel="gemm", params={}))


@pytest.mark.parametrize("name", ["systolic", "systolic_size"])
def test_experiments_plan_and_quick_cases_run(name):
    path = ROOT / "experiments" / f"{name}.yaml"
    exp = load_experiment(path)
    full = plan(exp, str(path))
    quick = plan(exp, str(path), quick=True)
    assert len(quick.cases) < len(full.cases)
    for case in quick.cases:
        machine = quick.machines[case.machine]
        if machine.kind == "systolic":
            row = run_case(machine, case)
            assert 0 < row["utilization"] <= 1
    if name == "systolic":
        kinds = {full.machines[c.machine].kind for c in full.cases}
        assert kinds == {"systolic", "cpu", "gpu"}
        assert {(c.M, c.N, c.K) for c in full.cases} >= {(1, 4096, 4096), (512, 4096, 4096), (16, 16, 16)}
        assert {c.params.get("dataflow", c.kernel) for c in full.cases if full.machines[c.machine].kind == "systolic"} == {"ws", "os", "is"}
    else:
        assert {c.params["array"] for c in full.cases} == {16, 32, 64, 128, 256}


# ---- the command, in-process ---------------------------------------------------------------------------------------
def _run(argv, capsys):
    p = argparse.ArgumentParser()
    register(p.add_subparsers())
    args = p.parse_args(["systolic", *argv])
    rc = args.func(args)
    return rc, capsys.readouterr().out


def test_cli_counters_json(capsys):
    rc, out = _run(["--machine", "systolic_4", "--M", "6", "--N", "5", "--K", "7", "--convention", "scalesim", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["total_cycles"] == 63 and d["sram_reads"] == {"A": 84, "B": 35, "C": 0}
    assert d["folds"] == 4 and d["fold_grid"] == [1, 2, 2]


def test_cli_explain_shows_the_dataflow(capsys):
    rc, out = _run(["--machine", "systolic_4", "--M", "8", "--N", "4", "--K", "4", "--dataflow", "ws", "--explain",
                    "--dram-bandwidth-gbps", "1000"], capsys)
    assert rc == 0
    assert "weight stationary" in out and "load" in out and "fill" in out and "steady" in out and "drain" in out
    # cycle 5 (1 to fetch, 4 to shift the tile in): the first activation meets the first weight in PE (0, 0)
    # while column c still receives its weights c cycles late (B[2,3] on its way down column 3)
    block = out.split("cycle    5")[1].split("cycle    6")[0]
    reads = block.split("reads :")[1].split()
    assert "B[0,0]xA[0,0]" in block and "(B[2,3])" in block and "A[0,0]" in reads and "B[2,3]" in reads
    rc, out = _run(["--machine", "systolic_4", "--M", "4", "--N", "4", "--K", "4", "--dataflow", "os", "--explain", "--json"], capsys)
    cycles = json.loads(out)["explain"]
    assert any("C[3,3] k3" in cell for c in cycles for row in c["pes"] for cell in row)
    assert sum(len(c["sram_writes"]) for c in cycles) == 16


def test_cli_errors(capsys):
    with pytest.raises(GemmsimError):
        _run(["--machine", "haswell", "--M", "4", "--N", "4", "--K", "4"], capsys)
    with pytest.raises(KernelError):
        _run(["--machine", "tpu_v1", "--M", "4", "--N", "4", "--K", "4", "--explain"], capsys)
