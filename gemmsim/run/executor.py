"""Executors: where the cases of a sweep run. One small interface, two implementations.

``Executor.map(fn, items)`` calls ``fn(item)`` for every item and yields ``(index, result)`` pairs as the calls
finish (not in order). ``fn`` must be a module-level function and the items picklable: they travel to other
processes or machines.

- ``LocalExecutor(jobs)``: processes on this computer (``jobs`` of them; all cores by default); runs in this
  process, one item after another, when ``jobs == 1`` or there is a single item (no start-up cost, easy debugging).
- ``DaskExecutor(address)``: the workers of an existing dask.distributed scheduler (``pip install gemmsim[dask]``).
  The connection is made when the executor is created, with a short timeout, so an unreachable scheduler is
  reported before anything is computed or written.

An exception raised by ``fn`` propagates out of ``map`` (remaining work is cancelled).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from gemmsim.errors import GemmsimError


class Executor:
    """Runs ``fn`` over items and yields ``(index, result)`` as each finishes. Use as a context manager."""

    #: short name for progress lines and notes
    name = "executor"

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(i, fn(items[i]))`` for every item, in order of completion."""
        raise NotImplementedError

    def close(self) -> None:
        """Release workers or connections (idempotent)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalExecutor(Executor):
    """Processes on this computer: ``jobs`` workers (default: every core); serial when jobs == 1 or one item."""

    name = "local"

    def __init__(self, jobs: int | None = None):
        if jobs is not None and jobs < 1:
            raise GemmsimError(f"--jobs must be at least 1 (got {jobs})")
        self.jobs = jobs or os.cpu_count() or 1

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(i, fn(items[i]))`` as each call finishes (serially, in order, when only one worker is used)."""
        items = list(items)
        if self.jobs <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                yield i, fn(item)
            return
        # fork keeps the parent's imported modules and numba's in-memory compilations: workers start in milliseconds
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(items)), mp_context=ctx, initializer=_worker_signals) as pool:
            futs = {pool.submit(fn, item): i for i, item in enumerate(items)}
            try:
                for fut in as_completed(futs):
                    yield futs[fut], fut.result()
            except BaseException:  # an error, Ctrl-C or SIGTERM: stop the workers now, not after their current case
                _stop_workers(pool)
                raise
            finally:
                for fut in futs:
                    fut.cancel()


def _worker_signals() -> None:
    """In a worker: Ctrl-C is the parent's to handle (it stops the workers), SIGTERM ends the worker at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate a pool's worker processes and wait for them, so none outlives the run."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)


#: seconds to wait for a Dask scheduler before saying it is unreachable
DASK_CONNECT_TIMEOUT_S = 5.0


class DaskExecutor(Executor):
    """The workers of a running dask.distributed scheduler at ``address`` (``HOST:PORT`` or ``tcp://HOST:PORT``).

    Alternatively ``client`` may be an existing ``distributed.Client`` (tests pass a LocalCluster's client);
    the executor then does not close it.
    """

    name = "dask"

    def __init__(self, address: str | None = None, client: Any = None, timeout_s: float | None = None):
        self.address = address
        self._own = client is None
        if client is not None:
            self.client = client
            return
        if not address:
            raise GemmsimError("--executor dask needs --address HOST:PORT of a running Dask scheduler")
        distributed = import_distributed()
        timeout_s = DASK_CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
        target = address if "://" in address else f"tcp://{address}"
        _probe(address, target, timeout_s)
        try:
            self.client = distributed.Client(target, timeout=timeout_s, set_as_default=False)
        except Exception as exc:  # whatever answered is not a Dask scheduler, or did not answer in time
            raise GemmsimError(
                f"cannot connect to a Dask scheduler at {address} within {timeout_s:g} s "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'})"
            ) from None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """Submit every call to the cluster and yield results as workers finish them."""
        distributed = import_distributed()
        items = list(items)
        if not items:
            return
        futs = self.client.map(fn, items, pure=False)
        index = {f.key: i for i, f in enumerate(futs)}
        try:
            for fut in distributed.as_completed(futs, loop=self.client.loop):
                try:
                    res = fut.result()
                except ImportError as exc:
                    if "gemmsim" not in str(exc):
                        raise
                    raise GemmsimError(
                        f"the Dask workers at {self.address or 'the cluster'} cannot import gemmsim ({exc}); "
                        "install the same gemmsim on every worker"
                    ) from None
                yield index[fut.key], res
        finally:
            for fut in futs:
                fut.cancel()

    def close(self) -> None:
        """Close the connection if this executor opened it."""
        if self._own and getattr(self, "client", None) is not None:
            self.client.close()
            self.client = None


def _probe(address: str, target: str, timeout_s: float) -> None:
    """Open and close a TCP connection to the scheduler first: a refused or unroutable address fails fast and plainly."""
    scheme, _, hostport = target.partition("://")
    if scheme != "tcp":
        return
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise GemmsimError(f"Dask scheduler address {address!r} is not HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise GemmsimError(
            f"cannot reach the Dask scheduler at {address} ({exc.strerror or type(exc).__name__}); "
            "start one with `dask scheduler` (and workers with `dask worker HOST:PORT`), or drop --executor dask"
        ) from None


def import_distributed():
    """dask.distributed, or a GemmsimError saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise GemmsimError("the Dask executor needs dask.distributed: pip install gemmsim[dask]") from None
    return distributed


def make_executor(kind: str = "local", jobs: int | None = None, address: str | None = None) -> Executor:
    """An executor by name: 'local' (processes, ``jobs`` of them) or 'dask' (the scheduler at ``address``)."""
    if kind == "local":
        if address:
            raise GemmsimError("--address is only for --executor dask")
        return LocalExecutor(jobs)
    if kind == "dask":
        return DaskExecutor(address)
    raise GemmsimError(f"unknown executor {kind!r}; known: local, dask")
