"""Runner: rankings, and no results folder that looks complete after a failure."""

import pytest
import yaml

from gemmsim.errors import ExperimentError
from gemmsim.runner import kendall_tau, ranking_notes, run_experiment


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

    monkeypatch.setattr("gemmsim.report.write_results", boom)
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
