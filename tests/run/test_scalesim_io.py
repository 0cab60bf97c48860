"""SCALE-Sim's own input files through gemmsim: its .cfg and topology in, its report files out, equal to the reports
SCALE-Sim 3.0.0 wrote for the same files (validation/scalesim/outputs.json)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gemmsim import load_machine
from gemmsim.errors import GemmsimError
from gemmsim.run.scalesim_io import read_config, read_topology, run_scalesim_files

HERE = Path(__file__).resolve().parents[2] / "validation" / "scalesim"
RECORDS = json.loads((HERE / "outputs.json").read_text())["records"]


def _cfg(tmp_path: Path, run: str) -> Path:
    """The configuration run_scalesim.py gave SCALE-Sim for ``run`` (topology_RxC_df_I-F-Ok_mode), from its template."""
    topo, shape, df, kib, mode = run.rsplit("_", 4)
    rows, cols = shape.split("x")
    i, f, o = kib[:-1].split("-")
    text = (HERE / "scale_template.cfg").read_text().format(
        run_name=run, rows=rows, cols=cols, ifmap_kib=i, filter_kib=f, ofmap_kib=o, dataflow=df, bandwidth=10, mode=mode.upper())
    p = tmp_path / f"{run}.cfg"
    p.write_text(text)
    return p


def _reports(out: Path, name: str) -> list[list[float]]:
    rows = list(csv.reader((out / name).read_text().splitlines()))
    return [[float(x) for x in r if x.strip()] for r in rows[1:]]


@pytest.mark.parametrize("run", ["small_4x4_ws_64-64-64k_calc", "small_8x4_os_1-1-1k_calc", "medium_32x32_is_64-64-64k_calc"])
def test_reports_equal_scalesims_own(tmp_path, run):
    cfg = _cfg(tmp_path, run)
    topo = HERE / "topologies" / f"{run.split('_')[0]}.csv"
    run_scalesim_files(cfg, topo, tmp_path / "out", load_machine("systolic_4"))
    recs = sorted((r for r in RECORDS if r["run"] == run), key=lambda r: r["layer"])
    compute = _reports(tmp_path / "out", "COMPUTE_REPORT.csv")
    bw = _reports(tmp_path / "out", "BANDWIDTH_REPORT.csv")
    assert len(compute) == len(recs) > 0
    for c, b, rec in zip(compute, bw, recs):
        assert c[0] == rec["layer"]
        assert c[1:3] == [rec["total_cycles"], rec["stall_cycles"]]
        assert c[3:6] == pytest.approx([rec["overall_util_pct"], rec["mapping_efficiency_pct"], rec["compute_util_pct"]], rel=1e-12)
        # SCALE-Sim's average SRAM bandwidths: accesses / total cycles
        assert b[1:4] == pytest.approx([rec["sram_ifmap_reads"] / rec["total_cycles"], rec["sram_filter_reads"] / rec["total_cycles"],
                                        rec["sram_ofmap_writes"] / rec["total_cycles"]], rel=1e-12)  # fmt: skip


def test_cli_writes_the_three_reports(tmp_path):
    cfg = _cfg(tmp_path, "tiny_2x2_ws_64-64-64k_calc")
    r = subprocess.run([sys.executable, "-m", "gemmsim", "systolic", "--scalesim-config", str(cfg), "--topology",
                        str(HERE / "topologies" / "tiny.csv"), "--out", str(tmp_path / "rep")],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    for f in ("COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv", "README.txt"):
        assert (tmp_path / "rep" / f).is_file()
    assert (tmp_path / "rep" / "COMPUTE_REPORT.csv").read_text().startswith("LayerID, Total Cycles, Stall Cycles")


def test_convolution_layers_become_scalesims_gemm(tmp_path):
    t = tmp_path / "conv.csv"
    # 224x224 input, 7x7 filter, 3 channels, 64 filters, stride 2: (224-7)//2+1 = 109 output pixels per side
    t.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                 "conv1, 224, 224, 7, 7, 3, 64, 2,\n")  # fmt: skip
    (L,) = read_topology(t)
    assert (L.name, L.M, L.N, L.K) == ("conv1", 109 * 109, 64, 7 * 7 * 3)


def test_bad_files_name_the_file_and_the_field(tmp_path):
    cfg = tmp_path / "bad.cfg"
    cfg.write_text("[architecture_presets]\nArrayHeight: 4\nArrayWidth: x\n")
    with pytest.raises(GemmsimError, match="bad.cfg.*arraywidth|bad.cfg.*ifmapsramszkb"):
        read_config(cfg)
    cfg.write_text("[architecture_presets]\nArrayHeight: 4\nArrayWidth: 4\nIfmapSramSzkB: 1\nFilterSramSzkB: 1\n"
                   "OfmapSramSzkB: 1\nDataflow: xs\n")  # fmt: skip
    with pytest.raises(GemmsimError, match="Dataflow must be ws, os or is"):
        read_config(cfg)
    topo = tmp_path / "t.csv"
    topo.write_text("Layer, M, N, K,\ng0, 3, five, 7,\n")
    with pytest.raises(GemmsimError, match="t.csv:2"):
        read_topology(topo)
