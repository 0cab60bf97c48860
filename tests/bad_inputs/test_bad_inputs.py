"""Bad input never crashes: every case of ``cases.yaml`` runs through the real command line (``python -m gemmsim``) in
its own process, with a timeout, a memory limit and a file-size limit, and must end as its manifest says.

A bad input must end with a non-zero exit code, no traceback, a message of a few lines that names the file and the
field or line (the manifest's ``mentions``), no runaway output and no complete-looking results folder. An unusual but
valid input must keep working (exit 0, the manifest's ``stdout`` text).

Speed: a fresh interpreter spends most of a bad input's second importing numpy, numba and pydantic, so the cases
run in children forked from a warm ``python -m gemmsim`` (``_forkserver.py``: one per pytest process, each child a
separate process with its own limits, folder, environment and output, running gemmsim's ``__main__``).
``test_real_process`` runs a sample of the cases, and ``GEMMSIM_CORPUS_REAL=1`` all of them, as plain
``python -m gemmsim`` processes. Cases are made in a fresh folder each, from the manifest: ``files`` are written
there (text, a repository file with replacements, generated text or bytes, or a file of ``data/``).
"""

from __future__ import annotations

import atexit
import base64
import gzip
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = yaml.safe_load((HERE / "cases.yaml").read_text(encoding="utf-8"))

#: per-case limits: wall seconds, address space, largest file a case may write
TIMEOUT_S = 60
MEMORY_BYTES = 3 << 30
FILE_BYTES = 64 << 20
#: a bad input's message: at most this many lines on stderr
MAX_ERROR_LINES = 25


def _limits(memory: int = MEMORY_BYTES, fsize: int = FILE_BYTES):
    def preexec():
        os.setsid()  # its own process group: a timeout kills the case and anything it started
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return preexec


def _env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMMSIM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["MPLBACKEND"] = "Agg"
    env.update(extra or {})
    return env


def _content(spec, case_dir: Path) -> bytes | None:
    """The bytes of one manifest file entry (None for a folder, which is created instead)."""
    if isinstance(spec, str):
        return spec.encode("utf-8")
    if isinstance(spec, bytes):
        return spec
    if spec.get("dir"):
        return None
    if "data" in spec:
        return (HERE / "data" / spec["data"]).read_bytes()
    if "python" in spec:
        names = {"gzip": gzip, "base64": base64, "json": json, "repo_text": lambda p: (REPO / p).read_text(encoding="utf-8"),
                 "npy_trace": _npy_trace}
        data = eval(spec["python"], names)  # trusted: the repository's own manifest
    elif "from" in spec:
        data = (REPO / spec["from"]).read_text(encoding="utf-8")
        for old, new in spec.get("replace", []):
            assert old in data, f"{spec['from']} has no {old!r} to replace"
            data = data.replace(old, new, 1)
        data += spec.get("append", "")
    else:
        data = spec["text"]
    if isinstance(data, str):
        if spec.get("newline") == "crlf":
            data = data.replace("\n", "\r\n")
        data = data.encode(spec.get("encoding", "utf-8"))
    if spec.get("gzip"):
        data = gzip.compress(data)
    return data


def _npy_trace(n: int, shape: str | None = None) -> bytes:
    """A gemmsim npy trace of n reads of 4 bytes; ``shape`` replaces the header's shape text (a lying header)."""
    import io

    import numpy as np

    from gemmsim.trace import make_chunk

    buf = io.BytesIO()
    np.save(buf, make_chunk(np.arange(n, dtype=np.uint64) * 64, 4, 0), allow_pickle=False)
    data = buf.getvalue()
    if shape is not None:
        old = f"({n},), }}".encode()
        new = f"{shape}, }}".encode()
        assert old + b" " * (len(new) - len(old)) in data
        data = data.replace(old + b" " * (len(new) - len(old)), new, 1)
    return data


def _fill(value: str, case_dir: Path) -> str:
    return value.replace("{tmp}", str(case_dir)).replace("{repo}", str(REPO))


_SERVER: dict = {}


def _server() -> subprocess.Popen:
    """This process's fork server (started on first use, stopped when the process exits)."""
    if "proc" not in _SERVER:
        proc = subprocess.Popen([sys.executable, str(HERE / "_forkserver.py")], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, env=_env(), text=True, cwd=REPO)
        ready = proc.stdout.readline()
        assert ready.strip() == '{"ready": true}', f"the fork server did not start: {ready!r}"
        _SERVER["proc"] = proc
        atexit.register(lambda: (proc.stdin.close(), proc.wait(timeout=10)))
    return _SERVER["proc"]


def make_case(case: dict, root: Path) -> Path:
    """The case's folder with its files."""
    d = root / case["id"]
    d.mkdir(parents=True)
    for name, spec in (case.get("files") or {}).items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        data = _content(spec, d)
        if data is None:
            p.mkdir(exist_ok=True)
        else:
            p.write_bytes(data)
        if isinstance(spec, dict) and "mode" in spec:
            p.chmod(int(str(spec["mode"]), 8))
    return d


def run_case(case: dict, root: Path, real: bool = False) -> dict:
    """Make one case's folder and files, run its command line, and return what came out.

    ``real``: a plain ``python -m gemmsim`` process; otherwise a child of the warm fork server.
    """
    d = make_case(case, root)
    argv = [_fill(str(a), d) for a in case["argv"]]
    env = _env({k: _fill(str(v), d) for k, v in (case.get("env") or {}).items()})
    timeout = case.get("timeout", TIMEOUT_S)
    fsize = int(case.get("fsize", FILE_BYTES))
    if real:
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "gemmsim", *argv], cwd=d, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=_limits(fsize=fsize))
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            timed_out = True
        return {"rc": proc.returncode, "out": out.decode("utf-8", "replace"), "err": err.decode("utf-8", "replace"),
                "timed_out": timed_out, "dir": d, "seconds": time.monotonic() - t0}
    out_path, err_path = root / f"{case['id']}.stdout", root / f"{case['id']}.stderr"
    job = {"argv": argv, "cwd": str(d), "env": env, "out": str(out_path), "err": str(err_path), "timeout": timeout,
           "memory": MEMORY_BYTES, "fsize": fsize}
    srv = _server()
    srv.stdin.write(json.dumps(job) + "\n")
    srv.stdin.flush()
    res = json.loads(srv.stdout.readline())
    res.update(out=out_path.read_bytes().decode("utf-8", "replace"), err=err_path.read_bytes().decode("utf-8", "replace"),
               dir=d)
    return res


def _complete_results(d: Path) -> list[Path]:
    """Folders under ``d`` that look like a finished results folder (results.json inside, not *.partial)."""
    return [p.parent for p in d.rglob("results.json") if not p.parent.name.endswith(".partial")]


def check(case: dict, r: dict) -> None:
    """The promise for one case's outcome (see the module docstring)."""
    both = r["out"] + r["err"]
    where = f"\n--- command: {case['argv']}\n--- rc {r['rc']}\n--- stderr:\n{r['err'][-3000:]}\n--- stdout:\n{r['out'][-1500:]}"
    assert not r["timed_out"], "ran past the time limit" + where
    assert "Traceback" not in both, "a traceback" + where
    assert r["rc"] is not None and r["rc"] >= 0, "killed by a signal (memory or file-size limit?)" + where
    if case.get("expect", "error") == "ok":
        assert r["rc"] == 0, "a valid input failed" + where
        for text in case.get("stdout", []):
            assert text in both, f"expected {text!r} in the output" + where
        return
    assert r["rc"] != 0, "a bad input was accepted" + where
    lines = r["err"].strip().splitlines()
    assert 0 < len(lines) <= MAX_ERROR_LINES, f"the message is {len(lines)} lines" + where
    assert len(r["out"]) < 10_000, "runaway output on stdout" + where
    for text in case["mentions"]:
        assert _fill(text, r["dir"]) in r["err"], f"the message does not name {text!r}" + where
    if case["argv"][:1] == ["run"]:
        assert not _complete_results(r["dir"]), "a complete-looking results folder was left" + where
        assert not list(r["dir"].rglob("*.partial")), "a partial results folder was left" + where


def test_manifest_is_well_formed():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    bad = [c for c in CASES if c.get("expect", "error") == "error"]
    good = [c for c in CASES if c.get("expect") == "ok"]
    assert len(bad) >= 150 and len(good) >= 20, (len(bad), len(good))
    for c in bad:
        assert c.get("mentions"), f"{c['id']}: an error case must say what its message names"
    verbs = {c["argv"][0] for c in CASES if c["argv"]}
    assert {"run", "machines", "trace", "simulate", "occupancy", "systolic", "report", "explain"} <= verbs


REAL = os.environ.get("GEMMSIM_CORPUS_REAL") == "1"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case, tmp_path):
    if case.get("skip_root") and os.geteuid() == 0:
        pytest.skip("permissions do not stop root")
    check(case, run_case(case, tmp_path, real=REAL))


#: the cases also run as plain ``python -m gemmsim`` processes: every 25th, and every valid run
SAMPLE = [c for i, c in enumerate(CASES) if i % 25 == 0 or c["argv"][:1] == ["run"] and c.get("expect") == "ok"]


@pytest.mark.parametrize("case", SAMPLE, ids=[c["id"] for c in SAMPLE])
def test_real_process(case, tmp_path):
    """A sample of the corpus as plain ``python -m gemmsim`` processes: the fork server changes nothing a case sees."""
    if case.get("skip_root") and os.geteuid() == 0:
        pytest.skip("permissions do not stop root")
    check(case, run_case(case, tmp_path, real=True))


@pytest.mark.slow
def test_large_trace_streams_in_bounded_memory(tmp_path):
    """A 48 MB din trace simulates in the same memory as a 24 MB one: the reader streams blocks, so memory does not
    grow with the trace (12 M accesses would take 190 MB as records; both files are several of its 8 MiB blocks)."""
    line = b"0 1000\n1 2040\n0 3080\n1 40c0\n"
    block = line * (1 << 16)

    def write(name: str, mb: int) -> Path:
        p = tmp_path / name
        with open(p, "wb") as f:
            for _ in range(int(mb * 1e6 // len(block)) + 1):
                f.write(block)
        return p

    def peak_kib(trace: Path) -> tuple[int, dict]:
        """Run the simulate verb on ``trace``; its peak resident memory (KiB, from wait4) and its JSON output."""
        with open(tmp_path / "out.json", "wb") as out, open(tmp_path / "err.txt", "wb") as err:
            p = subprocess.Popen([sys.executable, "-m", "gemmsim", "simulate", "--trace", str(trace), "--cache",
                                  "64:8:64", "--json", "--no-classes"], cwd=tmp_path, env=_env(), stdout=out,
                                 stderr=err, preexec_fn=_limits())
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        assert p.returncode == 0, (tmp_path / "err.txt").read_text()
        return usage.ru_maxrss, json.loads((tmp_path / "out.json").read_text())

    results = []
    for name, mb in (("mid.din", 24), ("big.din", 48)):
        trace = write(name, mb)
        rss, d = peak_kib(trace)
        n = trace.stat().st_size // len(line) * 4
        lv = d["levels"][0]
        assert lv["loads"] == n // 2 and lv["stores"] == n // 2
        results.append(rss)
        trace.unlink()
    assert results[1] - results[0] < 16 * 1024, results  # KiB: twice the trace, the same memory


# ---------------------------------------------------------------------------------------------------------------------
# Signals and pipes: real ``python -m gemmsim`` processes.

SLOW_EXPERIMENT = """schema_version: 1
name: slow
machines: [haswell]
kernels: [ijk]
sizes: [400, 401, 402, 403, 404, 405]
host: {enabled: false}
"""


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _in_group(pgid: int) -> list[int]:
    """Live processes (zombies excluded) whose process group is ``pgid``."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(p.name))
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_workers_and_leaves_no_folder(tmp_path, sig):
    """A run killed while its two workers simulate: it exits 128+signal with one line, no traceback, no results
    folder (complete or partial), and no process of its group is left."""
    (tmp_path / "slow.yaml").write_text(SLOW_EXPERIMENT)
    p = subprocess.Popen([sys.executable, "-m", "gemmsim", "run", "slow.yaml", "--jobs", "2", "--no-cache", "--no-host",
                          "--out", "out"], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    t0 = time.monotonic()
    while len(_children(p.pid)) < 2 and time.monotonic() - t0 < 60 and p.poll() is None:
        time.sleep(0.05)
    workers = _children(p.pid)
    assert len(workers) >= 2, "the run did not start two workers"
    time.sleep(0.5)  # inside the simulations
    if sig == signal.SIGINT:
        os.killpg(p.pid, sig)  # Ctrl-C reaches the whole foreground group
    else:
        p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    err = err.decode()
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err and "interrupted" in err and len(err.strip().splitlines()) <= 3, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()
    deadline = time.monotonic() + 10
    while _in_group(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _in_group(p.pid), f"processes left: {_in_group(p.pid)} (workers were {workers})"


@pytest.mark.parametrize("pipeline", ["machines | head -1", "machines show h200 --json | true",
                                      "explain ijk --N 12 --limit 0 | head -c 10"])
def test_closed_pipe_is_quiet(tmp_path, pipeline):
    verb, _, reader = pipeline.partition(" | ")
    cmd = f"{sys.executable} -m gemmsim {verb} | {reader} > /dev/null"
    r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=_env(), capture_output=True, timeout=60)
    err = r.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err


# ---------------------------------------------------------------------------------------------------------------------
# The Python API raises gemmsim's own errors, worded as on the command line.


def _cli_error(argv: list[str], capsys) -> str:
    from gemmsim.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gemmsim: error: ")
    return err[len("gemmsim: error: "):].rstrip("\n")


def test_api_misspelled_kernel_parameter_is_a_kernel_error_worded_as_the_cli(capsys, tmp_path):
    import gemmsim
    from gemmsim.errors import KernelError

    with pytest.raises(KernelError) as cpu:
        gemmsim.simulate_cpu(gemmsim.load_machine("toy"), "blocked", 4, 4, 4, BQ=2)
    assert cpu.value.render() == _cli_error(["trace", "blocked", "--N", "4", "--param", "BQ=2", "--out", str(tmp_path / "t.din")], capsys)
    assert "BQ: unknown key" in cpu.value.render()
    with pytest.raises(KernelError) as gpu:
        gemmsim.simulate_gpu("a100", "tiled_smem", M=64, N=64, K=64, rastr="row")
    assert gpu.value.render() == cpu.value.render().replace("'blocked'", "'tiled_smem'").replace("BQ", "rastr")


def test_api_machine_of_the_wrong_kind_is_a_machine_file_error(capsys, tmp_path):
    import gemmsim
    from gemmsim.errors import MachineFileError

    with pytest.raises(MachineFileError) as cpu:
        gemmsim.simulate_cpu(gemmsim.load_machine("a100"), "ijk", 4, 4, 4)
    cli = _cli_error(["trace", "ijk", "--N", "4", "--machine", "a100", "--out", str(tmp_path / "t.din")], capsys)
    assert cpu.value.render() == cli.replace("the trace command", "the simulate_cpu command")
    with pytest.raises(MachineFileError, match="is a cpu machine; the simulate_gpu command needs kind: gpu"):
        gemmsim.simulate_gpu("haswell", "tiled_smem", M=64, N=64, K=64)
    with pytest.raises(gemmsim.GemmsimError):
        gemmsim.simulate_systolic(gemmsim.load_machine("toy"), M=4, N=4, K=4)


def test_api_absurd_sizes_are_refused_before_any_allocation():
    import gemmsim
    from gemmsim.errors import KernelError
    from gemmsim.guards import SizeLimitError

    toy = gemmsim.load_machine("toy")
    with pytest.raises(SizeLimitError, match="--size-limit accesses="):
        gemmsim.simulate_cpu(toy, "ijk", 10**6, 10**6, 10**6)
    with pytest.raises(KernelError, match="M must be a positive integer"):
        gemmsim.simulate_cpu(toy, "ijk", 0, 4, 4)
    with pytest.raises(SizeLimitError, match="tiles"):
        gemmsim.simulate_gpu("h200", "gemm", M=10**6, N=10**6, K=10**6, dtype="fp16")
    with pytest.raises(SizeLimitError, match="folds"):
        gemmsim.simulate_systolic(gemmsim.load_machine("tpu_v1"), M=10**5, N=10**5, K=10**5)
    with pytest.raises(SizeLimitError, match="--size-limit memory="):
        gemmsim.Cache("L1", 10**12, 8, 64)
    with pytest.raises(SizeLimitError, match="--size-limit memory="):
        gemmsim.Hierarchy.from_specs(["64:8:64", "1:100000000000:64"])
    with pytest.raises(KernelError, match="unknown dtype 'fp7'"):
        gemmsim.simulate_cpu(gemmsim.load_machine("haswell"), "gemm", 8, 8, 8, dtype="fp7")


def test_api_bad_files_raise_their_family(tmp_path):
    import gemmsim

    bad = tmp_path / "m.yaml"
    bad.write_bytes((HERE / "data" / "machine_latin1.yaml").read_bytes())
    with pytest.raises(gemmsim.MachineFileError, match="byte offset 57"):
        gemmsim.load_machine(bad)
    exp = tmp_path / "e.yaml"
    exp.write_text((HERE / "data" / "tiny.yaml").read_text() + "sizes: [8]\n")
    with pytest.raises(gemmsim.ExperimentError, match="duplicate key 'sizes'"):
        gemmsim.load_experiment(exp)


def test_size_limits_can_be_raised(monkeypatch):
    from gemmsim import guards

    monkeypatch.setattr(guards, "_overrides", {})
    monkeypatch.delenv("GEMMSIM_LIMITS", raising=False)
    with pytest.raises(guards.SizeLimitError):
        guards.check("folds", 2e6, "a GEMM")
    monkeypatch.setenv("GEMMSIM_LIMITS", "folds=3e6")
    guards.check("folds", 2e6, "a GEMM")  # raised through the environment (what workers inherit)
    guards.set_limits(folds=1e6)
    with pytest.raises(guards.SizeLimitError, match="over the limit of 1e\\+06"):
        guards.check("folds", 2e6, "a GEMM")
    with pytest.raises(guards.GemmsimError, match="positive finite"):
        guards.set_limits(folds=float("inf"))
