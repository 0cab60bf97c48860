"""Every experiment shows its lesson: headline columns in the terminal table, figures within their line budget,
family figures only where the headline names them, rankings that treat ties as ties."""

from pathlib import Path

import pytest

from gemmsim.errors import GemmsimError
from gemmsim.report import figures
from gemmsim.report import format as fmt
from gemmsim.report.figures.common import LINE_BUDGET
from gemmsim.report.tables import table
from gemmsim.run.experiment import Plan, load_experiment, plan
from gemmsim.run.runner import ranking_notes, simulate_cases, workload_totals

ROOT = Path(__file__).resolve().parents[2]


def _experiments():
    out = []
    for p in sorted((ROOT / "experiments").glob("*.yaml")):
        try:
            e = load_experiment(p)
        except GemmsimError:
            continue  # a file another schema reads (numerics); tests/run/test_experiment.py covers loading
        if e.headline is not None:
            out.append(p)
    return out


HEADLINED = _experiments()


def test_the_experiments_of_issue_10_declare_a_headline():
    names = {p.stem for p in HEADLINED}
    for n in ("bank_conflicts", "coalescing", "wave_quantization", "threads", "pipeline_depth", "loop_order", "blocking",
              "l2_raster", "systolic", "systolic_size"):
        assert n in names, n
    heads = {p.stem: load_experiment(p).headline for p in HEADLINED}
    assert {"wavefronts", "bank_conflicts"} <= set(heads["bank_conflicts"].columns)
    assert {"sectors", "coalescing_efficiency"} <= set(heads["coalescing"].columns)
    assert {"waves", "wave_efficiency"} <= set(heads["wave_quantization"].columns)
    assert "L1_invalidations" in heads["threads"].columns
    assert "claim_check" in heads["pipeline_depth"].verdict


@pytest.mark.slow
@pytest.mark.parametrize("path", HEADLINED, ids=lambda p: p.stem)
def test_quick_table_leads_with_the_headline_columns(path):
    exp = load_experiment(path)
    p = plan(exp, source=str(path), quick=True)
    # one case per machine and kernel label (and workload op): the columns a case has depend on those, not on its
    # size; the first and the last sweep point, so that a thread sweep has a case with several threads (invalidations)
    first, last = {}, {}
    for c in p.cases:
        key = (c.machine, c.label, c.tags.get("op") if c.tags else None)
        first.setdefault(key, c)
        last[key] = c
    cases = list({id(c): c for c in [*first.values(), *last.values()]}.values())
    rows = simulate_cases(Plan(p.experiment, p.source, p.machines, cases, []), jobs=1, quiet=True)
    workload_totals(rows)
    text = table(rows, headline=exp.headline)
    header_lines = [ln for ln in text.splitlines() if ln.startswith("machine")]
    for col in exp.headline.columns:
        assert any(col in r for r in rows), f"{path.stem}: no row has the headline column {col}"
        assert any(fmt.header(col) in h for h in header_lines), f"{path.stem}: {col} ({fmt.header(col)}) not in the table"
    for col in exp.headline.verdict:
        assert "verdict:" in text and any(str(r.get(col)) in text for r in rows if r.get(col))


def _panels(d):
    return [ax for ax in d.fig.axes if ax.get_visible() and ax.get_lines()]


def test_line_plot_splits_into_panels_with_a_legend_each():
    # 2 machines x 8 labelled variants of one kernel: 16 lines -> one panel per machine, 8 lines each, a legend each;
    # 'kernel' means the label, so four packed_micro variants are four lines (the threads figure of the issue)
    rows = [{"machine": m, "kernel": "packed_micro", "label": f"v{k}", "p_threads": t, "gflops": float(k + t)}
            for m in ("a", "b") for k in range(8) for t in (1, 2, 4)]
    d = figures._line(rows, "p_threads", "gflops", ["machine", "kernel"], None, True, False)
    panels = _panels(d)
    assert len(panels) == 2
    for ax in panels:
        lines = [ln for ln in ax.get_lines() if ln.get_label() and not ln.get_label().startswith("_")]
        assert len(lines) == 8 <= LINE_BUDGET and ax.get_legend() is not None
    assert panels[0].get_xlabel() == "threads" and "FLOP/s" in panels[0].get_ylabel()
    assert d.reading.count(". ") <= 2  # at most three sentences


def test_line_plot_over_budget_in_one_group_column_is_cut():
    rows = [{"machine": "a", "kernel": f"k{k}", "x": x, "y": float(k * x)} for k in range(12) for x in (1, 2)]
    d = figures._line(rows, "x", "y", ["kernel"], None, False, False)
    panels = _panels(d)
    assert len(panels) == 2 and all(len(ax.get_lines()) <= LINE_BUDGET and ax.get_legend() for ax in panels)


def test_family_figures_are_drawn_only_where_the_headline_names_them():
    # a100 rows with tiles and waves over several shapes would make a wave staircase; a systolic headline does not
    # name it, so the systolic report has none (the issue's 'wave staircase appears in the systolic report')
    rows = [{"machine": "a100", "kernel": "gemm", "label": "gemm", "M": 128, "N": 128 * k, "K": 128, "tiles": 10 * k, "waves": 1,
             "blocks_per_sm": 1, "time_s": 1e-5 * k, "flops": 1.0} for k in range(1, 5)]
    sys_exp = {"headline": {"lesson": "x", "columns": ["utilization"], "figures": ["systolic_utilization"]}}
    names = [d.name for d in figures.build_figures(rows, sys_exp, {})]
    assert "waves" not in names and "modelled_time" in names
    wave_exp = {"headline": {"lesson": "x", "columns": ["waves"], "figures": ["waves"]}}
    drawn = figures.build_figures(rows, wave_exp, {})
    assert drawn[0].name == "waves" and drawn[0].headline


def test_ranking_treats_ties_as_ties():
    # the issue's loop_order note: the model has exact ties (ikj = kij, jki = kji) and the host differs by 0.3 %
    base = {"M": 256, "N": 256, "K": 256, "dtype": "fp32"}
    model = {"ikj": 1.0, "kij": 1.0, "ijk": 2.0, "jik": 2.0, "jki": 4.0, "kji": 4.0}
    host = {"ikj": 1.003, "kij": 1.0, "ijk": 2.0, "jik": 2.006, "jki": 4.0, "kji": 4.012}
    rows = [{**base, "label": k, "time_s": model[k], "host_time_s": host[k], "host_time_min_s": host[k] * 0.99,
             "host_time_max_s": host[k] * 1.01} for k in model]
    note = ranking_notes(rows)[0]
    assert "the same way" in note and "differently" not in note
    assert "ikj = kij < ijk = jik < jki = kji" in note and "3 pair(s) tie" in note
    # every model time equal (a --quick size): no ranking is claimed at all
    for r in rows:
        r["time_s"] = 1.0
    note = ranking_notes(rows)[0]
    assert "no ranking to compare" in note and "the same way" not in note
    # a real disagreement outside the host's spread is still reported
    for r, t in zip(rows, (1, 2, 3, 4, 5, 6)):
        r["time_s"] = float(t)
    rows[0]["host_time_s"], rows[0]["host_time_min_s"], rows[0]["host_time_max_s"] = 10.0, 9.9, 10.1
    assert "differently" in ranking_notes(rows)[0]
