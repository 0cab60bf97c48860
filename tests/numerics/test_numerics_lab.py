"""The numerics lab end to end at tiny sizes, through both CLI entries, and its input errors."""

import csv

import pytest

from gemmsim.cli.main import main
from gemmsim.errors import ExperimentError
from gemmsim.numerics.lab import STUDIES, load_config

TINY = """kind: numerics
name: tiny
MN: 8
Ks: [16, 64, 256]
order_K: 128
order_MN: 8
blocked_BK: 32
loss_K: 64
loss_log2_scales: [0, 12, 40]
quant_K: 64
strassen_sizes: [16, 32]
strassen_cutoff: 4
time_machines: [haswell]
time_sizes: [64]
time_cutoff: 16
"""


@pytest.mark.slow
def test_run_verb_dispatches_numerics_files(tmp_path, capsys):
    f = tmp_path / "tiny.yaml"
    f.write_text(TINY)
    out = tmp_path / "res"
    assert main(["run", str(f), "--out", str(out), "--quiet"]) == 0
    report = (out / "report.md").read_text()
    for s in STUDIES:
        assert (out / f"{s}.png").stat().st_size > 10_000
        assert f"## {s}" in report
    rows = list(csv.DictReader((out / "orders.csv").open()))
    loops = [r for r in rows if r["order"] in ("ijk", "ikj", "jik", "jki", "kij", "kji")]
    assert len(loops) == 24 and all(float(r["differ_from_ijk"]) == 0 for r in loops)
    assert all(float(r["bound_ratio"]) <= 1 for r in rows)
    # 2^40 overflows fp16: the loss-scaling verdict must say so
    assert "overflow to Inf" in report and "NO" not in report


def test_numerics_verb_one_study(tmp_path):
    f = tmp_path / "tiny.yaml"
    f.write_text(TINY)
    assert main(["numerics", str(f), "--out", str(tmp_path / "r"), "--study", "fma", "--quiet"]) == 0
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["fma.csv", "fma.png", "report.md"]


def test_shipped_file_loads():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "experiments" / "numerics.yaml"
    full, quick = load_config(path), load_config(path, quick=True)
    assert full.studies == list(STUDIES) and max(quick.Ks) < max(full.Ks)


def test_bad_files(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("kind: numerics\nconfigs: [fp16/fp8_e4m3]\nKs: [0]\nstudies: [nope]\n")
    with pytest.raises(ExperimentError) as e:
        load_config(f)
    msg = str(e.value)
    assert "configs[0]" in msg and "Ks[0]" in msg and "unknown study 'nope'" in msg
    f.write_text("kind: numerics\nquick:\n  MNN: 3\n")
    with pytest.raises(ExperimentError, match="quick.MNN"):
        load_config(f)
    f.write_text("kind: numerics\nbogus: 1\n")
    assert main(["numerics", str(f)]) == 2
    assert "bogus" in capsys.readouterr().err
