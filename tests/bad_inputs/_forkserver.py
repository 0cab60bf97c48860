"""A warm ``python -m gemmsim`` for the bad-input corpus: imports gemmsim once, then forks one child per case.

Started by test_bad_inputs.py as ``python tests/bad_inputs/_forkserver.py``. Reads one JSON job per line on stdin
(argv, cwd, env, out and err file paths, timeout, memory and file-size limits) and answers one JSON line (exit code,
seconds). Each child is a separate process in its own session, with the job's resource limits, folder, environment
and stdout/stderr, and runs gemmsim's ``__main__`` exactly as ``python -m gemmsim ARGV`` does; an exception that
escapes is printed as the interpreter would print it (a traceback) and exits 1. Only the imports are shared, which
is what makes the corpus fast: a fresh interpreter spends most of a bad input's time importing numpy and numba.
"""

from __future__ import annotations

import json
import os
import resource
import runpy
import signal
import sys
import time
import traceback


def _warm() -> None:
    """Import what the verbs import (the children inherit it)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import importlib

    importlib.import_module("gemmsim.cli.main").build_parser()
    for mod in ("gemmsim.sim.cpu", "gemmsim.sim.gpu", "gemmsim.models.systolic", "gemmsim.traceio", "gemmsim.run.runner",
                "gemmsim.report.explain", "gemmsim.report.tables", "gemmsim.report.html", "gemmsim.models.hierarchy"):
        try:
            __import__(mod)
        except Exception:  # a module another change broke: its cases fail on their own, with their traceback
            pass
    # run a few tiny commands once, so the compiled (numba) functions are loaded before the children fork
    import contextlib
    import io
    import tempfile

    main = importlib.import_module("gemmsim.cli.main").main
    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        for fmt in ("din", "xdin", "lackey", "npy"):
            t = f"{d}/t.{fmt}"
            for argv in (["trace", "ijk", "--N", "3", "--out", t], ["simulate", "--trace", t, "--machine", "toy"],
                         ["simulate", "--trace", t, "--cache", "4:2:64"]):
                try:
                    main(argv)
                except BaseException:
                    pass
        for argv in (["explain", "ijk", "--N", "2"], ["systolic", "--machine", "systolic_4", "--M", "2", "--N", "2", "--K", "2"]):
            try:
                main(argv)
            except BaseException:
                pass


def _child(job: dict) -> None:
    os.setsid()
    mem, fsize = int(job["memory"]), int(job["fsize"])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as a fresh interpreter sets it
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    out = os.open(job["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(job["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    sys.argv = ["gemmsim", *job["argv"]]
    code = 0
    try:
        runpy.run_module("gemmsim", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        traceback.print_exc()
        code = code or 120
    os._exit(code)


def _run(job: dict) -> dict:
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _child(job)
        finally:
            os._exit(121)
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - t0 > job["timeout"]:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    return {"rc": os.waitstatus_to_exitcode(status), "timed_out": timed_out, "seconds": time.monotonic() - t0}


def main() -> None:
    _warm()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(_run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
