"""Dispatch of one case to the simulator of its machine's kind.

Each machine kind has one module (``gemmsim.sim.cpu``, ``gemmsim.sim.gpu``, ``gemmsim.sim.systolic``)
that exposes:

- ``KERNELS: dict[str, type[pydantic.BaseModel]]`` -- the kernels this kind can run, each with the
  model of its parameters (``extra="forbid"``; defaults for every parameter);
- ``run_case(machine, case: Case) -> dict`` -- simulate one case and return its result columns.

Every result row carries at least the common columns below, so machines of different kinds can be
compared side by side; a kind adds its own counters (hit rates, wavefronts, folds ...), snake_case with
units in the name.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import asdict, dataclass, field
from types import ModuleType

#: Columns every kind's run_case returns.
COMMON_COLUMNS = (
    "flops",  # useful floating-point operations, 2*M*N*K for a GEMM
    "dram_bytes",  # bytes moved between the last on-chip level and DRAM (reads + writes)
    "intensity_flop_per_byte",  # flops / dram_bytes
    "time_s",  # modelled time in seconds
    "gflops",  # flops / time_s / 1e9
    "peak_fraction",  # gflops / the machine's peak for the dtype and the kernel's kind of arithmetic
    "bound",  # what limited time_s: 'compute', 'L1', 'L2', 'dram', 'latency', 'smem', 'waves' ...
)

KIND_MODULES = {"cpu": "gemmsim.sim.cpu", "gpu": "gemmsim.sim.gpu", "systolic": "gemmsim.sim.systolic"}


@dataclass(frozen=True)
class Case:
    """One point of an experiment: a machine, a kernel with its parameters, a shape, a dtype, a layout."""

    experiment: str
    machine: str
    kernel: str
    params: dict = field(default_factory=dict)
    M: int | None = None
    N: int | None = None
    K: int | None = None
    dtype: str = "fp32"
    layout: dict = field(default_factory=dict)
    quick: bool = False
    label: str = ""
    #: extra result columns that identify the case but do not change its simulation (workload, op, count ...)
    tags: dict = field(default_factory=dict)
    #: optional extra analyses the simulator runs for this case (e.g. "miss_classes": misses by operand and cause)
    analyses: tuple = ()

    @property
    def name(self) -> str:
        """The kernel as tables and figures show it: its label, or its name."""
        return self.label or self.kernel

    def to_dict(self) -> dict:
        """Plain, JSON-able form."""
        return asdict(self)

    def key(self) -> str:
        """A stable hash of everything that defines the case (for caching and file names)."""
        blob = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def columns(self) -> dict:
        """The case's own columns for a result row (kernel params flattened as ``p_NAME``)."""
        row = {"machine": self.machine, "kernel": self.kernel, "label": self.name, "M": self.M, "N": self.N, "K": self.K, "dtype": self.dtype}
        row.update({f"p_{k}": (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in sorted(self.params.items())})
        row.update({f"layout_{k}": v for k, v in sorted(self.layout.items())})
        return row


def kind_module(kind: str) -> ModuleType:
    """The simulator module of a machine kind."""
    return importlib.import_module(KIND_MODULES[kind])


def kernels_for(kind: str) -> dict:
    """Kernel name -> parameter model, for a machine kind (empty if that kind has no simulator yet)."""
    try:
        return dict(getattr(kind_module(kind), "KERNELS", {}))
    except ModuleNotFoundError:
        return {}


def run_case(machine, case: Case) -> dict:
    """Simulate one case on a loaded machine; returns the result columns (without the case's own)."""
    return kind_module(machine.kind).run_case(machine, case)


def check_case(machine, case) -> None:
    """The size guards (``gemmsim.guards``) of one experiment case on a loaded machine, before anything is simulated.
    It lives here, not in ``gemmsim.guards``, because it looks the kernel up in the sim and kernel registries."""
    from gemmsim.guards import check_cpu, check_gpu, check_systolic, positive_dims

    what = f"{case.name} M={case.M} N={case.N} K={case.K} {case.dtype} on {machine.name}"
    if case.M is None or case.N is None or case.K is None:
        return  # pattern kernels: a fixed, tiny amount of work
    positive_dims(what, M=case.M, N=case.N, K=case.K)
    if machine.kind == "cpu":
        from gemmsim.sim.cpu import CPU_KERNELS

        k = CPU_KERNELS.get(case.kernel)
        if k is not None:
            check_cpu(machine, k, case.M, case.N, case.K, case.dtype, what, k.threads(k.params(**case.params)))
    elif machine.kind == "gpu":
        from gemmsim.kernels.gpu import KERNELS as GPU_KERNELS

        k = GPU_KERNELS.get(case.kernel)
        if k is not None:
            from gemmsim.models.occupancy import occupancy

            spec = k.spec(case.params, case.dtype, machine, M=case.M)
            check_gpu(-(-case.M // spec.BM) * -(-case.N // spec.BN), spec.steps(case.K), what)
            occupancy(machine, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)  # a launch the GPU refuses
    elif machine.kind == "systolic":
        p = case.params
        rows = p.get("rows") or p.get("array") or machine.rows
        cols = p.get("cols") or p.get("array") or machine.cols
        dataflow = p.get("dataflow") or (case.kernel if case.kernel in ("ws", "os", "is") else "ws")
        acc = machine.accumulator_entries // (2 if machine.double_buffered_accumulators else 1)
        check_systolic(dataflow, case.M, case.N, case.K, rows, cols, None if p.get("convention") == "scalesim" else acc, what)
