"""Workloads in experiment files: planning into tagged GEMM cases, batch sweeps, totals per workload, bad input."""

import csv
from pathlib import Path

import pytest
import yaml

from gemmsim.errors import ExperimentError
from gemmsim.run.experiment import Experiment, load_experiment, plan
from gemmsim.run.runner import run_experiment, workload_totals
from gemmsim.schema import Strict
from gemmsim.analytic.workload import TransformerLayer

ROOT = Path(__file__).resolve().parents[2]
BASE = {"schema_version": 1, "name": "t", "machines": ["toy"], "kernels": ["ikj"]}
TINY = {"name": "tiny", "d_model": 8, "heads": 2, "seq_len": 4}


def _exp(**kw):
    return Experiment.model_validate({**BASE, **kw})


def test_each_op_of_each_point_becomes_a_tagged_case():
    exp = _exp(workloads=[{**TINY, "batch": [1, 4], "phase": ["prefill", "decode"]}], dtypes=["bf16", "int8"], machines=["toy", "haswell"])
    cases = plan(exp).cases
    assert len(cases) == 2 * 2 * 2 * 2 * 6  # machines x phases x batches x dtypes x ops
    assert all(c.M is not None for c in cases), "no shapeless case when only workloads are given"
    for c in cases:
        layer = TransformerLayer(d_model=8, heads=2, seq_len=4, batch=c.tags["batch"], phase=c.tags["phase"], dtype=c.dtype)
        op = {o.name: o for o in layer.ops()}[c.tags["op"]]
        assert (c.M, c.N, c.K, c.tags["count"]) == (op.M, op.N, op.K, op.count)
        assert c.tags["workload"] == "tiny" and c.tags["acc_dtype"] == ("int32" if c.dtype == "int8" else "fp32")
    # batch sweep: decode projections have M = B
    qkv = sorted((c.tags["batch"], c.M) for c in cases if c.tags["op"] == "qkv" and c.tags["phase"] == "decode" and c.machine == "toy" and c.dtype == "bf16")
    assert qkv == [(1, 1), (4, 4)]


def test_ops_filter_workload_dtypes_and_shapes_beside():
    exp = _exp(workloads=[{**TINY, "ops": ["out_proj"], "dtypes": ["fp16"]}], sizes=[4])
    cases = plan(exp).cases
    assert [(c.M, c.N, c.K, c.dtype, c.tags.get("op")) for c in cases] == [(4, 4, 4, "fp32", None), (4, 8, 8, "fp16", "out_proj")]


def test_quick_replaces_the_workloads():
    exp = _exp(workloads=[{**TINY, "d_model": 64}], quick={"workloads": [TINY]})
    assert {c.N for c in plan(exp, quick=True).cases if c.tags["op"] == "out_proj"} == {8}
    assert {c.N for c in plan(exp).cases if c.tags["op"] == "out_proj"} == {64}


def test_accumulator_goes_to_a_kernel_that_has_one(monkeypatch):
    class P(Strict):
        acc_dtype: str = "fp16"

    monkeypatch.setattr("gemmsim.run.experiment.kernels_for", lambda kind: {"acc_gemm": P} if kind == "cpu" else {})
    exp = _exp(kernels=["acc_gemm", {"name": "acc_gemm", "label": "pinned", "params": {"acc_dtype": "fp16"}}], workloads=[{**TINY, "ops": ["qkv"]}], dtypes=["bf16"])
    got = {c.name: c.params["acc_dtype"] for c in plan(exp).cases}
    assert got == {"acc_gemm": "fp32", "pinned": "fp16"}


def test_bad_workloads_name_every_field(tmp_path):
    p = tmp_path / "e.yaml"
    p.write_text(yaml.safe_dump({**BASE, "workloads": [{**TINY, "batch": [1, 0], "phase": ["prefill", "decoding"], "ops": ["attn"], "dtypes": ["bf17"]}]}))
    with pytest.raises(ExperimentError) as e:
        load_experiment(p)
    msg = str(e.value)
    for part in ("workloads[0].batch[1]", "workloads[0].phase[1]", "unknown op(s) attn", "unknown dtype(s) bf17", str(p)):
        assert part in msg
    p.write_text(yaml.safe_dump({**BASE, "workloads": [{**TINY, "heads": 3}]}))
    with pytest.raises(ExperimentError, match=r"workloads\[0\]: d_model 8 is not a multiple of heads 3"):
        load_experiment(p)
    p.write_text(yaml.safe_dump({**BASE, "workloads": [TINY, TINY]}))
    with pytest.raises(ExperimentError, match="duplicate workload name"):
        load_experiment(p)


def test_run_adds_up_each_workload(tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({**BASE, "workloads": [{**TINY, "batch": [1, 2], "phase": ["prefill", "decode"]}]}))
    res = run_experiment(exp, out_dir=tmp_path / "r", jobs=1, quiet=True, figures=False)
    assert len(res.workload_totals) == 4
    for tot in res.workload_totals:
        rows = [r for r in res.rows if (r["phase"], r["batch"]) == (tot["phase"], tot["batch"])]
        assert len(rows) == 6
        assert tot["time_s"] == pytest.approx(sum(r["time_s"] * r["count"] for r in rows))
        layer = TransformerLayer(d_model=8, heads=2, seq_len=4, batch=tot["batch"], phase=tot["phase"], dtype="fp32")
        assert tot["flops"] == layer.flops() == layer.closed_form_flops()
        assert sum(r["op_time_share"] for r in rows) == pytest.approx(1.0)
    with open(tmp_path / "r" / "workloads.csv") as f:
        assert len(list(csv.DictReader(f))) == 4
    assert any(n.startswith("workload tiny decode B=2") for n in res.notes)


def test_workload_totals_by_hand():
    rows = [
        {"workload": "w", "phase": "decode", "batch": 1, "seq_len": 4, "dtype": "bf16", "machine": "m", "label": "gemm", "op": "qkv",
         "count": 1, "time_s": 2.0, "flops": 10.0, "dram_bytes": 5, "bound": "dram"},
        {"workload": "w", "phase": "decode", "batch": 1, "seq_len": 4, "dtype": "bf16", "machine": "m", "label": "gemm", "op": "attn_qk",
         "count": 4, "time_s": 1.0, "flops": 3.0, "dram_bytes": 2, "bound": "latency"},
        {"machine": "m", "label": "gemm", "time_s": 9.0, "flops": 1.0},  # not a workload row
    ]
    (tot,) = workload_totals(rows)
    assert (tot["time_s"], tot["flops"], tot["dram_bytes"], tot["slowest_op"]) == (6.0, 22.0, 13, "attn_qk")
    assert tot["slowest_op_share"] == pytest.approx(4 / 6) and tot["gflops"] == pytest.approx(22 / 6 / 1e9)


@pytest.mark.parametrize("name", ["roofline", "transformer"])
def test_shipped_workload_experiments(name):
    path = ROOT / "experiments" / f"{name}.yaml"
    exp = load_experiment(path)
    assert exp.workloads
    for quick in (False, True):
        pl = plan(exp, source=str(path), quick=quick)
        cases = pl.cases
        assert {pl.machines[c.machine].kind for c in cases} == {"cpu", "gpu", "systolic"}
        assert {c.tags["phase"] for c in cases} == {"prefill", "decode"}
