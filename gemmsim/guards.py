"""Size guards: estimate the work and the memory of a request from the model's own cost before starting, and refuse
what cannot finish or fit, with the estimate in the message and the limit that raises it.

Every verb and the runner call these before any trace is generated or any array allocated, so absurd numbers
(M = 10^12, a cache of 10^12 sets) never reach numpy or numba. The estimates are deliberately simple upper
figures from the model's structure (accesses of a loop nest, cache lines of a level, tiles and k-steps of a GPU
launch, folds of a systolic array); the default limits sit well above every shipped experiment and well below
what would run for hours or take the machine's memory.

Limits are raised with ``--size-limit NAME=VALUE`` on any verb, ``GEMMSIM_LIMITS="NAME=VALUE,..."`` in the environment
(worker processes inherit it) or ``set_limits(NAME=VALUE)`` from Python.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Iterable
from numbers import Integral
from pathlib import Path

from gemmsim.errors import GemmsimError

#: bytes of memory one cache line of a simulated level takes (tag, dirty flag, fingerprint and order per set)
CACHE_BYTES_PER_LINE = 18
#: bytes one fold of a systolic simulation takes (schedule, timing and pattern tables; measured ~1.2 KiB)
SYSTOLIC_BYTES_PER_FOLD = 1300
#: bytes per tile of a GPU launch held at once (launch order, offsets, per-block bookkeeping)
GPU_BYTES_PER_TILE = 96

#: name -> (default, unit of the estimate, what the limit bounds)
DEFAULTS: dict[str, tuple[float, str, str]] = {
    "accesses": (1e11, "memory accesses", "a CPU trace; about 30 min of cache simulation"),
    "memory": (8 * 2**30, "of memory", "what one request may allocate"),
    "trace_bytes": (16 * 2**30, "of trace file", "one trace file on disk"),
    "tiles": (4 * 2**20, "thread-block tiles", "one GPU launch"),
    "steps": (8192, "k-steps per block", "one GPU thread block; the memory model walks them for every simulated block"),
    "folds": (1 * 2**20, "folds", "one systolic-array GEMM"),
    "dimension": (2**40, "elements", "M, N or K; addresses must fit in 64 bits"),
}

_overrides: dict[str, float] = {}


class SizeLimitError(GemmsimError):
    """A request whose estimated work or memory is over a limit (raise the limit to run it anyway)."""


def _parse(text: str, where: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or name not in DEFAULTS:
            raise GemmsimError(f"{where}: {item!r} is not NAME=VALUE with NAME one of {', '.join(DEFAULTS)}")
        try:
            v = float(value)
        except ValueError:
            v = float("nan")
        if not math.isfinite(v) or v <= 0:
            raise GemmsimError(f"{where}: limit {name} must be a positive finite number, got {value.strip()!r}")
        out[name] = v
    return out


def set_limits(**limits: float) -> None:
    """Raise (or lower) limits for this process and the workers it starts: ``set_limits(accesses=1e12)``."""
    text = ",".join(f"{k}={v}" for k, v in limits.items())
    _overrides.update(_parse(text, "set_limits"))
    os.environ["GEMMSIM_LIMITS"] = ",".join(f"{k}={v!r}" for k, v in _overrides.items())


def parse_limit_args(items: Iterable[str]) -> None:
    """Apply ``--size-limit NAME=VALUE`` options (each may hold several, comma-separated)."""
    for it in items:
        set_limits(**_parse(it, "--size-limit"))


def limit(name: str) -> float:
    """The limit in force for ``name``: set_limits / --size-limit, then $GEMMSIM_LIMITS, then the default."""
    if name in _overrides:
        return _overrides[name]
    env = _parse(os.environ.get("GEMMSIM_LIMITS", ""), "GEMMSIM_LIMITS")
    return env.get(name, DEFAULTS[name][0])


def _fmt(x: float) -> str:
    try:
        f = float(x)
    except OverflowError:  # an int of hundreds of digits (a size written out in full)
        d = str(int(x))
        return f"{d[0]}.{d[1:3]}e+{len(d) - 1}"
    return f"{f:.3g}" if f >= 1e6 or f != int(f) else str(int(f))


def _bytes(x: float) -> str:
    from gemmsim.units import format_bytes

    return format_bytes(x) if x < 2**60 else f"{_fmt(x)} B"


def check(name: str, estimate: float, what: str) -> None:
    """Refuse ``what`` when ``estimate`` is over the ``name`` limit, saying both and how to raise the limit."""
    lim = limit(name)
    if estimate > lim:
        show = _bytes if name in ("memory", "trace_bytes") else _fmt
        _, unit, bounds = DEFAULTS[name]
        raise SizeLimitError(
            f"{what} needs about {show(estimate)} {unit}, over the limit of {show(lim)} ({name}: {bounds}); make it "
            f"smaller, or raise the limit with --size-limit {name}={_fmt(max(estimate + estimate // 100, lim * 2))} "
            f"(Python: gemmsim.guards.set_limits({name}=...))"
        )


def positive_dims(what: str, **dims) -> None:
    """M, N, K (or any sizes) must be positive integers below the ``dimension`` limit."""
    from gemmsim.errors import KernelError

    for n, v in dims.items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, Integral):
            raise KernelError(f"{what}: {n} must be a positive integer, got {v!r}")
        if int(v) < 1:
            raise KernelError(f"{what}: {n} must be a positive integer, got {int(v)}")
        check("dimension", int(v), f"{what}: {n}={int(v)}")


# ---------------------------------------------------------------------------------------------------------
# Estimates per model


def cpu_accesses(M: int, N: int, K: int, simd: bool = False, lanes: int = 1) -> float:
    """Upper estimate of a CPU kernel's accesses: about 3 per multiply-add (A, B, and C or a register spill), one
    vector access per ``lanes`` elements for a vector kernel, plus touching each matrix once."""
    per = 3.0 / (lanes if simd else 1)
    return per * M * N * K + M * K + K * N + M * N


def cache_memory(levels: Iterable[tuple[int, int]], copies: int = 1) -> float:
    """Bytes the simulated cache levels ``(sets, ways)`` take."""
    return sum(copies * (s * w * CACHE_BYTES_PER_LINE + 16 * s) for s, w in levels)


def check_caches(levels: Iterable[tuple[int, int]], what: str, copies: int = 1) -> None:
    """Refuse cache levels whose state would not fit in memory."""
    check("memory", cache_memory(levels, copies), f"{what}: the simulated cache state")


def cache_spec_levels(specs: Iterable[str]) -> list[tuple[int, int]]:
    """(sets, ways) of ``SETS:WAYS:LINE`` strings, read only as far as the guard needs (the parser checks the rest)."""
    out = []
    for spec in specs:
        parts = str(spec).split(":")
        if len(parts) >= 2 and parts[0].strip().isdigit() and parts[1].strip().isdigit():
            out.append((int(parts[0]), int(parts[1])))
    return out


def check_machine_caches(machine, what: str, cores: int = 1) -> None:
    """The memory guard for a CPU machine's cache levels and TLBs."""
    levels = [(c.sets, c.ways) for c in machine.caches]
    levels += [(max(1, t.entries // max(t.ways, 1)), t.ways) for t in getattr(machine, "tlbs", None) or []]
    check_caches(levels, what, copies=max(1, cores))


def check_cpu(machine, kernel, M: int, N: int, K: int, dtype: str, what: str, threads: int = 1) -> float:
    """Guards of one CPU case: positive sizes, addresses in 64 bits, trace length, cache memory. Returns the estimate."""
    from gemmsim.units import dtype_bytes

    positive_dims(what, M=M, N=N, K=K)
    from gemmsim.errors import KernelError

    try:
        elem = dtype_bytes(dtype)
    except ValueError as exc:
        raise KernelError(str(exc)) from None
    lanes = 1
    if machine is not None and getattr(kernel, "simd", False):
        lanes = max(1, getattr(machine, "simd_bits", 128) // 8 // elem)
    est = cpu_accesses(M, N, K, getattr(kernel, "simd", False), lanes)
    check("accesses", est, what)
    if machine is not None:
        check_machine_caches(machine, what, threads)
    return est


def check_trace_output(accesses: float, path: str | os.PathLike, fmt: str, what: str) -> None:
    """Refuse a trace file that would be over the trace_bytes limit or larger than the free space where it goes."""
    per = {"din": 12, "xdin": 15, "lackey": 17, "npy": 16}.get(fmt, 16)
    est = per * accesses
    if str(path).endswith(".gz"):
        est /= 4
    check("trace_bytes", est, what)
    if Path(path).exists() and not Path(path).is_file():
        return  # a pipe or a device (/dev/stdout): nothing is stored
    folder = Path(path).resolve().parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # the folder does not exist: opening the file reports it
    if est > free:
        raise SizeLimitError(f"{what}: the trace would take about {_bytes(est)}, but {folder} has {_bytes(free)} free")


def systolic_folds(dataflow: str, M: int, N: int, K: int, rows: int, cols: int, chunk: int | None = None) -> int:
    """Folds of a GEMM on a rows x cols array (as ``kernels.systolic.fold_schedule`` makes them)."""
    def c(a, b):
        return -(-a // max(int(b), 1))

    if dataflow == "os":
        return c(M, rows) * c(N, cols)
    col_dim, stream = (N, M) if dataflow == "ws" else (M, N)
    return c(stream, chunk or stream) * c(col_dim, cols) * c(K, rows)


def check_systolic(dataflow: str, M: int, N: int, K: int, rows: int, cols: int, chunk: int | None, what: str) -> None:
    """Refuse a systolic GEMM with too many folds to simulate (time and memory grow with the folds)."""
    positive_dims(what, M=M, N=N, K=K)
    f = systolic_folds(dataflow, M, N, K, rows, cols, chunk)
    check("folds", f, what + f" ({rows} x {cols} array)")
    check("memory", f * SYSTOLIC_BYTES_PER_FOLD, what + f" ({f} folds)")


def check_gpu(tiles: int, steps: int, what: str) -> None:
    """Refuse a GPU launch with too many tiles (launch order and per-block arrays) or k-steps per block."""
    check("tiles", tiles, what)
    check("memory", tiles * GPU_BYTES_PER_TILE, what + f" ({tiles} tiles)")
    check("steps", steps, what)
