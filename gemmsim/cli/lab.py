"""Verb ``lab``: the interactive labs in the browser (gemmsim.lab).

``gemmsim lab [--port P] [--no-browser]`` serves the page and its JSON API on 127.0.0.1 until Ctrl-C;
``gemmsim lab --static OUT.html`` writes a self-contained page with a precomputed grid of cases instead.
"""

from __future__ import annotations


def _cmd_lab(args) -> int:
    if args.static:
        from gemmsim.lab.static_page import write_static

        out, cases = write_static(args.static, quiet=args.quiet)
        print(f"wrote {out} ({cases} precomputed cases; open it in any browser, no server needed)")
        return 0
    from gemmsim.lab.server import serve

    return serve(port=args.port, open_browser=not args.no_browser, quiet=not args.verbose)


def register(subparsers) -> None:
    """Add the ``lab`` verb to the CLI's sub-parsers."""
    from gemmsim.cli.common import nonneg_int

    p = subparsers.add_parser("lab", help="interactive labs in the browser: cache, blocking, roofline, banks, waves")
    p.add_argument("--port", type=nonneg_int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser, only print the address")
    p.add_argument("--static", metavar="OUT.html", default=None,
                   help="write a self-contained page with a precomputed grid of cases instead of serving")
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.add_argument("--quiet", action="store_true", help="no progress lines (--static)")
    p.set_defaults(func=_cmd_lab)
