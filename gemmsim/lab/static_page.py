"""``gemmsim lab --static OUT.html``: one self-contained page (no server, no network) with a precomputed grid.

The page is the same front end (``static/``) with the CSS and JavaScript inlined and ``window.LAB_DATA`` set to the
API's answers for a grid of cases, keyed exactly as the front end asks for them (``app.js``'s ``queryKey``: the lab,
then the form's parameters sorted by name). A case outside the grid shows a message instead of numbers.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from urllib.parse import quote

from gemmsim.errors import GemmsimError, output_error
from gemmsim.lab.api import answer
from gemmsim.lab.server import _clean, static_file

#: the form defaults of each lab (index.html) and the values the grid varies
GRID: dict[str, tuple[dict, dict]] = {
    "cache": (
        {"N": "8", "order": "ijk", "block": "4", "line": "4", "lines": "8", "ways": "0", "policy": "lru"},
        {"order": ["ijk", "ikj", "jik", "jki", "kij", "kji"], "lines": ["8", "16"]},
    ),
    "blocking": (
        {"machine": "haswell", "N": "128", "block": "32", "dtype": "fp32"},
        {"block": ["4", "8", "16", "32", "64", "128"], "machine": ["haswell", "skylake_avx512"]},
    ),
    "roofline": (
        {"machine": "h200", "dtype": "bf16", "d_model": "4096", "heads": "32", "seq_len": "2048", "kv_len": "2048",
         "batch": "1", "peak": "", "bw": ""},
        {"machine": ["h200", "a100", "rtx4060", "haswell", "tpu_v1"], "batch": ["1", "8", "64"]},
    ),
    "bank": (
        {"machine": "h200", "pattern": "column", "width": "4", "rows": "32", "cols": "32", "pad": "0", "stride": "1", "col": "0"},
        {"pattern": ["column", "row"], "width": ["4", "8", "16"], "pad": ["0", "1", "2", "4"]},
    ),
    "wave": (
        {"machine": "a100", "M": "2304", "N": "1664", "BM": "256", "BN": "128", "blocks_per_sm": "1"},
        {"N": [str(128 * k) for k in range(1, 33)], "blocks_per_sm": ["1", "2"]},
    ),
}


def query_key(lab: str, params: dict) -> str:
    """The key the front end looks a case up by (the same as app.js's ``queryKey``)."""
    q = "&".join(f"{quote(k, safe='')}={quote(str(params[k]), safe='')}" for k in sorted(params))
    return f"{lab}?{q}"


def grid_cases():
    """(lab, params) of every precomputed case."""
    for lab, (base, vary) in GRID.items():
        names = list(vary)
        for values in itertools.product(*(vary[n] for n in names)):
            yield lab, {**base, **dict(zip(names, values))}


def build(quiet: bool = True) -> tuple[dict, int]:
    """The LAB_DATA object and the number of cases in it (cases the models refuse are left out)."""
    data = {"presets?": _clean(answer("presets"))}
    n = 0
    for lab, params in grid_cases():
        try:
            data[query_key(lab, params)] = _clean(answer(lab, params))
            n += 1
        except GemmsimError as err:
            if not quiet:
                print(f"  skipped {lab} {params}: {err}", file=sys.stderr)
    # the machine menus offer only the machines of the grid
    menus = {"blocking": "cpu_machines", "roofline": "all_machines", "bank": "gpu_machines", "wave": "gpu_machines"}
    offered: dict[str, list[str]] = {}
    for lab, menu in menus.items():
        if lab in GRID:
            base, vary = GRID[lab]
            for m in vary.get("machine", [base["machine"]]):
                if m not in offered.setdefault(menu, []):
                    offered[menu].append(m)
    data["presets?"].update(offered)
    return data, n


def render(data: dict) -> str:
    """The page: index.html with style.css and app.js inlined and LAB_DATA before the script."""
    html = static_file("index.html").decode()
    css = static_file("style.css").decode()
    js = static_file("app.js").decode()
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    html = html.replace('<link rel="stylesheet" href="/static/style.css">', f"<style>\n{css}\n</style>")
    js = js.replace("</", "<\\/")
    html = html.replace('<script src="/static/app.js"></script>',
                        f"<script>window.LAB_DATA = {blob};</script>\n<script>\n{js}\n</script>")
    return html


def write_static(out, quiet: bool = False) -> tuple[Path, int]:
    """Write the static page to ``out``; return (path, cases)."""
    path = Path(out)
    if path.is_dir():
        raise GemmsimError(f"--static {out}: is a folder; give a file name such as labs.html")
    if not quiet:
        print(f"precomputing {sum(1 for _ in grid_cases())} cases ...", file=sys.stderr)
    data, n = build(quiet)
    try:
        path.write_text(render(data), encoding="utf-8")
    except OSError as err:
        raise output_error(err, path) from None
    return path, n
