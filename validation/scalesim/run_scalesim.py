"""Run SCALE-Sim, the peer simulator, over arrays x GEMMs x dataflows x buffer sizes and store what it reports.

SCALE-Sim (``pip install scalesim``, v3.0.0 here) needs numpy < 2.3, so it lives in its own virtual environment,
outside the repository::

    python -m venv /tmp/scalesim-venv && /tmp/scalesim-venv/bin/pip install scalesim 'numpy<2.3'
    /tmp/scalesim-venv/bin/python validation/scalesim/run_scalesim.py            # every group
    /tmp/scalesim-venv/bin/python validation/scalesim/run_scalesim.py --group traces

This script imports nothing from gemmsim (the venv does not have it). It writes, next to itself:

- ``outputs.json``: one record per (run, layer): the run's configuration and every number of SCALE-Sim's
  COMPUTE_REPORT.csv and DETAILED_ACCESS_REPORT.csv for that layer;
- ``timings.json``: SCALE-Sim's wall time per run (the bench compares gemmsim's time with it);
- ``traces/<run>/{IFMAP,FILTER,OFMAP}_SRAM_TRACE.csv``: the SRAM traces of the tiny runs (cycle, then one
  address per array port; -1 = idle port);
- ``topologies/*.csv``: the GEMM topologies (SCALE-Sim's M, N, K format), one layer per GEMM.

SCALE-Sim's names: ifmap = A (M x K, address m*K + k), filter = B (K x N, address 1e7 + n*K + k),
ofmap = C (M x N, address 2e7 + m*N + n). Word size is one byte.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: GEMMs (M, N, K) of each topology file
TOPOLOGIES = {
    "tiny": [(3, 5, 7), (6, 5, 7), (5, 9, 4)],
    "small": [(3, 5, 7), (6, 5, 7), (16, 16, 16), (64, 40, 72), (1, 64, 64), (100, 60, 70)],
    "medium": [(256, 256, 256), (512, 128, 384), (1, 1024, 1024)],
    "big_1024": [(1024, 1024, 1024)],
    "decode_1024": [(1, 1024, 1024)],
}


def _runs() -> dict[str, list[dict]]:
    """The run matrix, by group. Each run is one SCALE-Sim invocation over a topology (one layer per GEMM)."""
    groups: dict[str, list[dict]] = {"small": [], "medium": [], "big": [], "user": [], "traces": []}
    for rows, cols in [(2, 2), (4, 4), (8, 4), (4, 8), (32, 32)]:
        for kib in (1, 64):
            for df in ("ws", "os", "is"):
                groups["small"].append(dict(topology="small", rows=rows, cols=cols, ifmap_kib=kib, filter_kib=kib, ofmap_kib=kib, dataflow=df, mode="CALC", bandwidth=10))
    for rows, cols in [(32, 32), (128, 128)]:
        for kib in (64, 1024):
            for df in ("ws", "os", "is"):
                groups["medium"].append(dict(topology="medium", rows=rows, cols=cols, ifmap_kib=kib, filter_kib=kib, ofmap_kib=kib, dataflow=df, mode="CALC", bandwidth=10))
    # TPU v1-like: 256 x 256, half the 24 MiB unified buffer for A and half for C, a 4-tile weight FIFO for B
    for topo in ("big_1024", "decode_1024"):
        for df in ("ws", "os", "is"):
            groups["big"].append(dict(topology=topo, rows=256, cols=256, ifmap_kib=12288, filter_kib=256, ofmap_kib=12288, dataflow=df, mode="CALC", bandwidth=10))
    # USER bandwidth mode: SCALE-Sim's own stall model (documented, not reproduced by gemmsim)
    for kib in (1, 64):
        for df in ("ws", "os", "is"):
            groups["user"].append(dict(topology="small", rows=8, cols=8, ifmap_kib=kib, filter_kib=kib, ofmap_kib=kib, dataflow=df, mode="USER", bandwidth=10))
    for rows, cols in [(2, 2), (4, 4)]:
        for df in ("ws", "os", "is"):
            groups["traces"].append(dict(topology="tiny", rows=rows, cols=cols, ifmap_kib=64, filter_kib=64, ofmap_kib=64, dataflow=df, mode="CALC", bandwidth=10, traces=True))
    return groups


def run_id(run: dict) -> str:
    """A readable name for a run."""
    kib = f"{run['ifmap_kib']}-{run['filter_kib']}-{run['ofmap_kib']}k"
    return f"{run['topology']}_{run['rows']}x{run['cols']}_{run['dataflow']}_{kib}_{run['mode'].lower()}"


def write_topologies() -> None:
    """Write every topology CSV (SCALE-Sim GEMM format: 'Layer, M, N, K,')."""
    d = HERE / "topologies"
    d.mkdir(exist_ok=True)
    for name, gemms in TOPOLOGIES.items():
        lines = ["Layer, M, N, K,"] + [f"g{i}_{m}x{n}x{k}, {m}, {n}, {k}," for i, (m, n, k) in enumerate(gemms)]
        (d / f"{name}.csv").write_text("\n".join(lines) + "\n")


def _read_report(path: Path) -> list[list[str]]:
    with open(path) as f:
        rows = [r for r in csv.reader(f)]
    return [[c.strip() for c in r if c.strip() != ""] for r in rows[1:] if r]


def run_one(run: dict, work: Path) -> tuple[list[dict], float]:
    """Run SCALE-Sim once; return one record per layer and the wall time in seconds."""
    from scalesim.scale_sim import scalesim

    rid = run_id(run)
    template = (HERE / "scale_template.cfg").read_text()
    cfg = work / f"{rid}.cfg"
    cfg.write_text(template.format(run_name=rid, **{k: run[k] for k in ("rows", "cols", "ifmap_kib", "filter_kib", "ofmap_kib", "dataflow", "bandwidth", "mode")}))
    topo = HERE / "topologies" / f"{run['topology']}.csv"
    gemms = TOPOLOGIES[run["topology"]]
    layout = work / "layout.csv"
    layout.write_text("Layer,a,b,c,d,e,f,g,\n" + "".join(f"g{i},1,1,1,1,1,1,1,\n" for i in range(len(gemms))))
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        s = scalesim(save_disk_space=not run.get("traces", False), verbose=False, config=str(cfg), topology=str(topo), layout=str(layout), input_type_gemm=True)
        s.run_scale(top_path=str(out))
    wall = time.perf_counter() - t0
    comp = _read_report(out / rid / "COMPUTE_REPORT.csv")
    det = _read_report(out / rid / "DETAILED_ACCESS_REPORT.csv")
    records = []
    for layer, ((m, n, k), c, d) in enumerate(zip(gemms, comp, det)):
        rec = dict(run=rid, layer=layer, M=m, N=n, K=k, **{key: run[key] for key in ("rows", "cols", "ifmap_kib", "filter_kib", "ofmap_kib", "dataflow", "mode", "bandwidth")})
        names_c = ["total_cycles_incl_prefetch", "total_cycles", "stall_cycles", "overall_util_pct", "mapping_efficiency_pct", "compute_util_pct"]
        rec.update({nm: float(v) for nm, v in zip(names_c, c[1:])})
        names_d = []
        for unit in ("sram_ifmap", "sram_filter", "sram_ofmap", "dram_ifmap", "dram_filter", "dram_ofmap"):
            what = "writes" if unit.endswith("ofmap") else "reads"
            names_d += [f"{unit}_start_cycle", f"{unit}_stop_cycle", f"{unit}_{what}"]
        rec.update({nm: float(v) for nm, v in zip(names_d, d[1:])})
        records.append(rec)
    if run.get("traces"):
        dest = HERE / "traces" / rid
        dest.mkdir(parents=True, exist_ok=True)
        for layer in range(len(gemms)):
            for f in ("IFMAP_SRAM_TRACE.csv", "FILTER_SRAM_TRACE.csv", "OFMAP_SRAM_TRACE.csv"):
                shutil.copy(out / rid / f"layer{layer}" / f, dest / f"layer{layer}_{f}")
    return records, wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", action="append", choices=list(_runs()), help="run only these groups (repeatable)")
    args = ap.parse_args(argv)
    import numpy
    import scalesim  # noqa: F401  (fail early outside the venv)

    version = "unknown"
    with contextlib.suppress(Exception):
        from importlib.metadata import version as _v

        version = _v("scalesim")
    write_topologies()
    out_path, time_path = HERE / "outputs.json", HERE / "timings.json"
    outputs = json.loads(out_path.read_text())["records"] if out_path.exists() else []
    timings = json.loads(time_path.read_text())["runs"] if time_path.exists() else {}
    groups = _runs()
    todo = [(g, r) for g in (args.group or list(groups)) for r in groups[g]]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (group, run) in enumerate(todo):
            rid = run_id(run)
            recs, wall = run_one(run, Path(tmp))
            outputs = [r for r in outputs if r["run"] != rid] + recs
            timings[rid] = dict(group=group, wall_s=wall, layers=[[r["M"], r["N"], r["K"]] for r in recs], **{k: run[k] for k in ("rows", "cols", "dataflow", "mode", "ifmap_kib", "filter_kib", "ofmap_kib")})
            print(f"[{i + 1}/{len(todo)}] {rid}: {wall:.2f} s", file=sys.stderr, flush=True)
            meta = dict(scalesim_version=version, numpy_version=numpy.__version__, python=sys.version.split()[0], cpu_count=os.cpu_count())
            out_path.write_text(json.dumps(dict(meta=meta, records=sorted(outputs, key=lambda r: (r["run"], r["layer"]))), indent=1) + "\n")
            time_path.write_text(json.dumps(dict(meta=meta, runs=dict(sorted(timings.items()))), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
