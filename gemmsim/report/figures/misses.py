"""Why it missed: each cache level's misses split by cause (compulsory, capacity, conflict) and by operand (A, B, C),
for rows simulated with ``analyses: [miss_classes]`` (columns ``L1_compulsory``, ``L1_A_misses`` ...; see
``gemmsim.models.missclass``)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.report.figures.common import Drawn, _finite, _labeler, _machines_of, _pct, _slug  # noqa: E402

CAUSES = (("compulsory", "#9e9e9e"), ("capacity", "#1f77b4"), ("conflict", "#d62728"))
OPERANDS = (("A", "#2ca02c"), ("B", "#ff7f0e"), ("C", "#9467bd"), ("other", "#8c564b"))
#: a machine with more cases than this gets no bar figures (a line plot of e.g. L1_conflict against the swept
#: parameter says it better: see leading_dimension.yaml)
MAX_CASES = 12
SECTION = ("Hill's three Cs (Hill and Smith, IEEE Trans. Computers 38(12), 1989): compulsory = first touch of a line; "
           "capacity = would miss in a fully associative LRU cache of the same size too; conflict = the rest")  # fmt: skip


def _levels_with_classes(rows: list[dict]) -> list[str]:
    seen: list[str] = []
    for r in rows:
        for k in r:
            if k.endswith("_compulsory") and k.count("_") == 1 and _finite(r.get(k)):
                lv = k[: -len("_compulsory")]
                if lv not in seen:
                    seen.append(lv)
    return seen


def _stacked(ax, rs: list[dict], parts: list[tuple[str, str, list[float]]], labels: list[str]) -> None:
    bottom = [0.0] * len(rs)
    for name, colour, ys in parts:
        ax.bar(range(len(rs)), ys, 0.7, bottom=bottom, color=colour, label=name)
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax.set_xticks(range(len(rs)), labels, fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _scale(values: list[float]) -> tuple[float, str]:
    top = max(values, default=0.0)
    for f, p in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if top >= f:
            return f, p
    return 1.0, ""


def _figure(rows: list[dict], m: str, levels: list[str], kind: str) -> Figure:
    rs = [r for r in rows if r["machine"] == m]
    name = _labeler(rows)
    labels = [name(r, "\n") for r in rs]
    fig = Figure(figsize=(min(4.2 * len(levels) + 1.5, 16), 3.6), layout="constrained")
    axes = fig.subplots(1, len(levels), squeeze=False)[0]
    for ax, lv in zip(axes, levels):
        if kind == "cause":
            raw = [(c, col, [float(r.get(f"{lv}_{c}") or 0) for r in rs]) for c, col in CAUSES]
        else:
            raw = [(o, col, [float(r.get(f"{lv}_{o}_misses") or 0) for r in rs]) for o, col in OPERANDS]
            raw = [p for p in raw if any(p[2])]
        f, prefix = _scale([sum(p[2][i] for p in raw) for i in range(len(rs))])
        _stacked(ax, rs, [(n, col, [y / f for y in ys]) for n, col, ys in raw], labels)
        ax.set_title(f"{lv} misses by {'cause' if kind == 'cause' else 'operand'}", fontsize=10)
        ax.set_ylabel(f"misses ({prefix})" if prefix else "misses")
        ax.set_ylim(0, 1.08 * max([sum(p[2][i] for p in raw) / f for i in range(len(rs))], default=1) or 1)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=8, loc="outside right upper")
    fig.suptitle(f"{m}: why the {', '.join(levels)} misses happen" if kind == "cause" else f"{m}: which matrix misses", fontsize=11)
    return fig


def _cause_reading(rs: list[dict], lv: str, name) -> str:
    ok = [r for r in rs if _finite(r.get(f"{lv}_misses")) and r[f"{lv}_misses"] > 0]
    if not ok:
        return ""
    worst = max(ok, key=lambda r: r[f"{lv}_misses"])
    share = {c: worst[f"{lv}_{c}"] / worst[f"{lv}_misses"] for c, _ in CAUSES}
    main = max(share, key=share.get)
    if len({r[f"{lv}_misses"] for r in ok}) == 1:
        s = f"Every case misses {int(worst[f'{lv}_misses']):,} times in {lv}, {_pct(share[main])} of them {main}"
        if main == "compulsory" and share[main] > 0.99:
            return s + f": the data fit in {lv}, only first touches miss."
    else:
        s = f"{name(worst)} misses most in {lv} ({int(worst[f'{lv}_misses']):,} misses), {_pct(share[main])} of them {main}"
    conf = [r for r in ok if r[f"{lv}_conflict"] / r[f"{lv}_misses"] >= 0.25]
    if conf and main != "conflict":
        c = max(conf, key=lambda r: r[f"{lv}_conflict"] / r[f"{lv}_misses"])
        s += f"; {name(c)} has the most conflict misses ({_pct(c[f'{lv}_conflict'] / c[f'{lv}_misses'])}: addresses crowding into few sets)"
    elif not conf and main != "conflict":
        s += "; no case loses more than a quarter of its misses to conflicts"
    return s + "."


def _operand_reading(rs: list[dict], lv: str, name) -> str:
    """For the cases that miss most: which operand makes most of their misses, and how often it misses."""
    out = []
    ok = [r for r in rs if _finite(r.get(f"{lv}_misses")) and r[f"{lv}_misses"] > 0]
    for r in sorted(ok, key=lambda r: -r[f"{lv}_misses"])[:4]:
        ops = {o: r.get(f"{lv}_{o}_misses") or 0 for o, _ in OPERANDS}
        o = max(ops, key=ops.get)
        share = ops[o] / r[f"{lv}_misses"]
        rate = r.get(f"{lv}_{o}_miss_rate")
        out.append(f"{name(r)}: {o} makes {_pct(share)} of the {lv} misses" + (f" (it misses {_pct(rate)} of its accesses)" if _finite(rate) else ""))
    if not out:
        return f"No case misses in {lv}."
    return "; ".join(out) + "."


def _misses(rows: list[dict], machines: dict) -> list[Drawn]:
    rows = [r for r in rows if _levels_with_classes([r])]
    out: list[Drawn] = []
    if not rows:
        return out
    name = _labeler(rows)
    for m in _machines_of(rows):
        rs = [r for r in rows if r["machine"] == m]
        if len(rs) > MAX_CASES:
            continue
        levels = _levels_with_classes(rs)
        first = levels[0]
        out.append(Drawn(f"miss_causes_{_slug(m)}", f"{m}: misses by cause", _figure(rows, m, levels, "cause"),
                         " ".join(filter(None, [_cause_reading(rs, lv, name) for lv in levels[:2]])) + f" ({SECTION}.)"))  # fmt: skip
        out.append(Drawn(f"miss_operands_{_slug(m)}", f"{m}: misses by operand", _figure(rows, m, levels, "operand"),
                         _operand_reading(rs, first, name)))  # fmt: skip
    return out
