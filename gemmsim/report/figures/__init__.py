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
- ``systolic_utilization``: utilization against one varied dimension (square sizes, or one of M, N, K);
- ``banks_padding``: the lane-to-bank diagram of a column read of float [T][T] beside [T][T+1];
- ``sectors``: 32-byte sectors per warp request of each ``global_pattern`` row against the ideal;
- ``l2_raster``: DRAM bytes per launch order with seed 001's no-reuse and perfect-reuse references;
- ``blocking``: bytes below each cache level against the block working set, the cache sizes marked;
- ``modelled_vs_measured``: modelled against measured time of the host rows, log-log, y = x and the 2x band (``host``);
- ``pipeline_depth`` and ``pipeline_stage_parts``: TFLOP/s against stages S per machine with measured references,
  and the model's split of a k-step (rows of the SM pipeline model over several ``stages``; ``pipeline``);
- one line plot per entry of the experiment's ``plots:``.

One module per family: ``common`` (Drawn, labels, formats), ``cpu``, ``time`` (time and rooflines), ``gpu``
(waves, banks), ``systolic``, ``lines``; this module chooses which apply and writes them.

An experiment with a ``headline`` gets the family figures its headline names (first, marked ``headline``) and the
generic ones; a line plot of more than ``LINE_BUDGET`` lines is split into panels, each with its legend.

``draw_all`` writes ``figures/NAME.png`` and ``figures/index.json`` (file, title, reading of at most three
sentences, the CLAIMS.md entry it cites, headline or not, for each figure); the
readings are plain-language statements computed from the same rows (which case is fastest and by how much,
which bound dominates, where misses fall), with the seed section the figure illustrates.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from gemmsim.report.figures.common import (
    BANKS_MAX_ROWS,
    HEATMAP_MAX_CASES,
    HEATMAP_MAX_MNK,
    Drawn,
    _machines_of,
    _slug,
    sentences,
)
from gemmsim.report.figures.cpu import (
    _blocking,
    _bytes_per_level,
    _heatmaps,
    _hit_rates,
    hit_rate_figure,
)
from gemmsim.report.figures.attention import attention_figures
from gemmsim.report.figures.layouts import pyramid_figure, set_histogram_figure, tile_quantization_figure
from gemmsim.report.figures.gpu import _banks, _banks_padding, _l2_raster, _sectors, _waves
from gemmsim.report.figures.misses import _misses
from gemmsim.report.figures.sol import _sol
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
        # pattern kernels (one warp access, no FLOPs): the time is their wavefront or sector count again
        ("modelled_time", lambda: _time(rows) if any((r.get("flops") or 0) > 0 for r in rows) else None),
        ("misses", lambda: _heatmaps(rows, machines)),
        ("miss_classes", lambda: _misses(rows, machines)),
        ("speed_of_light", lambda: _sol(rows, machines)),
        ("roofline", lambda: _rooflines(rows, machines)),
        ("waves", lambda: _waves(rows, machines)),
        ("banks", lambda: _banks(rows, machines)),
        ("banks_padding", lambda: _banks_padding(rows, machines)),
        ("sectors", lambda: _sectors(rows, machines)),
        ("l2_raster", lambda: _l2_raster(rows, machines)),
        ("blocking", lambda: _blocking(rows, machines)),
        ("systolic_utilization", lambda: _systolic(rows, machines)),
        ("pipeline_depth", lambda: _pipeline(rows, machines)),
        ("modelled_vs_measured", lambda: _modelled_vs_measured(rows)),
        ("attention", lambda: attention_figures(rows)),
        ("set_histogram", lambda: set_histogram_figure(rows, machines)),
        ("latency_pyramid", lambda: pyramid_figure(rows)),
        ("tile_quantization", lambda: tile_quantization_figure(rows)),
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
    return select(out, exp)


#: Figures of one experiment family, drawn only where the experiment's headline names them (every figure is drawn
#: for an experiment without a headline); the generic ones (hit rates, bytes, time, rooflines, declared plots) always.
FAMILY_FIGURES = ("waves", "banks", "banks_padding", "sectors", "l2_raster", "blocking", "systolic_utilization", "misses", "pipeline")


def _named(d: Drawn, names: list[str]) -> int | None:
    """Index of the first headline name that names figure ``d`` (its file stem or a prefix of it), or None."""
    return next((i for i, n in enumerate(names) if d.name == n or d.name.startswith(n)), None)


def select(figs: list[Drawn], exp) -> list[Drawn]:
    """The figures to draw, headline figures first (in the headline's order), each marked ``headline``; family
    figures the headline does not name are left out (a wave staircase has nothing to say in a systolic report)."""
    from gemmsim.report.headline import headline_of

    h = headline_of(exp) if exp is not None else None
    names = list(h.figures) if h else []
    keep = []
    for d in figs:
        i = _named(d, names)
        d.headline = i is not None
        if i is None and h is not None and d.fig is not None and any(d.name.startswith(f) for f in FAMILY_FIGURES):
            continue
        keep.append(d)
    return sorted(keep, key=lambda d: (_named(d, names) if d.headline else len(names)))


def split_citation(reading: str) -> tuple[str, str]:
    """(reading, citation): a trailing '(experiments/CLAIMS.md ...)' or 'This is experiments/CLAIMS.md ...' moves out
    of the reading, so readings can be cut to three sentences without losing where the claim is quoted."""
    m = re.search(r"\s*(?:This is |\()(experiments/CLAIMS\.md[^()]*?)\.?\)?\.?\s*$", reading or "")
    if not m:
        return (reading or "").strip(), ""
    return reading[: m.start()].strip(), m.group(1).strip()


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
        body, cite = split_citation(d.reading)
        index.append({"file": path.name, "title": d.title, "reading": sentences(body, 3), "cites": cite, "headline": bool(getattr(d, "headline", False))})
    (out / "index.json").write_text(json.dumps(index, indent=1))
    return written
