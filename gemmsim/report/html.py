"""report.html: one self-contained page per results folder, built from the results files alone.

``write_html_report(folder)`` reads ``experiment.yaml``, ``results.json``, ``machines/*.yaml`` and the figures in
``figures/`` (PNGs and the readings ``gemmsim.report.figures.draw_all`` saved in ``figures/index.json``) and writes
``report.html``: the experiment's description and the seed sections it names, the machines, the results table
(the terminal table's columns, and every column in a collapsed ``<details>``), each figure embedded as a base64
PNG with its plain-language reading under it, and the run's notes (host ranking agreement, cases not run,
claims of the description that the rows do not bear out). No script, no external URL: it opens in any browser,
offline. ``regenerate(folder)`` (the ``gemmsim report`` verb) checks the folder, redraws the figures from
results.json and rewrites the page; a folder missing files raises ResultsError naming them, before anything
is written.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
import tempfile
from pathlib import Path

import yaml

from gemmsim.errors import GemmsimError, ResultsError

#: Files a results folder must have for a report.

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta { color: #666; font-size: 0.9rem; }
.description { font-size: 1.0rem; max-width: 60rem; }
.lesson { font-size: 1.15rem; max-width: 60rem; margin: 0.8rem 0; }
.claims li { margin-bottom: 0.3rem; max-width: 60rem; }
table { border-collapse: collapse; font-size: 0.82rem; margin: 0.6rem 0; }
th, td { border: 1px solid #ddd; padding: 0.2rem 0.45rem; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
.scroll { overflow-x: auto; max-width: 100%; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { max-width: 60rem; } figcaption b { display: block; margin-bottom: 0.2rem; }
.notes li { margin-bottom: 0.3rem; } .warn { color: #a33; }
details summary { cursor: pointer; color: #245; margin-top: 0.6rem; }
code { background: #f5f5f5; padding: 0 0.2rem; }
"""


# ------------------------------------------------------------------------------------------------------
# Reading and checking the folder


def check_results_folder(folder: str | Path) -> tuple[dict, dict, dict]:
    """(experiment dict, results.json payload, machines by row name) of a results folder.

    Raises ResultsError naming every missing or unreadable file (experiment.yaml, results.json, and the
    ``machines/NAME.yaml`` of every machine the rows name).
    """
    from gemmsim.machine import machine_from_dict
    from gemmsim.report.tables import read_results

    folder = Path(folder)
    exp, payload = read_results(folder)
    machines, missing = {}, []
    for name in dict.fromkeys(str(r.get("machine")) for r in payload["rows"]):
        path = folder / "machines" / f"{Path(name).stem}.yaml"
        if not path.is_file():
            missing.append(str(path.relative_to(folder)))
            continue
        try:
            machines[name] = machine_from_dict(yaml.safe_load(path.read_text()), source=str(path))
        except (yaml.YAMLError, GemmsimError) as exc:
            raise ResultsError(f"cannot read machine file {path.name}: {exc}", source=str(folder)) from None
    if missing:
        raise ResultsError(f"results folder is incomplete: missing {', '.join(missing)}", source=str(folder))
    return exp, payload, machines


# ------------------------------------------------------------------------------------------------------
# Pieces of the page


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def seed_sections(text: str) -> list[str]:
    """The seed sections a description names ('Seed 000 sections 2 and 2.1', 'seed 001')."""
    out = []
    for m in re.finditer(r"[Ss]eed (\d{3})(?:,? (?:sections?|section) ([\d.]+(?:(?:,| and| to|-)\s*[\d.]+)*))?", text or ""):
        s = f"seed {m.group(1)}" + (f", section{'s' if re.search(r'[, -]|and|to', m.group(2) or '') else ''} {m.group(2).rstrip('.')}" if m.group(2) else "")
        if s not in out:
            out.append(s)
    return out


def claim_notes(description: str, rows: list[dict]) -> list[str]:
    """Check hit-rate claims of the description ('ikj hits 90.0 %') against the rows' first-level hit rates.

    Only sentences that speak of hits are read; a claim is '<label> [hits] <x> %' for a label of the rows.
    A claim holds when some row of that label has that hit rate to the claim's precision.
    """
    labels = {str(r.get("label") or r.get("kernel")) for r in rows}
    out = []
    for sentence in re.split(r"(?<=[^\d])\.\s+|;\s+", description or ""):
        if "hit" not in sentence.lower():
            continue
        for m in re.finditer(r"\b([A-Za-z_][\w-]*)\s+(?:hits\s+)?(\d+(?:\.(\d+))?)\s*%", sentence):
            label, value, dec = m.group(1), float(m.group(2)), m.group(3) or ""
            if label not in labels:
                continue
            rs = [r for r in rows if str(r.get("label") or r.get("kernel")) == label]
            col = next((k for r in rs for k in r if k.endswith("_hit_rate")), None)
            if col is None:
                continue
            tol = 0.5 * 10 ** -len(dec) + 1e-9
            got = [(r, 100 * r[col]) for r in rs if isinstance(r.get(col), (int, float)) and math.isfinite(r[col])]
            if not got:
                continue
            if any(abs(v - value) <= tol for _, v in got):
                out.append(f"Claim checked: the description says {label} hits {m.group(2)} %, and the rows agree ({col}).")
                continue
            params = sorted({k for r, _ in got for k in r if k.startswith("p_")})
            vary = [p for p in params if len({json.dumps(r.get(p), default=str) for r, _ in got}) > 1]
            shown = ", ".join(f"{v:.{max(1, len(dec))}f} %" + (" (" + " ".join(f"{p[2:]}={r.get(p)}" for p in vary) + ")" if vary else "") for r, v in got)
            out.append(f"Claim does not hold: the description says {label} hits {m.group(2)} %, the model gives {shown} ({col}).")
    return out


def _machine_facts(m) -> list[tuple[str, str]]:
    kind = getattr(m, "kind", "?")
    facts: list[tuple[str, str]] = []
    if kind == "cpu":
        facts.append(("cores x clock", f"{m.cores} x {m.clock_ghz:g} GHz"))
        facts.append(("SIMD", f"{m.simd_bits} bit, {m.fma_units} FMA units"))
        facts.append(("peak fp32 / core", f"{m.peak_gflops('fp32'):.4g} GFLOP/s"))
        caches = ", ".join(f"{c.name} {_bytes(c.size)} {c.ways}-way {c.line_bytes} B lines" for c in m.caches)
        facts.append(("caches", caches))
        if m.tlbs:
            facts.append(("TLBs", ", ".join(f"{t.name} {t.entries} x {_bytes(t.page)}" for t in m.tlbs)))
        facts.append(("DRAM", f"{m.dram.bandwidth_gbps:g} GB/s, {m.dram.latency_ns:g} ns"))
    elif kind == "gpu":
        facts.append(("SMs x clock", f"{m.sms} x {m.clock_mhz_max:g} MHz"))
        for label, tensor in (("fp16 tensor peak", True), ("fp32 CUDA-core peak", False)):
            try:
                facts.append((label, f"{m.peak_tflops('fp16' if tensor else 'fp32', tensor=tensor):.4g} TFLOP/s"))
            except (ValueError, KeyError):
                pass
        facts.append(("shared memory", f"{_bytes(m.smem.per_sm_max)} per SM, {m.smem.banks} banks x {m.smem.bank_bytes} B"))
        facts.append(("L2", f"{_bytes(m.l2.size)}, {m.l2.bandwidth_gbps:g} GB/s"))
        facts.append(("DRAM", f"{m.dram.bandwidth_gbps:g} GB/s"))
    else:
        derived = m.derived() if hasattr(m, "derived") else {}
        for k in ("pes", "native_dtype", "peak_tops", "dram_bytes_per_cycle"):
            if k in derived:
                facts.append((k, json.dumps(derived[k]) if isinstance(derived[k], dict) else str(derived[k])))
    return facts


def _bytes(n: int) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % (f // 1024 or 1) == 0:
            return f"{n / f:g} {unit}"
    return f"{n} B"


def _machines_html(machines: dict) -> str:
    parts = []
    for name, m in machines.items():
        facts = "".join(f"<tr><th class='text'>{_e(k)}</th><td class='text'>{_e(v)}</td></tr>" for k, v in _machine_facts(m))
        est = getattr(m, "estimated", None)
        est_html = f"<p class='meta'>Estimated (not read or cited): {_e(', '.join(est))}</p>" if est else ""
        src = getattr(m, "sources", None)
        src_html = f"<p class='meta'>Sources: {_e('; '.join(src))}</p>" if src else ""
        parts.append(
            f"<h3>{_e(name)} <span class='meta'>({_e(getattr(m, 'kind', '?'))}{', ' + _e(m.name) if getattr(m, 'name', name) != name else ''})</span></h3>"
            f"<p>{_e(getattr(m, 'description', ''))}</p><table>{facts}</table>{est_html}{src_html}"
        )
    return "\n".join(parts) or "<p>No machine files.</p>"


def _table_html(rows: list[dict]) -> str:
    from gemmsim.report.tables import cell, table_columns

    if not rows:
        return "<p>No rows.</p>"
    cols = table_columns(rows)
    text_cols = {"machine", "label", "shape", "dtype", "bound", "host_ok", *(c for c, _ in cols if c.startswith("p_"))}
    head = "".join(f"<th class='{'text' if c in text_cols else ''}' title='{_e(_doc(c))}'>{_e(h)}</th>" for c, h in cols)
    body = "".join(
        "<tr>" + "".join(f"<td class='{'text' if c in text_cols else ''}'>{_e(cell(r, c))}</td>" for c, _ in cols) + "</tr>" for r in rows
    )
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _raw(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _all_columns_html(rows: list[dict]) -> str:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    head = "".join(f"<th class='text'>{_e(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{_e(_raw(r.get(k)))}</td>" for k in keys) + "</tr>" for r in rows)
    return (
        f"<details><summary>Every column ({len(keys)} columns, {len(rows)} rows; the same as results.csv)</summary>"
        f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></details>"
    )


def _figures(folder: Path) -> tuple[list[dict], list[str]]:
    """(figures with file, title, reading, data) and problems, from figures/index.json and figures/*.png."""
    fig_dir = folder / "figures"
    if not fig_dir.is_dir():
        return [], []
    index, problems = [], []
    idx_path = fig_dir / "index.json"
    if idx_path.is_file():
        try:
            index = json.loads(idx_path.read_text())
        except json.JSONDecodeError:
            problems.append("figures/index.json is unreadable; figures are shown without readings")
            index = []
    listed = {e.get("file") for e in index if isinstance(e, dict)}
    for p in sorted(fig_dir.glob("*.png")):
        if p.name not in listed:
            index.append({"file": p.name, "title": p.stem.replace("_", " "), "reading": ""})
    out = []
    for e in index:
        if not isinstance(e, dict) or "file" not in e:
            continue
        p = fig_dir / e["file"]
        if e.get("error"):
            problems.append(f"figure {e.get('title', e['file'])} could not be drawn: {e['error']}")
            continue
        if not p.is_file():
            problems.append(f"figure {e['file']} is listed in figures/index.json but missing")
            continue
        out.append({**e, "data": base64.b64encode(p.read_bytes()).decode("ascii")})
    return out, problems


def _figures_html(figs: list[dict]) -> str:
    if not figs:
        return "<p>No figures (run with figures enabled, or <code>gemmsim report FOLDER</code> to draw them).</p>"
    parts = []
    for f in figs:
        reading = f.get("reading") or "No reading was recorded for this figure."
        parts.append(
            f"<figure id='fig-{_e(Path(f['file']).stem)}'><img alt='{_e(f.get('title', f['file']))}' "
            f"src='data:image/png;base64,{f['data']}'><figcaption><b>{_e(f.get('title', f['file']))}</b>"
            f"<span>{_e(reading)}</span></figcaption></figure>"
        )
    return "\n".join(parts)


# ------------------------------------------------------------------------------------------------------
# The page


def _claims_file() -> Path:
    """experiments/CLAIMS.md of this checkout (the seed claims quoted with their sections)."""
    return Path(__file__).resolve().parents[2] / "experiments" / "CLAIMS.md"


def claim_texts(ids: list[str]) -> list[tuple[str, str]]:
    """(id, quoted claim) for each claim id, read from experiments/CLAIMS.md ('- **000-2.1** (seed 000, section 2.1): ...');
    an id the file does not have comes back with an empty text."""
    try:
        text = _claims_file().read_text(encoding="utf-8")
    except OSError:
        text = ""
    out = []
    for cid in ids:
        m = re.search(r"^- \*\*" + re.escape(cid) + r"\*\*\s*(.*(?:\n  .*)*)", text, re.M)
        out.append((cid, re.sub(r"\s+", " ", m.group(1)).strip() if m else ""))
    return out


def _regen_target(folder: Path) -> str:
    """The results folder as the reader would type it: relative to the current folder when inside it, without the
    '.partial' suffix the runner writes into before renaming."""
    final = folder.with_name(folder.name.removesuffix(".partial"))
    try:
        return str(final.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(final)


def _figure_html(f: dict) -> str:
    reading = f.get("reading") or "No reading was recorded for this figure."
    cite = f.get("cites") or ""
    cite_html = f" <span class='meta'>See {_e(cite)}.</span>" if cite else ""
    return (
        f"<figure id='fig-{_e(Path(f['file']).stem)}'><img alt='{_e(f.get('title', f['file']))}' "
        f"src='data:image/png;base64,{f['data']}'><figcaption><b>{_e(f.get('title', f['file']))}</b>"
        f"<span>{_e(reading)}</span>{cite_html}</figcaption></figure>"
    )


def _verdict_lines(exp: dict, rows: list[dict], notes: list[str], desc: str) -> list[tuple[str, str]]:
    """(css class, text): the headline's verdict columns, the description's checked claims, the host ranking notes."""
    from gemmsim.report.headline import headline_of
    from gemmsim.report.tables import verdict_lines

    h = headline_of(exp)
    out = [("", v) for v in verdict_lines(rows, list(h.verdict) if h else [])]
    out += [("warn" if "does not hold" in c else "", c) for c in claim_notes(desc, rows)]
    out += [("", n) for n in notes if n.startswith("host ")]
    return out


def render_html(folder: str | Path) -> str:
    """The whole report page for a results folder (see the module docstring)."""
    from gemmsim.report.headline import headline_of
    from gemmsim.report.tables import cell, table_columns

    folder = Path(folder)
    exp, payload, machines = check_results_folder(folder)
    rows = payload["rows"]
    figs, fig_problems = _figures(folder)
    name = exp.get("name") or payload.get("experiment") or folder.name
    desc = str(exp.get("description") or "").strip()
    h = headline_of(exp)
    sections = seed_sections(desc)
    notes = [str(n) for n in payload.get("notes") or []]
    verdict = _verdict_lines(exp, rows, notes, desc)
    other_notes = [n for n in notes if not n.startswith("host ")]
    note_items = "".join(f"<li>{_e(n)}</li>" for n in other_notes)
    note_items += "".join(f"<li class='warn'>{_e(p)}</li>" for p in fig_problems)
    machines_used = ", ".join(machines) or "none"
    lead = [f for f in figs if f.get("headline")] or figs[:1]
    rest = [f for f in figs if f not in lead]
    claims = claim_texts(list(h.claims)) if h else []
    claims_html = "".join(
        f"<li><b>{_e(cid)}</b> {_e(text) if text else '(not found in experiments/CLAIMS.md)'}</li>" for cid, text in claims
    )
    lesson = h.lesson.strip() if h else desc
    headline_table = ""
    # one table per machine kind, as in the terminal: each kind has its own counters
    for kind in dict.fromkeys(r.get("machine_kind", "") for r in rows):
        krows = [r for r in rows if r.get("machine_kind", "") == kind]
        cols = table_columns(krows, list(h.columns) if h else None)
        text_cols = {"machine", "label", "shape", "dtype", "bound", "host_ok", *(c for c, _ in cols if c.startswith("p_"))}
        head = "".join(f"<th class='{'text' if c in text_cols else ''}' title='{_e(_doc(c))}'>{_e(hd)}</th>" for c, hd in cols)
        body = "".join("<tr>" + "".join(f"<td class='{'text' if c in text_cols else ''}'>{_e(cell(r, c))}</td>" for c, _ in cols) + "</tr>" for r in krows)
        headline_table += f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    headline_table = headline_table or "<p>No rows.</p>"
    target = _regen_target(folder)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gemmsim: {_e(name)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{_e(name)}</h1>
<p class="lesson">{_e(lesson) or 'No description.'}</p>
{f'<p class="meta">Tests these seed claims (quoted in experiments/CLAIMS.md):</p><ul class="claims">{claims_html}</ul>' if claims_html else ''}
{''.join(_figure_html(f) for f in lead) if lead else '<p>No figures (run with figures enabled, or <code>gemmsim report FOLDER</code> to draw them).</p>'}
<h2>Verdict</h2>
{'<ul class="notes">' + ''.join(f"<li class='{c}'>{_e(t)}</li>" for c, t in verdict) + '</ul>' if verdict else '<p>The figure readings above are the verdict: each says what the modelled numbers show.</p>'}
<h2>Headline numbers</h2>
{headline_table}
<details><summary>Full table (the generic columns: hit rates, bytes per level, time, share of peak)</summary>{_table_html(rows)}</details>
{_all_columns_html(rows)}
{('<h2>More figures</h2>' + ''.join(_figure_html(f) for f in rest)) if rest else ''}
<h2>About this experiment</h2>
<p class="description">{_e(desc) or 'No description.'}</p>
{f'<p class="meta">Illustrates {_e("; ".join(sections))} (quoted in experiments/CLAIMS.md).</p>' if sections else ''}
<p class="meta">gemmsim results: {len(rows)} case(s) on {_e(machines_used)}; experiment file {_e(payload.get('source') or '?')}.
Regenerate this page with <code>python -m gemmsim report {_e(target)}</code>; the column headers are explained by
<code>python -m gemmsim columns</code> (hover a header for its meaning).</p>
<h2>Notes</h2>
{f'<ul class="notes">{note_items}</ul>' if note_items else '<p>No notes for this run.</p>'}
<h2>Machines</h2>
{_machines_html(machines)}
</body>
</html>
"""


def _doc(col: str) -> str:
    from gemmsim.report import format as fmt

    c = fmt.column(col)
    return c.doc if c else col


def write_html_report(folder: str | Path) -> Path:
    """Write ``folder/report.html`` from the folder's files (atomically) and return its path."""
    folder = Path(folder)
    page = render_html(folder)
    fd, tmp = tempfile.mkstemp(prefix=".report.", suffix=".html", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the page is as readable as the rest of the folder
        os.replace(tmp, folder / "report.html")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return folder / "report.html"


def regenerate(folder: str | Path) -> Path:
    """Check a results folder, redraw its figures from results.json and the machine files, rewrite report.html."""
    from gemmsim.report.figures import draw_all

    folder = Path(folder)
    exp, payload, _ = check_results_folder(folder)
    draw_all(folder, exp, payload["rows"])
    return write_html_report(folder)
