"""Verb ``lab``: the interactive labs in the browser (gemmsim.lab).

``gemmsim lab [--port P] [--no-browser]`` serves the page and its JSON API on 127.0.0.1 until Ctrl-C;
``gemmsim lab --static OUT.html`` writes a self-contained page with a precomputed grid of cases instead.
"""

from __future__ import annotations


def _cmd_lab(args) -> int:
    if args.static:
        from pathlib import Path

        from gemmsim.errors import OutputError
        from gemmsim.lab.static_page import write_static

        folder = Path(args.static).absolute().parent
        if not folder.is_dir():  # say so before precomputing every case
            raise OutputError(f"cannot write: {folder} is not a folder", source=args.static)

        out, cases = write_static(args.static, quiet=args.quiet)
        print(f"wrote {out} ({cases} precomputed cases; open it in any browser, no server needed)")
        return 0
    from gemmsim.lab.server import serve

    return serve(port=args.port, open_browser=not args.no_browser, quiet=not args.verbose)


def register(subparsers) -> None:
    """Add the ``lab`` verb to the CLI's sub-parsers."""
    from gemmsim.cli.common import port

    p = subparsers.add_parser("lab", help="interactive labs in the browser: cache, blocking, roofline, banks, waves")
    p.add_argument("--port", type=port, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser, only print the address")
    p.add_argument("--static", metavar="OUT.html", default=None,
                   help="write a self-contained page with a precomputed grid of cases instead of serving")
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.add_argument("--quiet", action="store_true", help="no progress lines (--static)")
    p.set_defaults(func=_cmd_lab)
