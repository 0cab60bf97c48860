"""What a CPU kernel is to the rest of gemmsim: a trace generator plus facts the timing model needs.

Kernel modules (``gemmsim.kernels.cpu``, ``gemmsim.kernels.cpu_packed``) each expose
``KERNELS: dict[str, CPUKernel]``; ``gemmsim.sim.cpu`` merges them. A kernel knows nothing of caches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from gemmsim.schema import Strict
from gemmsim.trace import Layout


class NoParams(Strict):
    """A kernel without parameters."""


@dataclass(frozen=True)
class CPUKernel:
    """One CPU GEMM variant.

    ``trace(layout, params, machine)`` yields chunks of ``gemmsim.trace.ACCESS`` records (bounded memory);
    ``machine`` is the CPUMachine (vector width, registers) or None for machine-independent kernels.
    ``host(A, B, C, params)`` computes ``C += A @ B`` for real, in the kernel's own order, on numpy arrays
    (A M x K, B K x N, C M x N); None when the kernel has no host implementation.
    ``simd`` says whether the kernel computes with full vectors (its accesses are vector-wide), which sets
    the compute peak the timing model uses; scalar kernels are held to one lane per FMA.
    ``extra(layout, params, machine)`` returns analytic columns for the result row (edge fractions, ghost
    FLOPs, working sets ...); it may be None.
    ``threads(params)`` is how many cores the kernel's trace spreads over (the ``core`` field).
    """

    name: str
    description: str
    params: type[Strict]
    trace: Callable[[Layout, Strict, object], Iterator[np.ndarray]]
    host: Callable | None = None
    simd: bool = False
    extra: Callable[[Layout, Strict, object], dict] | None = None
    threads: Callable[[Strict], int] = lambda params: 1
