"""Experiment files: every shipped file plans; bad files report every problem with the file and field."""

from pathlib import Path

import pytest
import yaml

from gemmsim.errors import ExperimentError
from gemmsim.numerics.lab import is_numerics_file
from gemmsim.run.experiment import load_experiment, plan

# kind: numerics files are not machines x kernels; tests/numerics/test_numerics_lab.py runs them
EXPERIMENTS = sorted(p for p in Path(__file__).resolve().parents[2].joinpath("experiments").glob("*.yaml") if not is_numerics_file(p))


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_shipped_experiment_plans(path):
    exp = load_experiment(path)
    for quick in (False, True):
        p = plan(exp, source=str(path), quick=quick)
        assert p.cases, f"{path.name} expands to no cases"
        assert len({c.key() for c in p.cases}) == len(p.cases), "two cases are identical"


def _write(tmp_path, data):
    p = tmp_path / "e.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


BASE = {"schema_version": 1, "name": "t", "machines": ["haswell"], "kernels": ["ijk"], "sizes": [8]}


def test_expansion_is_the_cartesian_product():
    exp = load_experiment_dict({**BASE, "machines": ["haswell", "toy"], "kernels": ["ijk", {"name": "blocked", "params": {"BM": 4}}],
                                "sizes": [8, 16], "dtypes": ["fp32", "fp64"], "sweep": {"BK": [2, 4, 8]}})
    cases = plan(exp).cases
    # per machine: ijk x 2 sizes x 2 dtypes + blocked x 3 BK x 2 sizes x 2 dtypes
    assert len(cases) == 2 * (4 + 12)
    blocked = [c for c in cases if c.kernel == "blocked"]
    assert {c.params["BK"] for c in blocked} == {2, 4, 8} and {c.params["BM"] for c in blocked} == {4}


def load_experiment_dict(d):
    from gemmsim.run.experiment import Experiment

    return Experiment.model_validate(d)


def test_every_problem_is_reported_at_once(tmp_path):
    p = _write(tmp_path, {**BASE, "machines": ["haswell", "nosuch"], "kernels": ["ijk", "nokernel", {"name": "blocked", "params": {"BQ": 3}}],
                          "sweep": {"TILE": [1]}})
    with pytest.raises(ExperimentError) as e:
        plan(load_experiment(p), source=str(p))
    msg = str(e.value)
    assert str(p) in msg
    assert "machines[1]" in msg and "unknown machine 'nosuch'" in msg
    assert "kernels[1]: no listed machine can run kernel 'nokernel'" in msg
    assert "kernels[2] (blocked on cpu).params.BQ: unknown key" in msg
    assert "sweep.TILE" in msg


def test_schema_errors_name_fields(tmp_path):
    p = _write(tmp_path, {**BASE, "dtypes": ["fp33"], "sizes": [0], "colour": 1})
    with pytest.raises(ExperimentError) as e:
        load_experiment(p)
    msg = str(e.value)
    assert "colour: unknown key" in msg and "dtypes" in msg and "sizes[0]" in msg


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ExperimentError, match="no such experiment file"):
        load_experiment(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [x\n")
    with pytest.raises(ExperimentError, match=r"bad.yaml:\d+:\d+: malformed YAML"):
        load_experiment(bad)


def test_a_kernel_name_of_several_kinds_runs_where_its_params_apply(monkeypatch):
    from gemmsim.schema import Strict

    class CpuP(Strict):
        BM: int = 8

    class GpuP(Strict):
        TILE: int = 16

    monkeypatch.setattr("gemmsim.run.experiment.kernels_for", lambda kind: {"cpu": {"k": CpuP}, "gpu": {"k": GpuP}}.get(kind, {}))
    exp = load_experiment_dict({**BASE, "machines": ["haswell", "a100"], "kernels": [{"name": "k", "params": {"BM": 4}}, "k"]})
    p = plan(exp)
    assert [(c.machine, c.params) for c in p.cases] == [("haswell", {"BM": 4}), ("haswell", {"BM": 8}), ("a100", {"TILE": 16})]
    assert p.skipped == ["k on a100 (gpu: the parameters do not apply: BM: unknown key (not in the schema))"]
    bad = load_experiment_dict({**BASE, "machines": ["haswell", "a100"], "kernels": [{"name": "k", "params": {"BQ": 4}}]})
    with pytest.raises(ExperimentError) as e:
        plan(bad)
    assert "kernels[0] (k on cpu).params.BQ: unknown key" in str(e.value) and "kernels[0] (k on gpu).params.BQ: unknown key" in str(e.value)


def test_an_entry_completed_by_its_sweep_plans():
    """A kernel entry whose parameters hold only when the sweep's values are put in (a copy_trace for each swept stage
    count, none for the kernel's default of 3) plans; a swept value it does not cover is named."""
    traces = {1: "alu/R1<R0 ldgsts<R1", 2: "alu/R1<R0 alu/R2<R1 ldgsts<R2"}
    data = {**BASE, "machines": ["h200"], "kernels": [{"name": "tensorcore", "params": {"copy_trace": traces}}],
            "sizes": [256], "dtypes": ["fp16"], "sweep": {"stages": [1, 2]}}
    cases = plan(load_experiment_dict(data)).cases
    assert sorted(c.params["stages"] for c in cases) == [1, 2]
    with pytest.raises(ExperimentError) as err:
        plan(load_experiment_dict({**data, "sweep": {"stages": [1, 2, 4]}}))
    assert "none for stages=4" in err.value.render()
