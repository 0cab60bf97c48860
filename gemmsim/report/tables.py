"""Results: the terminal table, results.csv / results.json, the resolved experiment, and figures.

Everything a figure shows is in results.csv, so any plot can be redrawn from the files alone. Figures use
matplotlib's object API on the Agg backend (no display needed).
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import yaml

from gemmsim.errors import ResultsError
from gemmsim.report import format as fmt

RESULT_FILES = ("experiment.yaml", "results.csv", "results.json")


def _num(x) -> str:
    return fmt.number(x)


def _time(s) -> str:
    return fmt.seconds(s)


def _columns_present(rows: list[dict], pattern: str) -> list[str]:
    rx = re.compile(pattern)
    out: list[str] = []
    for r in rows:
        for k in r:
            if rx.fullmatch(k) and k not in out:
                out.append(k)
    return out


def distinguishing_params(rows: list[dict]) -> list[str]:
    """Kernel-parameter columns (p_*) that tell apart rows of the same machine, kernel label, shape and dtype."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r.get("machine"), r.get("label"), r.get("M"), r.get("N"), r.get("K"), r.get("dtype")), []).append(r)
    keys = list(dict.fromkeys(k for r in rows for k in r if k.startswith("p_")))
    return [k for k in keys if any(len({json.dumps(r.get(k), default=str) for r in g}) > 1 for g in groups.values())]


def _identity_columns(rows: list[dict]) -> list[tuple[str, str]]:
    cols: list[tuple[str, str]] = [("machine", "machine"), ("label", "kernel")]
    cols += [(k, k[2:]) for k in distinguishing_params(rows)]
    if any(r.get("M") is not None for r in rows):
        cols.append(("shape", "M x N x K"))
    if len({r.get("dtype") for r in rows}) > 1:
        cols.append(("dtype", "dtype"))
    return cols


def _host_columns(rows: list[dict]) -> list[tuple[str, str]]:
    if not any("host_time_s" in r for r in rows):
        return []
    cols = [("host_time_s", "host time")]
    cols += [(c, fmt.header(c)) for c in ("host_spread",) if any(c in r for r in rows)]
    return cols + [("host_ok", "host ok")]


def table_columns(rows: list[dict], headline: list[str] | None = None) -> list[tuple[str, str]]:
    """(column, header) pairs for the terminal table.

    With ``headline`` (the experiment's headline columns): identity, the headline columns the rows have, the modelled
    time and its bound, the host columns. Without: identity, hit rates, TLB misses, bytes per level, the GPU and
    systolic counters, DRAM bytes, time, FLOP/s, share of peak, bound.
    """
    cols = _identity_columns(rows)
    if headline:
        have = [c for c in headline if any(c in r for r in rows) and c not in {k for k, _ in cols}]
        cols += [(c, fmt.header(c)) for c in have]
        cols += [(c, fmt.header(c)) for c in ("time_s", "bound") if c not in have and any(c in r for r in rows)]
        return cols + _host_columns(rows)
    cols += [(c, fmt.header(c)) for c in _columns_present(rows, r".+_hit_rate")]
    cols += [(c, fmt.header(c)) for c in _columns_present(rows, r".+_miss_rate")]
    cols += [(c, fmt.header(c)) for c in _columns_present(rows, r".+_traffic_bytes")]
    extra = [c for c in ("blocks_per_sm", "occupancy", "waves", "wavefronts", "sectors_per_request", "utilization", "folds") if any(c in r for r in rows)]
    cols += [(c, fmt.header(c)) for c in extra]
    cols += [(c, fmt.header(c)) for c in ("dram_bytes", "time_s", "gflops", "peak_fraction", "bound")]
    return cols + _host_columns(rows)


def cell(row: dict, col: str) -> str:
    """One table cell, through the shared formatter (gemmsim.report.format): times, bytes and rates with units."""
    if col == "shape":
        return f"{row['M']}x{row['N']}x{row['K']}" if row.get("M") is not None else "-"
    v = row.get(col)
    if col.startswith("p_") and not isinstance(v, (int, float)):
        return "-" if v is None else str(v)
    return fmt.value(col, v)


def verdict_lines(rows: list[dict], columns: list[str]) -> list[str]:
    """The verdict columns of the rows as lines 'machine kernel [params]: text', each distinct text once."""
    out: list[str] = []
    params = distinguishing_params(rows)
    for r in rows:
        for c in columns:
            v = r.get(c)
            if v in (None, ""):
                continue
            who = " ".join([str(r.get("machine")), str(r.get("label") or r.get("kernel"))] + [f"{p[2:]}={r.get(p)}" for p in params])
            line = f"{who}: {v}"
            if line not in out:
                out.append(line)
    return out


def table(rows: list[dict], columns: list[tuple[str, str]] | None = None, headline=None) -> str:
    """Plain-text tables of the rows, one line per case and one table per machine kind (each kind has its own counters).

    ``headline`` (a gemmsim.report.headline.Headline or None) puts its columns first and prints its verdict columns
    as lines under the table.
    """
    cols_h = list(getattr(headline, "columns", None) or [])
    verdict = list(getattr(headline, "verdict", None) or [])
    if columns is None:
        kinds = list(dict.fromkeys(r.get("machine_kind", "") for r in rows))
        if len(kinds) > 1:
            text = "\n\n".join(_table([r for r in rows if r.get("machine_kind", "") == k], None, cols_h) for k in kinds)
        else:
            text = _table(rows, None, cols_h)
    else:
        text = _table(rows, columns, cols_h)
    lines = verdict_lines(rows, verdict)
    return text + ("\n\nverdict:\n" + "\n".join(f"  {v}" for v in lines) if lines else "")


def _table(rows: list[dict], columns: list[tuple[str, str]] | None, headline: list[str] | None = None) -> str:
    cols = columns or table_columns(rows, headline)
    cells = [[h for _, h in cols]] + [[cell(r, c) for c, _ in cols] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(cols))]
    lines = ["  ".join(v.rjust(w) if j > 1 else v.ljust(w) for j, (v, w) in enumerate(zip(line, widths))) for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if hasattr(v, "item"):
        return v.item()
    return v


def write_results(folder: Path, plan, rows: list[dict], notes: list[str], figures: bool = True) -> None:
    """Write the resolved experiment, results.csv, results.json, notes and figures into ``folder`` (report.html is
    built from these files by ``gemmsim.report.html.write_html_report``)."""
    exp = plan.experiment.model_dump(mode="json")
    exp["resolved_machines"] = {name: getattr(m, "name", name) for name, m in plan.machines.items() if name in plan.experiment.machines}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(exp, sort_keys=False))
    machines_dir = folder / "machines"
    machines_dir.mkdir()
    for name, m in plan.machines.items():
        if name in plan.experiment.machines:
            (machines_dir / f"{Path(name).stem}.yaml").write_text(yaml.safe_dump(m.model_dump(mode="json"), sort_keys=False))
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(folder / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: _jsonable(r.get(k)) for k in keys})
    payload = {"experiment": plan.experiment.name, "source": plan.source, "notes": notes, "rows": [{k: _jsonable(v) for k, v in r.items()} for r in rows]}
    (folder / "results.json").write_text(json.dumps(payload, indent=1))
    (folder / "table.txt").write_text(table(rows, headline=getattr(plan.experiment, "headline", None)) + "\n" + "".join(f"\n{n}" for n in notes) + "\n")
    if figures:
        from gemmsim.report.figures import draw_all

        draw_all(folder, plan.experiment, rows)


def read_results(folder: str | Path) -> tuple[dict, dict]:
    """Read a results folder back: (experiment dict, results.json payload with its ``rows``).

    ResultsError names every missing or unreadable file; nothing in the folder is changed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ResultsError(f"no such results folder: {folder}")
    missing = [f for f in RESULT_FILES if not (folder / f).is_file()]
    if missing:
        raise ResultsError(f"results folder is incomplete: missing {', '.join(missing)}", source=str(folder))
    try:
        exp = yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8"))
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read the experiment: {exc}", source=str(folder / "experiment.yaml")) from None
    try:
        payload = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (json.JSONDecodeError, OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read the results: {exc}", source=str(folder / "results.json")) from None
    problems = []
    if not isinstance(exp, dict):
        problems.append("experiment.yaml is not a mapping")
    if not isinstance(payload, dict) or not isinstance(payload.get("rows"), list) or not all(isinstance(r, dict) for r in payload["rows"]):
        problems.append("results.json has no list of 'rows'")
    if problems:
        raise ResultsError("results folder is unreadable", source=str(folder), problems=problems)
    return exp, payload
