"""Figures of a results folder, drawn with matplotlib's object API on the Agg backend, each with a reading.

Every figure is drawn from the result rows (results.json) and the machine files saved beside them
(``machines/*.yaml``) alone, so ``gemmsim report RESULTS_DIR`` can redraw it later. A figure is drawn only when
the rows have what it needs:

- ``hit_rates``: hit rate per cache level per kernel (rows with ``*_hit_rate``);
- ``bytes_per_level``: bytes moved below each cache level and from DRAM (rows with ``*_traffic_bytes``);
- ``modelled_time``: modelled time per case, the bound that dominates written on each bar;
- ``misses_<machine>``: heatmaps over the elements of A, B and C of where the L1 misses fall (single-threaded CPU
  cases with M*N*K <= HEATMAP_MAX_MNK; the trace is replayed through the real L1, see ``gemmsim.report.explain``);
- ``roofline_<machine>``: the machine's roofs for the dtype (peak from the machine file, DRAM bandwidth slope)
  with each case at its ``intensity_flop_per_byte`` and ``gflops``;
- ``waves``: modelled time against the number of tiles (rows with a ``tiles`` / ``grid_blocks`` column beside
  ``waves``): the wave staircase;
- ``banks``: lanes -> shared-memory banks for the access of each ``smem_pattern`` row, conflicts in red;
- ``systolic_utilization``: utilization against matrix size (rows with ``utilization``);
- ``modelled_vs_measured``: modelled against measured time of the host rows, log-log, y = x and the 2x band (``host``);
- ``pipeline_depth`` and ``pipeline_stage_parts``: TFLOP/s against stages S per machine with measured references,
  and the model's split of a k-step (rows of the SM pipeline model over several ``stages``; ``pipeline``);
- one line plot per entry of the experiment's ``plots:``.

One module per family: ``common`` (Drawn, labels, formats), ``cpu``, ``time`` (time and rooflines), ``gpu``
(waves, banks), ``systolic``, ``lines``; this module chooses which apply and writes them.

``draw_all`` writes ``figures/NAME.png`` and ``figures/index.json`` (file, title, reading for each figure); the
readings are plain-language statements computed from the same rows (which case is fastest and by how much,
which bound dominates, where misses fall), with the seed section the figure illustrates.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gemmsim.report.figures.common import (
    BANKS_MAX_ROWS,
    HEATMAP_MAX_CASES,
    HEATMAP_MAX_MNK,
    Drawn,
    _machines_of,
    _slug,
)
from gemmsim.report.figures.cpu import (
    _bytes_per_level,
    _heatmaps,
    _hit_rates,
    hit_rate_figure,
)
from gemmsim.report.figures.gpu import _banks, _waves
from gemmsim.report.figures.misses import _misses
from gemmsim.report.figures.host import _modelled_vs_measured
from gemmsim.report.figures.lines import Plot, _line, _plots, line_figure
from gemmsim.report.figures.pipeline import _pipeline
from gemmsim.report.figures.systolic import _systolic
from gemmsim.report.figures.time import _rooflines, _time, time_figure

__all__ = [
    "BANKS_MAX_ROWS", "HEATMAP_MAX_CASES", "HEATMAP_MAX_MNK", "Drawn", "Plot", "build_figures", "draw_all",
    "hit_rate_figure", "line_figure", "load_result_machines", "time_figure",
]


def load_result_machines(folder: str | Path, rows: list[dict]) -> dict:
    """The machines of a results folder (``machines/<name>.yaml``) by the names the rows use; missing ones left out."""
    from gemmsim.machine import machine_from_dict

    out = {}
    for name in _machines_of(rows):
        path = Path(folder) / "machines" / f"{Path(name).stem}.yaml"
        if path.is_file():
            out[name] = machine_from_dict(yaml.safe_load(path.read_text()), source=str(path))
    return out


def build_figures(rows: list[dict], exp=None, machines: dict | None = None) -> list[Drawn]:
    """Every figure that applies to the rows (see the module docstring), with its reading.

    A figure whose drawing fails (rows from a simulator whose columns it does not expect) comes back with its
    ``error`` set and no figure, so that one figure cannot lose a whole run; the report lists it as a problem.
    """
    machines = machines or {}
    builders = [
        ("hit_rates", lambda: _hit_rates(rows)),
        ("bytes_per_level", lambda: _bytes_per_level(rows)),
        ("modelled_time", lambda: _time(rows)),
        ("misses", lambda: _heatmaps(rows, machines)),
        ("miss_classes", lambda: _misses(rows, machines)),
        ("roofline", lambda: _rooflines(rows, machines)),
        ("waves", lambda: _waves(rows, machines)),
        ("banks", lambda: _banks(rows, machines)),
        ("systolic_utilization", lambda: _systolic(rows, machines)),
        ("pipeline_depth", lambda: _pipeline(rows, machines)),
        ("modelled_vs_measured", lambda: _modelled_vs_measured(rows)),
    ]
    try:
        plots = _plots(exp) if exp is not None else []
    except ValueError as exc:  # pydantic's ValidationError is a ValueError: a hand-edited experiment.yaml
        plots = []
        builders.append(("plots", lambda exc=exc: (_ for _ in ()).throw(exc)))
    for p in plots:
        builders.append((f"{p.y}_vs_{p.x}", lambda p=p: _line(rows, p.x, p.y, p.group, p.title, p.logx, p.logy)))
    out: list[Drawn] = []
    for name, build in builders:
        try:
            got = build()
        except Exception as exc:  # noqa: BLE001 - reported in index.json and report.html, never silent
            out.append(Drawn(_slug(name), name.replace("_", " "), None, "", error=f"{type(exc).__name__}: {exc}"))
            continue
        out += got if isinstance(got, list) else [got] if got is not None else []
    return out


def draw_all(folder: Path, exp, rows: list[dict]) -> list[Path]:
    """Draw every figure that applies into ``folder/figures``; write ``figures/index.json``; return the PNGs written.

    ``exp`` is the Experiment (or its dict, as in experiment.yaml); machines are read from ``folder/machines``.
    """
    out = Path(folder) / "figures"
    out.mkdir(exist_ok=True)
    written, index, seen = [], [], set()
    for d in build_figures(rows, exp, load_result_machines(folder, rows)):
        if d.fig is None:
            index.append({"file": f"{d.name}.png", "title": d.title, "reading": "", "error": d.error})
            continue
        stem = d.name
        n = 2
        while stem in seen:
            stem, n = f"{d.name}_{n}", n + 1
        seen.add(stem)
        path = out / f"{stem}.png"
        d.fig.savefig(path, dpi=110)
        written.append(path)
        index.append({"file": path.name, "title": d.title, "reading": d.reading})
    (out / "index.json").write_text(json.dumps(index, indent=1))
    return written
