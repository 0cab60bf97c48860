"""Runner: rankings, and no results folder that looks complete after a failure."""

from pathlib import Path

import pytest
import yaml

from gemmsim.errors import ExperimentError
from gemmsim.run.runner import kendall_tau, ranking_notes, run_experiment


def test_kendall_tau():
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau([1, 2, 3], [30, 20, 10]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(4 / 6)


def test_ranking_notes_say_whether_model_and_host_agree():
    rows = [
        {"M": 8, "N": 8, "K": 8, "dtype": "fp32", "label": "a", "time_s": 1.0, "host_time_s": 1.0},
        {"M": 8, "N": 8, "K": 8, "dtype": "fp32", "label": "b", "time_s": 2.0, "host_time_s": 3.0},
    ]
    assert "the same way" in ranking_notes(rows)[0]
    rows[1]["host_time_s"] = 0.5
    assert "differently" in ranking_notes(rows)[0]


def test_failed_run_leaves_no_results_folder(tmp_path, monkeypatch):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"schema_version": 1, "name": "t", "machines": ["toy"], "kernels": ["ijk"], "sizes": [4]}))
    out = tmp_path / "out"

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr("gemmsim.report.tables.write_results", boom)
    with pytest.raises(RuntimeError):
        run_experiment(exp, out_dir=out, quiet=True, jobs=1)
    assert not out.exists() and not (tmp_path / "out.partial").exists()


def test_existing_results_folder_is_not_overwritten(tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"schema_version": 1, "name": "t", "machines": ["toy"], "kernels": ["ijk"], "sizes": [4]}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep")
    with pytest.raises(ExperimentError, match="exists and is not empty"):
        run_experiment(exp, out_dir=out, quiet=True, jobs=1)
    assert (out / "precious.txt").read_text() == "keep"


# --- the result cache -------------------------------------------------------------------------------------------

TOY = Path(__file__).resolve().parents[2] / "machines" / "toy.yaml"


def _counting(monkeypatch):
    """Count the simulations the runner really performs (jobs=1 runs them in this process)."""
    import gemmsim.run.runner as runner

    calls = []
    real = runner.run_case

    def counted(machine, case):
        calls.append((case.kernel, case.M, case.dtype))
        return real(machine, case)

    monkeypatch.setattr(runner, "run_case", counted)
    return calls


def _exp(tmp_path, machine="toy"):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"schema_version": 1, "name": "t", "machines": [machine], "kernels": ["ijk", "ikj"], "sizes": [4, 6]}))
    return exp


def _stable(rows):
    return [{k: v for k, v in r.items() if k not in ("sim_wall_s", "from_cache")} for r in rows]


def test_second_run_comes_from_the_cache(tmp_path, monkeypatch, capsys):
    calls = _counting(monkeypatch)
    exp = _exp(tmp_path)
    first = run_experiment(exp, out_dir=tmp_path / "r1", jobs=1, figures=False)
    assert len(calls) == 4 and not any(r["from_cache"] for r in first.rows)
    assert list((tmp_path / ".cache").rglob("*.json")), "the cache sits beside the results folder"
    capsys.readouterr()
    second = run_experiment(exp, out_dir=tmp_path / "r2", jobs=1, figures=False)
    assert len(calls) == 4, "no case was recomputed"
    assert all(r["from_cache"] for r in second.rows)
    assert _stable(second.rows) == _stable(first.rows)
    assert "4 cases from the cache" in capsys.readouterr().err
    assert any("4 of 4 cases came from the cache" in n for n in second.notes)
    # --no-cache recomputes everything and neither reads nor writes the cache
    third = run_experiment(exp, out_dir=tmp_path / "r3", jobs=1, figures=False, cache=False, cache_dir=tmp_path / "c2")
    assert len(calls) == 8 and not any(r["from_cache"] for r in third.rows)
    assert not (tmp_path / "c2").exists()


def test_changed_machine_file_invalidates_the_cache(tmp_path, monkeypatch):
    calls = _counting(monkeypatch)
    machine = tmp_path / "m.yaml"
    text = TOY.read_text()
    machine.write_text(text)
    exp = _exp(tmp_path, str(machine))
    run_experiment(exp, out_dir=tmp_path / "r1", jobs=1, figures=False, quiet=True)
    assert len(calls) == 4
    data = yaml.safe_load(text)
    data["dram"]["latency_ns"] = data["dram"]["latency_ns"] * 2
    machine.write_text(yaml.safe_dump(data))
    run_experiment(exp, out_dir=tmp_path / "r2", jobs=1, figures=False, quiet=True)
    assert len(calls) == 8, "every case is recomputed on the changed machine"


def test_interrupted_run_resumes_from_what_it_finished(tmp_path, monkeypatch):
    import gemmsim.run.runner as runner

    real = runner.run_case
    done = []

    def dies_on_third(machine, case):
        if len(done) == 2:
            raise RuntimeError("power cut")
        done.append(case.key())
        return real(machine, case)

    monkeypatch.setattr(runner, "run_case", dies_on_third)
    exp = _exp(tmp_path)
    with pytest.raises(RuntimeError, match="power cut"):
        run_experiment(exp, out_dir=tmp_path / "r", jobs=1, figures=False, quiet=True)
    assert not (tmp_path / "r").exists()
    monkeypatch.setattr(runner, "run_case", real)
    calls = _counting(monkeypatch)
    res = run_experiment(exp, out_dir=tmp_path / "r", jobs=1, figures=False, quiet=True)
    assert len(calls) == 2, "only the two unfinished cases run again"
    assert sum(r["from_cache"] for r in res.rows) == 2


def test_cache_key_ignores_names_but_not_the_simulation():
    from gemmsim.machine import load_machine
    from gemmsim.run.runner import ResultCache
    from gemmsim.sim.dispatch import Case

    toy = load_machine("toy")
    c = Case(experiment="a", machine="toy", kernel="ijk", M=4, N=4, K=4)
    same = Case(experiment="b", machine="toy", kernel="ijk", M=4, N=4, K=4, label="x", tags={"op": "qkv"})
    assert ResultCache.key(toy, c) == ResultCache.key(toy, same)
    assert ResultCache.key(toy, c) != ResultCache.key(toy, Case(experiment="a", machine="toy", kernel="ijk", M=4, N=4, K=8))
    assert ResultCache.key(toy, c) != ResultCache.key(load_machine("haswell"), c)


def test_changed_gemmsim_code_invalidates_the_cache(tmp_path, monkeypatch):
    import gemmsim.run.runner as runner

    calls = _counting(monkeypatch)
    exp = _exp(tmp_path)
    run_experiment(exp, out_dir=tmp_path / "r1", jobs=1, figures=False, quiet=True)
    monkeypatch.setattr(runner, "code_fingerprint", lambda: "a model was edited")
    run_experiment(exp, out_dir=tmp_path / "r2", jobs=1, figures=False, quiet=True)
    assert len(calls) == 8


def test_host_run_of_an_unsupported_dtype_is_skipped_with_a_note(tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"schema_version": 1, "name": "t", "machines": ["host"], "kernels": ["ikj"], "sizes": [8], "dtypes": ["int32"]}))
    res = run_experiment(exp, out_dir=tmp_path / "out", quiet=True, jobs=1, figures=False)
    assert res.rows[0]["host_note"].startswith("skipped:") and "int32" in res.rows[0]["host_note"]
    assert any("skipped" in n for n in res.notes)


def test_fingerprint_covers_model_sources_and_skips_presentation():
    """The results cache key hashes model code (sim/, models/, kernels/, timing/ ...), not the report/ and cli/
    packages, the runner or the executor: a new figure must not force every case to be simulated again."""
    from gemmsim.run.runner import _is_presentation

    for rel in ("cli/main.py", "cli/gpu.py", "report/tables.py", "report/figures/cpu.py", "run/runner.py",
                "run/executor.py", "__main__.py"):
        assert _is_presentation(rel), rel
    for rel in ("sim/cpu.py", "sim/dispatch.py", "models/cache.py", "kernels/gpu.py", "timing/gpu.py", "machine/cpu.py",
                "run/experiment.py", "run/host.py", "analytic/blis.py", "trace.py", "units.py"):
        assert not _is_presentation(rel), rel


def test_progress_lines_show_long_parameters_by_their_length():
    # a kernel's instruction traces are kilobytes of text: a progress line names them, it does not print them
    from gemmsim.run.runner import LABEL_VALUE_CHARS, _label
    from gemmsim.sim.dispatch import Case

    c = Case(experiment="a", machine="h200", kernel="tensorcore", M=64, N=64, K=64, dtype="fp16",
             params={"stages": 2, "copy_trace": "alu/R1<R2 " * 100, "fragment_trace": None})
    assert _label(c) == "h200 tensorcore M=64 N=64 K=64 fp16 stages=2 copy_trace=<1000 chars>"
    c = Case(experiment="a", machine="h200", kernel="tensorcore", M=64, N=64, K=64, dtype="fp16",
             params={"copy_trace": "x" * LABEL_VALUE_CHARS})
    assert _label(c).endswith("copy_trace=" + "x" * LABEL_VALUE_CHARS)  # up to the limit, shown whole
