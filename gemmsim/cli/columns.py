"""Verb ``columns``: the glossary of result columns (what every table header means, with its unit).

``gemmsim columns`` lists every column the glossary knows (exact names, then the patterns such as
``<X>_hit_rate``); ``gemmsim columns RESULTS_DIR`` explains the columns of one results folder; ``gemmsim columns
NAME ...`` explains the named columns. The glossary lives in ``gemmsim.report.format``, the formatter tables,
figures and readings share.
"""

from __future__ import annotations

from pathlib import Path


def _cmd_columns(args) -> int:
    from gemmsim.report import format as fmt

    names = list(args.names)
    if len(names) == 1 and Path(names[0]).is_dir():
        from gemmsim.report.tables import read_results

        _, payload = read_results(names[0])
        names = list(dict.fromkeys(k for r in payload["rows"] for k in r))
    entries = fmt.glossary(names or None)
    width = min(34, max(len(c) for c, _, _ in entries))
    hw = min(22, max(len(h) for _, h, _ in entries))
    print(f"{'column':{width}s}  {'header':{hw}s}  meaning")
    for col, head, doc in entries:
        print(f"{col:{width}s}  {head:{hw}s}  {doc}")
    return 0


def register(subparsers) -> None:
    """Add the ``columns`` verb to the CLI's sub-parsers."""
    c = subparsers.add_parser("columns", help="explain result columns: every one, a results folder's, or the named ones")
    c.add_argument("names", nargs="*", metavar="COLUMN|RESULTS_DIR", help="column names, or one results folder (default: the whole glossary)")
    c.set_defaults(func=_cmd_columns)
