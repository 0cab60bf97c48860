"""The labs' web server: the page (``static/``) and the JSON API (``api.answer``) from one standard-library server.

``GET /`` and ``/static/<file>`` serve the vendored front end; ``GET /api/<lab>?k=v...`` answers with the lab's JSON
(HTTP 400 and ``{"error": message}`` for a refused request, 500 with the message for anything else). The server
listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import mimetypes
import os
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qsl, urlparse

from gemmsim.errors import GemmsimError
from gemmsim.lab.api import answer

STATIC_FILES = ("index.html", "app.js", "style.css")


def static_file(name: str) -> bytes:
    """The bytes of one vendored front-end file."""
    return resources.files("gemmsim.lab").joinpath("static", name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server_version = "gemmsim-lab"
    quiet = True

    def log_message(self, fmt, *args):  # noqa: D401 - the standard library's signature
        if not self.quiet:
            super().log_message(fmt, *args)

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, obj) -> None:
        self._send(code, json.dumps(obj, allow_nan=False, default=_nan_safe).encode(), "application/json")

    def do_GET(self):  # noqa: N802 - the standard library's name
        url = urlparse(self.path)
        path = url.path
        if path in ("/", "/index.html"):
            path = "/static/index.html"
        if path.startswith("/static/"):
            name = path[len("/static/"):]
            if name not in STATIC_FILES:
                return self._send(404, b"not found", "text/plain")
            ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
            return self._send(200, static_file(name), ctype + "; charset=utf-8")
        if path.startswith("/api/"):
            lab = path[len("/api/"):]
            params = dict(parse_qsl(url.query, keep_blank_values=True))
            try:
                return self._json(200, _clean(answer(lab, params)))
            except GemmsimError as err:
                return self._json(400, {"error": err.message if hasattr(err, "message") else str(err)})
            except Exception as err:  # a bug: say so on the page, not as a dropped connection
                traceback.print_exc()
                return self._json(500, {"error": f"internal error: {type(err).__name__}: {err}"})
        return self._send(404, b"not found", "text/plain")


def _nan_safe(o):
    return str(o)


def _clean(o):
    """JSON has no NaN or infinity: they become null."""
    if isinstance(o, float):
        return o if o == o and o not in (float("inf"), float("-inf")) else None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def make_server(port: int = 0, quiet: bool = True) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1:``port`` (0: a free port; read it from ``server.server_address``)."""
    handler = type("Handler", (_Handler,), {"quiet": quiet})
    try:
        srv = ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as err:
        raise GemmsimError(f"cannot listen on 127.0.0.1:{port}: {err.strerror or err}") from None
    srv.daemon_threads = True
    return srv


def warm_up() -> None:
    """Compile the models' numba code once (the first cache walk otherwise takes seconds)."""
    try:
        answer("cache", {"N": 2})
        answer("bank", {})
    except Exception:  # warming up is best effort; a real request reports its own error
        pass


def serve(port: int = 0, open_browser: bool = True, quiet: bool = True) -> int:
    """Serve the labs until Ctrl-C; return 0."""
    srv = make_server(port, quiet)
    url = f"http://127.0.0.1:{srv.server_address[1]}/"
    print(f"gemmsim lab: {url}  (Ctrl-C stops)", flush=True)
    threading.Thread(target=warm_up, daemon=True).start()
    if open_browser:
        import webbrowser

        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        print("\ngemmsim lab: stopped", flush=True)
    finally:
        srv.server_close()
    if any(t.is_alive() for t in threading.enumerate() if t is not threading.main_thread()):
        # A daemon thread (the warm-up, a request) may be inside numba's compiler (LLVM, GIL released): finalizing the
        # interpreter under it makes that thread exit by a forced unwind through C++ frames, which aborts the process
        # ("FATAL: exception not rethrown", seen on a cold numba cache). Nothing is left to clean up: leave at once.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
